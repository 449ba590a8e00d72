"""Workroom SDK for Python: a REST client for bots and a webhook receiver that verifies signatures.

Standard library only. See sdks/python/README.md.
"""

from .client import UNSET, Attempt, WorkroomClient, __version__
from .errors import WorkroomError
from .receiver import CommandInvocation, Response, WebhookReceiver
from .signing import SignatureError, check_signature, sign_delivery, verify_signature

__all__ = [
    "WorkroomClient",
    "WebhookReceiver",
    "verify_signature",
    "check_signature",
    "sign_delivery",
    "SignatureError",
    "WorkroomError",
    "CommandInvocation",
    "Response",
    "Attempt",
    "UNSET",
    "__version__",
]
