"""The sans-IO core, on an injected clock (times are epoch ms passed in)."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
from email.message import Message
from typing import Any, Dict, List, Tuple

import pytest

from sluice.core import (
    BackoffPolicy,
    Call,
    CoordinatorLink,
    DependencyState,
    Failure,
    HeldDenial,
    after_verdict,
    backoff_delay,
    budget_wait,
    classify,
    give_up_before_asking,
    parse_retry_after,
    retry_ask,
    retry_budget_limit,
    retry_denial,
    wait_before_asking,
)
from sluice.core.classification import response_failure
from sluice.core.local import Verdict
from sluice.core.policy import policy_from_json
from sluice.errors import BreakerOpenError, CoordinatorUnavailableError, DeadlineExceededError, GiveUpError, HttpStatusError


def fixed(value: float) -> Any:
    return lambda: value


# --- backoff and Retry-After --------------------------------------------------------------------
def test_backoff_is_exponential_capped_and_jittered() -> None:
    none = BackoffPolicy(base_ms=50, cap_ms=300, jitter="none")
    assert [backoff_delay(none, n, fixed(0.5)) for n in (1, 2, 3, 4, 5)] == [50, 100, 200, 300, 300]
    full = BackoffPolicy(base_ms=50, cap_ms=300, jitter="full")
    assert backoff_delay(full, 3, fixed(0.5)) == 100
    assert backoff_delay(full, 3, fixed(0.0)) == 0
    decorrelated = BackoffPolicy(base_ms=50, cap_ms=2000, jitter="decorrelated")
    assert 50 <= backoff_delay(decorrelated, 2, fixed(0.99)) <= 150


def test_retry_after_is_a_floor() -> None:
    assert backoff_delay(BackoffPolicy(base_ms=50, cap_ms=300, jitter="full"), 1, fixed(0.1), retry_after_ms=1000) == 1000


def test_parse_retry_after_seconds_and_dates() -> None:
    assert parse_retry_after("2", 0) == 2000
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412478000) == 2000
    assert parse_retry_after("-1", 0) is None
    assert parse_retry_after(None, 0) is None


# --- the budget ---------------------------------------------------------------------------------
def test_budget_limit_is_exact_in_integers() -> None:
    assert retry_budget_limit(0.1, 10, 10, 400) == 140
    assert retry_budget_limit(0.29, 0, 10, 100) == 29  # 0.29 * 100 is 28.999999999999996 in floats
    assert retry_budget_limit(0, 0.5, 10, 1000) == 5


# --- the denial cache ---------------------------------------------------------------------------
def test_held_denial_lasts_until_retry_after_or_the_next_report() -> None:
    held = HeldDenial()
    held.hold("budget_exhausted", {"state": "closed"}, until=1500, now=1000)
    refusal = held.current(1200)
    assert refusal is not None and refusal.reason == "budget_exhausted"
    assert held.current(1500) is None
    held.hold("budget_exhausted", {"state": "closed"}, until=5000, now=1000)
    held.reported(999)  # a report taken before the denial came changes nothing
    assert held.current(1100) is not None
    held.reported(1000)
    assert held.current(1100) is None


# --- the coordinator link -------------------------------------------------------------------------
def test_link_switches_to_the_fallback_after_three_failures_and_back() -> None:
    link = CoordinatorLink()
    changes: List[Tuple[bool, str]] = []
    link.on_change.append(lambda active, during: changes.append((active, during)))
    down = CoordinatorUnavailableError("down")
    assert not link.failed("report", down, now=1)
    assert not link.failed("poll", down, now=2, started_at=0)  # started before the last failure: no evidence
    assert not link.failed("report", down, now=3, started_at=2)
    assert link.failed("report", down, now=4, started_at=3)
    assert link.fallback and changes == [(True, "report")]
    link.succeeded("poll")
    assert not link.fallback and changes[-1] == (False, "poll")


def test_overloaded_never_counts_toward_the_fallback() -> None:
    link = CoordinatorLink(failures_before_fallback=1)
    assert not link.failed("retry", CoordinatorUnavailableError("shed", status=503, code="overloaded"), now=1)
    assert not link.fallback
    assert link.failed("retry", CoordinatorUnavailableError("gone", status=503, code="store_unavailable"), now=2)


# --- one dependency's state ---------------------------------------------------------------------
def new_state(changes: List[Tuple[str, str, str]]) -> DependencyState:
    return DependencyState("payments-api", lambda dep, before, after, source: changes.append((before, after, source)))


def test_fleet_state_moves_with_time_when_looked_at() -> None:
    changes: List[Tuple[str, str, str]] = []
    state = new_state(changes)
    state.apply_state("open", 2000, None)
    assert state.fleet_state(1999) == "open"
    assert state.fleet_state(2000) == "half_open"
    state.apply_state("forced_open", None, "bad deploy")
    facts = state.breaker_facts(5000)
    assert (facts.state, facts.operator_reason) == ("forced_open", "bad deploy")
    assert changes == [("closed", "open", "fleet"), ("open", "forced_open", "fleet")]


def test_a_kept_probe_goes_out_once_before_it_expires_and_while_half_open() -> None:
    state = new_state([])
    state.apply_state("half_open")
    period = state.half_open_period
    state.keep_probe("p1", expires_at=2000, period=period)
    state.keep_probe("p2", expires_at=3000, period=period)
    assert state.take_kept(2000) == ("p2", 3000)  # p1 expired
    assert state.take_kept(2000) is None  # each goes out once
    state.keep_probe("p3", expires_at=3000, period=period)
    state.apply_state("half_open")  # still half-open: kept
    state.apply_breaker({"state": "open", "openUntil": 5000})  # the breaker left half-open: dropped
    assert state.take_kept(1000) is None
    state.apply_state("half_open")
    state.keep_probe("p4", expires_at=3000, period=state.half_open_period)
    state.apply_state("closed")
    assert state.take_kept(1000) is None


def test_a_probe_asked_for_before_the_breaker_left_half_open_is_not_kept() -> None:
    state = new_state([])
    state.apply_state("half_open")
    asked_in = state.half_open_period  # as the ask goes out
    state.apply_breaker({"state": "open", "openUntil": 5000})
    state.apply_state("half_open")  # a later half-open period
    state.keep_probe("p1", expires_at=3000, period=asked_in)
    assert state.take_kept(1000) is None
    state.keep_probe("p2", expires_at=3000, period=state.half_open_period)
    assert state.take_kept(1000) == ("p2", 3000)


def test_reports_accumulate_and_are_restored_when_undelivered() -> None:
    state = new_state([])
    state.record_request(1000)
    state.record_outcome(1001, 12, failed=True)
    state.record_outcome(1002, 3, failed=False)
    state.record_retry_succeeded(1002)
    report = state.take_report(send_retries_succeeded=False, now=1002)
    assert {k: report[k] for k in ("requests", "successes", "failures", "slow")} == {"requests": 1, "successes": 1, "failures": 1, "slow": 0}
    assert "retriesSucceeded" not in report
    assert sum(report["latency"]["counts"]) == 2 and len(report["latency"]["counts"]) == len(report["latency"]["boundsMs"]) + 1
    assert not state.has_pending
    state.restore_report(report, 1000)
    state.record_retry_succeeded(1003)
    again = state.take_report(send_retries_succeeded=True, now=1003)
    assert again["requests"] == 1 and again["retriesSucceeded"] == 1


def test_local_budget_is_the_share_of_the_fleet_floor() -> None:
    state = new_state([])
    state.policy = policy_from_json({"retryBudget": {"ratio": 0, "minRetriesPerSecond": 2, "windowSeconds": 10}})
    state.fleet_size = 4  # the fleet's floor is 20 retries: this process's share is 5
    grants = [state.local.decide_retry(1, None, None, 10_000 + i, fixed(0.5)).allow for i in range(8)]
    assert grants == [True] * 5 + [False] * 3
    denied = state.local.decide_retry(1, None, None, 10_010, fixed(0.5))
    assert denied.reason == "budget_exhausted"


def test_local_breaker_opens_and_adopts_the_fleets_forced_state() -> None:
    changes: List[Tuple[str, str, str]] = []
    state = new_state(changes)
    state.policy = policy_from_json({"breaker": {"minimumCalls": 4, "failureRateThreshold": 0.5, "openMs": 1000}})
    for i in range(4):
        state.record_outcome(1000 + i, 5, failed=True)
    assert state.local.state(1010) == "open" and ("closed", "open", "local") in changes
    assert state.local.state(2010) == "half_open"
    state.apply_state("forced_open", None, "maintenance")
    state.fallback_starts(3000)
    facts = state.local.facts(3001)
    assert (facts.state, facts.operator_reason) == ("forced_open", "maintenance")
    assert state.local.decide_retry(1, None, None, 3002, fixed(0.5)).reason == "breaker_open"


# --- classification ------------------------------------------------------------------------------
def http_error(status: int, headers: Dict[str, str]) -> urllib.error.HTTPError:
    message = Message()
    for name, value in headers.items():
        message[name] = value
    return urllib.error.HTTPError("http://dep/x", status, "status", message, None)


def test_urllib_errors() -> None:
    assert classify(http_error(503, {"Retry-After": "2"})) == Failure(status=503, retry_after_ms=2000)
    assert classify(http_error(500, {"sluice-no-retry": "budget_exhausted"})).retried_downstream
    assert classify(urllib.error.URLError(ConnectionRefusedError())).error == "connection"
    assert classify(urllib.error.URLError(TimeoutError())).error == "timeout"
    assert classify(ValueError("?")).error == "other"


def test_exceptions_with_status_and_retry_after() -> None:
    class QuotaError(Exception):
        status = 429
        retry_after = 1.5

    assert classify(QuotaError()) == Failure(status=429, retry_after_ms=1500)


def test_requests_and_httpx_errors_and_responses() -> None:
    requests = pytest.importorskip("requests")
    httpx = pytest.importorskip("httpx")
    response = requests.Response()
    response.status_code = 503
    response.headers["Retry-After"] = "1"
    assert classify(requests.exceptions.HTTPError(response=response)) == Failure(status=503, retry_after_ms=1000)
    assert classify(requests.exceptions.ConnectTimeout()).error == "timeout"
    assert classify(requests.exceptions.ConnectionError()).error == "connection"
    failing = response_failure(response)
    assert isinstance(failing, HttpStatusError) and failing.retry_after_ms == 1000
    ok = requests.Response()
    ok.status_code = 404
    assert response_failure(ok) is None  # a 404 is the caller's answer
    hx = httpx.Response(429, headers={"retry-after": "3"}, request=httpx.Request("GET", "http://dep"))
    assert classify(httpx.HTTPStatusError("busy", request=hx.request, response=hx)) == Failure(status=429, retry_after_ms=3000)
    assert classify(httpx.ReadTimeout("slow")).error == "timeout"
    assert classify(httpx.ConnectError("refused")).error == "connection"


def test_http_libraries_are_never_imported_by_the_client() -> None:
    code = "import sys, sluice; sluice.classify(ValueError()); print(sorted(m for m in ('requests', 'httpx', 'aiohttp') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_retry_rules() -> None:
    assert retry_denial(Failure(status=404), True, False) == "not_retriable"
    assert retry_denial(Failure(status=500), False, False) == "not_idempotent"
    assert retry_denial(Failure(status=500), False, True) == "not_idempotent"
    assert retry_denial(Failure(error="timeout"), False, True) is None
    assert retry_denial(Failure(status=500), True, False) is None


# --- one call's steps ---------------------------------------------------------------------------
def new_call(**fields: Any) -> Call:
    values: Dict[str, Any] = {"dependency": "payments-api", "deadline_at": 10_000, "idempotent": True, "key": None, "max_attempts": 3, "launched": 1}
    values.update(fields)
    return Call(**values)


def test_give_up_before_asking() -> None:
    error = RuntimeError("503")
    failure = Failure(status=503)
    assert give_up_before_asking(new_call(), error, failure, 1000) is None
    assert give_up_before_asking(new_call(), error, Failure(status=404), 1000) is error
    reasons = {
        "not_idempotent": new_call(idempotent=False),
        "max_attempts": new_call(launched=3),
        "upstream_retry": new_call(serving_attempt=2),
    }
    for reason, call in reasons.items():
        stop = give_up_before_asking(call, error, failure, 1000)
        assert isinstance(stop, GiveUpError) and stop.reason == reason and stop.last_error is error
    assert isinstance(give_up_before_asking(new_call(), error, failure, 10_000), DeadlineExceededError)
    assert give_up_before_asking(new_call(), error, Failure(status=503, retried_downstream=True), 1000).reason == "downstream_retried"  # type: ignore[union-attr]


def test_the_retry_after_is_waited_out_before_the_ask() -> None:
    error = RuntimeError()
    failure = Failure(status=503, retry_after_ms=299.5)
    assert wait_before_asking(new_call(), error, failure, 1000) == (None, 300)
    assert wait_before_asking(new_call(), error, Failure(status=503), 1000) == (None, 0)
    stop, wait = wait_before_asking(new_call(), error, failure, 9700)  # 300 ms do not fit before 10_000
    assert isinstance(stop, DeadlineExceededError) and stop.attempts == 1 and wait == 0


def test_a_budget_denial_after_a_retry_after_is_waited_for_once() -> None:
    denied = Verdict(False, "budget_exhausted", budget_retry_after_ms=399.2)
    after = Failure(status=503, retry_after_ms=1000)
    assert budget_wait(new_call(), denied, after, 1000) == 400
    assert budget_wait(new_call(), denied, Failure(status=503), 1000) == 0  # no Retry-After: at once
    assert budget_wait(new_call(), denied, Failure(status=503, retry_after_ms=300), 1000) == 0  # frees later than it
    assert budget_wait(new_call(), denied, after, 9700) == 0  # past the deadline
    assert budget_wait(new_call(), Verdict(False, "budget_exhausted"), after, 1000) == 0  # no time said
    assert budget_wait(new_call(), Verdict(False, "max_attempts", budget_retry_after_ms=100), after, 1000) == 0


def test_the_ask_and_what_a_verdict_means() -> None:
    call = new_call()
    failure = Failure(status=503, retry_after_ms=300)
    # Asked once the Retry-After is waited out: the ask does not carry it, and the backoff is not raised to it.
    assert retry_ask(call, failure, 1300) == {"attempt": 1, "idempotent": True, "deadlineMs": 8700, "status": 503}
    facts = DependencyState("d", lambda *_: None).breaker_facts(0)
    error = RuntimeError()
    stop, delay = after_verdict(call, Verdict(True, "granted", 20), error, 1300, facts)
    assert stop is None and delay == 20
    stop, _ = after_verdict(call, Verdict(True, "granted", 20), error, 9990, facts)
    assert isinstance(stop, DeadlineExceededError)
    stop, _ = after_verdict(call, Verdict(False, "breaker_open"), error, 1000, facts)
    assert isinstance(stop, BreakerOpenError)
    stop, _ = after_verdict(call, Verdict(False, "budget_exhausted"), error, 1000, facts)
    assert isinstance(stop, GiveUpError) and stop.reason == "budget_exhausted" and stop.attempts == 1
