"""examples/python-bot/bot.py as its README runs it, against a real server: it registers its commands,
answers signed command.invoked deliveries (one creates a task), greets on message.created, refuses forgeries.

The deliveries are signed here with sign_delivery (checked against the shared vectors in test_receiver.py),
standing in for the server's delivery worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _server import REPO, WorkroomServer, free_port, http  # noqa: E402

from workroom import sign_delivery  # noqa: E402

BOT = REPO / "examples" / "python-bot" / "bot.py"


class ExampleBotTest(unittest.TestCase):
    server: WorkroomServer
    bot: "subprocess.Popen[bytes]"
    world: Dict[str, Any]
    secret: str
    url: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = WorkroomServer(WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS="true")
        cls.world = cls.server.world()
        port = free_port()
        cls.url = f"http://127.0.0.1:{port}/webhook"
        cls.server.admin("PATCH", f"/api/bots/{cls.world['bot_id']}", {"webhook_url": cls.url})
        cls.secret = cls.server.admin("POST", f"/api/bots/{cls.world['bot_id']}/webhook-secret")["secret"]
        env = dict(
            os.environ,
            WORKROOM_URL=cls.server.url,
            WORKROOM_BOT_KEY=cls.world["key"],
            WORKROOM_WEBHOOK_SECRET=cls.secret,
            PORT=str(port),
            TASK_TOPIC_ID=cls.world["topic_id"],
        )
        cls.bot = subprocess.Popen(
            [sys.executable, str(BOT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        assert cls.bot.stdout is not None
        for line in cls.bot.stdout:  # logging goes to stderr, merged: read until the receiver listens
            if b"listening on" in line:
                break
        else:
            cls.server.stop()
            raise RuntimeError("the example bot did not start")
        # Keep reading its output so that a full pipe never blocks the bot.
        threading.Thread(target=cls.bot.stdout.read, daemon=True).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.bot.terminate()
        cls.bot.wait(10)
        if cls.bot.stdout is not None:
            cls.bot.stdout.close()
        cls.server.stop()

    def deliver(self, event_type: str, data: Dict[str, Any], secret: Optional[str] = None) -> Tuple[int, Any]:
        event_id = str(uuid.uuid4())
        envelope = {
            "event_type": event_type,
            "timestamp": "2026-11-23T10:00:00.000Z",
            "bot_id": self.world["bot_id"],
            "data": data,
            "event_id": event_id,
        }
        body, headers = sign_delivery(envelope, secret or self.secret, webhook_id="msg_" + event_id)
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as res:
                return res.status, json.loads(res.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def command(self, text: str) -> Tuple[int, Any]:
        name, _, args = text[1:].partition(" ")
        data = {"command": name, "args": args, "text": text, "user_id": self.world["user"]["id"]}
        data["channel_id"] = self.world["channel_id"]
        return self.deliver("command.invoked", data)

    def test_it_registered_its_commands(self) -> None:
        palette = [c["command"] for c in self.server.admin("GET", "/api/commands")["items"]]
        self.assertTrue({"echo", "todo", "pybot"} <= set(palette), palette)

    def test_echo_and_help_reply(self) -> None:
        self.assertEqual(self.command("/echo hello world"), (200, {"content": "hello world"}))
        status, reply = self.command("/pybot")
        self.assertEqual((status, reply["ephemeral"]), (200, True))
        self.assertIn("/todo <title>", reply["content"])

    def test_a_user_runs_echo_through_the_server_and_sees_the_reply(self) -> None:
        answer = self.server.admin(
            "POST", "/api/commands/execute", {"text": "/echo via the server", "channel_id": self.world["channel_id"]}
        )
        self.assertEqual((answer["delivery"]["status"], answer["reply"]["content"]), ("delivered", "via the server"))
        _, _, listed = http(
            "GET", f"{self.server.url}/api/channels/{self.world['channel_id']}/messages", token=self.server.admin_token
        )
        mine = [m for m in listed["items"] if m["content"] == "via the server"]
        self.assertEqual([m["bot_id"] for m in mine], [self.world["bot_id"]])

    def test_todo_creates_a_task(self) -> None:
        status, reply = self.command("/todo Write the release notes")
        self.assertEqual(status, 200)
        tasks = self.server.admin("GET", f"/api/topics/{self.world['topic_id']}/tasks")["items"]
        made = [t for t in tasks if t["title"] == "Write the release notes"]
        self.assertEqual(len(made), 1)
        self.assertIn(made[0]["task_id"], reply["content"])

    def test_hello_bot_gets_a_greeting_in_the_channel(self) -> None:
        data = {
            "content": "Hello bot, are you there?",
            "channel_id": self.world["channel_id"],
            "topic_id": None,
            "dm_room_id": None,
            "sender_id": self.world["user"]["id"],
            "sender_type": "user",
        }
        self.assertEqual(self.deliver("message.created", data), (200, {"ok": True}))
        deadline = time.monotonic() + 10
        contents: List[str] = []
        while time.monotonic() < deadline:
            _, _, listed = http(
                "GET", f"{self.server.url}/api/channels/{self.world['channel_id']}/messages", token=self.server.admin_token
            )
            contents = [m["content"] for m in listed["items"] if m["content"].startswith("Hello!")]
            if contents:
                break
            time.sleep(0.05)
        self.assertEqual(contents, ["Hello! Try /echo, /todo or /pybot."])

    def test_a_forged_delivery_is_refused(self) -> None:
        forged = "whsec_" + "A" * 44
        status, answer = self.deliver("command.invoked", {"command": "echo", "args": "x"}, secret=forged)
        self.assertEqual((status, answer["error"]), (401, "invalid_signature"))


if __name__ == "__main__":
    unittest.main()
