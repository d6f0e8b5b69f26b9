"""Deadlines and attempts across services: the request being served (read from
``sluice-deadline-ms``, ``sluice-attempt`` and ``Idempotency-Key``) and the attempt under way
(whose headers an outgoing request forwards), kept in context variables so threads and asyncio
tasks each see their own."""

from __future__ import annotations

import contextlib
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Dict, Iterator, Mapping, Optional

from .core.call import ATTEMPT_HEADER, DEADLINE_HEADER, IDEMPOTENCY_KEY_HEADER


@dataclass
class IncomingRequest:
    """The request this process is serving: its deadline (epoch ms), attempt number and idempotency key.

    ``no_retry`` is set when a call made while serving it gave up (the middleware answers it in
    ``sluice-no-retry``, so the caller does not retry either).
    """

    deadline_at: Optional[float] = None
    attempt: int = 1
    idempotency_key: Optional[str] = None
    no_retry: Optional[str] = None


class AttemptInfo:
    """The attempt under way: its number, what it may take (ms) and the headers to forward
    (``sluice-deadline-ms``, ``sluice-attempt``, ``Idempotency-Key``)."""

    __slots__ = ("attempt", "deadline_ms", "key")

    def __init__(self, attempt: int, deadline_ms: int, key: Optional[str] = None) -> None:
        self.attempt = attempt
        self.deadline_ms = deadline_ms
        self.key = key

    @property
    def headers(self) -> Dict[str, str]:
        headers = {DEADLINE_HEADER: str(max(0, int(self.deadline_ms))), ATTEMPT_HEADER: str(self.attempt)}
        if self.key is not None:
            headers[IDEMPOTENCY_KEY_HEADER] = self.key
        return headers

    def __repr__(self) -> str:
        return f"AttemptInfo(attempt={self.attempt}, deadline_ms={self.deadline_ms}, key={self.key!r})"


_incoming: ContextVar[Optional[IncomingRequest]] = ContextVar("sluice_incoming", default=None)
_attempt: ContextVar[Optional[AttemptInfo]] = ContextVar("sluice_attempt", default=None)


def incoming_request() -> Optional[IncomingRequest]:
    """The request being served in this context, if a middleware (or :func:`serving`) set one."""
    return _incoming.get()


def current_attempt() -> Optional[AttemptInfo]:
    """The attempt under way in this context (inside ``call``'s function), else None.

    Example::

        def charge() -> bytes:
            attempt = current_attempt()
            request = urllib.request.Request(url, headers=attempt.headers if attempt else {})
            return urllib.request.urlopen(request, timeout=attempt.deadline_ms / 1000).read()
    """
    return _attempt.get()


def outgoing_headers() -> Dict[str, str]:
    """The headers an outgoing request forwards now: the attempt's, or the served request's deadline.

    >>> outgoing_headers()
    {}
    """
    attempt = _attempt.get()
    if attempt is not None:
        return attempt.headers
    request = _incoming.get()
    if request is not None and request.deadline_at is not None:
        return {DEADLINE_HEADER: str(max(0, int(request.deadline_at - time.time() * 1000)))}
    return {}


def request_from_headers(headers: Mapping[str, str], now_ms: Optional[float] = None) -> IncomingRequest:
    """Reads ``sluice-deadline-ms``, ``sluice-attempt`` and ``Idempotency-Key`` (names in any case).

    >>> request_from_headers({"sluice-deadline-ms": "800", "sluice-attempt": "2"}, now_ms=1000).deadline_at
    1800.0
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    now = time.time() * 1000 if now_ms is None else now_ms
    deadline = lowered.get(DEADLINE_HEADER)
    attempt = lowered.get(ATTEMPT_HEADER)
    return IncomingRequest(
        deadline_at=now + float(deadline) if deadline is not None and deadline.strip().isdigit() else None,
        attempt=int(attempt) if attempt is not None and attempt.strip().isdigit() and int(attempt) > 0 else 1,
        idempotency_key=lowered.get(IDEMPOTENCY_KEY_HEADER.lower()),
    )


@contextlib.contextmanager
def serving(request: IncomingRequest) -> Iterator[IncomingRequest]:
    """Runs the block as serving ``request``: calls in it keep within its deadline.

    Example::

        with serving(request_from_headers(handler.headers)):
            payments.call(charge, idempotent=True)
    """
    token = _incoming.set(request)
    try:
        yield request
    finally:
        _incoming.reset(token)


@contextlib.contextmanager
def attempt_scope(info: AttemptInfo) -> Iterator[AttemptInfo]:
    token = _attempt.set(info)
    try:
        yield info
    finally:
        _attempt.reset(token)
