"""SocketReceiver: the bot opens a WebSocket to the server and receives its events over it (docs/SOCKET.md).

No public URL and no signature to check (the socket is authenticated with the bot's API key), the same
decorators as :class:`~workroom.WebhookReceiver`:

- a handler that returns acknowledges the delivery (``{"type":"ack"}``); one that raises nacks it (the
  server retries it on its usual schedule). There is no short deadline: an unacknowledged delivery is
  sent again only after the server's lease (5 minutes by default);
- deliveries are deduplicated by their id (the same on every attempt): a delivery already handled whose
  ack was lost with a dropped connection is acknowledged again without running the handlers twice;
- a slash command's handler returns the reply, carried back in the ack (within ``command_timeout``);
- the connection is kept: a WebSocket ping every ``heartbeat`` seconds, a server that answers nothing
  for two intervals is taken for dead, and reconnects wait a jittered, capped exponential back-off.

Standard library only: a minimal RFC 6455 client over ``socket``/``ssl`` (masking, fragments,
ping/pong, close).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import random
import socket
import ssl
import struct
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, TypeVar, cast
from urllib.parse import urlsplit

from .receiver import (
    ActionHandler,
    ActionInvocation,
    CommandHandler,
    CommandInvocation,
    CommandResult,
    Handler,
    _bind,
    _matches,
    _reply_dict,
)
from .types import Envelope

log = logging.getLogger("workroom.socket")

H = TypeVar("H", bound=Callable[..., Any])
C = TypeVar("C", bound=Callable[..., Any])
A = TypeVar("A", bound=Callable[..., Any])

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_MAX_MESSAGE = 16 * 1024 * 1024


class SocketRefused(Exception):
    """The server answered the upgrade with an HTTP status (401 bad key, 403 scope, 429 too many)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"the server refused the socket: HTTP {status} {body[:300]}")
        self.status = status
        self.body = body


class _Closed(Exception):
    pass


