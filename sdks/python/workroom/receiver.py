"""WebhookReceiver: receives Workroom's outgoing webhooks, verifies them and runs your handlers.

The pitfalls it exists to avoid:

- it verifies the signature from the raw bytes, before anything parses the body;
- it answers ``200`` at once and runs handlers afterwards in worker threads (the server gives a receiver
  5 seconds), logging handler errors instead of returning them (a 500 would only make the server retry);
- it drops a delivery whose ``webhook-id`` it has already accepted (the server retries, so the same event
  can arrive twice), remembering a bounded number of ids;
- a slash command's handler is the one exception to "answer first": its return value *is* the answer (the
  server posts ``{"content": ...}`` from a 2xx answer as the bot's reply), so it runs before the answer,
  bounded by ``command_timeout`` (under the server's 5 seconds);
- a click on one of the bot's message actions (``action.invoked``, docs/ACTIONS.md) runs its
  ``@receiver.action(...)`` handlers after the answer, like events; the bot answers by editing its message.

Use it standalone (``start()`` / ``run()``, an ``http.server`` in a background thread) or mount
``receiver.wsgi_app`` in any WSGI server or framework.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import signal
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Tuple,
    TypeVar,
    Union,
    cast,
)

from .client import post_json
from .errors import WorkroomError
from .signing import DEFAULT_TOLERANCE_SECONDS, SignatureError, check_secret, check_signature, public_key_bytes
from .types import ActionInvokedData, CommandReply, Envelope

log = logging.getLogger("workroom.receiver")

Handler = Callable[[Envelope], Any]
CommandResult = Union[str, CommandReply, Mapping[str, Any], None]
CommandHandler = Callable[["CommandInvocation"], CommandResult]
ActionHandler = Callable[["ActionInvocation"], Any]
# The decorators give back the function as it was declared (whatever its parameter annotation: dict,
# Envelope, Mapping), so bound to any callable.
H = TypeVar("H", bound=Callable[..., Any])
C = TypeVar("C", bound=Callable[..., Any])
A = TypeVar("A", bound=Callable[..., Any])

_OK = b'{"ok":true}'


@dataclass(frozen=True)
class CommandInvocation:
    """A user ran one of the bot's slash commands (the ``command.invoked`` event)."""

    command: str
    args: str
    text: str
    user_id: Optional[str]
    channel_id: Optional[str]
    topic_id: Optional[str]
    dm_room_id: Optional[str]
    invocation_id: Optional[str]
    response_url: Optional[str] = field(repr=False)  # a credential: posts as the bot, 30 minutes, 5 uses
    envelope: Envelope = field(repr=False)

    def respond(
        self,
        content: str,
        *,
        ephemeral: Optional[bool] = None,
        content_html: Optional[str] = None,
        timeout: float = 10.0,
    ) -> Dict[str, Any]:
        """Answers the command later, from any thread, through its response URL (no API key needed):
        posted as the bot's reply like a returned value. Not retried (each use counts; at most 5).
        Raises :class:`WorkroomError` when the server refuses (e.g. the URL expired after 30 minutes)."""
        if not self.response_url:
            raise WorkroomError("This invocation carries no response URL", code="no_response_url")
        reply = _reply_dict({"content": content, "ephemeral": ephemeral, "content_html": content_html})
        return cast(Dict[str, Any], post_json(self.response_url, reply, timeout))

    @classmethod
    def from_envelope(cls, envelope: Envelope) -> "CommandInvocation":
        given = envelope.get("data")
        data: Mapping[str, Any] = given if isinstance(given, Mapping) else {}

        def text(name: str) -> Optional[str]:
            value = data.get(name)
            return value if isinstance(value, str) else None

        return cls(
            command=text("command") or "",
            args=text("args") or "",
            text=text("text") or "",
            user_id=text("user_id"),
            channel_id=text("channel_id"),
            topic_id=text("topic_id"),
            dm_room_id=text("dm_room_id"),
            invocation_id=text("invocation_id"),
            response_url=text("response_url"),
            envelope=envelope,
        )


