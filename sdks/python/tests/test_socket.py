"""SocketReceiver against a real server: a bot with no webhook URL (the server's default SSRF guard)
receives over its socket, acks by returning, answers a slash command with the handler's reply, nacks by
raising, and after a dropped connection is not handed the same delivery twice. The lease is 1 s."""

from __future__ import annotations

import sys
import threading
import unittest
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _server import WorkroomServer, http, wait_for  # noqa: E402

from workroom import CommandInvocation, SocketReceiver, SocketRefused  # noqa: E402


class SocketReceiverTest(unittest.TestCase):
    server: WorkroomServer

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = WorkroomServer(WORKROOM_SOCKET_LEASE="1s")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def post(self, world: Dict[str, Any], content: str) -> str:
        answer = self.server.admin("POST", f"/api/channels/{world['channel_id']}/messages", {"content": content})
        return str(answer["id"])

    def deliveries(self, world: Dict[str, Any]) -> List[Dict[str, Any]]:
        return list(self.server.admin("GET", f"/api/bots/{world['bot_id']}/deliveries")["items"])

    def receiver(self, world: Dict[str, Any]) -> SocketReceiver:
        r = SocketReceiver(self.server.url, world["key"], reconnect_min=0.05, reconnect_max=0.5)
        self.addCleanup(r.stop)
        return r

    def test_receives_and_acks(self) -> None:
        world = self.server.world()
        r = self.receiver(world)
        got: List[Dict[str, Any]] = []

        @r.on("message.created")
        def record(event: Dict[str, Any]) -> None:
            got.append(event)

        r.start()
        self.assertTrue(r.connected)
        message_id = self.post(world, "hi python socket")
        self.assertTrue(wait_for(lambda: len(got) == 1, 15))
        self.assertEqual(got[0]["data"]["message_id"], message_id)
        self.assertEqual(got[0]["bot_id"], world["bot_id"])
        self.assertTrue(wait_for(lambda: [d["state"] for d in self.deliveries(world)] == ["delivered"], 15))

    def test_command_reply_and_nack(self) -> None:
        world = self.server.world()
        r = self.receiver(world)

        @r.command("pysock")
        def echo(cmd: CommandInvocation) -> str:
            return f"py: {cmd.args}"

        @r.on("message.created")
        def fail(event: Dict[str, Any]) -> None:
            raise RuntimeError("nope")

        r.start()
        status, _, _ = http(
            "POST",
            self.server.url + f"/api/bots/{world['bot_id']}/commands",
            {"command": "pysock", "description": "p"},
            world["key"],
        )
        self.assertEqual(status, 201)
        answer = self.server.admin(
            "POST", "/api/commands/execute", {"text": "/pysock hello", "channel_id": world["channel_id"]}
        )
        self.assertEqual(answer["delivery"]["status"], "delivered")
        self.assertEqual(answer["reply"]["content"], "py: hello")
        self.post(world, "boom")

        def first_error() -> Any:
            items = self.deliveries(world)
            log = items[0]["attempt_log"] if items else []
            return log[0]["error"] if log else None

        self.assertTrue(wait_for(lambda: first_error() == "nacked by the bot: nope", 15), first_error())

    def test_drop_reconnects_and_handles_once(self) -> None:
        world = self.server.world()
        r = self.receiver(world)
        seen: List[str] = []
        gate = threading.Event()

        @r.on("message.created")
        def slow(event: Dict[str, Any]) -> None:
            seen.append(event["data"]["content"])
            gate.wait(15)

        r.start()
        self.post(world, "across a drop")
        self.assertTrue(wait_for(lambda: len(seen) == 1, 15))
        r.drop_connection()
        self.assertTrue(wait_for(lambda: r.connections >= 2, 15))
        # The delivery comes again (socket closed before the ack): in hand, so not handled twice.
        gate.set()
        self.assertTrue(wait_for(lambda: [d["state"] for d in self.deliveries(world)] == ["delivered"], 20))
        self.assertEqual(seen, ["across a drop"])

    def test_refused_key(self) -> None:
        r = SocketReceiver(self.server.url, "wrk_bot_invalid")
        with self.assertRaises(SocketRefused) as caught:
            r.start(timeout=10)
        self.assertEqual(caught.exception.status, 401)


if __name__ == "__main__":
    unittest.main()
