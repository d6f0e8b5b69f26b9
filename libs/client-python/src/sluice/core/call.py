"""One call's state and the retry rules that need no I/O: shared by the sync and asyncio clients."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Optional

from ..errors import BreakerOpenError, DeadlineExceededError, GiveUpError, LimitedError
from .backoff import MAX_DURATION_MS
from .classification import Failure, retry_denial
from .local import BreakerFacts, Verdict

MAX_RETRY_ATTEMPT = 100

DEADLINE_HEADER = "sluice-deadline-ms"
ATTEMPT_HEADER = "sluice-attempt"
IDEMPOTENCY_KEY_HEADER = "Idempotency-Key"
NO_RETRY_HEADER = "sluice-no-retry"


@dataclass
class Call:
    """One call through a dependency: its deadline (epoch ms), idempotency and attempts so far."""

    dependency: str
    deadline_at: float
    idempotent: bool
    key: Optional[str]
    max_attempts: int
    #: The attempt number of the request being served (``sluice-attempt``), when serving one.
    serving_attempt: int = 1
    retry_when_serving_retry: bool = False
    launched: int = 0
    #: The last retry was granted (by the fleet or the fallback): its success is counted once.
    granted_retry: bool = False
    last_error: Optional[BaseException] = None

    def headers(self, attempt_deadline_ms: float) -> Dict[str, str]:
        """The headers an attempt forwards: its deadline, its number and the idempotency key."""
        headers = {DEADLINE_HEADER: str(max(0, int(attempt_deadline_ms))), ATTEMPT_HEADER: str(self.launched)}
        if self.key is not None:
            headers[IDEMPOTENCY_KEY_HEADER] = self.key
        return headers


def auto_timeout_ms(p99: Optional[float], min_ms: int = 100, max_ms: int = 3000) -> int:
    """The automatic per-attempt timeout: 2 × the fleet's p99, clamped; ``max_ms`` while no p99 is known.

    >>> auto_timeout_ms(120), auto_timeout_ms(None), auto_timeout_ms(10)
    (240, 3000, 100)
    """
    if p99 is None:
        return max_ms
    return int(min(max_ms, max(min_ms, math.ceil(2 * p99))))


def give_up_before_asking(call: Call, error: BaseException, failure: Failure, now: float) -> Optional[BaseException]:
    """The error that ends the call before any ask, or None when the coordinator is to be asked.

    A failure that is not retriable at all returns the attempt's own error, unchanged.
    """
    denial = retry_denial(failure, call.idempotent, call.key is not None)
    if denial == "not_retriable":
        return error
    if denial is not None:
        return GiveUpError(call.dependency, denial, call.launched, error)
    if failure.retried_downstream:
        return GiveUpError(call.dependency, "downstream_retried", call.launched, error)
    if call.launched >= call.max_attempts:
        return GiveUpError(call.dependency, "max_attempts", call.launched, error)
    if call.serving_attempt > 1 and not call.retry_when_serving_retry:
        return GiveUpError(call.dependency, "upstream_retry", call.launched, error)
    if call.deadline_at - now <= 0:
        return DeadlineExceededError(call.dependency, call.launched, error)
    return None


def wait_before_asking(call: Call, error: BaseException, failure: Failure, now: float) -> "tuple[Optional[BaseException], int]":
    """The wait before the ask (ms): the dependency's Retry-After, or the give-up when it reaches the deadline.

    The Retry-After is waited out before the ask, so the budget counts the retry when it is about to
    be sent (a grant held through the wait would count as failing until its success is reported)
    and the fleet decides on what it knows then.

    >>> wait_before_asking(Call("pay", 5000, True, None, 3, launched=1), OSError(), Failure(status=503, retry_after_ms=1000), 1000)
    (None, 1000)
    """
    wait = math.ceil(failure.retry_after_ms or 0)
    if wait > 0 and now + wait >= call.deadline_at:
        return DeadlineExceededError(call.dependency, call.launched, error), 0
    return None, wait


def budget_wait(call: Call, verdict: Verdict, failure: Failure, now: float) -> int:
    """How long (ms) a denied call waits for the fleet's budget before it asks once more; 0 for not at all.

    Only after a ``budget_exhausted`` denial that says when the same ask could be granted, for a
    call the dependency asked to come back later (Retry-After), for no longer than it asked and
    within the deadline. A call that failed without a Retry-After (an outage, typically) still
    fails at once.

    >>> call = Call("pay", 5000, True, None, 3, launched=1)
    >>> denied = Verdict(False, "budget_exhausted", budget_retry_after_ms=400)
    >>> budget_wait(call, denied, Failure(status=503, retry_after_ms=1000), 1000), budget_wait(call, denied, Failure(status=503), 1000)
    (400, 0)
    """
    wait = verdict.budget_retry_after_ms
    if verdict.allow or verdict.reason != "budget_exhausted" or not wait or not failure.retry_after_ms:
        return 0
    if wait > failure.retry_after_ms or now + wait >= call.deadline_at:
        return 0
    return math.ceil(wait)


def retry_ask(call: Call, failure: Failure, now: float) -> Dict[str, Any]:
    """The body of ``POST …/retry`` after ``call.launched`` attempts (without its ``requestId``).

    It carries no ``retryAfterMs``: the dependency's Retry-After is waited out before the ask.
    """
    ask: Dict[str, Any] = {
        "attempt": min(call.launched, MAX_RETRY_ATTEMPT),
        "idempotent": True,
        "deadlineMs": int(min(max(1, math.floor(call.deadline_at - now)), MAX_DURATION_MS)),
    }
    if failure.status is not None:
        ask["status"] = failure.status
    else:
        ask["error"] = failure.error or "other"
    return ask


def breaker_error(call: Call, facts: BreakerFacts, last_error: Optional[BaseException]) -> BreakerOpenError:
    return BreakerOpenError(call.dependency, facts.state, facts.operator_reason, facts.open_until, facts.retry_after_ms, call.launched, last_error)


def after_verdict(call: Call, verdict: Verdict, error: BaseException, now: float, facts: BreakerFacts) -> "tuple[Optional[BaseException], int]":
    """The give-up a denial is, or the granted backoff before the retry."""
    if not verdict.allow:
        if verdict.reason == "breaker_open":
            return breaker_error(call, verdict.breaker or facts, error), 0
        if verdict.reason == "deadline_exceeded":
            return DeadlineExceededError(call.dependency, call.launched, error), 0
        return GiveUpError(call.dependency, verdict.reason, call.launched, error), 0
    delay = verdict.delay_ms
    if now + delay >= call.deadline_at:
        return DeadlineExceededError(call.dependency, call.launched, error), 0
    return None, delay


def admission_refusal(call: Call, answer: Dict[str, Any], facts: BreakerFacts) -> GiveUpError:
    """The give-up an ``/admit`` refusal is."""
    reason = answer.get("reason")
    if reason in ("rate_limited", "concurrency_limited"):
        return LimitedError(call.dependency, str(reason), float(answer.get("retryAfterMs") or 0), call.launched, call.last_error)
    if reason == "breaker_open":
        return breaker_error(call, facts, call.last_error)
    if reason == "deadline_exceeded":
        return DeadlineExceededError(call.dependency, call.launched, call.last_error)
    return GiveUpError(call.dependency, str(reason), call.launched, call.last_error)


def facts_of(breaker: Any, retry_after_ms: Any, now: float) -> BreakerFacts:
    """What a decision's ``breaker`` and ``retryAfterMs`` say of the breaker that refused."""
    breaker = breaker if isinstance(breaker, dict) else {}
    state = str(breaker.get("state") or "open")
    forced = state in ("forced_open", "forced_closed")
    open_until = breaker.get("openUntil") if isinstance(breaker.get("openUntil"), (int, float)) else None
    if isinstance(retry_after_ms, (int, float)) and retry_after_ms > 0:
        after: Optional[float] = float(retry_after_ms)
    else:
        after = None if open_until is None else max(0.0, open_until - now)
    reason = breaker.get("reason")
    return BreakerFacts(state, reason if forced and isinstance(reason, str) else None, open_until, after)


def with_deadline_left(ask: Dict[str, Any], waited_ms: float) -> Optional[Dict[str, Any]]:
    """The ask with the deadline it has left after waiting ``waited_ms``; None once none is left."""
    deadline = ask.get("deadlineMs")
    if deadline is None or waited_ms <= 0:
        return ask
    left = int(deadline - waited_ms)
    return None if left < 1 else {**ask, "deadlineMs": left}
