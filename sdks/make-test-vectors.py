#!/usr/bin/env python3
"""Writes sdks/test-vectors.json: signed webhook deliveries that the server's signer, the Node SDK and the
Python SDK all check. Standard library only and deterministic (secrets and ids derive from each vector's
name), so running it again gives the same file byte for byte.

    python3 sdks/make-test-vectors.py          # rewrite the file
    python3 sdks/make-test-vectors.py --check  # exit 1 if the committed file differs from what it would write

The format is described in sdks/TEST-VECTORS.md.
"""

import base64
import hashlib
import hmac
import json
import sys
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional

OUT = Path(__file__).resolve().parent / "test-vectors.json"
NAMESPACE = uuid.UUID("6f1c3a52-93e4-4d0b-9a57-0c2b1e8d4f10")

# Every vector is delivered at the same instant; verifiers run with their clock set to WEBHOOK_TIMESTAMP.
WEBHOOK_TIMESTAMP = 1795428000  # 2026-11-23T10:00:00Z
EVENT_TIME = "2026-11-23T10:00:00.000Z"


def det_uuid(label: str) -> str:
    return str(uuid.uuid5(NAMESPACE, label))


def det_secret(label: str) -> str:
    raw = hashlib.sha256(("workroom test vector secret " + label).encode("utf-8")).digest()
    return "whsec_" + base64.b64encode(raw).decode("ascii")


def compact(value: Any) -> str:
    """What JSON.stringify writes for the values used here: no spaces, non-ASCII as is, the same escapes.

    Equal to JSON.stringify only for data without lone surrogates, without floats whose shortest form
    differs between Python and JavaScript (1.0, 1e-7, 1e16, -0.0 and the like) and without integers beyond
    2**53; the vectors keep to such data and the Python tests compare every vector with node's output.
    """
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def hex_hmac(key: str, message: bytes) -> str:
    return "sha256=" + hmac.new(key.encode("utf-8"), message, hashlib.sha256).hexdigest()


def standard_signature(secret: str, webhook_id: str, timestamp: int, body: str) -> str:
    key = base64.b64decode(secret[len("whsec_") :])
    signed = f"{webhook_id}.{timestamp}.{body}".encode("utf-8")
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


def with_body_signature(unsigned: str, signature: str) -> str:
    assert unsigned.endswith("}")
    return unsigned[:-1] + ',"signature":"' + signature + '"}'


def make_vector(name: str, event_type: str, data: Dict[str, Any], secret: Optional[str] = None) -> Dict[str, Any]:
    secret = secret or det_secret(name)
    bot_id = det_uuid("bot")
    event_id = det_uuid("event " + name)
    envelope = {
        "event_type": event_type,
        "timestamp": EVENT_TIME,
        "bot_id": bot_id,
        "data": data,
        "event_id": event_id,
    }
    unsigned = compact(envelope)
    signature = hex_hmac(secret, unsigned.encode("utf-8"))
    body = with_body_signature(unsigned, signature)
    webhook_id = "msg_" + event_id.replace("-", "")
    return {
        "name": name,
        "secret": secret,
        "webhook_id": webhook_id,
        "webhook_timestamp": WEBHOOK_TIMESTAMP,
        "envelope": envelope,
        "unsigned_body": unsigned,
        "body": body,
        "signature": signature,
        "x_workroom_signature": hex_hmac(secret, body.encode("utf-8")),
        "webhook_signature": standard_signature(secret, webhook_id, WEBHOOK_TIMESTAMP, body),
    }


def message_data(name: str, content: str, content_html: Optional[str] = None) -> Dict[str, Any]:
    message_id = det_uuid("message " + name)
    return {
        "message_id": message_id,
        "content": content,
        "content_html": content_html,
        "channel_id": det_uuid("channel"),
        "topic_id": None,
        "dm_room_id": None,
        "sender_id": det_uuid("user alice"),
        "sender_type": "user",
        "bot_id": None,
        "created_at": "2026-11-23T09:59:59.987Z",
        "edited_at": None,
        "deleted_at": None,
    }


