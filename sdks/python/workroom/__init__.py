"""Workroom SDK for Python: a REST client for bots and a webhook receiver that verifies signatures.

Standard library only. See sdks/python/README.md.
"""

from .client import UNSET, Attempt, WorkroomClient, __version__
from .errors import WorkroomError
from .receiver import ActionInvocation, CommandInvocation, Response, WebhookReceiver
from .signing import SignatureError, check_signature, sign_delivery, verify_signature
from .types import button, select

__all__ = [
    "WorkroomClient",
    "WebhookReceiver",
    "verify_signature",
    "check_signature",
    "sign_delivery",
    "SignatureError",
    "WorkroomError",
    "CommandInvocation",
    "ActionInvocation",
    "button",
    "select",
    "Response",
    "Attempt",
    "UNSET",
    "__version__",
]
