"""Posts a signed delivery to the running bot, exactly as the server would sign it, and prints the answer.

    python3 send-test-event.py /echo hello        # a command.invoked event: prints the bot's reply
    python3 send-test-event.py "hello bot"        # a message.created event (the bot's greeting needs
                                                  # CHANNEL_ID to be a channel the bot is in)

Environment: WORKROOM_WEBHOOK_SECRET (the bot's), PORT (default 8000), CHANNEL_ID (optional).
"""

from __future__ import annotations

import datetime
import os
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

try:
    import workroom  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sdks" / "python"))

from workroom import sign_delivery


def main(argv: list) -> None:
    if not argv:
        sys.exit(__doc__)
    text = " ".join(argv)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    channel_id = os.environ.get("CHANNEL_ID", str(uuid.uuid4()))
    if text.startswith("/"):
        command, _, args = text[1:].partition(" ")
        event_type = "command.invoked"
        data = {"command": command, "args": args, "text": text, "user_id": str(uuid.uuid4()), "channel_id": channel_id}
    else:
        event_type = "message.created"
        data = {"content": text, "channel_id": channel_id, "topic_id": None, "dm_room_id": None,
                "sender_id": str(uuid.uuid4()), "sender_type": "user"}
    event_id = str(uuid.uuid4())
    envelope = {"event_type": event_type, "timestamp": now, "bot_id": "local-test", "data": data, "event_id": event_id}
    body, headers = sign_delivery(envelope, os.environ["WORKROOM_WEBHOOK_SECRET"], webhook_id="msg_" + event_id)
    url = f"http://127.0.0.1:{os.environ.get('PORT', '8000')}/webhook"
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as res:
            print(res.status, res.read().decode("utf-8"))
    except urllib.error.HTTPError as err:
        print(err.code, err.read().decode("utf-8"))


if __name__ == "__main__":
    main(sys.argv[1:])
