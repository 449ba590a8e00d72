"""An echo/help bot for Workroom, written with the Python SDK (standard library only).

- /echo <text>   answers <text>
- /todo <title>  creates a task in the topic TASK_TOPIC_ID (or the first topic the bot reaches)
- /pybot         says what the bot can do (/help itself is the server's built-in)
- a message that says "hello bot" gets a greeting in the same channel, topic or DM room

Configuration (environment): WORKROOM_URL (default http://localhost:3000), WORKROOM_BOT_KEY,
WORKROOM_WEBHOOK_SECRET and PORT (default 8000) for a webhook (without a secret the bot opens a socket:
no public URL needed), TASK_TOPIC_ID (optional). See README.md.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

try:
    import workroom  # noqa: F401  (installed with pip install ./sdks/python)
except ImportError:  # running from a checkout without installing: use the SDK next door
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdks" / "python"))

from workroom import CommandInvocation, SocketReceiver, WebhookReceiver, WorkroomClient, WorkroomError

COMMANDS = {
    "echo": ("Repeats what you say", "/echo <text>"),
    "todo": ("Creates a task", "/todo <title>"),
    "pybot": ("What the Python example bot can do", "/pybot"),
}

log = logging.getLogger("python-bot")


def build(
    url: str, key: str, secret: Optional[str] = None, port: int = 8000, task_topic_id: Optional[str] = None
) -> Tuple[WorkroomClient, Union[WebhookReceiver, SocketReceiver]]:
    """The bot's client and receiver with its handlers, for ``url`` and ``key`` (nothing runs yet; test_bot.py
    starts it against a throwaway Workroom). ``port`` 0 picks a free one."""
    client = WorkroomClient(url, key)
    # The one-line switch: a webhook (a URL the server can reach, and its secret) or a socket the bot opens (no
    # public URL needed; docs/SOCKET.md). Both take the same decorators below.
    receiver: Union[WebhookReceiver, SocketReceiver] = (
        WebhookReceiver(port=port, secret=secret) if secret else SocketReceiver(url, key)
    )

    @receiver.command("echo")
    def echo(cmd: CommandInvocation) -> str:
        return cmd.args or "Usage: /echo <text>"

    @receiver.command("pybot")
    def about(cmd: CommandInvocation) -> Dict[str, Any]:
        lines = [f"`{usage}`: {description}" for description, usage in COMMANDS.values()]
        return {"content": "I am the Python example bot.\n" + "\n".join(lines), "ephemeral": True}

    @receiver.command("todo")
    def todo(cmd: CommandInvocation) -> str:
        if not cmd.args:
            return "Usage: /todo <title>"
        topic_id = task_topic(client, task_topic_id)
        if topic_id is None:
            return "Add me to a project with a topic first (or set TASK_TOPIC_ID)."
        task = client.create_task(topic_id, cmd.args, description=f"Created with /todo by user {cmd.user_id}")
        return f"Task created: {task['title']} (task_id: {task['task_id']})"

    @receiver.on("message.created")
    def greet(event: Dict[str, Any]) -> None:
        data = event["data"]
        if data.get("sender_type") != "user":  # never answer bots, ourselves included: no loops
            return
        if "hello bot" in str(data.get("content", "")).lower():
            client.send_message(
                "Hello! Try /echo, /todo or /pybot.",
                channel_id=data.get("channel_id"),
                topic_id=data.get("topic_id"),
                dm_room_id=data.get("dm_room_id"),
            )

    @receiver.on("*")
    def log_event(event: Dict[str, Any]) -> None:
        log.info("received %s (%s)", event["event_type"], event.get("event_id"))

    return client, receiver


def task_topic(client: WorkroomClient, configured: Optional[str]) -> Optional[str]:
    if configured:
        return configured
    topics = client.list_channels("topics").get("topics", [])
    return topics[0]["id"] if topics else None


def register_commands(client: WorkroomClient) -> None:
    """Registers the commands the bot does not have yet (so restarting the bot is harmless)."""
    existing = {c["command"] for c in client.list_commands()}
    for name, (description, usage) in COMMANDS.items():
        if name not in existing:
            client.register_command(name, description, usage_hint=usage)
            log.info("registered /%s", name)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    secret = os.environ.get("WORKROOM_WEBHOOK_SECRET")
    client, receiver = build(
        os.environ.get("WORKROOM_URL", "http://localhost:3000"),
        os.environ["WORKROOM_BOT_KEY"],
        secret,
        int(os.environ.get("PORT", "8000")),
        os.environ.get("TASK_TOPIC_ID"),
    )
    try:
        bot = client.auth()
        register_commands(client)
    except WorkroomError as err:
        sys.exit(f"Workroom refused the bot's key or commands: {err}")
    log.info("signed in as bot %s (%s)", bot["name"], bot["bot_id"])
    receiver.run()


if __name__ == "__main__":
    main()
