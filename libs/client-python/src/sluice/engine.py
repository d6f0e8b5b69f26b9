"""The blocking machinery under both APIs: the coordinator link, decisions (coalesced retry asks,
the denial cache, admissions), the reporter and the breaker feed. Background work runs on daemon
threads: one ticker (reports every ~200 ms, polls while the event stream is down, refreshes views)
and one event-stream reader."""

from __future__ import annotations

import http.client
import json
import logging
import math
import os
import random as random_module
import socket
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from .core.backoff import backoff_delay
from .core.call import facts_of, with_deadline_left
from .core.link import CoordinatorLink
from .core.local import BreakerFacts, Verdict
from .core.policy import BackoffPolicy
from .core.state import DependencyState
from .errors import AskNotSentError, ConfigError, CoordinatorUnavailableError
from .hooks import BreakerChange, ConfigErrorEvent, FallbackChange, Hook
from .transport import Arrival, Transport, new_request_id

logger = logging.getLogger("sluice")

MAX_REPORT_AGE_MS = 10_000
MAX_RETRY_ASKS = 1000
#: The longest a batch waits for more asks while they keep coming (never past half the decision time).
MAX_WINDOW_MS = 25
MAX_REPORT_ENTRIES = 100
RECONNECT = BackoffPolicy(base_ms=100, cap_ms=5000, jitter="full")
NOT_YET = Verdict(False, "coordinator_unavailable")
REFUSED_TOKEN = Verdict(False, "config_error")
DEADLINE_PASSED = Verdict(False, "deadline_exceeded")
#: An admission whose answer did not come before the call's deadline: the call gives up, the answer is a late one.
ADMISSION_PAST_DEADLINE: Dict[str, Any] = {"allow": False, "reason": "deadline_exceeded"}


def epoch_ms() -> float:
    return time.time() * 1000


@dataclass(frozen=True)
class Options:
    """The client's options, checked (see :class:`sluice.Sluice` for their meaning)."""

    base_urls: Tuple[str, ...]
    namespace: str
    token: Optional[str]
    reporter: str
    report_interval_ms: int = 200
    decision_timeout_ms: int = 50
    request_timeout_ms: int = 1000
    connect_timeout_ms: int = 100
    coalesce: bool = True
    #: A batch goes out once no ask came for this long: two of the interpreter's thread switch
    #: intervals, so the threads that failed together and wait for the GIL still join it.
    coalesce_window_ms: float = 2 * 1000 * sys.getswitchinterval()
    sse: bool = True
    poll_interval_ms: int = 1000
    view_refresh_ms: int = 5000
    stream_idle_timeout_ms: int = 45_000
    fallback: str = "local"
    fallback_share: Optional[float] = None
    failures_before_fallback: int = 3
    report_retries_succeeded: Optional[bool] = None
    backoff: Optional[BackoffPolicy] = None


def _probe_to_keep(answer: Dict[str, Any], started_at: float, wall_at: float, period: int) -> Optional[Tuple[str, float, int]]:
    """The probe an admission's answer granted, as it is kept when its attempt does not go out:
    (token, expiry on the client's clock, counted from the ask at ``started_at``/``wall_at``, and
    the half-open ``period`` the ask went out in); None when it granted none."""
    probe = answer.get("probe")
    if not (answer.get("allow") and isinstance(probe, dict)):
        return None
    token, expires_at = probe.get("token"), probe.get("expiresAt")
    if not isinstance(token, str) or not isinstance(expires_at, (int, float)):
        return None
    return token, started_at + expires_at - wall_at, period


