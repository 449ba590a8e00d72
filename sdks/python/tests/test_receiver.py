"""The webhook receiver and verify_signature: the shared test vectors, over real HTTP (http.server and
WSGI), replay and duplicate protection, handlers after the answer, and slash-command replies."""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple
from wsgiref.simple_server import WSGIRequestHandler, make_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _server import wait_for  # noqa: E402

from workroom import (  # noqa: E402
    CommandInvocation,
    SignatureError,
    WebhookReceiver,
    check_signature,
    sign_delivery,
    verify_signature,
)

SDKS = Path(__file__).resolve().parents[2]
VECTORS: Dict[str, Any] = json.loads((SDKS / "test-vectors.json").read_text(encoding="utf-8"))
BY_NAME = {v["name"]: v for v in VECTORS["vectors"]}
SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode("ascii")


def request_of(vector: Mapping[str, Any]) -> Tuple[bytes, Dict[str, str]]:
    headers = {
        "content-type": "application/json",
        "webhook-id": vector["webhook_id"],
        "webhook-timestamp": str(vector["webhook_timestamp"]),
        "webhook-signature": vector["webhook_signature"],
        "x-workroom-signature": vector["x_workroom_signature"],
    }
    return vector["body"].encode("utf-8"), headers


def tampered_request(t: Mapping[str, Any]) -> Tuple[Mapping[str, Any], bytes, Dict[str, str]]:
    base = BY_NAME[t["vector"]]
    body, headers = request_of(base)
    if "body" in t:
        body = t["body"].encode("utf-8")
    for name, value in (t.get("headers") or {}).items():
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    return base, body, headers


def post(url: str, body: bytes, headers: Mapping[str, str], timeout: float = 10) -> Tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


class VectorsTest(unittest.TestCase):
    def test_the_vector_file_is_what_the_generator_writes(self) -> None:
        done = subprocess.run(
            [sys.executable, str(SDKS / "make-test-vectors.py"), "--check"], capture_output=True, text=True
        )
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_every_unsigned_body_is_byte_identical_to_node_json_stringify(self) -> None:
        script = (
            "const v = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));"
            "process.stdout.write(JSON.stringify(v.vectors.map((x) => JSON.stringify(x.envelope))));"
        )
        done = subprocess.run(
            ["node", "-e", script, str(SDKS / "test-vectors.json")], capture_output=True, check=True
        )
        from_node: List[str] = json.loads(done.stdout.decode("utf-8"))
        self.assertEqual(len(from_node), len(VECTORS["vectors"]))
        for vector, text in zip(VECTORS["vectors"], from_node):
            with self.subTest(vector["name"]):
                self.assertEqual(text.encode("utf-8"), vector["unsigned_body"].encode("utf-8"))

    def test_the_vectors_cover_what_they_promise(self) -> None:
        names = set(BY_NAME)
        self.assertTrue({"message-created-non-ascii", "message-created-escapes", "command-invoked"} <= names)
        self.assertEqual(len(BY_NAME["message-created-50000-chars"]["envelope"]["data"]["content"]), 50_000)
        self.assertIn("\u2028", BY_NAME["message-created-escapes"]["envelope"]["data"]["content"])
        self.assertGreaterEqual(len(VECTORS["tampered"]), 7)

    def test_sign_delivery_reproduces_every_vector(self) -> None:
        for v in VECTORS["vectors"]:
            with self.subTest(v["name"]):
                body, headers = sign_delivery(
                    v["envelope"], v["secret"], webhook_id=v["webhook_id"], timestamp=v["webhook_timestamp"]
                )
                expected_body, expected_headers = request_of(v)
                self.assertEqual(body, expected_body)
                self.assertEqual(headers, expected_headers)

    def test_every_vector_verifies_by_default_and_with_each_signature_alone(self) -> None:
        for v in VECTORS["vectors"]:
            body, headers = request_of(v)
            now = v["webhook_timestamp"]
            with self.subTest(v["name"]):
                self.assertTrue(verify_signature(body, headers, v["secret"], now=now))
                standard_only = {k: x for k, x in headers.items() if k != "x-workroom-signature"}
                self.assertTrue(verify_signature(body, standard_only, v["secret"], now=now))
                x_only = {"x-workroom-signature": headers["x-workroom-signature"]}
                self.assertTrue(verify_signature(body, x_only, v["secret"], accept_any_signature=True, now=now))
                self.assertFalse(verify_signature(body, x_only, v["secret"], now=now))
                self.assertTrue(verify_signature(body, {}, v["secret"], accept_any_signature=True, now=now))
                self.assertFalse(verify_signature(body, {}, v["secret"], now=now))

    def test_every_tampered_variant_is_rejected(self) -> None:
        for t in VECTORS["tampered"]:
            base, body, headers = tampered_request(t)
            with self.subTest(t["name"]):
                with self.assertRaises(SignatureError):
                    check_signature(body, headers, base["secret"], now=base["webhook_timestamp"])

    def test_the_secret_must_be_a_whsec_string(self) -> None:
        body, headers = request_of(BY_NAME["message-created-ascii"])
        for bad in ("", "secret", "whsec_", "whsec_not base64!"):
            with self.subTest(bad), self.assertRaises(ValueError):
                verify_signature(body, headers, bad)
        with self.assertRaises(TypeError):
            verify_signature(body.decode("utf-8"), headers, SECRET)  # type: ignore[arg-type]


