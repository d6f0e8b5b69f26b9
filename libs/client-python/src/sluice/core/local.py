"""The local fallback for one dependency: a retry budget and a breaker of this process alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from .backoff import RandomSource, backoff_delay
from .breaker import BreakerMachine, BreakerRecord, blocks_calls
from .policy import DependencyPolicy
from .window import SlidingWindow, retry_budget_limit


@dataclass(frozen=True)
class Verdict:
    """A retry decision: ``allow``, the reason (the API's vocabulary) and the backoff to wait."""

    allow: bool
    reason: str
    delay_ms: int = 0
    #: For a ``breaker_open`` denial: what is known of the breaker that refused.
    breaker: Optional["BreakerFacts"] = None
    #: For the fleet's ``budget_exhausted`` denial: ms until the same ask could be granted, when it said.
    budget_retry_after_ms: Optional[float] = None


@dataclass(frozen=True)
class BreakerFacts:
    """What a client knows of a breaker that refused a call."""

    state: str
    operator_reason: Optional[str] = None
    open_until: Optional[float] = None
    retry_after_ms: Optional[float] = None


def _second(now: float) -> int:
    return int(now // 1000)


class LocalGuard:
    """Fed every call whether or not the coordinator answers, so it is warm when it must decide.

    Its budget floor is scaled by ``share`` (1 / the reporters the fleet counted); when it takes
    over, its breaker starts from the fleet's last known state (:meth:`adopt`).
    """

    def __init__(
        self,
        policy: Callable[[], DependencyPolicy],
        share: Callable[[], float],
        on_transition: Callable[[str, str], None],
        catch_up: Callable[[float], None] = lambda now: None,
    ) -> None:
        self._catch_up = catch_up
        self._policy = policy
        self._share = share
        self._on_transition = on_transition
        self._budget = SlidingWindow()
        self._outcomes = SlidingWindow()
        self._machine = BreakerMachine()
        self._probes = 0

    def record_request(self, now: float) -> None:
        self.count(now, 1, 0)

    def count(self, now: float, requests: int, successes: int) -> None:
        """First attempts and plain successes counted elsewhere, handed over in one batch."""
        policy = self._policy()
        second = _second(now)
        if requests:
            self._budget.add(second, policy.retry_budget.window_seconds, "requests", requests)
        if successes:
            self._outcomes.add(second, policy.breaker.window_seconds, "successes", successes)

    def record_outcome(self, now: float, failed: bool, slow: bool) -> None:
        """An attempt's outcome; a failed or slow one may open the breaker (plain successes come in batches)."""
        self._catch_up(now)
        policy = self._policy().breaker
        second, window = _second(now), policy.window_seconds
        self._outcomes.add(second, window, "successes", 0 if failed else 1)
        self._outcomes.add(second, window, "failures", 1 if failed else 0)
        self._outcomes.add(second, window, "slow", 1 if slow else 0)
        if not (failed or slow):
            return
        successes, failures, slow_calls = (self._outcomes.sum(second, window, name) for name in ("successes", "failures", "slow"))
        if self._machine.settle(now).evaluate(policy, successes, failures, slow_calls, now):
            self._outcomes.clear()
        self._publish()

    def count_fleet_retry(self, now: float) -> None:
        """A retry the coordinator granted: the local budget starts from what was already spent."""
        self._budget.add(_second(now), self._policy().retry_budget.window_seconds, "retries", 1)

    def state(self, now: float) -> str:
        state = self._machine.settle(now).record.state
        self._publish()
        return state

    def facts(self, now: float) -> BreakerFacts:
        record = self._machine.settle(now).record
        self._publish()
        forced = record.state in ("forced_open", "forced_closed")
        return BreakerFacts(
            state=record.state,
            operator_reason=record.reason if forced else None,
            open_until=record.open_until,
            retry_after_ms=None if record.open_until is None else max(0.0, record.open_until - now),
        )

    def try_probe(self, now: float) -> bool:
        if self.state(now) != "half_open" or self._probes >= self._policy().breaker.half_open_probes:
            return False
        self._probes += 1
        return True

    def release_probe(self) -> None:
        """A probe that ends with no outcome (its attempt never went out): given back, the breaker unchanged."""
        self._probes = max(0, self._probes - 1)

    def probe_outcome(self, success: bool, now: float) -> None:
        self._probes = max(0, self._probes - 1)
        self._machine.settle(now).probe_outcome(self._policy().breaker, success, now)
        if self._machine.record.state == "closed":
            self._outcomes.clear()
        self._publish()

    def adopt(self, state: str, open_until: Optional[float], now: float, reason: Optional[str]) -> None:
        """Takes the fleet breaker's last known state as its own, without announcing a change."""
        record = self._machine.settle(now).record
        self._machine.transitions.clear()
        if state == record.state and open_until == record.open_until:
            return
        self._machine = BreakerMachine(
            BreakerRecord(
                state=state,
                since=now,
                open_until=None if state in ("closed", "half_open") else open_until,
                opens=0 if state == "closed" else max(1, record.opens),
                reason=reason if state in ("forced_open", "forced_closed") else None,
            )
        )
        self._probes = 0

    def decide_retry(self, attempt: int, deadline_ms: Optional[float], retry_after_ms: Optional[float], now: float, random: RandomSource) -> Verdict:
        """May this process retry on its own? The coordinator's rules on local counts, its floor scaled by the share."""
        self._catch_up(now)
        policy = self._policy()
        delay = backoff_delay(policy.backoff, attempt, random, retry_after_ms)
        state = self.state(now)
        if attempt + 1 > policy.retry_budget.max_attempts:
            return Verdict(False, "max_attempts", delay)
        if blocks_calls(state):
            return Verdict(False, "breaker_open", delay, self.facts(now))
        if deadline_ms is not None and delay >= deadline_ms:
            return Verdict(False, "deadline_exceeded", delay)
        budget = policy.retry_budget
        second = _second(now)
        requests = self._budget.sum(second, budget.window_seconds, "requests")
        retries = self._budget.sum(second, budget.window_seconds, "retries")
        limit = retry_budget_limit(budget.ratio, budget.min_retries_per_second * self._share(), budget.window_seconds, int(requests))
        if retries + 1 > limit:
            return Verdict(False, "budget_exhausted", delay)
        self._budget.add(second, budget.window_seconds, "retries", 1)
        return Verdict(True, "granted", delay)

    def _publish(self) -> None:
        transitions = self._machine.transitions
        while transitions:
            before, after = transitions.pop(0)
            self._on_transition(before, after)
