"""WorkroomClient against a real Workroom server (see _server.py)."""

from __future__ import annotations

import http.client as http_client
import http.server as http_server
import json
import socket
import socketserver
import sys
import threading
import time
import unittest
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _server import WorkroomServer, http  # noqa: E402

from workroom import Attempt, WorkroomClient, WorkroomError  # noqa: E402

server: Optional[WorkroomServer] = None


def setUpModule() -> None:
    global server
    server = WorkroomServer()


def tearDownModule() -> None:
    if server is not None:
        server.stop()


def srv() -> WorkroomServer:
    assert server is not None
    return server


def channel_messages(channel_id: str) -> List[Dict[str, Any]]:
    """What a user sees in the channel (through the admin, not the SDK)."""
    items: List[Dict[str, Any]] = srv().admin("GET", f"/api/channels/{channel_id}/messages?limit=100")["items"]
    return items


class ClientTest(unittest.TestCase):
    world: Dict[str, Any]
    client: WorkroomClient

    @classmethod
    def setUpClass(cls) -> None:
        cls.world = srv().world()
        cls.client = WorkroomClient(srv().url, cls.world["key"])

    def test_auth_answers_the_bot_of_the_key(self) -> None:
        info = self.client.auth()
        self.assertEqual(info["bot_id"], self.world["bot_id"])
        self.assertEqual(self.client.bot_id, self.world["bot_id"])
        self.assertIsNone(info["scopes"] or None)

    def test_a_bad_key_raises_unauthenticated_with_a_request_id(self) -> None:
        bad = WorkroomClient(srv().url, "wrbk_00000000_live_" + "0" * 48)
        with self.assertRaises(WorkroomError) as caught:
            bad.auth()
        err = caught.exception
        self.assertEqual((err.code, err.status), ("unauthenticated", 401))
        self.assertTrue(err.request_id)
        self.assertIsNone(err.retry_after)
        self.assertNotIn("0" * 48, repr(bad))

    def test_send_update_delete_in_a_channel(self) -> None:
        channel_id = self.world["channel_id"]
        sent = self.client.send_message("hello from python ✓", channel_id=channel_id)
        self.assertEqual(sent["channel_id"], channel_id)
        self.assertEqual(sent["bot_id"], self.world["bot_id"])
        seen = {m["id"]: m for m in channel_messages(channel_id)}
        self.assertEqual(seen[sent["id"]]["content"], "hello from python ✓")

        edited = self.client.update_message(sent["id"], "edited", content_html="<b>edited</b>")
        self.assertEqual(edited["content"], "edited")
        self.assertIsNotNone(edited["edited_at"])
        self.assertEqual({m["id"]: m for m in channel_messages(channel_id)}[sent["id"]]["content"], "edited")

        deleted = self.client.delete_message(sent["id"])
        self.assertTrue(deleted["deleted"])
        self.assertNotIn(sent["id"], {m["id"] for m in channel_messages(channel_id)})
        with self.assertRaises(WorkroomError) as caught:
            self.client.update_message(sent["id"], "too late")
        self.assertEqual((caught.exception.code, caught.exception.status), ("not_found", 404))

    def test_send_to_a_topic_and_read_back(self) -> None:
        topic_id = self.world["topic_id"]
        sent = self.client.send_message("in a topic", topic_id=topic_id)
        self.assertEqual(sent["topic_id"], topic_id)
        read = self.client.read_messages(topic_id=topic_id, limit=5)
        self.assertEqual(read[0]["id"], sent["id"])

    def test_exactly_one_container(self) -> None:
        with self.assertRaises(ValueError):
            self.client.send_message("x", channel_id=self.world["channel_id"], topic_id=self.world["topic_id"])
        with self.assertRaises(ValueError):
            self.client.send_message("x")

    def test_dm_to_a_user_then_reply_in_the_room(self) -> None:
        user_id = self.world["user"]["id"]
        first = self.client.send_dm(user_id, "hi Alice")
        room = first["dm_room_id"]
        self.assertTrue(room)
        second = self.client.send_message("again", dm_room_id=room)
        self.assertEqual(second["dm_room_id"], room)
        self.assertEqual(self.client.send_dm(user_id, "third")["dm_room_id"], room)
        contents = [m["content"] for m in self.client.read_messages(dm_room_id=room)]
        self.assertEqual(contents[:3], ["third", "again", "hi Alice"])

    def test_the_same_idempotency_key_posts_once(self) -> None:
        key = str(uuid.uuid4())
        a = self.client.send_message("once", channel_id=self.world["channel_id"], idempotency_key=key)
        b = self.client.send_message("once", channel_id=self.world["channel_id"], idempotency_key=key)
        self.assertEqual(a["id"], b["id"])
        with self.assertRaises(WorkroomError) as caught:
            self.client.send_message("other", channel_id=self.world["channel_id"], idempotency_key=key)
        self.assertEqual((caught.exception.code, caught.exception.status), ("idempotency_conflict", 409))

    def test_tools_channels_tasks_search_users(self) -> None:
        containers = self.client.list_channels()
        self.assertIn(self.world["channel_id"], [c["id"] for c in containers.get("channels", [])])
        self.assertIn(self.world["topic_id"], [t["id"] for t in containers.get("topics", [])])
        only_topics = self.client.list_channels("topics", project_id=self.world["project_id"])
        self.assertNotIn("channels", only_topics)

        alice = self.world["user"]
        task = self.client.create_task(
            self.world["topic_id"], "Ship the SDK", priority="high", assignee_id=alice["id"], due_date="2030-01-31"
        )
        self.assertEqual((task["status"], task["priority"], task["assignee_id"]), ("todo", "high", alice["id"]))
        updated = self.client.update_task(task["task_id"], status="done", assignee_id=None)
        self.assertEqual((updated["status"], updated["assignee_id"], updated["title"]), ("done", None, "Ship the SDK"))
        self.assertEqual(updated["due_date"], "2030-01-31")
        done = self.client.list_tasks(self.world["topic_id"], status="done")
        self.assertIn(task["task_id"], [t["task_id"] for t in done])
        self.assertNotIn(task["task_id"], [t["task_id"] for t in self.client.list_tasks(self.world["topic_id"], "todo")])
        self.assertEqual(self.client.get_task(task["task_id"])["status"], "done")

        marker = "needle-" + uuid.uuid4().hex[:8]
        self.client.send_message(f"a {marker} in the haystack", channel_id=self.world["channel_id"])
        found = self.client.search(marker, type="messages")
        self.assertEqual([m["content"] for m in found.get("messages", [])], [f"a {marker} in the haystack"])

        self.assertEqual(self.client.get_user_info(user_id=alice["id"])["email"], alice["email"])
        self.assertEqual(self.client.get_user_info(email=alice["email"].upper())["id"], alice["id"])
        with self.assertRaises(WorkroomError) as caught:
            self.client.get_user_info(email="nobody@python-sdk.test")
        self.assertEqual(caught.exception.code, "not_found")
        engineers = self.client.list_users(department="engineer", limit=200)
        self.assertIn(alice["id"], [u["id"] for u in engineers])
        self.assertNotIn(alice["id"], [u["id"] for u in self.client.list_users(role="system_admin")])

    def test_custom_commands_register_list_delete(self) -> None:
        name = "echo" + uuid.uuid4().hex[:6]
        made = self.client.register_command(name, "Repeats what you say", usage_hint="/" + name + " <text>")
        self.assertEqual((made["command"], made["bot_id"]), (name, self.world["bot_id"]))
        self.assertIn(name, [c["command"] for c in self.client.list_commands()])
        palette = srv().admin("GET", "/api/commands")["items"]
        self.assertIn(name, [c["command"] for c in palette])
        with self.assertRaises(WorkroomError) as caught:
            self.client.register_command(name, "again")
        self.assertEqual((caught.exception.code, caught.exception.status), ("conflict", 409))
        self.assertTrue(self.client.delete_command(name)["deleted"])
        self.assertNotIn(name, [c["command"] for c in self.client.list_commands()])

    def test_bad_input_names_the_field(self) -> None:
        with self.assertRaises(WorkroomError) as caught:
            self.client.send_message("x" * 50_001, channel_id=self.world["channel_id"])
        err = caught.exception
        self.assertEqual((err.code, err.status, err.field), ("invalid_input", 400, "content"))
        with self.assertRaises(WorkroomError) as caught:
            self.client.get_task(str(uuid.uuid4()))
        self.assertEqual(caught.exception.status, 404)

    def test_a_50000_character_message_goes_through(self) -> None:
        text = ("Workroom ✓ été " * 4000)[:50_000]
        sent = self.client.send_message(text, channel_id=self.world["channel_id"])
        self.assertEqual(sent["content"], text)


