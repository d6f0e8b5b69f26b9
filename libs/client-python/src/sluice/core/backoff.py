"""Backoff with jitter, and ``Retry-After`` parsing."""

from __future__ import annotations

import email.utils
import math
from typing import Callable, Optional

from .policy import BackoffPolicy

#: A source of floats in [0, 1): ``random.random`` in production, a fixed function in tests.
RandomSource = Callable[[], float]

MAX_EXPONENT = 30
MAX_DURATION_MS = 86_400_000


def backoff_delay(
    policy: BackoffPolicy,
    attempt: int,
    random: RandomSource,
    retry_after_ms: Optional[float] = None,
) -> int:
    """The wait before retry number ``attempt`` (1 = first retry), never below ``retry_after_ms``.

    >>> backoff_delay(BackoffPolicy(base_ms=50, cap_ms=2000, jitter="none"), 3, lambda: 0.5)
    200
    >>> backoff_delay(BackoffPolicy(base_ms=50, cap_ms=2000, jitter="full"), 1, lambda: 0.5, retry_after_ms=1000)
    1000
    """
    attempt = max(1, int(attempt))
    exponential = min(policy.cap_ms, policy.base_ms * 2 ** min(attempt - 1, MAX_EXPONENT))
    if policy.jitter == "none":
        delay: float = exponential
    elif policy.jitter == "decorrelated":
        previous = min(policy.cap_ms, policy.base_ms * 3 ** min(max(attempt - 2, 0), MAX_EXPONENT))
        upper = max(policy.base_ms, previous * 3)
        delay = min(policy.cap_ms, policy.base_ms + random() * (upper - policy.base_ms))
    else:
        delay = random() * exponential
    return max(int(round(delay)), math.ceil(retry_after_ms or 0))


def parse_retry_after(value: Optional[str], now_ms: float) -> Optional[int]:
    """A ``Retry-After`` header in ms: delay-seconds or an HTTP-date (relative to ``now_ms``, epoch ms).

    >>> parse_retry_after("3", 0)
    3000
    >>> parse_retry_after("soon", 0) is None
    True
    """
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return min(int(text) * 1000, MAX_DURATION_MS)
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed is None:
        return None
    return int(min(max(0.0, parsed.timestamp() * 1000 - now_ms), MAX_DURATION_MS))