@dataclass(frozen=True)
class ActionInvocation:
    """A user clicked a button or chose an option of one of the bot's messages (the ``action.invoked`` event).

    Answer by editing the message: ``client.update_message(action.message_id, "...", actions=None)``."""

    action_id: str
    action_type: str  # "button" or "select"
    value: str  # the button's value, or the option chosen
    user_id: str
    user_name: str  # the clicking user's display name
    message_id: str
    bot_id: Optional[str]
    channel_id: Optional[str]
    topic_id: Optional[str]
    dm_room_id: Optional[str]
    invocation_id: Optional[str]
    invoked_at: Optional[str]
    envelope: Envelope = field(repr=False)

    @property
    def data(self) -> ActionInvokedData:
        """The event's ``data`` as sent."""
        return cast(ActionInvokedData, self.envelope.get("data") or {})

    @classmethod
    def from_envelope(cls, envelope: Envelope) -> "ActionInvocation":
        given = envelope.get("data")
        data: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        user = data.get("user")
        user_map: Mapping[str, Any] = user if isinstance(user, Mapping) else {}

        def text(source: Mapping[str, Any], name: str) -> Optional[str]:
            value = source.get(name)
            return value if isinstance(value, str) else None

        return cls(
            action_id=text(data, "action_id") or "",
            action_type=text(data, "action_type") or "",
            value=text(data, "value") or "",
            user_id=text(data, "user_id") or "",
            user_name=text(user_map, "display_name") or "",
            message_id=text(data, "message_id") or "",
            bot_id=text(data, "bot_id"),
            channel_id=text(data, "channel_id"),
            topic_id=text(data, "topic_id"),
            dm_room_id=text(data, "dm_room_id"),
            invocation_id=text(data, "invocation_id"),
            invoked_at=text(data, "invoked_at"),
            envelope=envelope,
        )


@dataclass
class Response:
    """What the receiver answers; ``after`` is the work to start once the answer has been sent."""

    status: int
    body: bytes = _OK
    headers: List[Tuple[str, str]] = field(default_factory=list)
    after: Optional[Callable[[], None]] = None


