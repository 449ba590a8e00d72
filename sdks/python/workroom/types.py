"""Shapes of the server's answers and of webhook envelopes (from the OpenAPI document, /api/openapi.json).

The webhook events' types (``MessageCreatedEvent``, ``ActionInvokedData``, ... and the union
``WebhookEvent``) are generated from docs/api/openapi.json into ``workroom.events``
(sdks/python/scripts/generate_types.py); the ones named here are re-exported from there.

They are ``TypedDict``s: at run time every value is a plain ``dict`` as the server sent it, so fields the
server adds later are kept, and type checkers know the documented ones.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, Tuple, TypedDict, Union

from .events import ActionInvokedData as ActionInvokedData
from .events import ActionInvokedDataUser
from .events import WebhookEvent as WebhookEvent

Priority = Literal["low", "medium", "high", "urgent"]
TaskStatus = Literal["todo", "in_progress", "review", "done"]
Role = Literal["system_admin", "org_admin", "dept_admin", "member"]
ContainerType = Literal["channels", "projects", "topics", "all"]
SearchType = Literal["messages", "users", "tasks", "channels", "all"]


ActionStyle = Literal["default", "primary", "danger"]


class ActionOption(TypedDict):
    label: str
    value: str


class _ButtonFields(TypedDict):
    type: Literal["button"]
    id: str
    label: str
    value: str


class ButtonAction(_ButtonFields, total=False):
    """A button of an interactive message (docs/ACTIONS.md); ``style`` defaults to ``"default"``."""

    style: ActionStyle


class _SelectFields(TypedDict):
    type: Literal["select"]
    id: str
    options: List[ActionOption]


class SelectAction(_SelectFields, total=False):
    """A select of an interactive message: 1 to 25 options; ``placeholder`` is its label."""

    placeholder: Optional[str]


# One action of a message: up to 10 per message, ids unique within it. Messages and events give them back
# with ``style`` / ``placeholder`` always present.
MessageAction = Union[ButtonAction, SelectAction]


class BotInfo(TypedDict):
    bot_id: str
    name: str
    type: str
    org_id: str
    status: str
    key_id: str
    key_type: str
    scopes: Optional[List[str]]
    expires_at: Optional[str]


class Message(TypedDict):
    id: str
    org_id: str
    channel_id: Optional[str]
    topic_id: Optional[str]
    dm_room_id: Optional[str]
    sender_type: Literal["user", "bot"]
    sender_id: str
    bot_id: Optional[str]
    content: str
    content_html: Optional[str]
    actions: Optional[List[MessageAction]]
    created_at: str
    edited_at: Optional[str]
    deleted_at: Optional[str]


class DeletedMessage(TypedDict):
    id: str
    deleted: bool
    deleted_at: str


class Command(TypedDict):
    id: str
    bot_id: str
    command: str
    description: str
    usage_hint: Optional[str]
    created_at: str
    updated_at: str


class DeletedCommand(TypedDict):
    bot_id: str
    command: str
    deleted: bool


class Task(TypedDict):
    task_id: str
    id: str
    org_id: str
    topic_id: str
    title: str
    description: str
    priority: str
    status: str
    assignee_id: Optional[str]
    due_date: Optional[str]
    created_by_type: Literal["user", "bot"]
    created_by_id: str
    created_at: str
    updated_at: str


class User(TypedDict):
    id: str
    org_id: str
    email: str
    display_name: str
    role: str
    status: str
    department: Optional[str]
    created_at: str


class Channel(TypedDict):
    id: str
    org_id: str
    name: str
    description: str
    is_private: bool
    created_at: str
    updated_at: str


class Project(TypedDict):
    id: str
    org_id: str
    name: str
    description: str
    created_at: str


class Topic(TypedDict):
    id: str
    org_id: str
    project_id: str
    name: str
    created_at: str


class Containers(TypedDict, total=False):
    channels: List[Channel]
    projects: List[Project]
    topics: List[Topic]


class SearchResult(TypedDict, total=False):
    query: str
    messages: List[Message]
    users: List[User]
    tasks: List[Task]
    channels: List[Channel]


class Envelope(TypedDict, total=False):
    """A webhook delivery as a handler receives it (``signature`` is present as sent)."""

    event_type: str
    timestamp: str
    bot_id: str
    data: Dict[str, Any]
    event_id: str
    signature: str


# The ``data`` of ``action.invoked`` (a user clicked a button or chose an option of the bot's message), as
# generated in ``workroom.events`` with every other event type.
ActionUser = ActionInvokedDataUser


class CommandReply(TypedDict, total=False):
    """What a command handler may return (or just a string: the reply's content)."""

    content: str
    ephemeral: bool


def button(id: str, label: str, value: str = "", style: ActionStyle = "default") -> ButtonAction:
    """A button for ``actions=[...]``: ``button("approve", "Approve", "yes", style="primary")``."""
    return {"type": "button", "id": id, "label": label, "value": value, "style": style}


def select(
    id: str, options: "List[Union[ActionOption, Tuple[str, str]]]", placeholder: Optional[str] = None
) -> SelectAction:
    """A select for ``actions=[...]``; ``options`` as ``{"label", "value"}`` dicts or ``(label, value)`` pairs."""
    opts: List[ActionOption] = [
        {"label": o[0], "value": o[1]} if isinstance(o, tuple) else {"label": o["label"], "value": o["value"]}
        for o in options
    ]
    action: SelectAction = {"type": "select", "id": id, "options": opts}
    if placeholder is not None:
        action["placeholder"] = placeholder
    return action
