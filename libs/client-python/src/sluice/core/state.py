"""Everything one process knows about one dependency: the fleet's view, pending report counts,
the held denial and the local fallback guard."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from .local import BreakerFacts, LocalGuard
from .policy import DEFAULT_POLICY, BackoffPolicy, DependencyPolicy, policy_from_json, with_backoff

#: The coordinator's latency bucket bounds (ms): every reporter's counts add up on them.
LATENCY_BOUNDS_MS = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 7500, 10000, 15000, 20000, 30000, 60000)


def bucket_of(ms: float) -> int:
    bucket = 0
    while bucket < len(LATENCY_BOUNDS_MS) and ms > LATENCY_BOUNDS_MS[bucket]:
        bucket += 1
    return bucket


@dataclass
class HeldRefusal:
    reason: str
    breaker: Dict[str, Any]
    until: float
    since: float


class HeldDenial:
    """The last ``budget_exhausted``/``breaker_open`` denial that said when to ask again
    (``retryAfterMs``): repeated locally until then, or until a report taken after it was delivered.

    >>> held = HeldDenial()
    >>> held.hold("budget_exhausted", {"state": "closed"}, until=100, now=0)
    >>> held.current(50).reason, held.current(100)
    ('budget_exhausted', None)
    """

    def __init__(self) -> None:
        self._refusal: Optional[HeldRefusal] = None

    def hold(self, reason: str, breaker: Dict[str, Any], until: float, now: float) -> None:
        self._refusal = HeldRefusal(reason, breaker, until, now)

    def current(self, now: float) -> Optional[HeldRefusal]:
        refusal = self._refusal
        if refusal is None:
            return None
        if now < refusal.until:
            return refusal
        self._refusal = None
        return None

    def reported(self, taken_at: float) -> None:
        if self._refusal is not None and self._refusal.since <= taken_at:
            self._refusal = None


class DependencyState:
    """One dependency's state in one process (not thread-safe: the IO layers hold a lock around it)."""

    def __init__(
        self,
        name: str,
        on_change: Callable[[str, str, str, str], None],
        configured_share: Optional[float] = None,
        fallback_backoff: Optional[BackoffPolicy] = None,
    ) -> None:
        self.name = name
        self._on_change = on_change
        self.configured_share = configured_share
        self.fallback_backoff = fallback_backoff
        #: The fleet breaker as last pushed or read (None until known: closed).
        self.state: Optional[str] = None
        self.open_until: Optional[float] = None
        self.breaker_reason: Optional[str] = None
        self.policy: Optional[DependencyPolicy] = None
        #: The fleet's p99 latency of the dependency (ms), from its view; None while unknown.
        self.p99: Optional[float] = None
        self.etag: Optional[str] = None
        self.last_read_at = float("-inf")
        self.fleet_size: Optional[int] = None
        self.held = HeldDenial()
        self.requests = self.successes = self.failures = self.slow = 0
        self.own_retries = 0
        self.retries_succeeded = 0
        self.counts = [0] * (len(LATENCY_BOUNDS_MS) + 1)
        self.samples = 0
        self.probes: List[Dict[str, Any]] = []
        #: Fleet probes granted in admissions answered too late: (token, expiry on the client's clock).
        self.kept_probes: List[Tuple[str, float]] = []
        #: Counts the half-open periods known to have ended (a state but half_open applied): an ask takes it as it goes out.
        self.half_open_period = 0
        self.pending_since = 0.0
        self._fed_requests = self._fed_successes = 0
        self.slow_call_ms = DEFAULT_POLICY.breaker.slow_call_ms
        self.local = LocalGuard(lambda: self.fallback_policy, lambda: self.share, self._local_transition, self.feed_local)

    # --- the fleet's view -------------------------------------------------------------------
    @property
    def share(self) -> float:
        """This process's part of the fleet: configured, else 1 / the reporters the fleet counted."""
        if self.configured_share is not None:
            return self.configured_share
        return 1 / max(1, self.fleet_size or 1)

    @property
    def fallback_policy(self) -> DependencyPolicy:
        return with_backoff(self.policy or DEFAULT_POLICY, self.fallback_backoff)

    @property
    def limited(self) -> bool:
        return self.policy is not None and self.policy.limited

    def fleet_state(self, now: float) -> str:
        """The fleet state as it stands now: an ``open`` past ``open_until`` is half-open, a lapsed forced state closed."""
        state = self.state or "closed"
        if self.open_until is not None and now >= self.open_until:
            if state == "open":
                return "half_open"
            if state in ("forced_open", "forced_closed"):
                return "closed"
        return state

    def apply_state(self, state: str, open_until: Any = ..., reason: Any = ...) -> None:
        """A state pushed over SSE, read from a view, or returned by a report or decision."""
        previous = self.state or "closed"
        self.state = state
        if open_until is not ...:
            self.open_until = open_until if isinstance(open_until, (int, float)) else None
        elif state != previous:
            self.open_until = None
        if reason is not ...:
            self.breaker_reason = reason if isinstance(reason, str) else None
        elif state != previous:
            self.breaker_reason = None
        if state != "half_open":
            self.kept_probes.clear()  # the fleet's probes go with its half-open state
            self.half_open_period += 1
        if state != previous:
            self._on_change(self.name, previous, state, "fleet")

    def apply_breaker(self, breaker: Any) -> None:
        if isinstance(breaker, dict) and isinstance(breaker.get("state"), str):
            self.apply_state(breaker["state"], breaker.get("openUntil", ...), breaker.get("reason", ...))

    def apply_view(self, view: Dict[str, Any], etag: Optional[str], now: float) -> None:
        self.policy = policy_from_json(view.get("policy"))
        latency = view.get("latency")
        p99 = latency.get("p99") if isinstance(latency, dict) else None
        self.p99 = float(p99) if isinstance(p99, (int, float)) else None
        self.slow_call_ms = self.fallback_policy.breaker.slow_call_ms
        self.etag = etag
        self.last_read_at = now
        self.apply_breaker(view.get("breaker"))

    def keep_probe(self, token: str, expires_at: float, period: int) -> None:
        """A probe granted after the caller stopped waiting: the fleet lets no other out until it is used or expires.
        Not kept when the breaker was seen to leave half-open since its ask went out in ``period``."""
        if period == self.half_open_period:
            self.kept_probes.append((token, expires_at))

    def take_kept(self, now: float) -> Optional[Tuple[str, float]]:
        """A kept probe not expired at ``now``, taken (it goes out once), with its expiry: (token, expiry on
        the client's clock); None when there is none."""
        self.kept_probes = [kept for kept in self.kept_probes if kept[1] > now]
        return self.kept_probes.pop(0) if self.kept_probes else None

    def breaker_facts(self, now: float) -> BreakerFacts:
        """What the fleet said last of the breaker, as it stands at ``now``."""
        state = self.fleet_state(now)
        forced = state in ("forced_open", "forced_closed")
        open_until = self.open_until if state == self.state else None
        return BreakerFacts(
            state=state,
            operator_reason=self.breaker_reason if forced else None,
            open_until=open_until,
            retry_after_ms=None if open_until is None else max(0.0, open_until - now),
        )

    def fallback_starts(self, now: float) -> None:
        """The fallback takes over: its breaker starts from the fleet's last known state."""
        if self.state is not None:
            self.local.adopt(self.fleet_state(now), self.open_until, now, self.breaker_reason)

    def _local_transition(self, before: str, after: str) -> None:
        self._on_change(self.name, before, after, "local")

    # --- counts for the next report ---------------------------------------------------------
    def _pending(self, now: float) -> None:
        if self.pending_since == 0:
            self.pending_since = now

    def record_request(self, now: float) -> None:
        """A first attempt went out: the budget's deposit (the local guard gets it in the next batch)."""
        if self.pending_since == 0:
            self.pending_since = now
        self.requests += 1

    def feed_local(self, now: float) -> None:
        """Hands the local guard the first attempts and plain successes counted since it was last fed,
        as one batch: at every report, and before it weighs a failure or decides a retry."""
        requests = self.requests - self._fed_requests
        successes = self.successes - self._fed_successes
        if requests or successes:
            self._fed_requests, self._fed_successes = self.requests, self.successes
            self.local.count(now, requests, successes)

    def record_own_retry(self, now: float) -> None:
        """A retry went out on the local fallback's grant: the fleet's budget is charged in the next report."""
        self._pending(now)
        self.own_retries += 1

    def record_outcome(self, now: float, latency_ms: float, failed: bool) -> None:
        """An attempt ended; a failed or slow one goes to the local guard at once (it may open its breaker)."""
        if self.pending_since == 0:
            self.pending_since = now
        self.counts[bucket_of(latency_ms)] += 1
        self.samples += 1
        slow = latency_ms >= self.slow_call_ms
        if not failed and not slow:
            self.successes += 1
            return
        if failed:
            self.failures += 1
        else:
            self.successes += 1
            self._fed_successes += 1  # handed over below, with its slowness
        if slow:
            self.slow += 1
        self.local.record_outcome(now, failed, slow)

    def record_retry_succeeded(self, now: float) -> None:
        """A granted retry's attempt succeeded: under an adaptive budget it gives its grant back."""
        self._pending(now)
        self.retries_succeeded += 1

    @property
    def has_pending(self) -> bool:
        return self.pending_since != 0

    def take_report(self, send_retries_succeeded: bool, now: float) -> Dict[str, Any]:
        """The pending counts as one ``POST /reports`` entry; the counts start afresh (the local guard keeps them)."""
        self.feed_local(now)
        report: Dict[str, Any] = {
            "dep": self.name,
            "requests": self.requests,
            "successes": self.successes,
            "failures": self.failures,
            "slow": self.slow,
        }
        if self.own_retries:
            report["retries"] = self.own_retries
        if self.retries_succeeded and send_retries_succeeded:
            report["retriesSucceeded"] = self.retries_succeeded
        if self.samples:
            report["latency"] = {"boundsMs": list(LATENCY_BOUNDS_MS), "counts": self.counts}
        if self.probes:
            report["probes"] = self.probes
        self.requests = self.successes = self.failures = self.slow = self.samples = 0
        self.own_retries = self.retries_succeeded = 0
        self._fed_requests = self._fed_successes = 0
        self.counts = [0] * (len(LATENCY_BOUNDS_MS) + 1)
        self.probes = []
        self.pending_since = 0
        return report

    def restore_report(self, report: Dict[str, Any], taken_at: float) -> None:
        """Puts back a report that could not be delivered (its probes are dropped: their leases expire)."""
        self.requests += report["requests"]
        self.successes += report["successes"]
        self._fed_requests += report["requests"]  # the local guard already has these
        self._fed_successes += report["successes"]
        self.failures += report["failures"]
        self.slow += report["slow"]
        self.own_retries += report.get("retries", 0)
        self.retries_succeeded += report.get("retriesSucceeded", 0)
        latency = report.get("latency")
        if latency:
            for slot, count in enumerate(latency["counts"]):
                self.counts[slot] += count
            self.samples += sum(latency["counts"])
        if self.pending_since == 0 or taken_at < self.pending_since:
            self.pending_since = taken_at
