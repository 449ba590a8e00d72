"""Tests of bot.py against a throwaway Workroom (workroom.testing; docs/TESTING-BOTS.md).

Run: python3 -m unittest test_bot.py (here, or in a copy of this folder with the SDK installed and
WORKROOM_SERVER pointing to a built Workroom checkout). CI runs it from sdks/python/run-tests.sh."""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

try:
    import workroom  # noqa: F401  (installed with pip install ./sdks/python)
except ImportError:  # in the checkout: the SDK next door
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdks" / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from workroom.testing import WorkroomTestCase  # noqa: E402

import bot  # noqa: E402


class ExampleBotTest(WorkroomTestCase):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        wr = cls.workroom
        cls.ws = wr.workspace(
            users=["ann"], channels=["general"], projects=[{"name": "launch", "topics": ["tasks"]}], bots=[{"name": "pybot"}]
        )
        # Over its socket (no webhook secret): the server needs no URL to reach it.
        client, receiver = bot.build(wr.url, cls.ws.bots["pybot"].key)
        bot.register_commands(client)
        receiver.start()
        cls.addClassCleanup(receiver.stop)

    def test_echo(self) -> None:
        answer = self.workroom.as_user("ann").command("general", "/echo hello")
        self.assertEqual(answer["reply"]["content"], "hello")
        self.assertEqual(self.workroom.next_message("general", sender="pybot")["content"], "hello")

    def test_pybot_answers_privately(self) -> None:
        reply = self.workroom.as_user("ann").command("general", "/pybot")["reply"]
        self.assertTrue(reply["ephemeral"])
        self.assertIn("/todo <title>", reply["content"])

    def test_todo_creates_a_task(self) -> None:
        reply = self.workroom.as_user("ann").command("general", "/todo Write the report")["reply"]
        self.assertRegex(reply["content"], r"^Task created: Write the report \(task_id: ")
        titles = [t["title"] for t in self.workroom.tasks("launch/tasks")]
        self.assertIn("Write the report", titles)

    def test_greets_hello_bot(self) -> None:
        self.workroom.as_user("ann").post("general", "Hello bot, are you there?")
        greeting = self.workroom.next_message("general", sender="pybot")
        self.assertEqual(greeting["content"], "Hello! Try /echo, /todo or /pybot.")


if __name__ == "__main__":
    unittest.main()
