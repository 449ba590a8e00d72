"""The one error type of the SDK."""

from __future__ import annotations

from typing import Any, Optional


class WorkroomError(Exception):
    """A call that failed: an error answer of the server, a time-out or a network error.

    - ``code``: the server's stable snake_case code (``not_found``, ``insufficient_scope``,
      ``rate_limited``, ...), or ``timeout`` / ``network_error`` when no answer came.
    - ``status``: the HTTP status, ``None`` when no answer came.
    - ``request_id``: the server's ``X-Request-Id`` (quote it when reporting a problem).
    - ``retry_after``: seconds the server asked to wait (429/503), else ``None``.
    - ``field`` / ``scope``: the input field at fault, the scope the key lacks, when the server names them.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: Optional[int] = None,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
        field: Optional[str] = None,
        scope: Optional[str] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.request_id = request_id
        self.retry_after = retry_after
        self.field = field
        self.scope = scope
        self.body = body

    def __str__(self) -> str:
        where = f"HTTP {self.status} " if self.status is not None else ""
        rid = f" (request {self.request_id})" if self.request_id else ""
        return f"{where}{self.code}: {self.message}{rid}"

    def __repr__(self) -> str:
        return (
            f"WorkroomError(code={self.code!r}, status={self.status!r}, message={self.message!r}, "
            f"request_id={self.request_id!r}, retry_after={self.retry_after!r})"
        )