class WebhookReceiver:
    """``WebhookReceiver(port=8000, secret=None, path="/webhook")``; more options (keywords):

    - ``secret``: the bot's webhook secret ``whsec_...``; default the ``WORKROOM_WEBHOOK_SECRET``
      environment variable. Without one (nor ``public_key``) the receiver refuses to start.
    - ``public_key``: the bot's ed25519 public key ``whpk_...`` (POST /api/bots/{botId}/webhook-signing-key):
      a Standard Webhooks ``v1a`` signature must verify; enough without ``secret`` (pure-Python ed25519).
    - ``host`` (default ``"0.0.0.0"``): interface to listen on (``port=0`` picks a free port).
    - ``tolerance`` (seconds, default 300): how far ``webhook-timestamp`` may be from now.
    - ``accept_any_signature`` (default False): accept a delivery when any one of the three signatures
      verifies (for proxies that drop headers; the body signature alone has no replay protection).
    - ``command_timeout`` (seconds, default 4.0): how long a command handler may take to produce the reply.
    - ``workers`` (default 4): threads running handlers.
    - ``dedupe_size`` (default 10,000): how many delivery ids are remembered to drop duplicates.
    - ``max_body_bytes`` (default 2 MiB): larger bodies answer 413.
    - ``clock``: returns the time in seconds (for tests).
    """

    def __init__(
        self,
        port: int = 8000,
        secret: Optional[str] = None,
        path: str = "/webhook",
        *,
        host: str = "0.0.0.0",
        tolerance: int = DEFAULT_TOLERANCE_SECONDS,
        accept_any_signature: bool = False,
        command_timeout: float = 4.0,
        workers: int = 4,
        dedupe_size: int = 10_000,
        max_body_bytes: int = 2 * 1024 * 1024,
        clock: Callable[[], float] = time.time,
        public_key: Optional[str] = None,
    ) -> None:
        secret = secret if secret is not None else os.environ.get("WORKROOM_WEBHOOK_SECRET")
        if not secret and not public_key:
            raise ValueError(
                "WebhookReceiver needs the bot's webhook secret (secret=... or WORKROOM_WEBHOOK_SECRET), "
                "or its ed25519 public key (public_key=...); issue one with POST /api/bots/{botId}/webhook-secret"
            )
        if secret:
            check_secret(secret)
        if public_key is not None:
            public_key_bytes(public_key)
        if not path.startswith("/"):
            raise ValueError('path must start with "/"')
        if not 0 < command_timeout < 5:
            raise ValueError("command_timeout must be between 0 and 5 seconds (the server waits 5)")
        self.port = port
        self.path = path
        self.host = host
        self.tolerance = tolerance
        self.accept_any_signature = accept_any_signature
        self.command_timeout = command_timeout
        self.workers = workers
        self.dedupe_size = dedupe_size
        self.max_body_bytes = max_body_bytes
        self._secret = secret or None
        self._public_key = public_key
        self._clock = clock
        self._handlers: List[Tuple[str, Handler]] = []
        self._commands: Dict[str, CommandHandler] = {}
        self._actions: List[Tuple[str, ActionHandler]] = []
        self._seen: "OrderedDict[str, None]" = OrderedDict()
        self._lock = threading.Lock()
        self._pool: Optional[ThreadPoolExecutor] = None
        self._command_pool: Optional[ThreadPoolExecutor] = None
        self._server: Optional[ThreadingHTTPServer] = None
        self._thread: Optional[threading.Thread] = None

    def __repr__(self) -> str:  # never shows the secret
        return f"WebhookReceiver(port={self.port!r}, path={self.path!r})"

    # ----------------------------------------------------------------------------------------------
    # Registration

    def on(self, event_type: str) -> Callable[[H], H]:
        """Decorator: ``@receiver.on("message.created")``; ``"*"`` for every event, ``"message.*"`` for a
        family. The handler receives the parsed envelope (a dict) after the 200 has been sent."""
        if not event_type:
            raise ValueError("event_type must not be empty")

        def register(handler: H) -> H:
            self._handlers.append((event_type, handler))
            return handler

        return register

    def command(self, name: str) -> Callable[[C], C]:
        """Decorator: ``@receiver.command("echo")`` runs for ``/echo``. Its return value becomes the bot's
        reply: a string, or ``{"content": ..., "ephemeral": True}`` (seen only by the user who ran it), or
        ``None`` for no reply. It must return within ``command_timeout``; for longer work, return at once
        and answer later with ``cmd.respond(...)`` from another thread."""
        key = name.lstrip("/").lower()
        if not key:
            raise ValueError("command name must not be empty")

        def register(handler: C) -> C:
            self._commands[key] = handler
            return handler

        return register

    def action(self, *action_ids: str) -> Callable[[A], A]:
        """Decorator: ``@receiver.action("approve", "reject")`` runs for clicks on those actions of the bot's
        messages (no ids: every action). The handler receives an :class:`ActionInvocation` after the 200 has
        been sent; answer by editing the message (``client.update_message(...)``)."""
        if any(not a for a in action_ids):
            raise ValueError("action ids must not be empty")
        ids = list(action_ids) or ["*"]

        def register(handler: A) -> A:
            for action_id in ids:
                self._actions.append((action_id, handler))
            return handler

        return register

    # ----------------------------------------------------------------------------------------------
    # Framework-agnostic core

    def handle(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> Response:
        """Answers one request. Call ``response.after()`` (if set) once the answer has been sent."""
        if (path.split("?", 1)[0] or "/") != self.path:  # "" is the root of a mounted WSGI app
            return _error(404, "not_found", "No webhook here")
        if method.upper() != "POST":
            return _error(405, "method_not_allowed", "Use POST", [("Allow", "POST")])
        h = {k.lower(): v for k, v in headers.items()}
        try:
            check_signature(
                body,
                h,
                self._secret,
                tolerance=self.tolerance,
                accept_any_signature=self.accept_any_signature,
                now=self._clock(),
                public_key=self._public_key,
            )
        except SignatureError as err:
            log.warning("refused a webhook delivery (401): %s", err)
            return _error(401, "invalid_signature", str(err))
        # Verified: only now is the body parsed.
        try:
            envelope = json.loads(body.decode("utf-8"))
        except ValueError:
            return _error(400, "invalid_json", "The body is not JSON")
        if not isinstance(envelope, dict) or not isinstance(envelope.get("event_type"), str):
            return _error(400, "invalid_envelope", "The body is not a Workroom event envelope")
        event: Envelope = envelope  # type: ignore[assignment]
        if not self._first_time(_delivery_keys(h, event)):
            log.info("dropped a duplicate delivery %s", h.get("webhook-id") or event.get("event_id"))
            return Response(200, b'{"ok":true,"duplicate":true}', list(_JSON))

        after = self._handlers_for(event)
        reply_body = _OK
        if event["event_type"] == "command.invoked":
            invocation = CommandInvocation.from_envelope(event)
            handler = self._commands.get(invocation.command.lower())
            if handler is not None:
                reply_body = self._run_command(handler, invocation)
        return Response(200, reply_body, list(_JSON), after)

    def _first_time(self, keys: List[str]) -> bool:
        """Records the keys; False when any of them was seen before (then nothing is recorded)."""
        with self._lock:
            for key in keys:
                if key in self._seen:
                    self._seen.move_to_end(key)
                    return False
            for key in keys:
                self._seen[key] = None
            while len(self._seen) > self.dedupe_size:
                self._seen.popitem(last=False)
            return True

    def _handlers_for(self, event: Envelope) -> Optional[Callable[[], None]]:
        event_type = event.get("event_type", "")
        chosen = [h for pattern, h in self._handlers if pattern == event_type or _matches(pattern, event_type)]
        if event_type == "action.invoked" and self._actions:
            invocation = ActionInvocation.from_envelope(event)
            for action_id, action_handler in self._actions:
                if action_id in ("*", invocation.action_id):
                    chosen.append(_bind(action_handler, invocation))
        if not chosen:
            return None

        def run_all() -> None:
            for handler in chosen:
                try:
                    handler(event)
                except Exception:
                    log.exception(
                        "handler %s failed for %s %s",
                        getattr(handler, "__name__", handler),
                        event_type,
                        event.get("event_id"),
                    )

        return run_all

    def _run_command(self, handler: CommandHandler, invocation: CommandInvocation) -> bytes:
        future: "Future[CommandResult]" = self._pools()[1].submit(handler, invocation)
        try:
            result = future.result(timeout=self.command_timeout)
        except FutureTimeout:
            log.warning(
                "command /%s took longer than %.1fs; answered without a reply",
                invocation.command,
                self.command_timeout,
            )
            return _OK
        except Exception:
            log.exception("command /%s failed", invocation.command)
            return _OK
        reply = _reply_json(result)
        if reply is None:
            log.warning("command /%s returned %r; expected str, dict or None", invocation.command, result)
            return _OK
        return reply

    def _pools(self) -> Tuple[ThreadPoolExecutor, ThreadPoolExecutor]:
        with self._lock:
            if self._pool is None or self._command_pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="workroom-handler")
                self._command_pool = ThreadPoolExecutor(self.workers, thread_name_prefix="workroom-command")
            return self._pool, self._command_pool

    def run_after(self, work: Optional[Callable[[], None]]) -> None:
        """Starts ``work`` (a :class:`Response`'s ``after``) in a worker thread."""
        if work is not None:
            self._pools()[0].submit(work)

    # ----------------------------------------------------------------------------------------------
    # WSGI

    def wsgi_app(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        """A WSGI application: ``wsgiref.simple_server.make_server("", 8000, receiver.wsgi_app)``, or mount it
        in a framework (``path`` is matched against ``PATH_INFO``). Handlers start after the answer: the
        WSGI server calls ``close()`` on the returned iterable once the answer has been sent."""
        headers = {k[5:].replace("_", "-").lower(): str(v) for k, v in environ.items() if k.startswith("HTTP_")}
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = str(environ["CONTENT_TYPE"])
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > self.max_body_bytes:
            response = _error(413 if length > 0 else 411, "bad_length", "Content-Length missing or too large")
        else:
            body = _read_exactly(environ["wsgi.input"], length)
            response = self.handle(
                str(environ.get("REQUEST_METHOD", "GET")), str(environ.get("PATH_INFO", "")), headers, body
            )
        start_response(
            f"{response.status} {HTTPStatus(response.status).phrase}",
            response.headers + [("Content-Length", str(len(response.body)))],
        )
        return _AfterResponse(response.body, lambda: self.run_after(response.after))

    # ----------------------------------------------------------------------------------------------
    # Standalone server (http.server)

    def start(self) -> "WebhookReceiver":
        """Starts serving in a background thread; returns once the port is listening."""
        if self._server is not None:
            raise RuntimeError("the receiver is already running")
        self._pools()
        server = ThreadingHTTPServer((self.host, self.port), _make_request_handler(self))
        server.daemon_threads = True
        self._server = server
        self.port = server.server_address[1]
        # A short poll interval makes stop() quick (shutdown() waits for the loop to notice).
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="workroom-receiver", daemon=True
        )
        self._thread.start()
        log.debug("receiving webhooks on http://%s:%s%s", self.host, self.port, self.path)
        return self

    def stop(self, wait_for_handlers: bool = True) -> None:
        """Closes the port (returns once it is closed), then waits for running handlers unless told not to."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            pools = [p for p in (self._pool, self._command_pool) if p is not None]
            self._pool = self._command_pool = None
        for pool in pools:
            pool.shutdown(wait=wait_for_handlers)

    def run(self) -> None:
        """Starts and blocks until Ctrl-C or SIGTERM, then stops (letting running handlers finish)."""
        stopping = threading.Event()
        previous = None
        if threading.current_thread() is threading.main_thread():
            # A container stop sends SIGTERM: stop as cleanly as for Ctrl-C instead of dying mid-handler.
            previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
        try:
            self.start()
            print(f"Workroom webhook receiver listening on http://{self.host}:{self.port}{self.path}", flush=True)
            while not stopping.wait(0.5):
                if self._thread is None or not self._thread.is_alive():
                    break
        except KeyboardInterrupt:
            pass
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            self.stop()

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}{self.path}"

    def __enter__(self) -> "WebhookReceiver":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_JSON = [("Content-Type", "application/json")]


def _delivery_keys(headers: Mapping[str, str], event: Envelope) -> List[str]:
    """What makes two deliveries "the same": the webhook-id (stable across the server's retries), else the
    event id; for a slash command also its invocation id, because one invocation may reach the bot both
    at once and through the delivery queue, as two events, and a command must run once."""
    keys = []
    delivery_id = headers.get("webhook-id") or event.get("event_id")
    if isinstance(delivery_id, str) and delivery_id:
        keys.append(delivery_id)
    data = event.get("data")
    if event.get("event_type") == "command.invoked" and isinstance(data, Mapping):
        invocation = data.get("invocation_id")
        if isinstance(invocation, str) and invocation:
            keys.append("invocation:" + invocation)
    return keys


def _bind(handler: ActionHandler, invocation: ActionInvocation) -> Handler:
    """An action handler as an event handler (keeps its name for the failure log)."""

    def run(_event: Envelope) -> Any:
        return handler(invocation)

    run.__name__ = getattr(handler, "__name__", "action handler")
    return run


def _matches(pattern: str, event_type: str) -> bool:
    return pattern == "*" or (pattern.endswith(".*") and fnmatch.fnmatchcase(event_type, pattern))


def _error(status: int, code: str, message: str, extra: Optional[List[Tuple[str, str]]] = None) -> Response:
    # The same shape as the Node SDK's receiver: {"error": "<code>", "message": "<why>"} (README, Errors).
    body = json.dumps({"error": code, "message": message}, separators=(",", ":")).encode("utf-8")
    return Response(status, body, list(_JSON) + (extra or []))


def _reply_dict(result: Mapping[str, Any]) -> Dict[str, Any]:
    reply: Dict[str, Any] = {"content": result["content"]}
    if result.get("ephemeral") is not None:
        reply["ephemeral"] = bool(result["ephemeral"])
    if isinstance(result.get("content_html"), str):
        reply["content_html"] = result["content_html"]
    return reply


def _reply_json(result: CommandResult) -> Optional[bytes]:
    if result is None:
        return _OK
    if isinstance(result, str):
        result = {"content": result}
    if isinstance(result, Mapping) and isinstance(result.get("content"), str):
        return json.dumps(_reply_dict(result), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return None


def _read_exactly(stream: Any, length: int) -> bytes:
    chunks: List[bytes] = []
    remaining = length
    while remaining > 0:
        chunk = stream.read(remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


class _AfterResponse:
    """A WSGI body whose ``close()`` (called by the server once the answer is sent) starts the handlers."""

    def __init__(self, body: bytes, on_close: Callable[[], None]) -> None:
        self._body = body
        self._on_close: Optional[Callable[[], None]] = on_close

    def __iter__(self) -> Iterator[bytes]:
        yield self._body

    def close(self) -> None:
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


def _make_request_handler(receiver: WebhookReceiver) -> type:
    class RequestHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "workroom-receiver"
        sys_version = ""
        timeout = 30  # seconds a client may stall mid-request before its connection (and thread) is dropped

        def _serve(self) -> None:
            body = self._read_body()
            if body is None:
                return
            try:
                response = receiver.handle(self.command, self.path, dict(self.headers.items()), body)
            except Exception:  # a bug here must answer 500, never kill the connection without an answer
                log.exception("failed to handle a request")
                response = _error(500, "internal", "The receiver failed")
            self._answer(response)
            receiver.run_after(response.after)

        do_POST = do_GET = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

        def _read_body(self) -> Optional[bytes]:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                return self._read_chunked()
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if length < 0 or length > receiver.max_body_bytes:
                self.close_connection = True
                self._answer(_error(413, "payload_too_large", "Body too large or bad Content-Length"))
                return None
            return self.rfile.read(length)

        def _read_chunked(self) -> Optional[bytes]:
            chunks: List[bytes] = []
            total = 0
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    size = -1
                total += max(size, 0)
                if size < 0 or total > receiver.max_body_bytes:
                    self.close_connection = True
                    self._answer(_error(413, "payload_too_large", "Body too large or bad chunk"))
                    return None
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)

        def _answer(self, response: Response) -> None:
            self.send_response(response.status)
            for name, value in response.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("%s - %s", self.address_string(), format % args)

    return RequestHandler
