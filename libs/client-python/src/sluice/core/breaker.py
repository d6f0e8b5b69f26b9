"""The local fallback's circuit breaker: the coordinator's state machine, on one process's counts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import List, Optional, Tuple

from .policy import BreakerPolicy

EPSILON = 1e-9
OPEN_STATES = ("open", "forced_open")


def blocks_calls(state: str) -> bool:
    """Calls other than probes may not go out: open, forced open, or half-open."""
    return state in ("open", "forced_open", "half_open")


@dataclass(frozen=True)
class BreakerRecord:
    """A breaker's state: ``open_until`` is when an open breaker half-opens or a forced one lapses."""

    state: str = "closed"
    since: Optional[float] = None
    open_until: Optional[float] = None
    opens: int = 0
    probe_successes: int = 0
    reason: Optional[str] = None


def open_duration_ms(policy: BreakerPolicy, opens: int) -> float:
    """``open_ms`` doubled per reopen, capped at ``max_open_ms``."""
    return float(min(policy.max_open_ms, policy.open_ms * 2 ** min(max(opens - 1, 0), 30)))


class BreakerMachine:
    """A lazy breaker: time-based transitions happen when it is looked at (no timers).

    >>> m = BreakerMachine()
    >>> m.evaluate(BreakerPolicy(minimum_calls=2), successes=0, failures=2, slow=0, now=0)
    True
    >>> m.settle(30_000).record.state
    'half_open'
    """

    def __init__(self, record: Optional[BreakerRecord] = None) -> None:
        self.record = record or BreakerRecord()
        self.transitions: List[Tuple[str, str]] = []

    def _move(self, state: str, now: float, **fields: object) -> None:
        previous = self.record.state
        self.record = replace(self.record, state=state, since=now, **fields)
        if previous != state:
            self.transitions.append((previous, state))

    def settle(self, now: float) -> "BreakerMachine":
        state, open_until = self.record.state, self.record.open_until
        if state == "open" and open_until is not None and now >= open_until:
            self._move("half_open", open_until, open_until=None, probe_successes=0, reason=None)
        elif state in ("forced_open", "forced_closed") and open_until is not None and now >= open_until:
            self._move("closed", open_until, open_until=None, opens=0, probe_successes=0, reason=None)
        return self

    def evaluate(self, policy: BreakerPolicy, successes: float, failures: float, slow: float, now: float) -> bool:
        """Opens a closed breaker whose window trips; True when it opened."""
        calls = successes + failures
        if self.record.state != "closed" or calls == 0 or calls < policy.minimum_calls:
            return False
        failing = failures + EPSILON >= policy.failure_rate_threshold * calls
        slowing = slow + EPSILON >= policy.slow_call_rate_threshold * calls
        if not (failing or slowing):
            return False
        self._open(policy, now, 1)
        return True

    def probe_outcome(self, policy: BreakerPolicy, success: bool, now: float) -> None:
        if self.record.state != "half_open":
            return
        if not success:
            self._open(policy, now, self.record.opens + 1)
            return
        successes = self.record.probe_successes + 1
        if successes >= policy.close_after_successes:
            self._move("closed", now, open_until=None, opens=0, probe_successes=0, reason=None)
        else:
            self.record = replace(self.record, probe_successes=successes)

    def _open(self, policy: BreakerPolicy, now: float, opens: int) -> None:
        self._move("open", now, open_until=now + open_duration_ms(policy, opens), opens=opens, probe_successes=0, reason=None)