class ScopeTest(unittest.TestCase):
    def test_a_key_without_the_scope_gets_insufficient_scope(self) -> None:
        world = srv().world(scopes=["messages:read"])
        client = WorkroomClient(srv().url, world["key"])
        with self.assertRaises(WorkroomError) as caught:
            client.send_message("nope", channel_id=world["channel_id"])
        err = caught.exception
        self.assertEqual((err.code, err.status, err.scope), ("insufficient_scope", 403, "messages:write"))
        self.assertEqual(channel_messages(world["channel_id"]), [])


class _LosesFirstAnswer(socketserver.ThreadingTCPServer):
    """A proxy in front of the server that forwards each request but drops the answer of the first one
    (the connection closes as if the network failed after the server had done the work)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.requests = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _ProxyHandler)


class _ProxyHandler(socketserver.StreamRequestHandler):
    server: _LosesFirstAnswer

    def handle(self) -> None:
        request_line = self.rfile.readline().decode("latin-1").strip()
        if not request_line:
            return
        method, target, _ = request_line.split(" ", 2)
        headers: Dict[str, str] = {}
        while True:
            line = self.rfile.readline().decode("latin-1")
            if line in ("\r\n", "\n", ""):
                break
            name, _, value = line.partition(":")
            headers[name.strip()] = value.strip()
        body = self.rfile.read(int(headers.get("Content-Length", "0")))
        upstream = http_client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=10)
        headers.pop("Connection", None)
        upstream.request(method, target, body=body, headers=headers)
        answer = upstream.getresponse()
        payload = answer.read()
        with self.server.lock:
            self.server.requests += 1
            lose = self.server.requests == 1
        if lose:
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(f"HTTP/1.1 {answer.status} {answer.reason}\r\n".encode("latin-1"))
        for name, value in answer.getheaders():
            if name.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                self.wfile.write(f"{name}: {value}\r\n".encode("latin-1"))
        self.wfile.write(f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode("latin-1"))
        self.wfile.write(payload)


class RetryTest(unittest.TestCase):
    def test_a_lost_answer_is_retried_with_the_same_key_and_posts_once(self) -> None:
        world = srv().world()
        proxy = _LosesFirstAnswer(srv().port)
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        attempts: List[Attempt] = []
        try:
            client = WorkroomClient(
                f"http://127.0.0.1:{proxy.server_address[1]}", world["key"], on_attempt=attempts.append
            )
            sent = client.send_message("exactly once", channel_id=world["channel_id"])
        finally:
            proxy.shutdown()
            proxy.server_close()
        self.assertEqual([a.status for a in attempts], [None, 201])
        self.assertEqual(attempts[0].error, "network_error")
        self.assertIsNotNone(attempts[0].idempotency_key)
        self.assertEqual(attempts[0].idempotency_key, attempts[1].idempotency_key)
        messages = channel_messages(world["channel_id"])
        self.assertEqual([(m["id"], m["content"]) for m in messages], [(sent["id"], "exactly once")])

    def test_a_search_timeout_is_not_retried_but_another_503_is(self) -> None:
        answers = {"/api/search": "search_timeout", "/api/bots/auth": "unavailable"}
        hits: List[str] = []

        class Answer503(http_server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                path = self.path.split("?")[0]
                hits.append(path)
                body = json.dumps({"error": {"code": answers[path], "message": "over budget"}}).encode()
                self.send_response(503)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.do_GET()

            def log_message(self, *args: Any) -> None:
                pass

        stub = http_server.ThreadingHTTPServer(("127.0.0.1", 0), Answer503)
        threading.Thread(target=stub.serve_forever, daemon=True).start()
        try:
            client = WorkroomClient(f"http://127.0.0.1:{stub.server_address[1]}", "wrbk_x", max_retries=2)
            setattr(client, "_backoff", lambda attempt: 0.01)  # no retry wait (a method, so not assigned directly)
            with self.assertRaises(WorkroomError) as caught:
                client.search("anything")
            self.assertEqual((caught.exception.code, caught.exception.status), ("search_timeout", 503))
            self.assertEqual(hits, ["/api/search"])
            hits.clear()
            with self.assertRaises(WorkroomError) as caught:
                client.auth()
            self.assertEqual(caught.exception.code, "unavailable")
            self.assertEqual(hits, ["/api/bots/auth"] * 3)  # the server did nothing: retried
        finally:
            stub.shutdown()
            stub.server_close()

    def test_connection_refused_is_retried_then_raised(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        attempts: List[Attempt] = []
        client = WorkroomClient(f"http://127.0.0.1:{port}", "wrbk_x", max_retries=2, on_attempt=attempts.append)
        with self.assertRaises(WorkroomError) as caught:
            client.auth()
        self.assertEqual((caught.exception.code, caught.exception.status), ("connection_refused", None))
        self.assertEqual(len(attempts), 3)

    def test_a_silent_server_times_out(self) -> None:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(8)  # accepts connections, never answers
            port = listener.getsockname()[1]
            attempts: List[Attempt] = []
            client = WorkroomClient(
                f"http://127.0.0.1:{port}", "wrbk_x", timeout=0.3, max_retries=1, on_attempt=attempts.append
            )
            started = time.monotonic()
            with self.assertRaises(WorkroomError) as caught:
                client.read_messages(channel_id=str(uuid.uuid4()))
            self.assertEqual(caught.exception.code, "timeout")
            self.assertEqual([a.error for a in attempts], ["timeout", "timeout"])
            self.assertLess(time.monotonic() - started, 3)
            # A post the server does not deduplicate is not repeated after a time-out.
            attempts.clear()
            with self.assertRaises(WorkroomError):
                client._bot_id = "00000000-0000-0000-0000-000000000000"
                client.register_command("x", "y")
            self.assertEqual(len(attempts), 1)


class RateLimitTest(unittest.TestCase):
    """A server whose bot keys may make one request a second (burst 1)."""

    limited: WorkroomServer

    @classmethod
    def setUpClass(cls) -> None:
        cls.limited = WorkroomServer(WORKROOM_RATE_LIMIT_BOT_PER_SECOND="1", WORKROOM_RATE_LIMIT_BOT_BURST="1")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.limited.stop()

    def test_429_is_retried_after_retry_after_with_the_same_key_and_posts_once(self) -> None:
        world = self.limited.world()
        attempts: List[Attempt] = []
        client = WorkroomClient(self.limited.url, world["key"], on_attempt=attempts.append)
        sent = [client.send_message(f"burst {i}", channel_id=world["channel_id"]) for i in range(3)]

        limited = [a for a in attempts if a.status == 429]
        self.assertGreaterEqual(len(limited), 1, attempts)
        for a in limited:  # each 429 is followed by the retry of the same call, with the same key
            after = attempts[attempts.index(a) + 1]
            self.assertEqual(after.idempotency_key, a.idempotency_key)
        self.assertEqual([a.status for a in attempts if a.status != 429], [201, 201, 201])
        self.assertEqual(len({a.idempotency_key for a in attempts}), 3)

        status, _, listed = http(
            "GET", f"{self.limited.url}/api/channels/{world['channel_id']}/messages", token=self.limited.admin_token
        )
        self.assertEqual(status, 200)
        self.assertEqual(sorted(m["content"] for m in listed["items"]), ["burst 0", "burst 1", "burst 2"])
        self.assertEqual(sorted(m["id"] for m in listed["items"]), sorted(m["id"] for m in sent))

    def test_a_retry_after_longer_than_allowed_raises_rate_limited(self) -> None:
        world = self.limited.world()
        client = WorkroomClient(self.limited.url, world["key"], max_retry_delay=0.01)
        with self.assertRaises(WorkroomError) as caught:
            for i in range(3):
                client.read_messages(channel_id=world["channel_id"])
        err = caught.exception
        self.assertEqual((err.code, err.status), ("rate_limited", 429))
        self.assertIsNotNone(err.retry_after)
        assert err.retry_after is not None
        self.assertGreater(err.retry_after, 0)


if __name__ == "__main__":
    unittest.main()