class _WebSocket:
    """One client connection (RFC 6455): text frames out (masked), text/ping/pong/close in."""

    def __init__(self, url: str, headers: Mapping[str, str], timeout: float = 15.0) -> None:
        parts = urlsplit(url)
        secure = parts.scheme in ("https", "wss")
        host = parts.hostname or "localhost"
        port = parts.port or (443 if secure else 80)
        raw = socket.create_connection((host, port), timeout=timeout)
        sock: socket.socket = raw
        if secure:
            sock = ssl.create_default_context().wrap_socket(raw, server_hostname=host)
        self.sock = sock
        self._buf = b""
        self._send_lock = threading.Lock()
        self.closed = False
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {parts.netloc}",
            "Connection: Upgrade",
            "Upgrade: websocket",
            "Sec-WebSocket-Version: 13",
            f"Sec-WebSocket-Key: {key}",
        ] + [f"{k}: {v}" for k, v in headers.items()]
        try:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            head = self._read_until(b"\r\n\r\n").decode("latin-1")
            status_line, *header_lines = head.split("\r\n")
            fields = status_line.split(" ", 2)
            status = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
            got = {}
            for line in header_lines:
                if ":" in line:
                    k, v = line.split(":", 1)
                    got[k.strip().lower()] = v.strip()
            if status != 101:
                length = int(got.get("content-length", "0") or 0)
                body = self._read_exact(min(length, 65536)).decode("utf-8", "replace") if length else ""
                raise SocketRefused(status, body)
            accept = base64.b64encode(hashlib.sha1((key + _GUID).encode("ascii")).digest()).decode("ascii")
            if got.get("sec-websocket-accept") != accept:
                raise ConnectionError("bad Sec-WebSocket-Accept from the server")
        except BaseException:
            sock.close()
            raise

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise _Closed("connection closed")
        self._buf += chunk

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self._buf:
            if len(self._buf) > 65536:
                raise ConnectionError("answer headers too large")
            self._fill()
        head, self._buf = self._buf.split(marker, 1)
        return head

    def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            self._fill()
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def _frame_from_buffer(self) -> Optional[Tuple[bool, int, bytes]]:
        b = self._buf
        if len(b) < 2:
            return None
        fin, opcode = bool(b[0] & 0x80), b[0] & 0x0F
        masked, length, off = bool(b[1] & 0x80), b[1] & 0x7F, 2
        if length == 126:
            if len(b) < 4:
                return None
            length, off = struct.unpack("!H", b[2:4])[0], 4
        elif length == 127:
            if len(b) < 10:
                return None
            length, off = struct.unpack("!Q", b[2:10])[0], 10
        if length > _MAX_MESSAGE:
            raise ConnectionError("message too big")
        mask = b[off : off + 4] if masked else b""
        off += 4 if masked else 0
        if len(b) < off + length:
            return None
        payload = b[off : off + length]
        if masked:
            payload = _mask(payload, mask)
        self._buf = b[off + length :]
        return fin, opcode, payload

    def receive(self) -> Optional[Tuple[int, bytes]]:
        """The next message or control frame as (opcode, payload); raises ``socket.timeout`` when nothing
        came within the socket's time-out (what was read so far stays buffered), ``_Closed`` at the end."""
        fragments: List[bytes] = []
        while True:
            frame = self._frame_from_buffer()
            if frame is None:
                self._fill()
                continue
            fin, opcode, payload = frame
            if opcode in (0x8, 0x9, 0xA):
                return opcode, payload
            fragments.append(payload)
            if fin:
                return 0x1, b"".join(fragments)

    def send(self, opcode: int, payload: bytes) -> None:
        header = bytes([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", n)
        mask = os.urandom(4)
        with self._send_lock:
            if self.closed:
                raise _Closed("closed")
            self.sock.sendall(header + mask + _mask(payload, mask))

    def send_text(self, text: str) -> bool:
        try:
            self.send(0x1, text.encode("utf-8"))
            return True
        except (OSError, _Closed):
            return False

    def close(self, code: int = 1000, reason: str = "") -> None:
        try:
            self.send(0x8, struct.pack("!H", code) + reason.encode("utf-8")[:120])
        except (OSError, _Closed):
            pass
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def terminate(self) -> None:
        """Drops the connection without a close handshake (as a dead network would)."""
        self.closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _mask(payload: bytes, mask: bytes) -> bytes:
    if not payload:
        return b""
    n = len(payload)
    key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
    return (int.from_bytes(payload, "big") ^ key).to_bytes(n, "big")


class SocketReceiver:
    """``SocketReceiver(base_url, api_key)``; more options (keywords):

    - ``command_timeout`` (seconds, default 4.0): how long a command handler may take to produce the reply.
    - ``workers`` (default 4): threads running handlers.
    - ``dedupe_size`` (default 10,000): how many delivery ids are remembered to drop repeats.
    - ``heartbeat`` (seconds, default 25): ping interval; nothing heard for two intervals: reconnect.
    - ``reconnect_min`` / ``reconnect_max`` (seconds, default 0.25 / 30): the back-off, jittered.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        command_timeout: float = 4.0,
        workers: int = 4,
        dedupe_size: int = 10_000,
        heartbeat: float = 25.0,
        reconnect_min: float = 0.25,
        reconnect_max: float = 30.0,
    ) -> None:
        if not base_url:
            raise ValueError("SocketReceiver needs the server's base_url")
        if not api_key:
            raise ValueError("SocketReceiver needs the bot's API key")
        if not 0 < command_timeout < 5:
            raise ValueError("command_timeout must be between 0 and 5 seconds (the server waits 5)")
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.command_timeout = command_timeout
        self.workers = workers
        self.dedupe_size = dedupe_size
        self.heartbeat = heartbeat
        self.reconnect_min = reconnect_min
        self.reconnect_max = reconnect_max
        self._handlers: List[Tuple[str, Handler]] = []
        self._commands: Dict[str, CommandHandler] = {}
        self._actions: List[Tuple[str, ActionHandler]] = []
        # delivery id -> (state, reply): "running", "ok" or "failed"
        self._seen: "OrderedDict[str, Tuple[str, Optional[Dict[str, Any]]]]" = OrderedDict()
        self._lock = threading.Lock()
        self._ws: Optional[_WebSocket] = None
        self._stopped = threading.Event()
        self._ready = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._pool: Optional[ThreadPoolExecutor] = None
        self._command_pool: Optional[ThreadPoolExecutor] = None
        self._start_error: Optional[BaseException] = None
        self.connections = 0

    def __repr__(self) -> str:  # never shows the key
        return f"SocketReceiver({self.base_url!r})"

    # -- registration (the same decorators as WebhookReceiver) --------------------------------------
    def on(self, event_type: str) -> Callable[[H], H]:
        """``@receiver.on("message.created")`` (or ``"*"``, ``"message.*"``): returning acks the delivery."""

        def register(handler: H) -> H:
            self._handlers.append((event_type, handler))
            return handler

        return register

    def command(self, name: str) -> Callable[[C], C]:
        """``@receiver.command("weather")``: the returned str or ``{"content": ...}`` is the reply."""

        def register(handler: C) -> C:
            self._commands[name.lstrip("/").lower()] = handler
            return handler

        return register

    def action(self, *action_ids: str) -> Callable[[A], A]:
        """``@receiver.action("approve")`` (no ids: every action): a click on one of the bot's message actions."""

        def register(handler: A) -> A:
            for action_id in action_ids or ("*",):
                self._actions.append((action_id, handler))
            return handler

        return register

    # -- lifecycle -----------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        ws = self._ws
        return ws is not None and not ws.closed and self._ready.is_set()

    def start(self, timeout: float = 30.0) -> "SocketReceiver":
        """Connects in a background thread; returns once the server said ``ready``. Raises
        :class:`SocketRefused` when the server refuses the key (no retry would change that)."""
        if self._thread is not None:
            raise RuntimeError("the receiver is already running")
        self._stopped.clear()
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="workroom-socket-handler")
        self._command_pool = ThreadPoolExecutor(self.workers, thread_name_prefix="workroom-socket-command")
        self._thread = threading.Thread(target=self._run, name="workroom-socket", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._ready.wait(0.05):
            if self._start_error is not None or time.monotonic() > deadline:
                error = self._start_error or TimeoutError(f"not connected within {timeout} s")
                self.stop(wait_for_handlers=False)
                raise error
        return self

    def stop(self, wait_for_handlers: bool = True) -> None:
        """Closes the connection and stops reconnecting; then waits for running handlers unless told not to."""
        self._stopped.set()
        ws = self._ws
        if ws is not None:
            ws.close(1000, "bot stopping")
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        for pool in (self._pool, self._command_pool):
            if pool is not None:
                pool.shutdown(wait=wait_for_handlers)
        self._pool = self._command_pool = None

    def drop_connection(self) -> None:
        """Drops the connection without a close handshake, as a dead network would (tests, chaos)."""
        ws = self._ws
        if ws is not None:
            ws.terminate()

    def run(self) -> None:
        """Connects and blocks until interrupted (Ctrl-C)."""
        self.start()
        try:
            while not self._stopped.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def __enter__(self) -> "SocketReceiver":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the connection loop -------------------------------------------------------------------------
    def _run(self) -> None:
        failures = 0
        url = self.base_url.replace("http", "ws", 1) + "/api/bots/socket"
        while not self._stopped.is_set():
            try:
                ws = _WebSocket(url, {"Authorization": f"Bearer {self._api_key}"})
            except SocketRefused as err:
                if err.status in (401, 403):
                    log.error("the server refuses the API key (%s); not reconnecting", err.status)
                    self._start_error = err
                    self._stopped.set()
                    return
                log.warning("socket refused: %s", err)
                ws = None
            except (OSError, _Closed) as err:
                if not self._ready.is_set() and self.connections == 0 and failures == 0:
                    log.warning("could not connect: %s; retrying", err)
                ws = None
            if ws is not None:
                self._ws = ws
                if self._serve(ws):
                    failures = 0
            if self._stopped.is_set():
                return
            cap = min(self.reconnect_max, self.reconnect_min * (2 ** min(failures, 20)))
            failures += 1
            self._stopped.wait(cap * (0.5 + random.random() / 2))

    def _serve(self, ws: _WebSocket) -> bool:
        """Reads frames until the connection ends; True if it got as far as ``ready``."""
        ready = False
        ws.sock.settimeout(min(1.0, self.heartbeat / 2))
        last_heard = last_ping = time.monotonic()
        try:
            while not self._stopped.is_set():
                now = time.monotonic()
                if now - last_heard > 2 * self.heartbeat:
                    log.warning("the server answered nothing for two heartbeats; reconnecting")
                    return ready
                if now - last_ping >= self.heartbeat:
                    ws.send(0x9, b"")
                    last_ping = now
                try:
                    frame = ws.receive()
                except socket.timeout:
                    continue
                last_heard = time.monotonic()
                if frame is None:
                    continue
                opcode, payload = frame
                if opcode == 0x9:
                    ws.send(0xA, payload)
                elif opcode == 0x8:
                    return ready
                elif opcode == 0x1:
                    try:
                        message = json.loads(payload.decode("utf-8"))
                    except ValueError:
                        continue
                    if not isinstance(message, dict):
                        continue
                    if message.get("type") == "ready" and not ready:
                        ready = True
                        self.connections += 1
                        self._ready.set()
                    elif message.get("type") == "event":
                        self._on_event(message)
                    elif message.get("type") == "error":
                        log.warning("server: %s: %s", message.get("code"), message.get("message"))
        except (OSError, _Closed, ConnectionError) as err:
            if not self._stopped.is_set():
                log.warning("socket closed (%s); reconnecting", err)
        finally:
            ws.terminate()
            ws.sock.close()
            if self._ws is ws:
                self._ws = None
        return ready

    # -- deliveries ----------------------------------------------------------------------------------
    def _on_event(self, message: Dict[str, Any]) -> None:
        delivery_id = message.get("delivery_id")
        if not isinstance(delivery_id, str):
            return
        fields = {k: v for k, v in message.items() if k not in ("type", "delivery_id", "attempt")}
        event = cast(Envelope, fields)
        with self._lock:
            seen = self._seen.get(delivery_id)
            if seen is not None and seen[0] == "running":
                return  # in hand: acked when it ends
            if seen is not None and seen[0] == "ok":
                self._seen.move_to_end(delivery_id)
                reply = seen[1]
            else:
                self._seen[delivery_id] = ("running", None)
                while len(self._seen) > self.dedupe_size:
                    self._seen.popitem(last=False)
                reply = None
        if seen is not None and seen[0] == "ok":
            self._answer(delivery_id, True, reply, "")  # its ack was lost: not handled twice
            return
        pool = self._pool
        if pool is not None:
            pool.submit(self._handle, delivery_id, event)

    def _handle(self, delivery_id: str, event: Envelope) -> None:
        reply: Optional[Dict[str, Any]] = None
        try:
            if event.get("event_type") == "command.invoked":
                reply = self._run_command(event)
            for handler in self._handlers_for(event):
                handler(event)
        except Exception as err:
            log.exception("handler failed for %s %s", event.get("event_type"), event.get("event_id"))
            with self._lock:
                self._seen[delivery_id] = ("failed", None)
            self._answer(delivery_id, False, None, str(err) or type(err).__name__)
            return
        with self._lock:
            self._seen[delivery_id] = ("ok", reply)
        self._answer(delivery_id, True, reply, "")

    def _answer(self, delivery_id: str, ok: bool, reply: Optional[Dict[str, Any]], reason: str) -> None:
        frame: Dict[str, Any] = {"type": "ack" if ok else "nack", "delivery_id": delivery_id}
        if ok and reply is not None:
            frame["response"] = reply
        if not ok:
            frame["reason"] = reason[:300]
        ws = self._ws
        # No connection now: the server sends it again after a reconnect, and `_seen` answers.
        if ws is not None:
            ws.send_text(json.dumps(frame, separators=(",", ":")))

    def _handlers_for(self, event: Envelope) -> List[Handler]:
        event_type = str(event.get("event_type", ""))
        chosen = [h for pattern, h in self._handlers if pattern == event_type or _matches(pattern, event_type)]
        if event_type == "action.invoked" and self._actions:
            invocation = ActionInvocation.from_envelope(event)
            for action_id, action_handler in self._actions:
                if action_id in ("*", invocation.action_id):
                    chosen.append(_bind(action_handler, invocation))
        return chosen

    def _run_command(self, event: Envelope) -> Optional[Dict[str, Any]]:
        invocation = CommandInvocation.from_envelope(event)
        handler = self._commands.get(invocation.command.lower())
        pool = self._command_pool
        if handler is None or pool is None:
            return None
        future: "Future[CommandResult]" = pool.submit(handler, invocation)
        try:
            result = future.result(timeout=self.command_timeout)
        except FutureTimeout:
            log.warning("command /%s took longer than %.1fs; no reply", invocation.command, self.command_timeout)
            return None
        if result is None:
            return None
        if isinstance(result, str):
            return {"content": result}
        if isinstance(result, Mapping) and isinstance(result.get("content"), str):
            return _reply_dict(result)
        log.warning("command /%s returned %r; expected str, dict or None", invocation.command, result)
        return None