def default_reporter() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class _Pending:
    """One retry ask waiting for its batch, then for its answer (or one admission waiting for its answer)."""

    def __init__(self, dep: str, ask: Dict[str, Any]) -> None:
        self.dep = dep
        self.ask = ask
        self.asked_at = time.monotonic()
        self.sent = threading.Event()
        self.done = threading.Event()
        self.result: Optional[Dict[str, Any]] = None
        self.error: Optional[BaseException] = None
        self.late: Optional[Callable[["_Pending"], None]] = None
        self.lock = threading.Lock()
        #: Set when the ask goes out (one for a whole batch).
        self.arrival = Arrival()

    def answered_in(self, timeout_s: float, read_within_s: float, left_s: float = math.inf) -> bool:
        """Waits ``timeout_s`` from the request's write for the answer; one already in this process by
        then (a busy process had not read it yet) is waited for up to ``read_within_s`` more. The time
        before the write (a process too busy to send) is the call's, not the coordinator's.
        ``left_s`` (what is left of the call's deadline) ends the whole wait: an answer after it is late."""
        ends = time.monotonic() + left_s

        def within(limit_s: float) -> float:
            return max(0.0, min(limit_s, ends - time.monotonic()))

        self.arrival.written.wait(within(read_within_s))
        if self.done.wait(within(timeout_s)):
            return True
        return time.monotonic() < ends and self.arrival.at_door() and self.done.wait(within(read_within_s))

    def complete(self, result: Optional[Dict[str, Any]], error: Optional[BaseException]) -> None:
        with self.lock:
            self.result, self.error = result, error
            self.done.set()
            late = self.late
        self.sent.set()
        self.arrival.written.set()
        if late is not None:
            late(self)


class Coalescer:
    """Gathers the retry asks of one short window into one ``POST /retries`` (a lone ask goes out as
    ``POST …/retry``); a batch refused as a whole (a 4xx) is asked again ask by ask, with its ids."""

    def __init__(self, transport: Transport, options: Options) -> None:
        self.transport = transport
        self.options = options
        self._lock = threading.Lock()
        self._waiting: List[_Pending] = []
        self._last_arrival = 0.0

    def submit(self, dep: str, ask: Dict[str, Any]) -> _Pending:
        pending = _Pending(dep, ask)
        with self._lock:
            self._waiting.append(pending)
            self._last_arrival = pending.asked_at
            first = len(self._waiting) == 1
            full = len(self._waiting) >= MAX_RETRY_ASKS
        if full:
            threading.Thread(target=self._flush, args=(0.0, 0.0), daemon=True).start()
        elif first:
            deadline = ask.get("deadlineMs", float("inf"))
            bound_ms = min(deadline / 2, self.options.decision_timeout_ms / 2)
            window_ms = min(self.options.coalesce_window_ms, bound_ms)
            most_ms = min(MAX_WINDOW_MS, bound_ms)
            threading.Thread(target=self._flush, args=(window_ms / 1000, most_ms / 1000), daemon=True, name="sluice-ask").start()
        return pending

    def _flush(self, window_s: float, most_s: float) -> None:
        """Sends once no ask came for ``window_s`` while this process ran (threads that fail together
        do not fail within one instant, as an event loop's callbacks do), after ``most_s`` at the latest."""
        started = time.monotonic()
        heard_from = started
        while window_s > 0:
            now = time.monotonic()
            quiet = now - max(self._last_arrival, heard_from)
            if quiet >= window_s or now - started >= most_s:
                break
            nap = min(window_s - quiet, most_s - (now - started))
            time.sleep(nap)
            woke = time.monotonic()
            # Woken late, the process did not run meanwhile (a busy machine, the interpreter lock):
            # the failed threads had no turn to ask, so the quiet counts only from now.
            if woke - now > nap + window_s / 2:
                heard_from = woke
        with self._lock:
            waiting, self._waiting = self._waiting, []
        now = time.monotonic()
        batch: List[_Pending] = []
        for pending in waiting:
            ask = with_deadline_left(pending.ask, (now - pending.asked_at) * 1000)
            if ask is None:
                pending.complete(None, AskNotSentError())
            else:
                pending.ask = ask
                batch.append(pending)
        for start in range(0, len(batch), MAX_RETRY_ASKS):
            arrival = Arrival()
            for pending in batch[start : start + MAX_RETRY_ASKS]:
                pending.arrival = arrival
        for pending in batch:
            pending.sent.set()
        for start in range(0, len(batch), MAX_RETRY_ASKS):
            self._ask(batch[start : start + MAX_RETRY_ASKS])

    def _timeouts(self) -> Tuple[float, float]:
        o = self.options
        return max(o.decision_timeout_ms, o.request_timeout_ms), o.decision_timeout_ms

    def _ask(self, batch: List[_Pending]) -> None:
        if len(batch) == 1:
            return self._alone(batch[0])
        timeout, reask = self._timeouts()
        try:
            answer = self.transport.retries([{**p.ask, "dep": p.dep} for p in batch], timeout, reask, batch[0].arrival)
            decisions = answer.get("decisions") if isinstance(answer, dict) else None
            if not isinstance(decisions, list) or len(decisions) != len(batch):
                raise CoordinatorUnavailableError(f"the coordinator answered {len(decisions or [])} decisions to {len(batch)} asks")
        except CoordinatorUnavailableError as error:
            if error.status is not None and 400 <= error.status < 500 and error.status != 429:
                for pending in batch:
                    self._alone(pending)
                return
            for pending in batch:
                pending.complete(None, error)
            return
        except BaseException as error:  # noqa: BLE001 - every ask hears its batch's failure
            for pending in batch:
                pending.complete(None, error)
            return
        for pending, decision in zip(batch, decisions):
            pending.complete(decision, None)

    def _alone(self, pending: _Pending) -> None:
        timeout, reask = self._timeouts()
        try:
            pending.complete(self.transport.retry(pending.dep, pending.ask, timeout, reask, pending.arrival), None)
        except BaseException as error:  # noqa: BLE001
            pending.complete(None, error)


