"""Test a Workroom bot against a real, throwaway Workroom (standard library only; docs/TESTING-BOTS.md).

``start_workroom()`` runs ``node <checkout>/server/bin/workroom.js harness``: the built server on a temporary
SQLite (deleted when it stops), on 127.0.0.1, with a test clock that only this process moves, over the
harness's stdin. The server is found through ``WORKROOM_SERVER`` (a built Workroom checkout, or its
``server/bin/workroom.js``), else in the checkout this package sits in.

    from workroom.testing import WorkroomTestCase

    class EchoTest(WorkroomTestCase):
        def test_echo(self) -> None:
            ws = self.workroom.workspace(users=["ann"], channels=["general"], bots=[{"name": "echo"}])
            ...  # start the bot with ws.bots["echo"].key
            self.workroom.as_user("ann").post("general", "!echo hi")
            self.assertEqual(self.workroom.next_message("general", sender="echo")["content"], "hi")
"""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Callable, Deque, Dict, Iterator, List, Mapping, Optional, Sequence, TypeVar, Union
from contextlib import contextmanager

T = TypeVar("T")
PASSWORD = "harness-password-1"
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def to_ms(duration: Union[int, float, str]) -> int:
    """Milliseconds of ``1500`` (ms), ``"90s"``, ``"2h"``, ``"1h30m"``, ``"3d"``."""
    if isinstance(duration, (int, float)):
        if duration < 0:
            raise ValueError(f"not a duration: {duration}")
        return int(duration)
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)", duration)
    if not parts or "".join(n + u for n, u in parts) != re.sub(r"\s+", "", duration):
        raise ValueError(f'not a duration: "{duration}" (e.g. 1500, "90s", "2h", "1h30m", "3d")')
    return int(sum(float(n) * _UNITS[u] * 1000 for n, u in parts))


def find_server(server: Optional[str] = None) -> Path:
    """The built server's ``workroom`` command: ``server``, else ``WORKROOM_SERVER``, else this checkout's."""
    given = server or os.environ.get("WORKROOM_SERVER")
    if given:
        p = Path(given).resolve()
        bin_path = p / "server" / "bin" / "workroom.js" if p.is_dir() else p
    else:  # sdks/python/workroom/testing.py -> the checkout's root
        bin_path = Path(__file__).resolve().parents[3] / "server" / "bin" / "workroom.js"
    if not bin_path.exists():
        raise RuntimeError(
            f"workroom.testing: the Workroom server is not at {bin_path}. Set WORKROOM_SERVER to a Workroom "
            "checkout (built with `npm ci && npm run build`) or to its server/bin/workroom.js."
        )
    if not (bin_path.parent.parent / "dist" / "cli" / "index.js").exists():
        raise RuntimeError(f"workroom.testing: the server at {bin_path.parent.parent} is not built: run `npm run build`.")
    return bin_path


class WorkroomApiError(Exception):
    """A REST answer that was not 2xx."""

    def __init__(self, status: int, body: Any, what: str) -> None:
        super().__init__(f"{what} answered {status}: {json.dumps(body) if not isinstance(body, str) else body}")
        self.status = status
        self.body = body


@dataclass
class UserHandle:
    name: str
    id: str
    email: str
    token: str
    password: str = PASSWORD


@dataclass
class BotHandle:
    name: str
    id: str
    key: str
    secret: str
    #: WORKROOM_URL, WORKROOM_BOT_KEY, WORKROOM_WEBHOOK_SECRET: what the example bots read.
    env: Dict[str, str] = field(default_factory=dict)


@dataclass
class Container:
    kind: str  # "channel" or "topic"
    name: str
    id: str


@dataclass
class Workspace:
    org_id: str
    admin: UserHandle
    users: Dict[str, UserHandle]
    channels: Dict[str, Container]
    topics: Dict[str, Container]
    bots: Dict[str, BotHandle]


ContainerRef = Union[str, Container]
SenderRef = Union[str, UserHandle, BotHandle]


def _key(m: Mapping[str, Any]) -> Any:
    return (m["created_at"], m["id"])


