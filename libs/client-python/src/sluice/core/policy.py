"""The dependency policy as the coordinator serves it (``GET /v1/{ns}/deps/{dep}``), with its defaults."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional


@dataclass(frozen=True)
class BackoffPolicy:
    """Exponential backoff: ``base_ms * 2**(attempt-1)`` capped at ``cap_ms``, with jitter.

    >>> BackoffPolicy(base_ms=10, cap_ms=100, jitter="none").base_ms
    10
    """

    base_ms: int = 50
    cap_ms: int = 2000
    jitter: str = "full"


@dataclass(frozen=True)
class RetryBudgetPolicy:
    """A retry budget: ``floor(ratio * requests + min_retries_per_second * window_seconds)``."""

    ratio: float = 0.1
    min_retries_per_second: float = 10
    window_seconds: int = 10
    max_attempts: int = 3
    #: ``fixed`` or ``adaptive``; None when the coordinator does not say (it predates adaptive budgets).
    mode: Optional[str] = None
    max_ratio: float = 0.5


@dataclass(frozen=True)
class BreakerPolicy:
    """When a breaker opens and how it recovers."""

    failure_rate_threshold: float = 0.5
    slow_call_rate_threshold: float = 1.0
    slow_call_ms: int = 1000
    minimum_calls: int = 20
    window_seconds: int = 10
    open_ms: int = 30000
    max_open_ms: int = 300000
    half_open_probes: int = 1
    close_after_successes: int = 3


@dataclass(frozen=True)
class DependencyPolicy:
    """A dependency's policy; every field has the coordinator's default.

    >>> DependencyPolicy().retry_budget.max_attempts
    3
    """

    retry_budget: RetryBudgetPolicy = field(default_factory=RetryBudgetPolicy)
    backoff: BackoffPolicy = field(default_factory=BackoffPolicy)
    breaker: BreakerPolicy = field(default_factory=BreakerPolicy)
    #: True when the policy has a rate or a concurrency limit: every attempt asks ``/admit`` first.
    limited: bool = False


DEFAULT_POLICY = DependencyPolicy()


def _num(source: Mapping[str, Any], key: str, default: Any) -> Any:
    value = source.get(key)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def policy_from_json(document: Any) -> DependencyPolicy:
    """Reads a policy document defensively: missing or malformed fields keep their defaults.

    >>> policy_from_json({"retryBudget": {"maxAttempts": 2}}).retry_budget.max_attempts
    2
    """
    if not isinstance(document, Mapping):
        return DEFAULT_POLICY
    budget = document.get("retryBudget") or {}
    backoff = document.get("backoff") or {}
    breaker = document.get("breaker") or {}
    d_budget, d_backoff, d_breaker = DEFAULT_POLICY.retry_budget, DEFAULT_POLICY.backoff, DEFAULT_POLICY.breaker
    mode = budget.get("mode") if isinstance(budget, Mapping) else None
    jitter = backoff.get("jitter") if isinstance(backoff, Mapping) else None
    return DependencyPolicy(
        retry_budget=RetryBudgetPolicy(
            ratio=_num(budget, "ratio", d_budget.ratio),
            min_retries_per_second=_num(budget, "minRetriesPerSecond", d_budget.min_retries_per_second),
            window_seconds=int(_num(budget, "windowSeconds", d_budget.window_seconds)),
            max_attempts=int(_num(budget, "maxAttempts", d_budget.max_attempts)),
            mode=mode if isinstance(mode, str) else None,
            max_ratio=_num(budget, "maxRatio", d_budget.max_ratio),
        ),
        backoff=BackoffPolicy(
            base_ms=int(_num(backoff, "baseMs", d_backoff.base_ms)),
            cap_ms=int(_num(backoff, "capMs", d_backoff.cap_ms)),
            jitter=jitter if jitter in ("full", "decorrelated", "none") else d_backoff.jitter,
        ),
        breaker=BreakerPolicy(
            failure_rate_threshold=_num(breaker, "failureRateThreshold", d_breaker.failure_rate_threshold),
            slow_call_rate_threshold=_num(breaker, "slowCallRateThreshold", d_breaker.slow_call_rate_threshold),
            slow_call_ms=int(_num(breaker, "slowCallMs", d_breaker.slow_call_ms)),
            minimum_calls=int(_num(breaker, "minimumCalls", d_breaker.minimum_calls)),
            window_seconds=int(_num(breaker, "windowSeconds", d_breaker.window_seconds)),
            open_ms=int(_num(breaker, "openMs", d_breaker.open_ms)),
            max_open_ms=int(_num(breaker, "maxOpenMs", d_breaker.max_open_ms)),
            half_open_probes=int(_num(breaker, "halfOpenProbes", d_breaker.half_open_probes)),
            close_after_successes=int(_num(breaker, "closeAfterSuccesses", d_breaker.close_after_successes)),
        ),
        limited=bool(document.get("rateLimit") or document.get("concurrency")),
    )


def with_backoff(policy: DependencyPolicy, backoff: Optional[BackoffPolicy]) -> DependencyPolicy:
    """The policy with its backoff replaced (a configured local override)."""
    return policy if backoff is None else replace(policy, backoff=backoff)
