"""ed25519 (Standard Webhooks v1a) verification with the standard library only: RFC 8032's vectors, a
delivery signed by the server's code (Node's crypto: an independent implementation), and the receiver
with a public key and no secret."""

from __future__ import annotations

import json
import sys
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workroom import WebhookReceiver  # noqa: E402
from workroom.ed25519 import verify  # noqa: E402
from workroom.signing import SignatureError, check_signature, verify_signature  # noqa: E402

# RFC 8032, section 7.1, tests 1 and 2.
RFC = [
    (
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
]

# Made by server/src/outbound/sign.ts (signDelivery with a signing key; Node's crypto), once.
SECRET = "whsec_AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="
PUBLIC_KEY = "whpk_6kpsY+KcUgq+9VB7Ey7F+ZVHdq6+vnuSQh7qaRRG0iw="
BODY = (
    '{"event_type":"message.created","timestamp":"2025-11-24T16:00:00.000Z","bot_id":"b1",'
    '"data":{"content":"h\u00e9llo"},"event_id":"e1",'
    '"signature":"sha256=8a1cb8dee8065503c58f1d85d25d268249d3a77406f4388b8bfbae0c054ece44"}'
).encode("utf-8")
HEADERS: Dict[str, str] = {
    "content-type": "application/json",
    "x-workroom-signature": "sha256=26614018ba7190a9f7a846bbdb3fac7112da243d5956fd5aec8fdd220cee3b03",
    "webhook-id": "msg_ed25519_1",
    "webhook-timestamp": "1764000000",
    "webhook-signature": "v1,Z1K70Hy9PLLJMx1T7F7F4VmtfFAE/HMI+zwBTy+0sak= "
    "v1a,MeCyGDngoC5jjxPt/aeihDeigrzvm5YmwvrjJ+wT3eOa9ynz8A24sLyU4tY4pDlJADP+oclsacn3fDZ60B0iAw==",
}
NOW = 1764000000 + 10


def post(url: str, body: bytes, headers: Mapping[str, str]) -> Tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, headers=dict(headers), method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


class Ed25519Test(unittest.TestCase):
    def test_rfc_8032_vectors_verify_and_any_change_fails(self) -> None:
        for pub, msg, sig in RFC:
            p, m, s = bytes.fromhex(pub), bytes.fromhex(msg), bytes.fromhex(sig)
            self.assertTrue(verify(p, m, s))
            self.assertFalse(verify(p, m + b"x", s))
            self.assertFalse(verify(p, m, s[:-1] + bytes([s[-1] ^ 1])))
            self.assertFalse(verify(p, m, s[:32] + bytes(32)))
            self.assertFalse(verify(p[:31], m, s))

    def test_a_server_signed_delivery_verifies_with_the_public_key_alone(self) -> None:
        start = time.perf_counter()
        self.assertTrue(verify_signature(BODY, HEADERS, None, public_key=PUBLIC_KEY, now=NOW))
        took = time.perf_counter() - start
        self.assertLess(took, 0.5, f"one verification took {took * 1000:.0f} ms")
        # With the secret too, every signature is checked.
        self.assertTrue(verify_signature(BODY, HEADERS, SECRET, public_key=PUBLIC_KEY, now=NOW))

    def test_refusals_say_why(self) -> None:
        cases = {
            "tampered body": (BODY.replace(b"h\xc3\xa9llo", b"hello"), HEADERS, PUBLIC_KEY, NOW),
            "another key": (BODY, HEADERS, "whpk_" + "A" * 43 + "=", NOW),
            "no v1a": (BODY, {**HEADERS, "webhook-signature": HEADERS["webhook-signature"].split(" ")[0]}, PUBLIC_KEY, NOW),
            "stale": (BODY, HEADERS, PUBLIC_KEY, NOW + 3600),
            "other id": (BODY, {**HEADERS, "webhook-id": "msg_other"}, PUBLIC_KEY, NOW),
        }
        for name, (body, headers, key, now) in cases.items():
            with self.subTest(name):
                with self.assertRaises(SignatureError):
                    check_signature(body, headers, None, public_key=key, now=now)
        with self.assertRaises(ValueError):
            check_signature(BODY, HEADERS, None, public_key="whpk_short", now=NOW)
        with self.assertRaises(ValueError):
            check_signature(BODY, HEADERS, None, now=NOW)

    def test_the_receiver_with_a_public_key_and_no_secret(self) -> None:
        got: List[Dict[str, Any]] = []
        receiver = WebhookReceiver(port=0, public_key=PUBLIC_KEY, host="127.0.0.1", clock=lambda: NOW)
        receiver.on("*")(got.append)
        with receiver:
            status, answer = post(receiver.url, BODY, HEADERS)
            self.assertEqual(status, 200, answer)
            forged = dict(HEADERS, **{"webhook-signature": "v1a," + "A" * 86 + "=="})
            status, answer = post(receiver.url, BODY.replace(b"e1", b"e2"), dict(forged, **{"webhook-id": "x2"}))
            self.assertEqual(status, 401)
            self.assertEqual(json.loads(answer)["error"], "invalid_signature")
        self.assertEqual([e["data"]["content"] for e in got], ["h\u00e9llo"])
        with self.assertRaises(ValueError):
            WebhookReceiver(port=0, secret=None, public_key=None)


if __name__ == "__main__":
    unittest.main()