class _Harness:
    """The ``workroom harness`` child: its ready line, then clock commands over stdin, one answer line each."""

    def __init__(self, server: Optional[str], env: Optional[Mapping[str, str]], timeout: float) -> None:
        bin_path = find_server(server)
        self.proc = subprocess.Popen(
            ["node", str(bin_path), "harness"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
        )
        self.stderr: Deque[str] = deque(maxlen=40)
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self._err), daemon=True).start()
        self.lock = threading.Lock()
        line = self._line(timeout)
        if line is None:
            self.proc.wait(timeout=10)
            raise RuntimeError(f"the Workroom harness exited with code {self.proc.returncode}{self.stderr_tail()}")
        self.ready: Dict[str, Any] = json.loads(line)

    def _err(self, line: Optional[str]) -> None:
        if line is not None:
            self.stderr.append(line)
            if os.environ.get("WORKROOM_HARNESS_LOG"):
                print(f"[workroom] {line}", flush=True)

    @staticmethod
    def _pump(stream: IO[bytes], put: Callable[[Optional[str]], None]) -> None:
        for raw in stream:
            put(raw.decode("utf-8", "replace").rstrip("\n"))
        put(None)

    def _line(self, timeout: float) -> Optional[str]:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise RuntimeError(f"the Workroom harness did not answer within {timeout} s{self.stderr_tail()}")

    def send(self, command: Mapping[str, Any]) -> int:
        with self.lock:
            if self.proc.poll() is not None or self.proc.stdin is None:
                raise RuntimeError("the Workroom harness has stopped")
            self.proc.stdin.write((json.dumps(command) + "\n").encode())
            self.proc.stdin.flush()
            line = self._line(30)
        if line is None:
            raise RuntimeError(f"the Workroom harness exited{self.stderr_tail()}")
        answer = json.loads(line)
        if "error" in answer:
            raise ValueError(f"workroom harness: {answer['error']}")
        return int(answer["now"])

    def stderr_tail(self) -> str:
        return ("\nlast lines of its stderr:\n  " + "\n  ".join(list(self.stderr)[-15:])) if self.stderr else ""

    def stop(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.close()  # the harness stops and deletes its data
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for s in (self.proc.stdout, self.proc.stderr):
            if s is not None:
                s.close()


class Clock:
    """The server's business time, moved only over the harness's stdin."""

    def __init__(self, harness: _Harness) -> None:
        self._h = harness

    def advance(self, duration: Union[int, float, str]) -> datetime:
        """Moves the clock on (``"2h"``, ``"90s"``, ms); the server's timers now due fire (scheduled jobs...)."""
        return self._dt(self._h.send({"advance_ms": to_ms(duration)}))

    def set(self, at: Union[datetime, str, int]) -> datetime:
        """Moves the clock on to ``at`` (a datetime with a zone, ISO 8601 or epoch ms); never back."""
        ms = int(at.timestamp() * 1000) if isinstance(at, datetime) else at
        return self._dt(self._h.send({"set": ms}))

    def now(self) -> datetime:
        return self._dt(self._h.send({}))

    @staticmethod
    def _dt(ms: int) -> datetime:
        from datetime import timezone

        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


class UserSession:
    """What a user does: post, run a slash command, click an action, read."""

    def __init__(self, wr: "Workroom", user: UserHandle) -> None:
        self._wr, self.user = wr, user

    def post(self, container: ContainerRef, text: str) -> Dict[str, Any]:
        c = self._wr.container(container)
        m: Dict[str, Any] = self._wr.request("POST", f"{_path(c)}/messages", {"content": text}, self.user.token)
        self._wr._cursor[c.id] = m
        return m

    def command(self, container: ContainerRef, text: str) -> Dict[str, Any]:
        """Runs ``/name args`` there; answers POST /api/commands/execute (``reply`` carries the bot's answer)."""
        c = self._wr.container(container)
        self._wr._mark_now(c)
        body = {"text": text, ("channel_id" if c.kind == "channel" else "topic_id"): c.id}
        answer: Dict[str, Any] = self._wr.request("POST", "/api/commands/execute", body, self.user.token)
        return answer

    def click(self, message: Union[str, Mapping[str, Any]], action_id: str, value: Optional[str] = None) -> Any:
        mid = message if isinstance(message, str) else message["id"]
        body: Dict[str, Any] = {"action_id": action_id}
        if value is not None:
            body["value"] = value
        return self._wr.request("POST", f"/api/messages/{mid}/actions", body, self.user.token)

    def messages(self, container: ContainerRef, limit: int = 50) -> List[Dict[str, Any]]:
        return self._wr.messages(container, limit, self.user.token)

    def api(self, method: str, path: str, body: Optional[Mapping[str, Any]] = None) -> Any:
        return self._wr.request(method, path, body, self.user.token)


def _path(c: Container) -> str:
    return f"/api/channels/{c.id}" if c.kind == "channel" else f"/api/topics/{c.id}"


class Workroom:
    """A running harness: ``url``, ``admin`` (the system_admin), ``clock``, and the helpers below."""

    def __init__(self, server: Optional[str] = None, env: Optional[Mapping[str, str]] = None, timeout: float = 60) -> None:
        self._h = _Harness(server, env, timeout)
        self.url: str = self._h.ready["url"]
        self.admin: Dict[str, str] = self._h.ready["admin"]
        self.data_dir: str = self._h.ready["dir"]
        self.clock = Clock(self._h)
        self._ws: Optional[Workspace] = None
        self._cursor: Dict[str, Optional[Dict[str, Any]]] = {}
        self._count = 0

    # --- set-up -------------------------------------------------------------------------------------

    def workspace(
        self,
        users: Sequence[Union[str, Mapping[str, Any]]] = (),
        channels: Sequence[Union[str, Mapping[str, Any]]] = (),
        projects: Sequence[Union[str, Mapping[str, Any]]] = (),
        bots: Sequence[Mapping[str, Any]] = (),
    ) -> Workspace:
        """Users, channels, projects with topics and bots (``{"name", "scopes"?, "commands"?, "events"?,
        "webhook_url"?}``) in a new organization, through the REST API; every user and bot is a member of
        every channel and project unless a channel names its ``members``. Topics are named ``project/topic``."""
        self._count += 1
        tag = f"{self._count}-{secrets.token_hex(3)}"
        sys = self.admin["token"]
        org = self.request("POST", "/api/organizations", {"name": f"harness-{tag}"}, sys)

        def new_user(name: str, role: str) -> UserHandle:
            email = f"{re.sub(r'[^a-z0-9]+', '-', name.lower()) or 'user'}-{tag}@harness.test"
            u = self.request(
                "POST",
                "/api/users",
                {"email": email, "display_name": name, "password": PASSWORD, "role": role, "organization_id": org["id"]},
                sys,
            )
            token = self.request("POST", "/api/auth/login", {"email": email, "password": PASSWORD}, None)["token"]
            return UserHandle(name=name, id=u["id"], email=email, token=token)

        admin = new_user("admin", "org_admin")
        tok = admin.token
        user_map: Dict[str, UserHandle] = {}
        for spec in users:
            s = {"name": spec} if isinstance(spec, str) else dict(spec)
            user_map[s["name"]] = new_user(s["name"], s.get("role", "member"))
        bot_map: Dict[str, BotHandle] = {}
        for b in bots:
            body: Dict[str, Any] = {"name": b["name"], "events": b.get("events", ["message.created"])}
            if b.get("webhook_url"):
                body["webhook_url"] = b["webhook_url"]
            bot = self.request("POST", "/api/bots", body, tok)
            key = self.request("POST", f"/api/bots/{bot['bot_id']}/api-keys", {"scopes": b["scopes"]} if b.get("scopes") else {}, tok)
            secret = self.request("POST", f"/api/bots/{bot['bot_id']}/webhook-secret", None, tok)["secret"]
            for c in b.get("commands", []):
                cmd = {"command": c} if isinstance(c, str) else dict(c)
                cmd["command"] = cmd["command"].lstrip("/")
                cmd.setdefault("description", "/" + cmd["command"])
                self.request("POST", f"/api/bots/{bot['bot_id']}/commands", cmd, tok)
            env = {"WORKROOM_URL": self.url, "WORKROOM_BOT_KEY": key["key"], "WORKROOM_WEBHOOK_SECRET": secret}
            bot_map[b["name"]] = BotHandle(name=b["name"], id=bot["bot_id"], key=key["key"], secret=secret, env=env)
        everyone: List[Union[UserHandle, BotHandle]] = [*user_map.values(), *bot_map.values()]

        def member(h: Union[UserHandle, BotHandle]) -> Dict[str, str]:
            return {"user_id": h.id} if isinstance(h, UserHandle) else {"bot_id": h.id}

        channel_map: Dict[str, Container] = {}
        for spec in channels:
            s = {"name": spec} if isinstance(spec, str) else dict(spec)
            ch = self.request("POST", "/api/channels", {"name": s["name"], "is_private": bool(s.get("private"))}, tok)
            names = s.get("members")
            members: List[Union[UserHandle, BotHandle]] = (
                everyone if names is None else [user_map.get(n) or bot_map[n] for n in names]
            )
            for h in members:
                self.request("POST", f"/api/channels/{ch['id']}/members", member(h), tok)
            channel_map[s["name"]] = Container("channel", s["name"], ch["id"])
        topic_map: Dict[str, Container] = {}
        for spec in projects:
            s = {"name": spec} if isinstance(spec, str) else dict(spec)
            pr = self.request("POST", "/api/projects", {"name": s["name"]}, tok)
            for h in everyone:
                self.request("POST", f"/api/projects/{pr['id']}/members", member(h), tok)
            for t in s.get("topics", ["general"]):
                tp = self.request("POST", f"/api/projects/{pr['id']}/topics", {"name": t}, tok)
                name = f"{s['name']}/{t}"
                topic_map[name] = Container("topic", name, tp["id"])
        self._ws = Workspace(org["id"], admin, user_map, channel_map, topic_map, bot_map)
        return self._ws

    def set_webhook_url(self, bot: BotHandle, url: Optional[str]) -> None:
        """Sets (None: removes) a bot's webhook URL, e.g. once its WebhookReceiver listens on port 0."""
        self.request("PATCH", f"/api/bots/{bot.id}", {"webhook_url": url}, self._admin_token())

    # --- acting and reading -------------------------------------------------------------------------

    def as_user(self, user: Union[str, UserHandle]) -> UserSession:
        if isinstance(user, UserHandle):
            return UserSession(self, user)
        ws = self._ws
        handle = ws.users.get(user) if ws else None
        if handle is None and ws is not None and user == "admin":
            handle = ws.admin
        if handle is None:
            raise KeyError(f'no user "{user}" in the current workspace')
        return UserSession(self, handle)

    def container(self, ref: ContainerRef) -> Container:
        """A handle from a handle, a name in the current workspace (``"general"``, ``"launch/todos"``,
        or a topic's own name when only one topic has it) or a channel id."""
        if isinstance(ref, Container):
            return ref
        ws = self._ws
        if ws:
            if ref in ws.channels:
                return ws.channels[ref]
            if ref in ws.topics:
                return ws.topics[ref]
            short = [t for n, t in ws.topics.items() if n.endswith("/" + ref)]
            if len(short) == 1:
                return short[0]
        if re.fullmatch(r"[0-9a-fA-F-]{36}", ref):
            return Container("channel", ref, ref)
        raise KeyError(f'no channel or topic "{ref}" in the current workspace')

    def messages(self, container: ContainerRef, limit: int = 50, token: Optional[str] = None) -> List[Dict[str, Any]]:
        """The container's latest messages (as the workspace's admin), oldest first."""
        c = self.container(container)
        items: List[Dict[str, Any]] = self.request("GET", f"{_path(c)}/messages?limit={limit}", None, token or self._admin_token())["items"]
        return sorted(items, key=_key)

    def tasks(self, topic: ContainerRef) -> List[Dict[str, Any]]:
        c = self.container(topic)
        items: List[Dict[str, Any]] = self.request("GET", f"/api/topics/{c.id}/tasks", None, self._admin_token())["items"]
        return items

    def wait_for(self, check: Callable[[], T], timeout: float = 5.0, describe: Optional[str] = None) -> T:
        """Calls ``check`` until it returns something truthy, and returns it; fails after ``timeout`` seconds
        saying what was awaited and what ``check`` last answered (or raised)."""
        deadline = time.monotonic() + timeout
        last: Optional[T] = None
        error: Optional[BaseException] = None
        while True:
            try:
                last, error = check(), None
                if last:
                    return last
            except Exception as err:  # noqa: BLE001 - reported below
                error = err
            if time.monotonic() >= deadline:
                what = describe or getattr(check, "__name__", "the check")
                said = f"it last raised: {error!r}" if error else f"it last answered: {last!r}"
                raise AssertionError(
                    f"wait_for: {what} did not come true within {timeout} s; {said}{self._h.stderr_tail()}"
                )
            time.sleep(0.025)  # polling the server's state is the wait: the check reads what is awaited

    def next_message(
        self,
        container: ContainerRef,
        sender: Optional[SenderRef] = None,
        matching: Union[None, str, "re.Pattern[str]", Callable[[Dict[str, Any]], bool]] = None,
        timeout: float = 5.0,
    ) -> Dict[str, Any]:
        """The first message after the last thing this harness did in the container (a post, a command, or
        the message the previous next_message answered), from ``sender`` and ``matching`` if given. Fails
        after ``timeout`` seconds with what was expected and the container's last messages."""
        c = self.container(container)
        sender_id = None if sender is None else self._sender(sender).id
        after = self._cursor.get(c.id)

        def ok(m: Dict[str, Any]) -> bool:
            if after is not None and _key(m) <= _key(after):
                return False
            if sender_id is not None and sender_id not in (m.get("sender_id"), m.get("bot_id")):
                return False
            if matching is None:
                return True
            if isinstance(matching, str):
                return matching in m["content"]
            if isinstance(matching, re.Pattern):
                return matching.search(m["content"]) is not None
            return bool(matching(m))

        last: List[Dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while True:
            last = self.messages(c)
            found = next((m for m in last if ok(m)), None)
            if found is not None:
                self._cursor[c.id] = found
                return found
            if time.monotonic() >= deadline:
                break
            time.sleep(0.025)
        where = f"#{c.name}" if c.kind == "channel" else f"topic {c.name}"
        who = "anyone" if sender_id is None else self._describe(sender_id)
        lines = "\n".join("  " + self._line(m) for m in last[-10:]) or "  (none)"
        raise AssertionError(
            f"next_message: expected a new message in {where} from {who}"
            + (f" matching {matching!r}" if matching is not None else "")
            + (f", after {self._line(after)}" if after else "")
            + f" within {timeout} s; none arrived. The last messages in {where} (oldest first):\n{lines}"
            + self._h.stderr_tail()
        )

    def request(self, method: str, path: str, body: Optional[Mapping[str, Any]] = None, token: Optional[str] = "") -> Any:
        """Any REST call (as the harness's system_admin unless a token is given; None: anonymous)."""
        tok = self.admin["token"] if token == "" else token
        headers = {"Accept": "application/json"}
        if tok:
            headers["Authorization"] = f"Bearer {tok}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                raw, status = res.read(), res.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        text = raw.decode("utf-8")
        try:
            parsed: Any = json.loads(text) if text else None
        except ValueError:
            parsed = text
        if not 200 <= status < 300:
            raise WorkroomApiError(status, parsed, f"{method} {path}")
        return parsed

    def stop(self) -> None:
        """Stops the server; its temporary data is deleted."""
        self._h.stop()

    # --- internals ----------------------------------------------------------------------------------

    def _admin_token(self) -> str:
        return self._ws.admin.token if self._ws else self.admin["token"]

    def _mark_now(self, c: Container) -> None:
        latest = self.messages(c, 1)
        if latest:
            self._cursor[c.id] = latest[-1]

    def _sender(self, ref: SenderRef) -> Union[UserHandle, BotHandle]:
        if not isinstance(ref, str):
            return ref
        ws = self._ws
        h: Union[UserHandle, BotHandle, None] = (ws.bots.get(ref) or ws.users.get(ref)) if ws else None
        if h is None:
            raise KeyError(f'no user or bot "{ref}" in the current workspace')
        return h

    def _describe(self, sender_id: str) -> str:
        ws = self._ws
        if ws:
            for b in ws.bots.values():
                if b.id == sender_id:
                    return f'bot "{b.name}"'
            for u in [*ws.users.values(), ws.admin]:
                if u.id == sender_id:
                    return f'user "{u.name}"'
        return sender_id

    def _line(self, m: Mapping[str, Any]) -> str:
        content = str(m["content"])
        short = content if len(content) <= 120 else content[:120] + "…"
        return f"{str(m['created_at'])[11:23]} {self._describe(str(m['sender_id']))}: {json.dumps(short)}"


@contextmanager
def start_workroom(server: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> Iterator[Workroom]:
    """``with start_workroom() as wr:`` a throwaway Workroom, stopped (and its data deleted) at the end."""
    wr = Workroom(server, env)
    try:
        yield wr
    finally:
        wr.stop()


class WorkroomTestCase(unittest.TestCase):
    """A unittest base class: one harness per test class (``self.workroom``), started in setUpClass and
    stopped in tearDownClass. ``harness_env`` sets server settings for it."""

    workroom: Workroom
    harness_env: Dict[str, str] = {}

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.workroom = Workroom(env=cls.harness_env)
        cls.addClassCleanup(cls.workroom.stop)
