"""Server → receiver, end to end: a real Workroom server delivers signed webhooks to a WebhookReceiver
(message.created through the delivery queue, a slash command at once with the handler's answer posted as
the bot's reply), and a redelivery with the same webhook-id is handled once."""

from __future__ import annotations

import logging
import sys
import threading
import time
import unittest
import uuid
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _server import WorkroomServer, free_port, wait_for  # noqa: E402

from workroom import CommandInvocation, WebhookReceiver, WorkroomClient  # noqa: E402


class _Messages(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: List[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class EndToEndTest(unittest.TestCase):
    server: WorkroomServer
    receiver: WebhookReceiver
    world: Dict[str, Any]
    events: List[Dict[str, Any]]
    runs: List[CommandInvocation]
    log: _Messages
    lock: threading.Lock

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = WorkroomServer(WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS="true", WORKROOM_WEBHOOK_RETRY_DELAYS="1s,1s")
        cls.world = cls.server.world()
        port = free_port()
        bot_path = f"/api/bots/{cls.world['bot_id']}"
        cls.server.admin("PATCH", bot_path, {"webhook_url": f"http://127.0.0.1:{port}/webhook"})
        secret = cls.server.admin("POST", bot_path + "/webhook-secret")["secret"]
        cls.receiver = WebhookReceiver(port=port, secret=secret, host="127.0.0.1")
        cls.events, cls.runs, cls.lock = [], [], threading.Lock()

        @cls.receiver.on("*")
        def record(event: Dict[str, Any]) -> None:
            with cls.lock:
                cls.events.append(event)

        @cls.receiver.command("shout")
        def shout(cmd: CommandInvocation) -> str:
            with cls.lock:
                cls.runs.append(cmd)
            return cmd.args.upper() + "!"

        @cls.receiver.command("later")
        def later(cmd: CommandInvocation) -> str:
            # Long work: answer at once, reply through the response URL from another thread.
            threading.Thread(target=lambda: cmd.respond(f"done: {cmd.args}")).start()
            return "working on it"

        cls.log = _Messages()
        logging.getLogger("workroom.receiver").addHandler(cls.log)
        logging.getLogger("workroom.receiver").setLevel(logging.INFO)
        cls.receiver.start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.receiver.stop()
        logging.getLogger("workroom.receiver").removeHandler(cls.log)
        cls.server.stop()

    def events_of(self, event_type: str) -> List[Dict[str, Any]]:
        with self.lock:
            return [e for e in self.events if e["event_type"] == event_type]

    def deliveries(self) -> List[Dict[str, Any]]:
        items: List[Dict[str, Any]] = self.server.admin("GET", f"/api/bots/{self.world['bot_id']}/deliveries")[
            "items"
        ]
        return items

    def test_a_message_is_delivered_signed_and_verified(self) -> None:
        text = "end to end " + uuid.uuid4().hex[:8] + " — ünïcödé ✓"
        sent = self.server.admin("POST", f"/api/channels/{self.world['channel_id']}/messages", {"content": text})
        self.assertTrue(wait_for(lambda: any(e["data"]["content"] == text for e in self.events_of("message.created"))))
        event = [e for e in self.events_of("message.created") if e["data"]["content"] == text][0]
        self.assertEqual(event["bot_id"], self.world["bot_id"])
        self.assertEqual(event["data"]["message_id"], sent["id"])
        self.assertEqual(event["data"]["sender_type"], "user")
        self.assertTrue(event["signature"].startswith("sha256="))

    def test_a_slash_command_gets_the_handlers_answer_as_the_bots_reply_and_runs_once(self) -> None:
        client = WorkroomClient(self.server.url, self.world["key"])
        client.register_command("shout", "Says it louder")
        answer = self.server.admin(
            "POST", "/api/commands/execute", {"text": "/shout hello there", "channel_id": self.world["channel_id"]}
        )
        self.assertEqual(answer["delivery"]["status"], "delivered")
        self.assertEqual(answer["reply"]["content"], "HELLO THERE!")
        posted = client.read_messages(channel_id=self.world["channel_id"], limit=5)
        self.assertIn(("HELLO THERE!", self.world["bot_id"]), [(m["content"], m["bot_id"]) for m in posted])
        # Let the delivery queue settle (it may send the invocation again as a queued event): still one run.
        self.assertTrue(wait_for(lambda: all(d["state"] != "pending" for d in self.deliveries())))
        time.sleep(0.5)
        with self.lock:
            self.assertEqual([(r.command, r.args) for r in self.runs], [("shout", "hello there")])
        me = self.server.admin("GET", "/api/auth/me")
        self.assertEqual(self.runs[0].user_id, me.get("user", me)["id"])
        self.assertEqual(self.runs[0].channel_id, self.world["channel_id"])

    def test_a_command_answers_later_through_its_response_url(self) -> None:
        client = WorkroomClient(self.server.url, self.world["key"])
        client.register_command("later", "Answers twice")
        answer = self.server.admin(
            "POST", "/api/commands/execute", {"text": "/later the report", "channel_id": self.world["channel_id"]}
        )
        self.assertEqual(answer["reply"]["content"], "working on it")

        def bot_said() -> List[str]:
            items = client.read_messages(channel_id=self.world["channel_id"], limit=20)
            return [m["content"] for m in items if m["bot_id"] == self.world["bot_id"]]

        self.assertTrue(wait_for(lambda: "done: the report" in bot_said()))
        self.assertTrue(wait_for(lambda: all(d["state"] != "pending" for d in self.deliveries())))
        said = bot_said()
        self.assertEqual((said.count("working on it"), said.count("done: the report")), (1, 1))

    def test_a_redelivery_with_the_same_webhook_id_is_handled_once(self) -> None:
        text = "redeliver me " + uuid.uuid4().hex[:8]
        self.server.admin("POST", f"/api/channels/{self.world['channel_id']}/messages", {"content": text})

        def delivered() -> List[Dict[str, Any]]:
            return [
                d
                for d in self.deliveries()
                if d["event_type"] == "message.created" and d["state"] == "delivered"
                and any(e["event_id"] == d["event_id"] and e["data"]["content"] == text for e in self.events)
            ]

        self.assertTrue(wait_for(lambda: len(delivered()) == 1))
        delivery = delivered()[0]
        duplicates_before = sum("dropped a duplicate delivery" in line for line in self.log.lines)
        redone = self.server.admin(
            "POST", f"/api/bots/{self.world['bot_id']}/deliveries/{delivery['id']}/redeliver"
        )
        self.assertEqual(redone["id"], delivery["id"])
        self.assertTrue(
            wait_for(lambda: sum("dropped a duplicate" in line for line in self.log.lines) > duplicates_before)
        )
        self.assertTrue(wait_for(lambda: all(d["state"] != "pending" for d in self.deliveries())))
        with self.lock:
            matching = [e for e in self.events if e["event_type"] == "message.created" and e["data"]["content"] == text]
        self.assertEqual(len(matching), 1)


if __name__ == "__main__":
    unittest.main()
