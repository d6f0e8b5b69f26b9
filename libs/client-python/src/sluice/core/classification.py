"""What an attempt's error (or returned response) says about the dependency, in HTTP terms.

Classifies ``urllib.error.HTTPError`` and ``URLError``, socket timeouts and connection errors,
``requests``, ``httpx`` and ``aiohttp`` errors and responses (only when those libraries are
already imported: this module never imports them), and any exception with a ``status`` /
``status_code`` (and ``retry_after`` seconds or ``retry_after_ms``) attribute.
"""

from __future__ import annotations

import socket
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from ..errors import HttpStatusError
from .backoff import parse_retry_after


@dataclass(frozen=True)
class Failure:
    """A failure as the coordinator hears it: a ``status``, or an ``error`` kind, and ``Retry-After``.

    >>> Failure(status=503, retry_after_ms=1000).status
    503
    """

    status: Optional[int] = None
    #: ``timeout``, ``connection`` or ``other`` when no answer came.
    error: Optional[str] = None
    retry_after_ms: Optional[int] = None
    #: The dependency said ``sluice-no-retry``: it already retried its own calls.
    retried_downstream: bool = False


#: Describes an error as a Failure, or returns None to leave it to the next classifier.
Classifier = Callable[[BaseException], Optional[Failure]]

NOT_PROCESSED_STATUSES = frozenset((408, 429, 503))
OTHER = Failure(error="other")


def is_dependency_failure(failure: Failure) -> bool:
    """Timeouts, connection errors, unknown errors, 408, 429 and 5xx: the dependency's, retriable.

    >>> is_dependency_failure(Failure(status=404))
    False
    """
    status = failure.status
    return status is None or status in (408, 429) or status >= 500


def failing_status(status: int) -> bool:
    """A status that fails an attempt: 408, 429 and 5xx."""
    return status in (408, 429) or status >= 500


def retry_denial(failure: Failure, idempotent: bool, has_key: bool) -> Optional[str]:
    """``not_retriable``, ``not_idempotent`` or None when a retry may be asked for.

    Idempotent calls retry timeouts, connection errors, 408, 429 and 5xx; a call with an
    idempotency key only what was not processed (timeouts, connection errors, 408, 429, 503).

    >>> retry_denial(Failure(status=500), idempotent=False, has_key=True)
    'not_idempotent'
    >>> retry_denial(Failure(status=503), idempotent=False, has_key=True) is None
    True
    """
    if not is_dependency_failure(failure):
        return "not_retriable"
    if idempotent:
        return None
    if not has_key:
        return "not_idempotent"
    return None if failure.status is None or failure.status in NOT_PROCESSED_STATUSES else "not_idempotent"


def _header(headers: Any, name: str) -> Optional[str]:
    if headers is None:
        return None
    try:
        value = headers.get(name)
    except Exception:  # noqa: BLE001 - a foreign headers object
        return None
    return value if isinstance(value, str) else None


def _int_status(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599 else None


def response_status(value: Any) -> Optional[int]:
    """The status of an HTTP response object (``requests``, ``httpx``, ``aiohttp``, ``http.client``), else None."""
    module = type(value).__module__.split(".")[0]
    if module in ("requests", "httpx"):
        return _int_status(getattr(value, "status_code", None))
    if module in ("aiohttp", "http", "urllib"):
        return _int_status(getattr(value, "status", None))
    return None


def response_failure(value: Any) -> Optional[HttpStatusError]:
    """A returned response with a failing status (408, 429, 5xx) as an HttpStatusError; else None.

    A response carrying ``sluice-no-retry`` fails too: its service gave up on its own dependency.
    """
    status = response_status(value)
    if status is None:
        return None
    headers = getattr(value, "headers", None)
    no_retry = _header(headers, "sluice-no-retry")
    if not failing_status(status):
        return None
    return HttpStatusError(status, value, parse_retry_after(_header(headers, "retry-after"), time.time() * 1000), no_retry)


def _from_status(status: int, headers: Any) -> Failure:
    return Failure(
        status=status,
        retry_after_ms=parse_retry_after(_header(headers, "retry-after"), time.time() * 1000),
        retried_downstream=_header(headers, "sluice-no-retry") is not None,
    )


def _library_failure(error: BaseException) -> Optional[Failure]:
    """requests, httpx and aiohttp errors, when those libraries are loaded."""
    requests = sys.modules.get("requests")
    if requests is not None:
        exceptions = requests.exceptions
        if isinstance(error, exceptions.Timeout):
            return Failure(error="timeout")
        if isinstance(error, exceptions.ConnectionError):
            return Failure(error="connection")
        if isinstance(error, exceptions.HTTPError) and error.response is not None:
            return _from_status(error.response.status_code, error.response.headers)
    httpx = sys.modules.get("httpx")
    if httpx is not None:
        if isinstance(error, httpx.HTTPStatusError):
            return _from_status(error.response.status_code, error.response.headers)
        if isinstance(error, httpx.TimeoutException):
            return Failure(error="timeout")
        if isinstance(error, httpx.TransportError):
            return Failure(error="connection")
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is not None:
        if isinstance(error, aiohttp.ClientResponseError):
            return _from_status(error.status, error.headers)
        if isinstance(error, aiohttp.ServerTimeoutError):
            return Failure(error="timeout")
        if isinstance(error, aiohttp.ClientConnectionError):
            return Failure(error="connection")
    return None


def default_classifier(error: BaseException) -> Optional[Failure]:
    """The built-in classifier; None for an error it does not know (then it is ``other``).

    >>> import urllib.error
    >>> default_classifier(urllib.error.HTTPError("http://x", 503, "busy", None, None)).status  # type: ignore[arg-type]
    503
    >>> default_classifier(TimeoutError()).error
    'timeout'
    """
    import urllib.error

    if isinstance(error, HttpStatusError):
        return Failure(status=error.status, retry_after_ms=error.retry_after_ms, retried_downstream=error.no_retry is not None)
    if isinstance(error, urllib.error.HTTPError):
        return _from_status(error.code, error.headers)
    library = _library_failure(error)
    if library is not None:
        return library
    current: Optional[BaseException] = error
    for _ in range(4):
        if current is None:
            break
        if isinstance(current, (socket.timeout, TimeoutError)):
            return Failure(error="timeout")
        if isinstance(current, ConnectionError):
            return Failure(error="connection")
        if type(current).__name__ in ("TimeoutError", "ReadTimeout", "ConnectTimeout"):
            return Failure(error="timeout")
        status = _int_status(getattr(current, "status", None)) or _int_status(getattr(current, "status_code", None))
        if status is not None:
            retry_after_ms = getattr(current, "retry_after_ms", None)
            retry_after = getattr(current, "retry_after", None)
            if not isinstance(retry_after_ms, (int, float)) and isinstance(retry_after, (int, float)):
                retry_after_ms = retry_after * 1000
            return Failure(status=status, retry_after_ms=int(retry_after_ms) if isinstance(retry_after_ms, (int, float)) else None)
        if isinstance(current, urllib.error.URLError) and isinstance(current.reason, BaseException):
            current = current.reason
            continue
        current = current.__cause__
    return None


def classify(error: BaseException, classifiers: Sequence[Classifier] = ()) -> Failure:
    """Runs ``classifiers`` in order, then the default; an error nobody knows is ``other``.

    >>> classify(ValueError("boom"))
    Failure(status=None, error='other', retry_after_ms=None, retried_downstream=False)
    """
    for classifier in classifiers:
        failure = classifier(error)
        if failure is not None:
            return failure
    return default_classifier(error) or OTHER
