"""workroom.testing against the real harness (``workroom harness``, the built server; always SQLite, also
when the suite runs with DATABASE_URL): a socket bot answers a command, edits its message on a click and
posts a reminder once the server's clock passes its job; the failure messages; stopping deletes the data."""

from __future__ import annotations

import os
import re
import sys
import unittest
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Dict

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workroom import ActionInvocation, CommandInvocation, SocketReceiver, WorkroomClient, button  # noqa: E402
from workroom.testing import Workroom, WorkroomTestCase, start_workroom, to_ms  # noqa: E402


class HarnessTest(WorkroomTestCase):
    def setUp(self) -> None:
        wr = self.workroom
        self.ws = wr.workspace(
            users=["ann", "bob"],
            channels=["general"],
            projects=[{"name": "launch", "topics": ["todos"]}],
            bots=[{"name": "helper", "commands": ["echo", "remind"]}],
        )
        bot = self.ws.bots["helper"]
        client = WorkroomClient(wr.url, bot.key)
        receiver = SocketReceiver(wr.url, bot.key)
        self.addCleanup(receiver.stop)

        @receiver.command("echo")
        def echo(cmd: CommandInvocation) -> str:
            return cmd.args or "nothing to echo"

        @receiver.command("remind")
        def remind(cmd: CommandInvocation) -> str:
            # Two hours of the server's time after the command (the envelope's timestamp is server time).
            stamp = datetime.fromisoformat(str(cmd.envelope["timestamp"]).replace("Z", "+00:00"))
            run_at = (stamp + timedelta(hours=2)).isoformat()
            payload = {"channel_id": cmd.channel_id, "text": cmd.args}
            client.request("POST", f"/api/bots/{bot.id}/jobs", body={"kind": "remind", "run_at": run_at, "payload": payload})
            return f"I will remind you at {run_at}"

        @receiver.on("job.due")
        def due(event: Dict[str, Any]) -> None:
            p = event["data"]["payload"]
            client.send_message(f"Reminder: {p['text']}", channel_id=p["channel_id"])

        @receiver.on("message.created")
        def deploy(event: Dict[str, Any]) -> None:
            d = event["data"]
            if d.get("sender_type") == "user" and d.get("content") == "!deploy":
                client.send_message(
                    "Deploy v2?",
                    channel_id=d["channel_id"],
                    actions=[button("approve", "Approve", "yes"), button("reject", "Reject", "no")],
                )

        @receiver.action("approve", "reject")
        def decide(a: ActionInvocation) -> None:
            verdict = "approved" if a.value == "yes" else "rejected"
            client.update_message(a.message_id, f"Deploy v2: {verdict} by {a.user_name}", actions=None)

        receiver.start()

    def test_workspace_in_one_call(self) -> None:
        self.assertEqual(sorted(self.ws.users), ["ann", "bob"])
        self.assertTrue(self.ws.bots["helper"].key and self.ws.bots["helper"].secret)
        self.workroom.as_user("ann").post("todos", "in the topic")
        self.assertIn("in the topic", [m["content"] for m in self.workroom.as_user("bob").messages("launch/todos")])

    def test_command_reply(self) -> None:
        answer = self.workroom.as_user("ann").command("general", "/echo hi there")
        self.assertEqual(answer["reply"]["content"], "hi there")
        self.assertEqual(self.workroom.next_message("general", sender="helper")["content"], "hi there")

    def test_click_edits_the_message(self) -> None:
        wr = self.workroom
        wr.as_user("bob").post("general", "!deploy")
        question = wr.next_message("general", sender=self.ws.bots["helper"], matching="Deploy v2?")
        self.assertEqual([a["id"] for a in question["actions"]], ["approve", "reject"])
        wr.as_user("bob").click(question, "approve")
        edited = wr.wait_for(
            lambda: next((m for m in wr.messages("general") if m["id"] == question["id"] and not m["actions"]), None),
            describe="the question edited without buttons",
        )
        self.assertEqual(edited and edited["content"], "Deploy v2: approved by bob")

    def test_clock_runs_a_job_when_it_passes(self) -> None:
        wr = self.workroom
        key = self.ws.bots["helper"].key
        answer = wr.as_user("ann").command("general", "/remind stand-up")
        self.assertRegex(answer["reply"]["content"], r"^I will remind you at ")
        jobs = wr.request("GET", f"/api/bots/{self.ws.bots['helper'].id}/jobs", token=key)["items"]
        self.assertEqual([j["state"] for j in jobs], ["pending"])
        wr.clock.advance("1h")
        jobs = wr.request("GET", f"/api/bots/{self.ws.bots['helper'].id}/jobs", token=key)["items"]
        self.assertEqual([j["state"] for j in jobs], ["pending"])
        wr.clock.advance("1h5m")
        reminder = wr.next_message("general", sender="helper", matching=re.compile("^Reminder"))
        self.assertEqual(reminder["content"], "Reminder: stand-up")
        self.assertGreaterEqual(reminder["created_at"], jobs[0]["run_at"])

    def test_failure_messages(self) -> None:
        wr = self.workroom
        quiet = wr.workspace(users=["dee"], channels=["quiet"], bots=[{"name": "mute"}])
        wr.as_user("dee").post("quiet", "anyone there?")
        with self.assertRaises(AssertionError) as caught:
            wr.next_message("quiet", sender=quiet.bots["mute"], timeout=0.3)
        self.assertIn('expected a new message in #quiet from bot "mute"', str(caught.exception))
        self.assertIn('user "dee": "anyone there?"', str(caught.exception))
        with self.assertRaises(AssertionError) as caught2:
            wr.wait_for(lambda: len(wr.messages("quiet")) > 5, timeout=0.2, describe="six messages")
        self.assertIn("wait_for: six messages did not come true within 0.2 s; it last answered: False", str(caught2.exception))
        with self.assertRaises(ValueError):
            wr.clock.advance("-1h")
        self.assertEqual(to_ms("1h30m"), 5_400_000)


class HarnessProcessTest(unittest.TestCase):
    def test_clock_protocol_and_stop(self) -> None:
        with start_workroom() as wr:
            data_dir = wr.data_dir
            self.assertTrue(os.path.isdir(data_dir))
            self.assertRegex(wr.url, r"^http://127\.0\.0\.1:\d+$")
            t0 = wr.clock.now()
            t1 = wr.clock.advance(3_600_000)
            self.assertGreaterEqual((t1 - t0).total_seconds(), 3600)
            t2 = wr.clock.set("2040-01-01T00:00:00Z")
            self.assertGreaterEqual(t2.year, 2040)
            self.assertGreaterEqual(wr.clock.set(0), t2)  # never back
            with self.assertRaisesRegex(ValueError, "not a time"):
                wr.clock.set("tomorrow")
            self.assertIsInstance(wr, Workroom)
        self.assertFalse(os.path.exists(data_dir))


if __name__ == "__main__":
    unittest.main()
