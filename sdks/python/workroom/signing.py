"""Webhook signatures: verify a delivery from its raw bytes, framework-agnostic.

A Workroom delivery carries three signatures (all HMAC-SHA256):

- the body's last member ``"signature": "sha256=<hex>"`` over ``U``, the body without that member,
  keyed by the whole secret string ``whsec_...`` (UTF-8);
- the header ``X-Workroom-Signature: sha256=<hex>`` over the raw body, same key;
- the Standard Webhooks headers ``webhook-id``, ``webhook-timestamp`` and
  ``webhook-signature: v1,<base64>`` over ``"<id>.<timestamp>.<body>"``, keyed by the base64-decoded part of
  the secret after ``whsec_``.

Everything here works on bytes: nothing parses or re-serializes the JSON, because a parser that changes one
byte (a framework reading the body first, a different float format) breaks the signature.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac
import json
import re
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from . import ed25519

DEFAULT_TOLERANCE_SECONDS = 300

# The body signature is the body's last member, exactly as the server writes it.
_BODY_SIGNATURE_RE = re.compile(rb',"signature":"(sha256=[0-9a-f]{64})"\}\Z')

HeadersLike = Union[Mapping[str, str], Iterable[Tuple[str, str]]]


class SignatureError(ValueError):
    """Why a delivery did not verify (``str(err)`` says which check failed; never contains the secret)."""


def _normalize_headers(headers: Optional[HeadersLike]) -> Dict[str, str]:
    if headers is None:
        return {}
    items = headers.items() if isinstance(headers, Mapping) else headers
    out: Dict[str, str] = {}
    for name, value in items:
        out[name.lower()] = value
    return out


def _secret_key(secret: str) -> bytes:
    """The Standard Webhooks key: base64-decode of the part after ``whsec_``."""
    if not isinstance(secret, str) or not secret.startswith("whsec_"):
        raise ValueError('the webhook secret must be the "whsec_..." string Workroom issued')
    try:
        key = base64.b64decode(secret[len("whsec_") :], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError('the webhook secret after "whsec_" is not valid base64') from None
    if not key:
        raise ValueError("the webhook secret is empty")
    return key


def check_secret(secret: str) -> None:
    """Raises ``ValueError`` when ``secret`` is not a ``whsec_<base64>`` string."""
    _secret_key(secret)


def _hex_hmac(secret: str, message: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def _equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def _check_standard(body: bytes, h: Mapping[str, str], secret: str, tolerance: int, now: float) -> None:
    webhook_id = h.get("webhook-id")
    timestamp = h.get("webhook-timestamp")
    signatures = h.get("webhook-signature")
    if not webhook_id or not timestamp or not signatures:
        raise SignatureError("missing webhook-id, webhook-timestamp or webhook-signature header")
    if not timestamp.isdigit():
        raise SignatureError("webhook-timestamp is not an integer")
    if abs(now - int(timestamp)) > tolerance:
        raise SignatureError(f"webhook-timestamp is outside the {tolerance}-second tolerance window")
    signed = webhook_id.encode("utf-8") + b"." + timestamp.encode("ascii") + b"." + body
    expected = base64.b64encode(hmac.new(_secret_key(secret), signed, hashlib.sha256).digest()).decode("ascii")
    # The header may list several space-separated signatures (during a secret rotation, for example).
    for candidate in signatures.split(" "):
        version, _, value = candidate.partition(",")
        if version == "v1" and _equal(value, expected):
            return
    raise SignatureError("webhook-signature does not match")


def _check_x_workroom(body: bytes, h: Mapping[str, str], secret: str) -> None:
    given = h.get("x-workroom-signature")
    if not given:
        raise SignatureError("missing X-Workroom-Signature header")
    if not _equal(given, _hex_hmac(secret, body)):
        raise SignatureError("X-Workroom-Signature does not match")


def _body_signature(body: bytes) -> Optional[Tuple[bytes, str]]:
    """``(U, signature)`` when the body ends with the signature member, else ``None``."""
    m = _BODY_SIGNATURE_RE.search(body)
    if m is None:
        return None
    return body[: m.start()] + b"}", m.group(1).decode("ascii")


def _body_mentions_signature(body: bytes) -> bool:
    """Whether the top-level object has a ``signature`` member (in some other form than the server's)."""
    if b'"signature"' not in body:
        return False
    try:
        value = json.loads(body)
    except ValueError:
        return False
    return isinstance(value, dict) and "signature" in value


def _check_body(body: bytes, secret: str) -> None:
    found = _body_signature(body)
    if found is None:
        raise SignatureError('the body has no final "signature" member')
    unsigned, given = found
    if not _equal(given, _hex_hmac(secret, unsigned)):
        raise SignatureError('the body\'s "signature" does not match')


def public_key_bytes(public_key: str) -> bytes:
    """The 32 bytes of a ``whpk_<base64>`` ed25519 public key; ``ValueError`` when it is not one."""
    text = public_key[len("whpk_") :] if public_key.startswith("whpk_") else public_key
    try:
        key = base64.b64decode(text, validate=True)
    except (ValueError, TypeError, binascii.Error):
        raise ValueError('the public key after "whpk_" is not valid base64') from None
    if len(key) != 32:
        raise ValueError("an ed25519 public key is 32 bytes (whpk_<base64>)")
    return key


def _check_ed25519(body: bytes, h: Mapping[str, str], key: bytes, tolerance: int, now: float) -> None:
    """A Standard Webhooks ``v1a`` (ed25519) signature in ``webhook-signature``, by the bot's public key."""
    webhook_id = h.get("webhook-id")
    timestamp = h.get("webhook-timestamp")
    signatures = h.get("webhook-signature")
    if not webhook_id or not timestamp or not signatures:
        raise SignatureError("missing webhook-id, webhook-timestamp or webhook-signature header")
    if not timestamp.isdigit():
        raise SignatureError("webhook-timestamp is not an integer")
    if abs(now - int(timestamp)) > tolerance:
        raise SignatureError(f"webhook-timestamp is outside the {tolerance}-second tolerance window")
    signed = webhook_id.encode("utf-8") + b"." + timestamp.encode("ascii") + b"." + body
    for candidate in signatures.split(" "):
        version, _, value = candidate.partition(",")
        if version != "v1a":
            continue
        try:
            sig = base64.b64decode(value, validate=True)
        except (ValueError, TypeError):
            continue
        if ed25519.verify(key, signed, sig):
            return
    raise SignatureError("no v1a signature in webhook-signature matches the public key")


def check_signature(
    body: bytes,
    headers: Optional[HeadersLike],
    secret: Optional[str],
    *,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    accept_any_signature: bool = False,
    now: Optional[float] = None,
    public_key: Optional[str] = None,
) -> None:
    """Like :func:`verify_signature`, but raises :class:`SignatureError` saying why instead of returning False."""
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError("body must be the raw request bytes, not a parsed or decoded body")
    raw = bytes(body)
    h = _normalize_headers(headers)
    current = time.time() if now is None else now
    if public_key is not None:
        # ed25519 first: with a public key a v1a signature is required, whatever else is there.
        _check_ed25519(raw, h, public_key_bytes(public_key), tolerance, current)
        if not secret:
            return
    if not secret:
        raise ValueError("a webhook secret (or a public key) is needed to verify")
    _secret_key(secret)  # a malformed secret is the caller's bug: ValueError, not "does not verify"
    if accept_any_signature:
        reasons = []
        checks: List[Callable[[], None]] = [
            functools.partial(_check_standard, raw, h, secret, tolerance, current),
            functools.partial(_check_x_workroom, raw, h, secret),
            functools.partial(_check_body, raw, secret),
        ]
        for check in checks:
            try:
                check()
                return
            except SignatureError as err:
                reasons.append(str(err))
        raise SignatureError("no signature verifies: " + "; ".join(reasons))
    _check_standard(raw, h, secret, tolerance, current)
    if _body_signature(raw) is not None:
        _check_body(raw, secret)
    elif _body_mentions_signature(raw):
        raise SignatureError('the body\'s "signature" is not its last member in the form "sha256=<hex>"')


def verify_signature(
    body: bytes,
    headers: Optional[HeadersLike],
    secret: Optional[str],
    *,
    tolerance: int = DEFAULT_TOLERANCE_SECONDS,
    accept_any_signature: bool = False,
    now: Optional[float] = None,
    public_key: Optional[str] = None,
) -> bool:
    """Whether a webhook delivery is authentic. Call it with the raw request bytes, before parsing them.

    Default rule: a valid Standard Webhooks signature (``webhook-id``, ``webhook-timestamp``,
    ``webhook-signature``) whose timestamp is within ``tolerance`` seconds of ``now`` (replay protection)
    and, when the body carries ``signature``, that it verifies too. With ``accept_any_signature=True`` any
    one of the three signatures is enough (for proxies that drop headers; the body signature alone has no
    replay protection). ``headers`` is any mapping or sequence of pairs; names are case-insensitive.
    Comparisons are constant-time. Raises ``ValueError`` if ``secret`` is not a ``whsec_...`` string.

    With ``public_key`` (the bot's ``whpk_...`` ed25519 key, POST /api/bots/{botId}/webhook-signing-key) a
    Standard Webhooks ``v1a`` signature must verify too; ``secret`` may then be None (only ``v1a`` is
    checked). The ed25519 check is pure Python (``workroom.ed25519``: the standard library has none).
    """
    try:
        check_signature(
            body,
            headers,
            secret,
            tolerance=tolerance,
            accept_any_signature=accept_any_signature,
            now=now,
            public_key=public_key,
        )
    except SignatureError:
        return False
    return True


def sign_delivery(
    envelope: Mapping[str, Any],
    secret: str,
    *,
    webhook_id: str,
    timestamp: Optional[int] = None,
) -> Tuple[bytes, Dict[str, str]]:
    """Signs an envelope as the server does: returns ``(body bytes, headers)``.

    For testing a bot locally (post the result to your receiver). The envelope must not contain
    ``signature``; it is serialized compactly like ``JSON.stringify`` for ordinary data (see
    sdks/TEST-VECTORS.md for the values where Python and JavaScript differ).
    """
    if not envelope or "signature" in envelope:
        raise ValueError("the envelope must be a non-empty mapping without a signature member")
    _secret_key(secret)
    ts = int(time.time()) if timestamp is None else int(timestamp)
    unsigned = json.dumps(dict(envelope), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    signature = _hex_hmac(secret, unsigned.encode("utf-8"))
    body = (unsigned[:-1] + ',"signature":"' + signature + '"}').encode("utf-8")
    signed = webhook_id.encode("utf-8") + b"." + str(ts).encode("ascii") + b"." + body
    standard = base64.b64encode(hmac.new(_secret_key(secret), signed, hashlib.sha256).digest()).decode("ascii")
    headers = {
        "content-type": "application/json",
        "webhook-id": webhook_id,
        "webhook-timestamp": str(ts),
        "webhook-signature": "v1," + standard,
        "x-workroom-signature": _hex_hmac(secret, body),
    }
    return body, headers
