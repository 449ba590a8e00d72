"""Interactive message actions (docs/ACTIONS.md) with the Python SDK: the client sends buttons and a select,
a user's click reaches ``@receiver.action(...)`` as an ActionInvocation from a real Workroom server, and the
handler's ``update_message`` replaces or removes the actions. Plus the receiver's routing of clicks by
action id, with locally signed deliveries."""

from __future__ import annotations

import sys
import threading
import unittest
import uuid
from pathlib import Path
from typing import Any, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _server import WorkroomServer, free_port, http, wait_for  # noqa: E402

from workroom import (  # noqa: E402
    ActionInvocation,
    WebhookReceiver,
    WorkroomClient,
    WorkroomError,
    button,
    select,
    sign_delivery,
)
from workroom.types import ActionInvokedData, MessageAction  # noqa: E402

SECRET = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVowMTIzNDU="

ACTIONS: List[MessageAction] = [
    button("approve", "Approve", "yes", style="primary"),
    button("reject", "Reject", "no", style="danger"),
    select("size", [("Small", "s"), ("Large", "l")], placeholder="Size"),
]


class ActionsEndToEndTest(unittest.TestCase):
    server: WorkroomServer
    world: Dict[str, Any]
    client: WorkroomClient
    receiver: WebhookReceiver
    clicks: List[ActionInvocation]
    sizes: List[ActionInvocation]
    user_token: str
    lock: threading.Lock

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = WorkroomServer(WORKROOM_ALLOW_PRIVATE_WEBHOOK_URLS="true", WORKROOM_WEBHOOK_RETRY_DELAYS="1s,1s")
        cls.world = cls.server.world()
        port = free_port()
        bot_path = f"/api/bots/{cls.world['bot_id']}"
        # Subscribed to message.created only: clicks reach the bot that sent the message regardless.
        cls.server.admin("PATCH", bot_path, {"webhook_url": f"http://127.0.0.1:{port}/webhook"})
        secret = cls.server.admin("POST", bot_path + "/webhook-secret")["secret"]
        cls.client = WorkroomClient(cls.server.url, cls.world["key"])
        cls.receiver = WebhookReceiver(port=port, secret=secret, host="127.0.0.1")
        cls.clicks, cls.sizes, cls.lock = [], [], threading.Lock()

        @cls.receiver.action("approve", "reject")
        def decide(action: ActionInvocation) -> None:
            with cls.lock:
                cls.clicks.append(action)
            verdict = "approved" if action.value == "yes" else "rejected"
            cls.client.update_message(
                action.message_id,
                f"Deploy: {verdict} by {action.user_name}",
                actions=[button("undo", "Undo", "undo")],
            )

        @cls.receiver.action("size")
        def size(action: ActionInvocation) -> None:
            with cls.lock:
                cls.sizes.append(action)

        cls.receiver.start()
        status, _, body = http(
            "POST",
            cls.server.url + "/api/auth/login",
            {"email": cls.world["user"]["email"], "password": "alice-password"},
        )
        assert status == 200, body
        cls.user_token = body["token"]

    @classmethod
    def tearDownClass(cls) -> None:
        cls.receiver.stop()
        cls.server.stop()

    def click(self, message_id: str, body: Dict[str, Any]) -> Any:
        status, _, answer = http(
            "POST", f"{self.server.url}/api/messages/{message_id}/actions", body, self.user_token
        )
        self.assertEqual(status, 202, answer)
        return answer

    def current(self, message_id: str) -> Dict[str, Any]:
        items = self.client.read_messages(channel_id=self.world["channel_id"], limit=50)
        return dict([m for m in items if m["id"] == message_id][0])

    def test_a_click_reaches_the_handler_which_updates_the_message(self) -> None:
        sent = self.client.send_message("Deploy v2.3?", channel_id=self.world["channel_id"], actions=ACTIONS)
        self.assertEqual(
            sent["actions"],
            [
                {"type": "button", "id": "approve", "label": "Approve", "value": "yes", "style": "primary"},
                {"type": "button", "id": "reject", "label": "Reject", "value": "no", "style": "danger"},
                {
                    "type": "select",
                    "id": "size",
                    "placeholder": "Size",
                    "options": [{"label": "Small", "value": "s"}, {"label": "Large", "value": "l"}],
                },
            ],
        )
        answer = self.click(sent["id"], {"action_id": "approve"})
        name = self.world["user"]["display_name"]
        self.assertTrue(wait_for(lambda: self.current(sent["id"])["content"] == f"Deploy: approved by {name}"))
        self.assertEqual(
            self.current(sent["id"])["actions"],
            [{"type": "button", "id": "undo", "label": "Undo", "value": "undo", "style": "default"}],
        )
        with self.lock:
            click = [c for c in self.clicks if c.message_id == sent["id"]][0]
        self.assertEqual(click.action_id, "approve")
        self.assertEqual(click.action_type, "button")
        self.assertEqual(click.value, "yes")
        self.assertEqual(click.user_id, self.world["user"]["id"])
        self.assertEqual(click.user_name, name)
        self.assertEqual(click.channel_id, self.world["channel_id"])
        self.assertIsNone(click.topic_id)
        self.assertEqual(click.invocation_id, answer["invocation_id"])
        data: ActionInvokedData = click.data
        self.assertEqual(data["user"]["display_name"], name)
        self.assertEqual(click.envelope["event_type"], "action.invoked")
        self.assertEqual(click.envelope["bot_id"], self.world["bot_id"])

    def test_a_select_sends_the_chosen_option_to_its_own_handler(self) -> None:
        sent = self.client.send_message("Size?", channel_id=self.world["channel_id"], actions=ACTIONS)
        self.click(sent["id"], {"action_id": "size", "value": "l"})
        self.assertTrue(wait_for(lambda: any(s.message_id == sent["id"] for s in self.sizes)))
        with self.lock:
            chosen = [s for s in self.sizes if s.message_id == sent["id"]]
            decided = [c for c in self.clicks if c.message_id == sent["id"]]
        self.assertEqual([(s.action_type, s.value) for s in chosen], [("select", "l")])
        self.assertEqual(decided, [])  # the approve/reject handler did not run for it

    def test_update_message_keeps_replaces_or_removes_actions(self) -> None:
        sent = self.client.send_message("Poll", channel_id=self.world["channel_id"], actions=ACTIONS)
        kept = self.client.update_message(sent["id"], "Poll (still open)")
        self.assertEqual(kept["actions"], sent["actions"])
        replaced = self.client.update_message(sent["id"], "Poll", actions=[button("close", "Close")])
        self.assertEqual([a["id"] for a in replaced["actions"] or []], ["close"])
        removed = self.client.update_message(sent["id"], "Poll closed", actions=None)
        self.assertIsNone(removed["actions"])
        self.assertIsNone(self.current(sent["id"])["actions"])
        dm = self.client.send_dm(self.world["user"]["id"], "Approve?", actions=[button("ok", "OK", "ok")])
        ok = {"type": "button", "id": "ok", "label": "OK", "value": "ok", "style": "default"}
        self.assertEqual(dm["actions"], [ok])

    def test_invalid_actions_raise_with_the_field(self) -> None:
        with self.assertRaises(WorkroomError) as caught:
            self.client.send_message(
                "x", channel_id=self.world["channel_id"], actions=[button("a", "A"), button("a", "B")]
            )
        self.assertEqual((caught.exception.status, caught.exception.code), (400, "invalid_input"))
        self.assertEqual(caught.exception.field, "actions.1.id")
        with self.assertRaises(WorkroomError) as too_long:
            self.client.send_message("x", channel_id=self.world["channel_id"], actions=[button("a", "L" * 76)])
        self.assertEqual(too_long.exception.field, "actions.0.label")