class Recorder:
    def __init__(self) -> None:
        self.events: List[Dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, event: Dict[str, Any]) -> None:
        with self.lock:
            self.events.append(event)

    def types(self) -> List[str]:
        with self.lock:
            return [e["event_type"] for e in self.events]


class ReceiverOverHttpTest(unittest.TestCase):
    """A started receiver on a free port whose clock reads the vectors' delivery time."""

    def setUp(self) -> None:
        self.now = float(VECTORS["vectors"][0]["webhook_timestamp"])
        self.secret = VECTORS["vectors"][0]["secret"]
        self.receiver = WebhookReceiver(
            port=0, secret=self.secret, host="127.0.0.1", clock=lambda: self.now, command_timeout=1.0
        )
        self.everything = Recorder()
        self.messages = Recorder()
        self.receiver.on("*")(self.everything)
        self.receiver.on("message.created")(self.messages)
        self.receiver.start()
        self.addCleanup(self.receiver.stop)

    def delivery(
        self, name: str, webhook_id: Optional[str] = None, **data: Any
    ) -> Tuple[bytes, Dict[str, str]]:
        """A vector's envelope signed with this receiver's secret (each vector has a secret of its own),
        with ``data`` members replaced."""
        v = BY_NAME[name]
        envelope = dict(v["envelope"], data=dict(v["envelope"]["data"], **data))
        return sign_delivery(envelope, self.secret, webhook_id=webhook_id or v["webhook_id"], timestamp=int(self.now))

    def test_defaults(self) -> None:
        r = WebhookReceiver(secret=SECRET)
        self.assertEqual((r.port, r.path, r.tolerance), (8000, "/webhook", 300))
        self.assertNotIn(SECRET, repr(r))

    def test_every_vector_is_accepted_and_reaches_its_handlers(self) -> None:
        for v in VECTORS["vectors"]:
            receiver = WebhookReceiver(port=0, secret=v["secret"], host="127.0.0.1", clock=lambda: self.now)
            got = Recorder()
            receiver.on("*")(got)
            with receiver:
                body, headers = request_of(v)
                status, answer = post(receiver.url, body, headers)
                with self.subTest(v["name"]):
                    self.assertEqual(status, 200, answer)
                    self.assertTrue(wait_for(lambda: len(got.events) == 1))
                    self.assertEqual(got.events[0], json.loads(v["body"]))

    def test_every_tampered_variant_answers_401_and_runs_nothing(self) -> None:
        for t in VECTORS["tampered"]:
            base, body, headers = tampered_request(t)
            receiver = WebhookReceiver(port=0, secret=base["secret"], host="127.0.0.1", clock=lambda: self.now)
            got = Recorder()
            receiver.on("*")(got)
            with receiver, self.assertLogs("workroom.receiver", logging.WARNING):
                status, answer = post(receiver.url, body, headers)
            with self.subTest(t["name"]):
                self.assertEqual(status, 401, answer)
                self.assertEqual(json.loads(answer)["error"], "invalid_signature")
                self.assertIsInstance(json.loads(answer)["message"], str)  # the Node SDK's shape too
                self.assertEqual(got.events, [])

    def test_a_stale_timestamp_is_refused_with_the_real_clock(self) -> None:
        receiver = WebhookReceiver(port=0, secret=SECRET, host="127.0.0.1")
        got = Recorder()
        receiver.on("*")(got)
        envelope = {"event_type": "message.created", "timestamp": "x", "bot_id": "b", "data": {}, "event_id": "e1"}
        with receiver:
            stale_body, stale = sign_delivery(envelope, SECRET, webhook_id="msg_1", timestamp=int(time.time()) - 301)
            with self.assertLogs("workroom.receiver", logging.WARNING):
                self.assertEqual(post(receiver.url, stale_body, stale)[0], 401)
            fresh_body, fresh = sign_delivery(envelope, SECRET, webhook_id="msg_2")
            self.assertEqual(post(receiver.url, fresh_body, fresh)[0], 200)
            self.assertTrue(wait_for(lambda: len(got.events) == 1))
        self.assertEqual(got.events[0]["event_id"], "e1")

    def test_a_retried_delivery_is_handled_once(self) -> None:
        body, headers = request_of(BY_NAME["message-created-ascii"])
        first = post(self.receiver.url, body, headers)
        second = post(self.receiver.url, body, headers)
        self.assertEqual(first, (200, b'{"ok":true}'))
        self.assertEqual(second[0], 200)
        self.assertTrue(json.loads(second[1])["duplicate"])
        self.assertTrue(wait_for(lambda: len(self.everything.events) >= 1))
        time.sleep(0.2)
        self.assertEqual(self.everything.types(), ["message.created"])
        self.assertEqual(self.messages.types(), ["message.created"])

    def test_the_duplicate_memory_is_bounded(self) -> None:
        receiver = WebhookReceiver(secret=SECRET, dedupe_size=3, clock=lambda: 1000.0)
        envelope = {"event_type": "x", "data": {}}
        for i in range(5):
            body, headers = sign_delivery(envelope, SECRET, webhook_id=f"msg_{i}", timestamp=1000)
            self.assertEqual(receiver.handle("POST", "/webhook", headers, body).status, 200)
        self.assertEqual(list(receiver._seen), ["msg_2", "msg_3", "msg_4"])
        body, headers = sign_delivery(envelope, SECRET, webhook_id="msg_0", timestamp=1000)
        self.assertEqual(receiver.handle("POST", "/webhook", headers, body).body, b'{"ok":true}')  # forgotten
        body, headers = sign_delivery(envelope, SECRET, webhook_id="msg_4", timestamp=1000)
        self.assertIn(b'"duplicate":true', receiver.handle("POST", "/webhook", headers, body).body)

    def test_handlers_run_after_the_answer(self) -> None:
        answered = threading.Event()
        seen_answer_first: List[bool] = []
        finished = threading.Event()

        @self.receiver.on("message.created")
        def slow(event: Dict[str, Any]) -> None:
            seen_answer_first.append(answered.wait(5))
            finished.set()

        body, headers = self.delivery("message-created-non-ascii")
        started = time.monotonic()
        status, _ = post(self.receiver.url, body, headers)
        elapsed = time.monotonic() - started
        answered.set()
        self.assertEqual(status, 200)
        self.assertLess(elapsed, 2)
        self.assertTrue(finished.wait(5))
        self.assertEqual(seen_answer_first, [True])

    def test_a_failing_handler_is_logged_and_the_others_still_run(self) -> None:
        @self.receiver.on("message.created")
        def broken(event: Dict[str, Any]) -> None:
            raise RuntimeError("boom")

        after = Recorder()
        self.receiver.on("message.*")(after)
        body, headers = self.delivery("message-created-escapes")
        with self.assertLogs("workroom.receiver", logging.ERROR) as logs:
            self.assertEqual(post(self.receiver.url, body, headers)[0], 200)
            self.assertTrue(wait_for(lambda: len(after.events) == 1))
        self.assertIn("broken", "\n".join(logs.output))
        self.assertIn("boom", "\n".join(logs.output))

    def test_a_command_handler_answers_with_the_reply(self) -> None:
        calls: List[CommandInvocation] = []

        @self.receiver.command("/Echo")
        def echo(cmd: CommandInvocation) -> str:
            calls.append(cmd)
            return f"You said: {cmd.args} ✓"

        body, headers = self.delivery("command-invoked")
        status, answer = post(self.receiver.url, body, headers)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(answer), {"content": "You said: hello world ✓"})
        self.assertEqual((calls[0].command, calls[0].text), ("echo", "/echo hello world"))
        self.assertEqual(calls[0].channel_id, BY_NAME["command-invoked"]["envelope"]["data"]["channel_id"])
        self.assertTrue(wait_for(lambda: self.everything.types() == ["command.invoked"]))

    def test_a_command_reply_can_be_ephemeral_or_absent(self) -> None:
        replies: List[Any] = [{"content": "only you", "ephemeral": True}, None]
        self.receiver.command("echo")(lambda cmd: replies.pop(0))
        for webhook_id, expected in (("msg_a", {"content": "only you", "ephemeral": True}), ("msg_b", {"ok": True})):
            body, headers = self.delivery("command-invoked", webhook_id, invocation_id=webhook_id)
            status, answer = post(self.receiver.url, body, headers)
            self.assertEqual((status, json.loads(answer)), (200, expected))

    def test_one_invocation_runs_once_even_as_two_events(self) -> None:
        runs: List[str] = []

        @self.receiver.command("echo")
        def echo(cmd: CommandInvocation) -> str:
            runs.append(cmd.args)
            return "done"

        first = post(self.receiver.url, *self.delivery("command-invoked", "msg_now", invocation_id="inv-1"))
        queued = post(self.receiver.url, *self.delivery("command-invoked", "msg_queued", invocation_id="inv-1"))
        other = post(self.receiver.url, *self.delivery("command-invoked", "msg_other", invocation_id="inv-2"))
        self.assertEqual(first, (200, b'{"content":"done"}'))
        self.assertEqual(json.loads(queued[1]), {"ok": True, "duplicate": True})
        self.assertEqual(other, (200, b'{"content":"done"}'))
        self.assertEqual(runs, ["hello world", "hello world"])  # inv-1 once, inv-2 once

    def test_a_slow_command_answers_without_a_reply_within_the_time_out(self) -> None:
        release = threading.Event()
        self.addCleanup(release.set)
        self.receiver.command("echo")(lambda cmd: release.wait(10) and "late")
        body, headers = self.delivery("command-invoked")
        started = time.monotonic()
        with self.assertLogs("workroom.receiver", logging.WARNING):
            status, answer = post(self.receiver.url, body, headers)
        self.assertEqual((status, json.loads(answer)), (200, {"ok": True}))
        self.assertLess(time.monotonic() - started, 3)

    def test_other_paths_methods_and_sizes(self) -> None:
        body, headers = request_of(BY_NAME["message-created-ascii"])
        self.assertEqual(post(self.receiver.url + "x", body, headers)[0], 404)
        req = urllib.request.Request(self.receiver.url, method="GET")
        with self.assertRaises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(req, timeout=5)
        self.assertEqual((caught.exception.code, caught.exception.headers["Allow"]), (405, "POST"))
        small = WebhookReceiver(port=0, secret=SECRET, host="127.0.0.1", max_body_bytes=100)
        with small:
            self.assertEqual(post(small.url, body, headers)[0], 413)
        self.assertEqual(self.everything.events, [])

    def test_the_relaxed_rule_accepts_one_signature_and_dedupes_by_event_id(self) -> None:
        v = BY_NAME["message-created-ascii"]
        relaxed = WebhookReceiver(
            port=0, secret=v["secret"], host="127.0.0.1", accept_any_signature=True, clock=lambda: self.now
        )
        got = Recorder()
        relaxed.on("*")(got)
        body, headers = request_of(v)
        only_x = {"content-type": "application/json", "x-workroom-signature": headers["x-workroom-signature"]}
        with relaxed:
            self.assertEqual(post(relaxed.url, body, only_x), (200, b'{"ok":true}'))
            self.assertIn(b'"duplicate":true', post(relaxed.url, body, {"content-type": "application/json"})[1])
            with self.assertLogs("workroom.receiver", logging.WARNING):
                self.assertEqual(post(relaxed.url, body.replace(b"Hello", b"Jello"), only_x)[0], 401)
            self.assertTrue(wait_for(lambda: len(got.events) == 1))
        self.assertEqual(len(got.events), 1)
        # The default rule refuses the same request: it wants the Standard Webhooks headers.
        with self.assertLogs("workroom.receiver", logging.WARNING):
            self.assertEqual(post(self.receiver.url, body, only_x)[0], 401)

    def test_a_receiver_needs_a_valid_secret(self) -> None:
        with self.assertRaises(ValueError):
            WebhookReceiver(secret="")
        with self.assertRaises(ValueError):
            WebhookReceiver(secret="not-whsec")


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class WsgiTest(unittest.TestCase):
    def test_the_wsgi_app_verifies_and_runs_handlers_after_the_answer(self) -> None:
        v = BY_NAME["message-created-50000-chars"]
        receiver = WebhookReceiver(secret=v["secret"], clock=lambda: float(v["webhook_timestamp"]))
        got = Recorder()
        receiver.on("message.created")(got)
        httpd = make_server("127.0.0.1", 0, receiver.wsgi_app, handler_class=_QuietHandler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.addCleanup(receiver.stop)
        self.addCleanup(httpd.server_close)
        self.addCleanup(httpd.shutdown)
        url = f"http://127.0.0.1:{httpd.server_address[1]}/webhook"
        body, headers = request_of(v)
        self.assertEqual(post(url, body, headers), (200, b'{"ok":true}'))
        self.assertTrue(wait_for(lambda: len(got.events) == 1))
        self.assertEqual(len(got.events[0]["data"]["content"]), 50_000)
        tampered = body.replace(b"Workroom", b"Workro0m", 1)
        with self.assertLogs("workroom.receiver", logging.WARNING):
            self.assertEqual(post(url, tampered, headers)[0], 401)
        self.assertEqual(len(got.events), 1)


class RunTest(unittest.TestCase):
    def test_run_stops_cleanly_on_sigterm(self) -> None:
        script = (
            "import sys; sys.path.insert(0, sys.argv[1]); from workroom import WebhookReceiver\n"
            "WebhookReceiver(port=0, secret=sys.argv[2], host='127.0.0.1').run()\n"
            "print('stopped', flush=True)\n"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", script, str(SDKS / "python"), SECRET], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        self.assertIn("listening on http://127.0.0.1:", proc.stdout.readline())
        proc.terminate()
        out, _ = proc.communicate(timeout=10)
        self.assertEqual((proc.returncode, out.strip()), (0, "stopped"))


class EnvironmentSecretTest(unittest.TestCase):
    def test_no_secret_in_environment_or_argument_refuses(self) -> None:
        import os

        saved: Optional[str] = os.environ.pop("WORKROOM_WEBHOOK_SECRET", None)
        try:
            with self.assertRaises(ValueError):
                WebhookReceiver()
            os.environ["WORKROOM_WEBHOOK_SECRET"] = SECRET
            self.assertEqual(WebhookReceiver().path, "/webhook")
        finally:
            os.environ.pop("WORKROOM_WEBHOOK_SECRET", None)
            if saved is not None:
                os.environ["WORKROOM_WEBHOOK_SECRET"] = saved


if __name__ == "__main__":
    unittest.main()