class Engine:
    """Shared by :class:`sluice.Sluice` and :class:`sluice.aio.AsyncSluice`."""

    def __init__(self, options: Options, clock: Callable[[], float] = epoch_ms, random: Callable[[], float] = random_module.random) -> None:
        self.options = options
        self.now = clock
        self.random = random
        self.lock = threading.RLock()
        self.transport = Transport(list(options.base_urls), options.namespace, options.token, options.connect_timeout_ms)
        self.link = CoordinatorLink(options.failures_before_fallback, options.fallback)
        self.states: Dict[str, DependencyState] = {}
        self.first_views: Dict[str, threading.Event] = {}
        self.coalescer = Coalescer(self.transport, options)
        self.under_way: Dict[str, _Pending] = {}
        self.on_break: Hook[BreakerChange] = Hook()
        self.on_fallback: Hook[FallbackChange] = Hook()
        self.on_config_error: Hook[ConfigErrorEvent] = Hook()
        self.link.on_change.append(self._fallback_changed)
        self.link.on_config_error.append(lambda error, during: self.on_config_error.emit(ConfigErrorEvent(error, during)))
        self.closed = False
        self.streaming = False
        self._stop = threading.Event()
        self._deliver_lock = threading.Lock()
        self._reading: Set[str] = set()
        self._wake_feed = threading.Event()
        self._reopen = False
        self._stream: Optional[http.client.HTTPConnection] = None
        self._reconnects = 0
        self._ticker = threading.Thread(target=self._tick, daemon=True, name="sluice-reporter")
        self._feed = threading.Thread(target=self._stream_loop, daemon=True, name="sluice-events")
        self._ticker.start()
        if options.sse:
            self._feed.start()

    # --- dependencies and breaker state ---------------------------------------------------------
    def dependency(self, name: str) -> DependencyState:
        with self.lock:
            state = self.states.get(name)
            if state is not None:
                return state
            state = DependencyState(name, self._breaker_changed, self.options.fallback_share, self.options.backoff)
            self.states[name] = state
            first = threading.Event()
            self.first_views[name] = first
        threading.Thread(target=self._first_view, args=(state, first), daemon=True).start()
        self._reopen = True
        self._wake_feed.set()
        self._interrupt_stream()
        return state

    def _first_view(self, state: DependencyState, first: threading.Event) -> None:
        try:
            self.read_view(state)
        finally:
            first.set()

    def wait_first_view(self, state: DependencyState, max_wait_ms: float) -> None:
        """A dependency met for the first time: its policy (limits, budget mode) comes with its first view."""
        first = self.first_views.get(state.name)
        if state.policy is None and first is not None and not first.is_set() and max_wait_ms > 0:
            first.wait(max_wait_ms / 1000)

    @property
    def governed_locally(self) -> bool:
        return self.link.fallback and self.options.fallback == "local"

    def breaker_state(self, state: DependencyState, now: float) -> str:
        if not self.link.fallback:
            return state.fleet_state(now)  # reads only: no lock
        with self.lock:
            if self.options.fallback == "local":
                return state.local.state(now)
            return "closed" if self.options.fallback == "fail-open" else state.fleet_state(now)

    def breaker_facts(self, state: DependencyState, now: float) -> BreakerFacts:
        with self.lock:
            return state.local.facts(now) if self.governed_locally else state.breaker_facts(now)

    def _breaker_changed(self, dependency: str, before: str, after: str, source: str) -> None:
        if (source == "local") == self.governed_locally:
            self.on_break.emit(BreakerChange(dependency, before, after, source))

    def _fallback_changed(self, active: bool, during: str) -> None:
        if active:
            now = self.now()
            for state in list(self.states.values()):
                state.fallback_starts(now)
        self.on_fallback.emit(FallbackChange(active, during))

    # --- counts -------------------------------------------------------------------------------
    def record_request(self, state: DependencyState, now: float) -> None:
        with self.lock:
            state.record_request(now)

    def record_outcome(self, state: DependencyState, now: float, latency_ms: float, failed: bool, retry_succeeded: bool) -> None:
        with self.lock:
            state.record_outcome(now, latency_ms, failed)
            if retry_succeeded:
                state.record_retry_succeeded(now)

    # --- retry decisions ----------------------------------------------------------------------
    def retry(self, state: DependencyState, ask: Dict[str, Any]) -> Verdict:
        """The fleet's decision, or the local fallback's when the coordinator is away (blocking)."""
        verdict = None if self.link.fallback else self._fleet_retry(state, ask)
        return verdict if verdict is not None else self._local_retry(state, ask)

    def _local_retry(self, state: DependencyState, ask: Dict[str, Any]) -> Verdict:
        now = self.now()
        with self.lock:
            mode = self.options.fallback
            if mode == "fail-closed":
                return NOT_YET
            if mode == "fail-open":
                state.record_own_retry(now)
                return Verdict(True, "granted", backoff_delay(state.fallback_policy.backoff, ask["attempt"], self.random, ask.get("retryAfterMs")))
            verdict = state.local.decide_retry(ask["attempt"], ask.get("deadlineMs"), ask.get("retryAfterMs"), now, self.random)
            if verdict.allow:
                state.record_own_retry(now)
            return verdict

    def _fleet_retry(self, state: DependencyState, ask: Dict[str, Any]) -> Optional[Verdict]:
        if self.link.config_error is not None:
            return REFUSED_TOKEN
        coalesce = self.options.coalesce
        asked_at = time.monotonic()
        if coalesce:
            under_way = self.under_way.get(state.name)
            # An ask still gathering its batch is joined; one sent is waited for (its denial may hold).
            if under_way is not None and under_way.sent.is_set():
                under_way.answered_in(max(1, self.options.decision_timeout_ms // 2) / 1000, self.options.request_timeout_ms / 1000)
            now = self.now()
            with self.lock:
                held = state.held.current(now)
            if held is not None:
                if held.reason == "breaker_open":
                    return Verdict(False, held.reason, 0, facts_of(held.breaker, held.until - now, now))
                return Verdict(False, held.reason, 0, None, held.until - now)
        left = with_deadline_left(ask, (time.monotonic() - asked_at) * 1000)
        if left is None:
            return DEADLINE_PASSED
        left = {**left, "requestId": new_request_id()}
        started_at = self.now()
        deadline_at = time.monotonic() + left.get("deadlineMs", math.inf) / 1000
        if coalesce:
            pending = self.coalescer.submit(state.name, left)
            self.under_way[state.name] = pending
            pending.sent.wait(self.options.request_timeout_ms / 1000)
        else:
            pending = _Pending(state.name, left)
            threading.Thread(target=self.coalescer._alone, args=(pending,), daemon=True).start()
        left_s = deadline_at - time.monotonic()
        if not pending.answered_in(self.options.decision_timeout_ms / 1000, self.options.request_timeout_ms / 1000, left_s):
            with pending.lock:
                if not pending.done.is_set():
                    pending.late = lambda late: self._late_answer(state, late, started_at)
                    return DEADLINE_PASSED if time.monotonic() >= deadline_at else NOT_YET
        if pending.error is not None:
            error = pending.error
            if isinstance(error, AskNotSentError):
                return DEADLINE_PASSED
            with self.lock:
                if isinstance(error, ConfigError):
                    self.link.failed("retry", error, self.now())
                    return REFUSED_TOKEN
                return None if self.link.failed("retry", error, self.now(), started_at) else NOT_YET
        decision = pending.result or {}
        now = self.now()
        with self.lock:
            self._answered(state, decision, now)
            if decision.get("allow"):
                state.local.count_fleet_retry(now)
        allow = bool(decision.get("allow"))
        reason = str(decision.get("reason"))
        retry_after = decision.get("retryAfterMs")
        facts = facts_of(decision.get("breaker"), retry_after, now) if reason == "breaker_open" else None
        frees_in_ms = float(retry_after) if reason == "budget_exhausted" and isinstance(retry_after, (int, float)) and retry_after > 0 else None
        return Verdict(allow, reason, int(decision.get("delayMs") or 0), facts, frees_in_ms)

    def _answered(self, state: DependencyState, decision: Dict[str, Any], now: float) -> None:
        self.link.succeeded("retry")
        state.apply_breaker(decision.get("breaker"))
        retry_after = decision.get("retryAfterMs")
        reason = decision.get("reason")
        if (
            self.options.coalesce
            and not decision.get("allow")
            and reason in ("budget_exhausted", "breaker_open")
            and isinstance(retry_after, (int, float))
            and retry_after > 0
        ):
            state.held.hold(str(reason), decision.get("breaker") or {}, now + retry_after, now)

    def _late_answer(self, state: DependencyState, pending: _Pending, started_at: float) -> None:
        """Slow is not down: a late answer (or its failure) still tells the link; a late denial holds."""
        with self.lock:
            if pending.error is not None:
                if not isinstance(pending.error, AskNotSentError):
                    self.link.failed("retry", pending.error, self.now(), started_at)
            elif pending.result is not None:
                self._answered(state, pending.result, self.now())

    # --- admissions (a breaker that is not closed, a limited dependency) ---------------------
    def admit(self, state: DependencyState, bstate: str, deadline_at: float = math.inf) -> Dict[str, Any]:
        """``POST …/admit`` within the decision timeout; the local fallback decides when no answer comes.
        A half-open breaker's probe kept from a late answer goes out first, without asking. The wait
        ends at the call's deadline (``deadline_at``, on the engine's clock): the call gives up
        ``deadline_exceeded`` and the answer, when it comes, is a late one (its probe is kept).

        Answers a dict: ``allow``, ``reason``, and ``probe``/``lease``/``local_probe``/``breaker``/``retryAfterMs``;
        ``keep``, with a fleet probe: ``(token, expiry, period)`` for :meth:`abandon_admission`.
        """
        now = self.now()
        if bstate in ("open", "forced_open"):
            return {"allow": False, "reason": "breaker_open"}
        if now >= deadline_at:  # nothing to ask for: no attempt may go out
            return dict(ADMISSION_PAST_DEADLINE)
        if self.link.config_error is not None and not self.link.fallback:
            return {"allow": False, "reason": "config_error"}
        if not self.link.fallback:
            if bstate == "half_open":
                with self.lock:
                    kept = state.take_kept(now)
                    period = state.half_open_period
                if kept is not None:  # the fleet's probe, granted too late to an earlier call: no need to ask
                    token, expires_at = kept
                    return {"allow": True, "reason": "granted", "probe": {"token": token}, "keep": (token, expires_at, period)}
            answer = self._fleet_admit(state, deadline_at)
            if answer is not None:
                return answer
        with self.lock:
            if bstate != "half_open":
                return {"allow": True, "reason": "granted"}
            if self.governed_locally and state.local.try_probe(now):
                return {"allow": True, "reason": "granted", "local_probe": True}
        return {"allow": False, "reason": "breaker_open"}

    def _fleet_admit(self, state: DependencyState, deadline_at: float = math.inf) -> Optional[Dict[str, Any]]:
        """The coordinator's answer, waited for within the decision timeout from the request's write
        and within the call's deadline; None when none came in time or the exchange failed, a
        ``deadline_exceeded`` refusal when the deadline passed first (the request itself may take the
        request timeout: a late answer is handled by :meth:`_late_admission`)."""
        options = self.options
        started_at, wall_at = self.now(), epoch_ms()
        with self.lock:
            period = state.half_open_period
        pending = _Pending(state.name, {})
        timeout = max(options.decision_timeout_ms, options.request_timeout_ms)

        def exchange() -> None:
            try:
                answer = self.transport.admit(state.name, timeout, options.decision_timeout_ms, pending.arrival)
            except BaseException as error:  # noqa: BLE001 - the waiting caller, or the late handler, hears it
                pending.complete(None, error)
            else:
                pending.complete(answer, None)

        threading.Thread(target=exchange, daemon=True, name="sluice-admit").start()
        left_s = (deadline_at - started_at) / 1000
        if not pending.answered_in(options.decision_timeout_ms / 1000, options.request_timeout_ms / 1000, left_s):
            with pending.lock:
                if not pending.done.is_set():
                    pending.late = lambda late: self._late_admission(state, late, started_at, wall_at, period)
                    # Past the deadline the fallback has nothing to decide: the call gives up.
                    return dict(ADMISSION_PAST_DEADLINE) if self.now() >= deadline_at else None
        error = pending.error
        if error is not None:
            with self.lock:
                self.link.failed("admit", error, self.now(), started_at)
            return {"allow": False, "reason": "config_error"} if isinstance(error, ConfigError) else None
        answer = dict(pending.result or {})
        with self.lock:
            self.link.succeeded("admit")
            state.apply_breaker(answer.get("breaker"))
        keep = _probe_to_keep(answer, started_at, wall_at, period)
        if keep is not None:  # should the attempt not go out (the deadline passed meanwhile)
            answer["keep"] = keep
        return answer

    def _late_admission(
        self, state: DependencyState, pending: _Pending, started_at: float, wall_at: float, period: int
    ) -> None:
        """Slow is not down: a late answer (or its failure) still tells the link. Its lease is released
        at once; its probe is the fleet's all the same, so it is kept for the next attempt, until it
        expires (``expiresAt``, counted on the client's clock from the ask) or the breaker leaves
        half-open (a probe whose period was seen to end since the ask, ``period``, is not kept)."""
        if pending.error is not None:
            with self.lock:
                self.link.failed("admit", pending.error, self.now(), started_at)
            return
        answer = pending.result or {}
        keep = _probe_to_keep(answer, started_at, wall_at, period)
        with self.lock:
            self.link.succeeded("admit")
            # The answer may be older than what the client learned since: kept only while still half-open.
            if keep is not None and state.fleet_state(self.now()) == "half_open":
                state.keep_probe(*keep)
        lease = answer.get("lease")
        if isinstance(lease, dict) and isinstance(lease.get("id"), str):
            self._release(state.name, lease["id"])

    def abandon_admission(self, state: DependencyState, admission: Dict[str, Any]) -> None:
        """An admission whose attempt does not go out (the call's deadline passed while it was
        admitted): its lease is released, a local probe is given back to the local breaker, and the
        fleet's probe is kept as a late one is (``keep``: until it expires, while the breaker is
        half-open in the period its ask went out in)."""
        keep = admission.get("keep")
        with self.lock:
            if admission.get("local_probe"):
                state.local.release_probe()
            if keep is not None and state.fleet_state(self.now()) == "half_open":
                state.keep_probe(*keep)
        self._release_lease_of(state, admission)

    def settle_admission(self, state: DependencyState, admission: Dict[str, Any], success: bool) -> None:
        """After the admitted attempt: its probe's outcome reported at once, its lease released."""
        if admission.get("local_probe"):
            with self.lock:
                state.local.probe_outcome(success, self.now())
        probe = admission.get("probe")
        if isinstance(probe, dict) and isinstance(probe.get("token"), str):
            with self.lock:
                if state.pending_since == 0:
                    state.pending_since = self.now()
                state.probes.append({"token": probe["token"], "success": success})
            threading.Thread(target=self.deliver, daemon=True).start()
        self._release_lease_of(state, admission)

    def _release_lease_of(self, state: DependencyState, admission: Dict[str, Any]) -> None:
        """The admission's lease, if it holds one, released on a thread of its own (not waited for)."""
        lease = admission.get("lease")
        if isinstance(lease, dict) and isinstance(lease.get("id"), str):
            threading.Thread(target=self._release, args=(state.name, lease["id"]), daemon=True).start()

    def _release(self, dep: str, lease: str) -> None:
        try:
            self.transport.release_lease(dep, lease, self.options.request_timeout_ms)
        except Exception:  # noqa: BLE001 - an unreleased lease expires on its own
            logger.debug("releasing lease %s of %s failed", lease, dep, exc_info=True)

    # --- reports ------------------------------------------------------------------------------
    def _sends_retries_succeeded(self, state: DependencyState) -> bool:
        configured = self.options.report_retries_succeeded
        if configured is not None:
            return configured
        # The coordinator's policy names its budget's mode only once it knows adaptive budgets.
        return state.policy is not None and state.policy.retry_budget.mode is not None

    def deliver(self) -> None:
        """Sends what is pending as one ``POST /reports`` (a failed delivery keeps the counts)."""
        with self._deliver_lock:
            now = self.now()
            taken: List[Tuple[DependencyState, Dict[str, Any], float]] = []
            with self.lock:
                for state in self.states.values():
                    if not state.has_pending:
                        continue
                    since = state.pending_since
                    report = state.take_report(self._sends_retries_succeeded(state), now)
                    if now - since <= MAX_REPORT_AGE_MS:
                        taken.append((state, report, since))
            for start in range(0, len(taken), MAX_REPORT_ENTRIES):
                batch = taken[start : start + MAX_REPORT_ENTRIES]
                try:
                    answer = self.transport.report({"reporter": self.options.reporter, "deps": [r for _, r, _ in batch]}, self.options.request_timeout_ms)
                except Exception as error:  # noqa: BLE001
                    with self.lock:
                        self.link.failed("report", error, self.now())
                        for state, report, since in taken[start:]:
                            state.restore_report(report, since)
                    return
                deps = answer.get("deps") if isinstance(answer, dict) else None
                with self.lock:
                    self.link.succeeded("report")
                    for state, _, _ in batch:
                        state.held.reported(now)
                        entry = deps.get(state.name) if isinstance(deps, dict) else None
                        if isinstance(entry, dict):
                            state.apply_breaker(entry.get("breaker"))
                            reporters = entry.get("reporters")
                            if isinstance(reporters, int) and reporters > 0:
                                state.fleet_size = reporters

    def verify(self) -> None:
        """The start check: an empty report (it changes nothing). Raises ConfigError or CoordinatorUnavailableError."""
        try:
            self.transport.report({"reporter": self.options.reporter, "deps": []}, self.options.request_timeout_ms)
        except (ConfigError, CoordinatorUnavailableError) as error:
            with self.lock:
                self.link.failed("ready", error, self.now())
            raise
        with self.lock:
            self.link.succeeded("ready")

    # --- views and the event stream -----------------------------------------------------------
    def read_view(self, state: DependencyState) -> None:
        with self.lock:
            if state.name in self._reading or self.closed:
                return
            self._reading.add(state.name)
        try:
            view, etag = self.transport.read_dependency(state.name, state.etag, self.options.request_timeout_ms)
            with self.lock:
                self.link.succeeded("poll")
                if view is not None:
                    state.apply_view(view, etag, self.now())
                else:
                    state.last_read_at = self.now()
        except Exception as error:  # noqa: BLE001
            if not self.closed:
                with self.lock:
                    self.link.failed("poll", error, self.now())
        finally:
            with self.lock:
                self._reading.discard(state.name)

    def _tick(self) -> None:
        interval = self.options.report_interval_ms / 1000
        last_poll = time.monotonic()
        while not self._stop.wait(interval):
            try:
                self.deliver()
                if (time.monotonic() - last_poll) * 1000 >= self.options.poll_interval_ms:
                    last_poll = time.monotonic()
                    self.poll()
            except Exception:  # noqa: BLE001 - the ticker never dies
                logger.exception("sluice background work failed")

    def poll(self) -> None:
        """Reads every view while the stream is down; re-reads stale views while it is up."""
        now = self.now()
        for state in list(self.states.values()):
            if not self.streaming or now - state.last_read_at >= self.options.view_refresh_ms:
                self.read_view(state)

    def _interrupt_stream(self) -> None:
        stream = self._stream
        if stream is not None and stream.sock is not None:
            try:
                stream.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _stream_loop(self) -> None:
        while not self.closed:
            self._reopen = False
            names = list(self.states)
            if not names:
                self._wake_feed.wait()
                self._wake_feed.clear()
                continue
            try:
                connection, response = self.transport.open_events(names, self.options.request_timeout_ms)
                self._stream = connection
                if self._reopen or self.closed:
                    connection.close()
                    continue
                if connection.sock is not None:
                    connection.sock.settimeout(self.options.stream_idle_timeout_ms / 1000)
                self.streaming = True
                self._reconnects = 0
                self._read_stream(response)
            except ConfigError as error:
                with self.lock:
                    self.link.failed("events", error, self.now())
            except Exception:  # noqa: BLE001 - dropped, refused or reopened: polling covers the gap
                pass
            finally:
                self.streaming = False
                stream, self._stream = self._stream, None
                if stream is not None:
                    stream.close()
            if self.closed:
                return
            if self._reopen:
                continue
            self._reconnects += 1
            self.poll()  # a dropped stream may hide a missed transition
            pause = max(50, backoff_delay(RECONNECT, self._reconnects, self.random))
            self._stop.wait(pause / 1000)

    def _read_stream(self, response: http.client.HTTPResponse) -> None:
        event: Optional[str] = None
        data: List[str] = []
        while not self.closed:
            raw = response.readline()
            if not raw:
                return
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line == "":
                if data:
                    self._on_frame(event, "\n".join(data))
                event, data = None, []
            elif line.startswith(":"):
                continue
            else:
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    event = value
                elif name == "data":
                    data.append(value)

    def _on_frame(self, event: Optional[str], data: str) -> None:
        try:
            payload = json.loads(data)
        except ValueError:
            return
        if not isinstance(payload, dict):
            return
        if event == "breaker":
            state = self.states.get(str(payload.get("dep")))
            if state is not None and isinstance(payload.get("state"), str):
                with self.lock:
                    state.apply_state(payload["state"], payload.get("openUntil"), payload.get("reason"))
        elif event == "policy":
            for state in list(self.states.values()):
                if not payload.get("dep") or payload.get("dep") == state.name:
                    state.etag = None
                    threading.Thread(target=self.read_view, args=(state,), daemon=True).start()

    # --- shutdown -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stops the threads and sends the last report."""
        if self.closed:
            return
        self._stop.set()
        self._wake_feed.set()
        self.deliver()
        self.closed = True
        self._interrupt_stream()
        self.transport.close()