class ActionRoutingTest(unittest.TestCase):
    """Which handlers a click runs, with deliveries signed here (no server)."""

    def deliver(self, receiver: WebhookReceiver, action_id: str) -> None:
        envelope = {
            "event_type": "action.invoked",
            "timestamp": "2026-11-23T10:00:00.000Z",
            "bot_id": "b1",
            "data": {
                "invocation_id": "i-" + action_id,
                "action_id": action_id,
                "action_type": "button",
                "value": "v",
                "user_id": "u1",
                "user": {"id": "u1", "display_name": "Ann"},
                "message_id": "m1",
                "bot_id": "b1",
                "channel_id": "c1",
                "topic_id": None,
                "dm_room_id": None,
                "invoked_at": "2026-11-23T10:00:00.000Z",
            },
            "event_id": "e-" + uuid.uuid4().hex,
        }
        body, headers = sign_delivery(envelope, SECRET, webhook_id="d-" + uuid.uuid4().hex)
        response = receiver.handle("POST", "/webhook", headers, body)
        self.assertEqual(response.status, 200)
        if response.after is not None:
            response.after()  # the handlers, run here instead of in a worker thread

    def test_handlers_run_for_their_ids_and_star_for_all(self) -> None:
        receiver = WebhookReceiver(secret=SECRET)
        ran: List[str] = []
        receiver.action("a", "b")(lambda act: ran.append("ab:" + act.action_id))
        receiver.action()(lambda act: ran.append("any:" + act.action_id))
        receiver.on("action.invoked")(lambda event: ran.append("event:" + event["data"]["action_id"]))
        self.deliver(receiver, "a")
        self.deliver(receiver, "c")
        self.assertEqual(ran, ["event:a", "ab:a", "any:a", "event:c", "any:c"])

    def test_a_failing_handler_does_not_stop_the_others(self) -> None:
        receiver = WebhookReceiver(secret=SECRET)
        ran: List[str] = []

        def boom(act: ActionInvocation) -> None:
            raise RuntimeError("handler bug")

        receiver.action("a")(boom)
        receiver.action("a")(lambda act: ran.append(act.user_name))
        with self.assertLogs("workroom.receiver", "ERROR") as logs:
            self.deliver(receiver, "a")
        self.assertEqual(ran, ["Ann"])
        self.assertIn("boom", logs.output[0])

    def test_empty_ids_are_refused(self) -> None:
        with self.assertRaises(ValueError):
            WebhookReceiver(secret=SECRET).action("")


if __name__ == "__main__":
    unittest.main()
