"""SocketReceiver against a real server: a bot with no webhook URL (the server's default SSRF guard)
receives over its socket, acks by returning, answers a slash command with the handler's reply, nacks by
raising, and after a dropped connection is not handed the same delivery twice. The lease is 1 s."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import subprocess
import sys
import threading
import unittest
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _server import REPO, WorkroomServer, http, wait_for  # noqa: E402

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

    def test_example_bot_over_its_socket(self) -> None:
        """examples/python-bot/bot.py without WORKROOM_WEBHOOK_SECRET: the one-line switch opens a socket."""
        world = self.server.world()
        env = dict(os.environ, WORKROOM_URL=self.server.url, WORKROOM_BOT_KEY=world["key"])
        env.pop("WORKROOM_WEBHOOK_SECRET", None)
        bot = subprocess.Popen(
            [sys.executable, str(REPO / "examples" / "python-bot" / "bot.py")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def end() -> None:
            bot.terminate()
            bot.wait(10)

        self.addCleanup(end)

        def echo() -> Any:
            body = {"text": "/echo over a socket", "channel_id": world["channel_id"]}
            status, _, answer = http("POST", self.server.url + "/api/commands/execute", body, self.server.admin_token)
            return (answer.get("reply") or {}).get("content") if status == 202 else None

        self.assertTrue(wait_for(lambda: echo() == "over a socket", 30))

    def test_a_silent_server_is_left_after_two_heartbeats(self) -> None:
        """A stand-in server that says ready and then reads nothing: the receiver reconnects."""
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        held: List[socket.socket] = []

        def serve() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                held.append(conn)
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(4096)
                lines = request.split(b"\r\n")
                key = [ln.split(b":", 1)[1].strip() for ln in lines if ln.lower().startswith(b"sec-websocket-key")][0]
                accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
                conn.sendall(
                    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
                )
                ready = b'{"type":"ready"}'
                conn.sendall(bytes([0x81, len(ready)]) + ready)  # then silence: no pong, nothing read

        threading.Thread(target=serve, daemon=True).start()
        r = SocketReceiver(f"http://127.0.0.1:{port}", "wrk_bot_test", heartbeat=0.2, reconnect_min=0.02)
        try:
            r.start(timeout=10)
            self.assertTrue(wait_for(lambda: r.connections >= 2, 10))
        finally:
            r.stop(wait_for_handlers=False)
            listener.close()
            for conn in held:
                conn.close()

    def test_refused_key(self) -> None:
        r = SocketReceiver(self.server.url, "wrk_bot_invalid")
        with self.assertRaises(SocketRefused) as caught:
            r.start(timeout=10)
        self.assertEqual(caught.exception.status, 401)


if __name__ == "__main__":
    unittest.main()