def long_content() -> str:
    # Exactly 50,000 characters (the message limit), all in the Basic Multilingual Plane so that Python's
    # len() and JavaScript's .length agree; includes 2- and 3-byte UTF-8 characters.
    unit = "Workroom ✓ été 50k — "
    text = (unit * (50_000 // len(unit) + 1))[:50_000]
    assert len(text) == 50_000 and len(text.encode("utf-16-le")) == 100_000
    return text


def build() -> Dict[str, Any]:
    vectors: List[Dict[str, Any]] = [
        make_vector(
            "message-created-ascii",
            "message.created",
            message_data("ascii", "Hello, bot! Can you /echo this?"),
        ),
        make_vector(
            "message-created-non-ascii",
            "message.created",
            message_data(
                "non-ascii",
                "Café, naïve, Øre, Straße — 日本語のメッセージ, 한국어, 中文 👋🏽 🚀 👨‍👩‍👧 "
                "مرحبا بالعالم · שלום עולם · \u200fRTL mark",
                "<p>Café 日本語 👋🏽 مرحبا</p>",
            ),
        ),
        make_vector(
            "message-created-escapes",
            "message.created",
            message_data(
                "escapes",
                'He said "hi" \\ C:\\temp\\new\nline 2\r\n\ttabbed \b\f \x00\x01\x1f\x7f '
                "</script><script>alert('x')</script> & <b> line\u2028separator paragraph\u2029separator "
                "slash / backslash-u \\u0041",
                '<p title="q&quot;">a &amp; b</p>\n',
            ),
        ),
        make_vector(
            "message-created-50000-chars",
            "message.created",
            message_data("long", long_content()),
        ),
        make_vector(
            "command-invoked",
            "command.invoked",
            {
                "invocation_id": det_uuid("invocation"),
                "command": "echo",
                "args": "hello world",
                "text": "/echo hello world",
                "bot_id": det_uuid("bot"),
                "command_id": det_uuid("command echo"),
                "user_id": det_uuid("user alice"),
                "channel_id": det_uuid("channel"),
                "topic_id": None,
                "dm_room_id": None,
                "invoked_at": "2026-11-23T09:59:59.990Z",
            },
        ),
        make_vector(
            "task-status-changed-scalars",
            "task.status_changed",
            {
                "task_id": det_uuid("task"),
                "topic_id": det_uuid("topic"),
                "status": "done",
                "previous_status": "review",
                "actor_type": "user",
                "actor_id": det_uuid("user alice"),
                "task": {
                    "title": "Ship the SDKs",
                    "priority": "high",
                    "assignee_id": None,
                    "due_date": "2026-12-01",
                    "estimate_hours": 2.5,
                    "progress": 0.75,
                    "delta": -3.25,
                    "count": 0,
                    "negative": -1,
                    "big": 9007199254740991,
                    "done": True,
                    "blocked": False,
                    "labels": [],
                    "meta": {},
                    "nested": {"a": {"b": None, "c": [{"d": True, "e": 1}]}},
                },
            },
        ),
    ]
    by_name = {v["name"]: v for v in vectors}
    base = by_name["message-created-ascii"]
    other = by_name["message-created-non-ascii"]
    secret, wid, ts, body = base["secret"], base["webhook_id"], base["webhook_timestamp"], base["body"]

    def resigned(new_body: str) -> Dict[str, Optional[str]]:
        """Headers an attacker who knew the secret would send: shows that only the body part is wrong."""
        return {
            "webhook-signature": standard_signature(secret, wid, ts, new_body),
            "x-workroom-signature": hex_hmac(secret, new_body.encode("utf-8")),
        }

    changed = body.replace("Hello, bot!", "Hello, bot?", 1)
    assert changed != body and len(changed) == len(body)
    foreign_body_sig = with_body_signature(base["unsigned_body"], other["signature"])
    wrong_secret = det_secret("not the bot's secret")
    wrong_unsigned_sig = hex_hmac(wrong_secret, base["unsigned_body"].encode("utf-8"))
    wrong_body = with_body_signature(base["unsigned_body"], wrong_unsigned_sig)
    stale_ts = ts - 3600
    future_ts = ts + 3600
    spaced = body.replace('"event_type":', '"event_type": ', 1)

    tampered: List[Dict[str, Any]] = [
        {
            "name": "one-byte-changed-in-data",
            "vector": base["name"],
            "body": changed,
            "why": "one byte of data.content changed ('!' to '?'); no signature matches the new bytes",
        },
        {
            "name": "swapped-signature-headers",
            "vector": base["name"],
            "headers": {
                "webhook-signature": other["webhook_signature"],
                "x-workroom-signature": other["x_workroom_signature"],
            },
            "why": "the header signatures of another delivery (another body, another secret)",
        },
        {
            "name": "body-signature-of-another-vector",
            "vector": base["name"],
            "body": foreign_body_sig,
            "headers": resigned(foreign_body_sig),
            "why": "the body's signature member belongs to another payload; the headers are valid for these bytes, "
            "but the default rule also requires the body signature when present",
        },
        {
            "name": "wrong-secret",
            "vector": base["name"],
            "body": wrong_body,
            "headers": {
                "webhook-signature": standard_signature(wrong_secret, wid, ts, wrong_body),
                "x-workroom-signature": hex_hmac(wrong_secret, wrong_body.encode("utf-8")),
            },
            "why": "all three signatures made with another whsec_ secret",
        },
        {
            "name": "stale-timestamp",
            "vector": base["name"],
            "headers": {
                "webhook-timestamp": str(stale_ts),
                "webhook-signature": standard_signature(secret, wid, stale_ts, body),
            },
            "why": "correctly signed, but webhook-timestamp is one hour before the verifier's clock "
            "(tolerance 5 minutes): a replay",
        },
        {
            "name": "future-timestamp",
            "vector": base["name"],
            "headers": {
                "webhook-timestamp": str(future_ts),
                "webhook-signature": standard_signature(secret, wid, future_ts, body),
            },
            "why": "correctly signed, but webhook-timestamp is one hour after the verifier's clock",
        },
        {
            "name": "timestamp-changed-not-resigned",
            "vector": base["name"],
            "headers": {"webhook-timestamp": str(ts + 1)},
            "why": "webhook-timestamp changed after signing: the Standard Webhooks signature covers it",
        },
        {
            "name": "removed-webhook-signature",
            "vector": base["name"],
            "headers": {"webhook-signature": None},
            "why": "no webhook-signature header: the default rule requires a Standard Webhooks signature",
        },
        {
            "name": "removed-webhook-timestamp",
            "vector": base["name"],
            "headers": {"webhook-timestamp": None},
            "why": "no webhook-timestamp header: nothing to check the signature or the replay window against",
        },
        {
            "name": "removed-webhook-id",
            "vector": base["name"],
            "headers": {"webhook-id": None},
            "why": "no webhook-id header: the Standard Webhooks signature cannot be checked",
        },
        {
            "name": "signature-for-another-webhook-id",
            "vector": base["name"],
            "headers": {"webhook-id": other["webhook_id"]},
            "why": "webhook-signature was made for another webhook-id than the one sent",
        },
        {
            "name": "whitespace-added-to-body",
            "vector": base["name"],
            "body": spaced,
            "why": "a space after a colon: same JSON value, other bytes; signatures cover bytes",
        },
        {
            "name": "trailing-newline-added-to-body",
            "vector": base["name"],
            "body": body + "\n",
            "why": "a newline after the final '}'; signatures cover bytes",
        },
    ]
    return {"format": 1, "vectors": vectors, "tampered": tampered}


def render() -> str:
    # indent=2 is what prettier writes too, as long as no array holds only scalars (prettier would put such
    # an array on one line): the data above avoids them so that `prettier --check` passes on the output.
    return json.dumps(build(), ensure_ascii=False, indent=2) + "\n"


def main(argv: List[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is out of date: run python3 sdks/make-test-vectors.py", file=sys.stderr)
            return 1
        print(f"{OUT} is up to date")
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT} ({len(text.encode('utf-8'))} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
