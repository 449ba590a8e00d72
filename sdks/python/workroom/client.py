"""WorkroomClient: the bot REST API, with time-outs, retries and idempotency keys.

Every MCP tool has a REST twin on the server that runs the same operation (docs/MCP.md, "Tools"). The
client calls those twins rather than speaking MCP: they answer typed JSON records (MCP tools answer text
meant for a language model, which a program would have to parse back), need no session handshake, and
share the REST error codes, ``Retry-After`` and ``Idempotency-Key`` handling with the other methods.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from email.message import Message as _HeaderMessage
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

from .errors import WorkroomError
from .types import (
    BotInfo,
    Command,
    Containers,
    ContainerType,
    DeletedCommand,
    DeletedMessage,
    Message,
    MessageAction,
    Priority,
    Role,
    SearchResult,
    SearchType,
    Task,
    TaskStatus,
    User,
)

__version__ = "0.1.0"
_USER_AGENT = f"workroom-python/{__version__}"

log = logging.getLogger("workroom")


class _Unset:
    """Marks an argument that was not given (``None`` means JSON null: clear the value)."""

    _instance: Optional["_Unset"] = None

    def __new__(cls) -> "_Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET = _Unset()


@dataclass(frozen=True)
class Attempt:
    """One HTTP attempt, passed to ``on_attempt`` (for logging and metrics; tests use it too)."""

    method: str
    path: str
    attempt: int
    status: Optional[int]  # None: no answer (time-out or network error)
    idempotency_key: Optional[str]
    request_id: Optional[str]
    duration: float
    error: Optional[str] = None


class WorkroomClient:
    """A bot's client of the Workroom REST API.

    ``WorkroomClient(base_url, api_key)``; options:

    - ``timeout`` (seconds, default 10): per HTTP attempt.
    - ``max_retries`` (default 3): extra attempts after a 429, a 5xx or a network error.
    - ``max_retry_delay`` (seconds, default 30): longest wait between attempts; a ``Retry-After`` longer
      than this raises at once instead of sleeping.
    - ``on_attempt``: called with an :class:`Attempt` after every HTTP attempt.

    Writes carry an ``Idempotency-Key`` generated once per call and reused by every retry of it, so a retry
    after a lost answer never posts twice. 429 and 503 are always retried (the server did nothing), except
    503 ``search_timeout`` (the same search would run out of time again: narrow it); other
    5xx answers and network errors are retried only for calls that are safe to repeat (reads, ``PUT``,
    ``PATCH``, ``DELETE`` and the posts the server deduplicates by key).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 10.0,
        max_retries: int = 3,
        max_retry_delay: float = 30.0,
        on_attempt: Optional[Callable[[Attempt], None]] = None,
        user_agent: Optional[str] = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        if not api_key:
            raise ValueError("api_key is required (a bot API key, wrbk_...)")
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_delay = max_retry_delay
        self.on_attempt = on_attempt
        self.user_agent = user_agent or _USER_AGENT
        self._bot_id: Optional[str] = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never shows the key
        return f"WorkroomClient(base_url={self.base_url!r})"

    # ----------------------------------------------------------------------------------------------
    # Authentication

    def auth(self) -> BotInfo:
        """Checks the key: ``POST /api/bots/auth``. Answers the bot (``bot_id``, name, key scopes, ...)."""
        info = cast(BotInfo, self._call("POST", "/api/bots/auth", replay_safe=True))
        self._bot_id = info["bot_id"]
        return info

    @property
    def bot_id(self) -> str:
        """The key's bot id (from :meth:`auth`, called once when first needed)."""
        if self._bot_id is None:
            with self._lock:
                if self._bot_id is None:
                    self.auth()
        assert self._bot_id is not None
        return self._bot_id

    # ----------------------------------------------------------------------------------------------
    # Messages

    def send_message(
        self,
        content: str,
        channel_id: Optional[str] = None,
        topic_id: Optional[str] = None,
        dm_room_id: Optional[str] = None,
        *,
        content_html: Optional[str] = None,
        actions: Optional[Sequence[MessageAction]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Message:
        """Posts to exactly one of a channel, a topic or a DM room the bot is a member of. ``actions``: buttons
        and selects users can click (``workroom.button(...)``, ``workroom.select(...)``; docs/ACTIONS.md);
        each click reaches the receiver as ``action.invoked``."""
        path = _container_path(channel_id, topic_id, dm_room_id, "messages")
        body: Dict[str, Any] = {"content": content}
        if content_html is not None:
            body["content_html"] = content_html
        if actions is not None:
            body["actions"] = list(actions)
        return cast(Message, self._call("POST", path, body=body, replay_safe=True, idempotency_key=idempotency_key))

    def update_message(
        self,
        message_id: str,
        content: str,
        content_html: Optional[str] = None,
        *,
        actions: Union[Sequence[MessageAction], None, _Unset] = UNSET,
    ) -> Message:
        """Replaces a message the bot sent (``PUT``: omitting ``content_html`` clears it). ``actions`` replaces
        its buttons and selects; ``actions=None`` (or ``[]``) removes them; not given keeps them."""
        body: Dict[str, Any] = {"content": content}
        if content_html is not None:
            body["content_html"] = content_html
        if not isinstance(actions, _Unset):
            body["actions"] = None if actions is None else list(actions)
        return cast(Message, self._call("PUT", f"/api/messages/{_seg(message_id)}", body=body, replay_safe=True))

    def delete_message(self, message_id: str) -> DeletedMessage:
        """Soft-deletes a message the bot sent."""
        return cast(DeletedMessage, self._call("DELETE", f"/api/messages/{_seg(message_id)}", replay_safe=True))

    def send_dm(
        self,
        user_id: str,
        content: str,
        *,
        content_html: Optional[str] = None,
        actions: Optional[Sequence[MessageAction]] = None,
        idempotency_key: Optional[str] = None,
    ) -> Message:
        """Sends a direct message to a user of the bot's organization (the DM room is created on first use)."""
        body: Dict[str, Any] = {"user_id": user_id, "content": content}
        if content_html is not None:
            body["content_html"] = content_html
        if actions is not None:
            body["actions"] = list(actions)
        path = f"/api/bots/{_seg(self.bot_id)}/dm-messages"
        return cast(Message, self._call("POST", path, body=body, replay_safe=True, idempotency_key=idempotency_key))

    def read_messages(
        self,
        channel_id: Optional[str] = None,
        topic_id: Optional[str] = None,
        dm_room_id: Optional[str] = None,
        *,
        limit: Optional[int] = None,
        before: Optional[str] = None,
    ) -> List[Message]:
        """Recent messages, newest first (tool ``read_messages``; ``limit`` default 20, at most 100)."""
        path = _container_path(channel_id, topic_id, dm_room_id, "messages")
        return cast(List[Message], self._items("GET", path, query={"limit": limit, "before": before}))

    # ----------------------------------------------------------------------------------------------
    # Custom (slash) commands of this bot

    def register_command(self, command: str, description: str, usage_hint: Optional[str] = None) -> Command:
        """Registers ``/command`` (without the slash); it appears in the slash palette at once."""
        body: Dict[str, Any] = {"command": command, "description": description}
        if usage_hint is not None:
            body["usage_hint"] = usage_hint
        path = f"/api/bots/{_seg(self.bot_id)}/commands"
        # Not replay-safe: a retry after a lost answer would meet 409 conflict.
        return cast(Command, self._call("POST", path, body=body, replay_safe=False))

    def list_commands(self) -> List[Command]:
        return cast(List[Command], self._items("GET", f"/api/bots/{_seg(self.bot_id)}/commands"))

    def delete_command(self, command: str) -> DeletedCommand:
        path = f"/api/bots/{_seg(self.bot_id)}/commands/{_seg(command)}"
        return cast(DeletedCommand, self._call("DELETE", path, replay_safe=True))

    # ----------------------------------------------------------------------------------------------
    # The MCP tools, through their REST twins

    def list_channels(self, type: ContainerType = "all", project_id: Optional[str] = None) -> Containers:
        """Channels, projects and topics the bot reaches (tool ``list_channels``)."""
        return cast(Containers, self._call("GET", "/api/containers", query={"type": type, "project_id": project_id}))

    def create_task(
        self,
        topic_id: str,
        title: str,
        *,
        description: Optional[str] = None,
        priority: Optional[Priority] = None,
        assignee_id: Optional[str] = None,
        due_date: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Task:
        """Creates a task in a topic (tool ``create_task``; ``due_date`` is ``YYYY-MM-DD``)."""
        body = _without_none(
            {
                "title": title,
                "description": description,
                "priority": priority,
                "assignee_id": assignee_id,
                "due_date": due_date,
            }
        )
        path = f"/api/topics/{_seg(topic_id)}/tasks"
        return cast(Task, self._call("POST", path, body=body, replay_safe=True, idempotency_key=idempotency_key))

    def update_task(
        self,
        task_id: str,
        *,
        status: Union[TaskStatus, _Unset] = UNSET,
        title: Union[str, _Unset] = UNSET,
        description: Union[str, _Unset] = UNSET,
        priority: Union[Priority, _Unset] = UNSET,
        assignee_id: Union[str, None, _Unset] = UNSET,
        due_date: Union[str, None, _Unset] = UNSET,
    ) -> Task:
        """Changes only what is given (tool ``update_task``); ``assignee_id=None`` unassigns,
        ``due_date=None`` clears the date."""
        given = {
            "status": status,
            "title": title,
            "description": description,
            "priority": priority,
            "assignee_id": assignee_id,
            "due_date": due_date,
        }
        body = {k: v for k, v in given.items() if not isinstance(v, _Unset)}
        return cast(Task, self._call("PATCH", f"/api/tasks/{_seg(task_id)}", body=body, replay_safe=True))

    def list_tasks(
        self, topic_id: str, status: Union[TaskStatus, str] = "all", assignee_id: Optional[str] = None
    ) -> List[Task]:
        """Tasks of a topic, newest first (tool ``list_tasks``)."""
        path = f"/api/topics/{_seg(topic_id)}/tasks"
        return cast(List[Task], self._items("GET", path, query={"status": status, "assignee_id": assignee_id}))

    def get_task(self, task_id: str) -> Task:
        return cast(Task, self._call("GET", f"/api/tasks/{_seg(task_id)}"))

    def search(self, query: str, type: SearchType = "all", limit: Optional[int] = None) -> SearchResult:
        """Case-insensitive search over what the bot reaches (tool ``search``; ``limit`` per category)."""
        return cast(
            SearchResult, self._call("GET", "/api/search", query={"query": query, "type": type, "limit": limit})
        )

    def get_user_info(self, user_id: Optional[str] = None, email: Optional[str] = None) -> User:
        """A user of the bot's organization by id or email (tool ``get_user_info``)."""
        if user_id is not None:
            return cast(User, self._call("GET", f"/api/users/{_seg(user_id)}", query={"email": email}))
        if email is None:
            raise ValueError("give user_id or email")
        # The REST twin is addressed by id; by email, list with the email as filter and keep the exact match.
        for user in self.list_users(q=email, limit=200):
            if user["email"].lower() == email.lower():
                return user
        raise WorkroomError("User not found", code="not_found", status=404)

    def list_users(
        self,
        department: Optional[str] = None,
        role: Optional[Role] = None,
        limit: Optional[int] = None,
        *,
        q: Optional[str] = None,
        offset: Optional[int] = None,
    ) -> List[User]:
        """Users of the bot's organization (tool ``list_users``; ``limit`` default 50, at most 200)."""
        query = {"department": department, "role": role, "limit": limit, "q": q, "offset": offset}
        return cast(List[User], self._items("GET", "/api/users", query=query))

    # ----------------------------------------------------------------------------------------------
    # HTTP

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Optional[Mapping[str, Any]] = None,
        query: Optional[Mapping[str, Any]] = None,
        replay_safe: Optional[bool] = None,
        idempotency_key: Optional[str] = None,
    ) -> Any:
        """Any other endpoint, with the same retries and errors. ``replay_safe`` defaults to ``True``
        except for ``POST``."""
        safe = method.upper() != "POST" if replay_safe is None else replay_safe
        return self._call(
            method.upper(), path, body=body, query=query, replay_safe=safe, idempotency_key=idempotency_key
        )

    def _items(self, method: str, path: str, query: Optional[Mapping[str, Any]] = None) -> List[Any]:
        answer = self._call(method, path, query=query)
        return list(answer["items"]) if isinstance(answer, dict) else []

    def _call(
        self,
        method: str,
        path: str,
        *,
        body: Optional[Mapping[str, Any]] = None,
        query: Optional[Mapping[str, Any]] = None,
        replay_safe: bool = True,
        idempotency_key: Optional[str] = None,
    ) -> Any:
        url = self.base_url + path
        params = {k: _query_value(v) for k, v in (query or {}).items() if v is not None}
        if params:
            url += "?" + urllib.parse.urlencode(params)
        data = None if body is None else json.dumps(dict(body), ensure_ascii=False).encode("utf-8")
        key = idempotency_key
        if key is None and method in ("POST", "PUT", "PATCH"):
            key = str(uuid.uuid4())  # once per logical call: every retry sends the same key
        attempt = 0
        while True:
            attempt += 1
            started = time.monotonic()
            try:
                status, headers, payload = self._send(method, url, data, key)
            except _NoAnswer as failure:
                self._report(method, path, attempt, None, key, None, started, failure.error.code)
                retry = failure.error.code == "connection_refused" or replay_safe
                if retry and attempt <= self.max_retries:
                    time.sleep(self._backoff(attempt))
                    continue
                raise failure.error from failure.cause
            request_id = headers.get("x-request-id")
            self._report(method, path, attempt, status, key, request_id, started, None)
            if 200 <= status < 300:
                return payload
            error = _error_from(status, headers, payload, request_id)
            # search_timeout (503): the same search would run out of the server's time budget again.
            retry = error.code != "search_timeout" and (status in (429, 503) or (status >= 500 and replay_safe))
            if retry and attempt <= self.max_retries:
                wait = error.retry_after if error.retry_after is not None else self._backoff(attempt)
                if wait <= self.max_retry_delay:
                    log.debug("%s %s answered %s, retrying in %.2fs", method, path, status, wait)
                    time.sleep(wait)
                    continue
            raise error

    def _send(
        self, method: str, url: str, data: Optional[bytes], key: Optional[str]
    ) -> Tuple[int, Dict[str, str], Any]:
        headers = {
            "Authorization": f"Bearer {self._api_key}",
            "Accept": "application/json",
            "User-Agent": self.user_agent,
        }
        if data is not None:
            headers["Content-Type"] = "application/json"
        if key is not None:
            headers["Idempotency-Key"] = key
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                return res.status, _lower(res.headers), _decode(res.read())
        except urllib.error.HTTPError as err:
            try:
                raw = err.read()
            except (OSError, ValueError):
                raw = b""
            finally:
                err.close()
            return err.code, _lower(err.headers), _decode(raw)
        except urllib.error.URLError as err:
            raise _no_answer(err.reason, err) from None
        except (OSError, ValueError, http.client.HTTPException) as err:  # time-outs, resets, cut answers
            raise _no_answer(err, err) from None

    def _backoff(self, attempt: int) -> float:
        # Exponential with jitter: 0.25 s, 0.5 s, 1 s, ... (half to full of it), never over max_retry_delay.
        base = min(self.max_retry_delay, math.ldexp(0.25, attempt - 1))
        return base * (0.5 + random.random() / 2)

    def _report(
        self,
        method: str,
        path: str,
        attempt: int,
        status: Optional[int],
        key: Optional[str],
        request_id: Optional[str],
        started: float,
        error: Optional[str],
    ) -> None:
        if self.on_attempt is None:
            return
        info = Attempt(method, path, attempt, status, key, request_id, time.monotonic() - started, error)
        try:
            self.on_attempt(info)
        except Exception:  # a faulty hook must not turn a good call into a failure
            log.exception("on_attempt hook failed")


def post_json(url: str, body: Mapping[str, Any], timeout: float) -> Any:
    """One unauthenticated JSON POST (a command's response URL); raises WorkroomError on any failure."""
    data = json.dumps(dict(body), ensure_ascii=False).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": _USER_AGENT}
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return _decode(res.read())
    except urllib.error.HTTPError as err:
        with err:
            payload = _decode(err.read())
        raise _error_from(err.code, _lower(err.headers), payload, err.headers.get("x-request-id")) from None
    except urllib.error.URLError as err:
        raise _no_answer(err.reason, err).error from err
    except (OSError, ValueError, http.client.HTTPException) as err:
        raise _no_answer(err, err).error from err


class _NoAnswer(Exception):
    def __init__(self, error: WorkroomError, cause: BaseException) -> None:
        super().__init__(str(error))
        self.error = error
        self.cause = cause


def _no_answer(reason: object, cause: BaseException) -> _NoAnswer:
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return _NoAnswer(WorkroomError("The server did not answer in time", code="timeout"), cause)
    if isinstance(reason, ConnectionRefusedError):
        # Nothing reached the server: always safe to try again.
        return _NoAnswer(WorkroomError("Connection refused", code="connection_refused"), cause)
    return _NoAnswer(WorkroomError(f"Network error: {reason}", code="network_error"), cause)


def _error_from(status: int, headers: Mapping[str, str], payload: Any, request_id: Optional[str]) -> WorkroomError:
    code, message, field, scope = f"http_{status}", f"HTTP {status}", None, None
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        err = payload["error"]
        code = str(err.get("code") or code)
        message = str(err.get("message") or message)
        field = err.get("field") if isinstance(err.get("field"), str) else None
        scope = err.get("scope") if isinstance(err.get("scope"), str) else None
    elif isinstance(payload, str) and payload:
        message = payload[:500]
    return WorkroomError(
        message,
        code=code,
        status=status,
        request_id=request_id,
        retry_after=_retry_after(headers.get("retry-after")),
        field=field,
        scope=scope,
        body=payload,
    )


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from a ``Retry-After`` header: delta-seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _lower(headers: _HeaderMessage) -> Dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _seg(value: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("ids must be non-empty strings")
    return urllib.parse.quote(value, safe="")


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _without_none(values: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _container_path(
    channel_id: Optional[str], topic_id: Optional[str], dm_room_id: Optional[str], suffix: str
) -> str:
    given = [(p, v) for p, v in (("channels", channel_id), ("topics", topic_id), ("dm-rooms", dm_room_id)) if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of channel_id, topic_id, dm_room_id")
    kind, ident = given[0]
    return f"/api/{kind}/{_seg(ident)}/{suffix}"
