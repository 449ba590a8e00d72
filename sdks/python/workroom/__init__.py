"""Workroom SDK for Python: a REST client for bots, a webhook receiver that verifies signatures, and a socket
receiver (events over a WebSocket the bot opens: no public URL needed).

Standard library only. See sdks/python/README.md.
"""

from .client import UNSET, Attempt, WorkroomClient, __version__
from .errors import WorkroomError
from .receiver import ActionInvocation, CommandInvocation, Response, WebhookReceiver
from .socket import SocketReceiver, SocketRefused
from .signing import SignatureError, check_signature, sign_delivery, verify_signature
from .types import button, select

__all__ = [
    "WorkroomClient",
    "WebhookReceiver",
    "SocketReceiver",
    "SocketRefused",
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
