"""The sync client against two real coordinators (the built service) and a scripted dependency."""

from __future__ import annotations

import logging
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest

import sluice as sluice_package
from sluice import BreakerOpenError, ConfigError, CoordinatorUnavailableError, GiveUpError, Sluice, current_attempt
from support import CLIENT_TOKEN, Coordinator, ScriptedDependency, admin, namespace

DEP = "payments-api"


def test_the_tests_use_the_installed_wheel() -> None:
    assert ".venv" in Path(sluice_package.__file__).parts and "src" not in Path(sluice_package.__file__).parts


@pytest.fixture
def ns() -> str:
    return namespace()


@pytest.fixture
def dependency() -> Iterator[ScriptedDependency]:
    server = ScriptedDependency().start()
    yield server
    server.stop()


class Counting:
    """Counts the client's requests to the coordinators, by kind (wraps its transport)."""

    def __init__(self, client: Sluice) -> None:
        self.calls: Dict[str, int] = {}
        self.asks: List[Dict[str, Any]] = []
        transport = client._engine.transport
        original = transport.json

        def counted(method: str, path: str, body: Any, *args: Any, **kwargs: Any) -> Any:
            kind = path.rsplit("/", 1)[-1]
            self.calls[kind] = self.calls.get(kind, 0) + 1
            if kind == "retry":
                self.asks.append(dict(body))
            elif kind == "retries":
                self.asks.extend(dict(ask) for ask in body["asks"])
            return original(method, path, body, *args, **kwargs)

        transport.json = counted  # type: ignore[method-assign]

    @property
    def decision_requests(self) -> int:
        return self.calls.get("retry", 0) + self.calls.get("retries", 0)


def client(coordinators: List[Coordinator], ns: str, **options: Any) -> Sluice:
    # The decision timeout of the conformance harness: room for a shared, loaded 2-core machine.
    options.setdefault("decision_timeout_ms", 500)
    return Sluice(base_urls=[c.url for c in coordinators], namespace=ns, token=CLIENT_TOKEN, verify=True, **options)


def put_policy(coordinators: List[Coordinator], ns: str, policy: Dict[str, Any]) -> None:
    admin(coordinators[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", policy)


def budget(coordinators: List[Coordinator], ns: str) -> Dict[str, Any]:
    view = admin(coordinators[0].url, "GET", f"/v1/{ns}/deps/{DEP}")
    return dict(view["budget"])


def get(url: str) -> Callable[[], int]:
    def attempt() -> int:
        info = current_attempt()
        headers = info.headers if info else {}
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, timeout=(info.deadline_ms / 1000) if info else 5) as response:
            return int(response.status)

    return attempt


FAST = {"backoff": {"baseMs": 5, "capMs": 20, "jitter": "full"}}


def test_a_granted_retry_asks_with_a_request_id_and_numbers_its_attempts(coordinators: List[Coordinator], ns: str, dependency: ScriptedDependency) -> None:
    put_policy(coordinators, ns, FAST)
    dependency.answer = lambda n, path: (503, {}) if n == 0 else (200, {})
    with client(coordinators, ns) as sluice:
        counting = Counting(sluice)
        retries: List[Any] = []
        sluice.on_retry(retries.append)
        assert sluice.dependency(DEP).call(get(dependency.url + "/charge"), idempotent=True) == 200
    assert [r.headers.get("sluice-attempt") for r in dependency.received] == ["1", "2"]
    assert len(counting.asks) == 1 and counting.asks[0]["requestId"] and counting.asks[0]["status"] == 503
    assert counting.asks[0]["attempt"] == 1 and 0 < counting.asks[0]["deadlineMs"] <= 10_000
    assert len(retries) == 1 and retries[0].attempt == 2
    assert budget(coordinators, ns)["retries"] == 1


def test_an_exhausted_budget_gives_up_and_its_denial_is_held(coordinators: List[Coordinator], ns: str, dependency: ScriptedDependency) -> None:
    put_policy(coordinators, ns, {**FAST, "retryBudget": {"ratio": 0, "minRetriesPerSecond": 0.1, "windowSeconds": 10}})
    dependency.answer = lambda n, path: (503, {})
    with client(coordinators, ns, report_interval_ms=60_000) as sluice:
        counting = Counting(sluice)
        payments = sluice.dependency(DEP)
        outcomes = []
        for _ in range(4):
            try:
                payments.call(get(dependency.url + "/x"), idempotent=True)
            except GiveUpError as error:
                outcomes.append(error.reason)
        # One grant (the floor is 1), a denial with retryAfterMs, then held denials: no more asks.
        assert outcomes[-3:] == ["budget_exhausted"] * 3
        assert counting.decision_requests == 2  # retry 1 granted, retry 2 denied; then held, nothing asked
        assert budget(coordinators, ns)["retries"] == 1


def test_an_operator_trip_fails_the_next_call_fast_with_the_reason(coordinators: List[Coordinator], ns: str, dependency: ScriptedDependency) -> None:
    with client(coordinators, ns) as sluice:
        payments = sluice.dependency(DEP)
        assert payments.call(get(dependency.url + "/a"), idempotent=True) == 200
        admin(coordinators[1].url, "POST", f"/admin/v1/{ns}/breakers/{DEP}/trip", {"reason": "bad deploy"})
        until = time.monotonic() + 5
        while sluice.breaker_state(DEP) != "forced_open" and time.monotonic() < until:
            time.sleep(0.01)
        with pytest.raises(BreakerOpenError) as raised:
            payments.call(get(dependency.url + "/a"), idempotent=True)
        assert raised.value.operator_reason == "bad deploy" and raised.value.attempts == 0
        assert len(dependency.received) == 1
        admin(coordinators[0].url, "POST", f"/admin/v1/{ns}/breakers/{DEP}/reset", {"reason": "fixed"})


def test_what_is_never_retried(coordinators: List[Coordinator], ns: str, dependency: ScriptedDependency) -> None:
    dependency.answer = lambda n, path: (404, {}) if path == "/missing" else (500, {})
    with client(coordinators, ns) as sluice:
        counting = Counting(sluice)
        payments = sluice.dependency(DEP)
        with pytest.raises(urllib.error.HTTPError):
            payments.call(get(dependency.url + "/missing"), idempotent=True)
        with pytest.raises(GiveUpError) as raised:
            payments.call(get(dependency.url + "/post"))
        assert raised.value.reason == "not_idempotent" and isinstance(raised.value.last_error, urllib.error.HTTPError)
        with pytest.raises(GiveUpError) as raised:
            payments.call(get(dependency.url + "/keyed"), idempotency_key="k-1")
        assert raised.value.reason == "not_idempotent"  # a 500 may have been processed
        assert counting.decision_requests == 0
    assert len(dependency.received) == 3


def test_max_attempts_retry_after_deadline_and_idempotency_key(coordinators: List[Coordinator], ns: str, dependency: ScriptedDependency) -> None:
    put_policy(coordinators, ns, FAST)
    dependency.answer = lambda n, path: (503, {"Retry-After": "1"}) if path == "/later" and n == 0 else (429, {}) if path == "/busy" else (200, {})
    with client(coordinators, ns) as sluice:
        payments = sluice.dependency(DEP)
        started = time.monotonic()
        assert payments.call(get(dependency.url + "/later"), idempotency_key="order-7", deadline_ms=2500) == 200
        assert time.monotonic() - started >= 0.95  # Retry-After: 1 is a floor under the backoff
        with pytest.raises(GiveUpError) as raised:
            payments.call(get(dependency.url + "/busy"), idempotent=True, max_attempts=2)
        assert raised.value.reason == "max_attempts" and raised.value.attempts == 2
    keyed = dependency.received[:2]
    assert [r.headers.get("idempotency-key") for r in keyed] == ["order-7", "order-7"]
    deadlines = [int(r.headers["sluice-deadline-ms"]) for r in keyed]
    assert deadlines[0] <= 2500 and deadlines[1] <= deadlines[0] - 900


def test_a_deadline_that_leaves_no_room_gives_up(coordinators: List[Coordinator], ns: str, dependency: ScriptedDependency) -> None:
    dependency.answer = lambda n, path: (503, {"Retry-After": "2"})
    with client(coordinators, ns) as sluice:
        with pytest.raises(GiveUpError) as raised:
            sluice.dependency(DEP).call(get(dependency.url + "/x"), idempotent=True, deadline_ms=800)
        assert raised.value.reason == "deadline_exceeded"


def test_simultaneous_failures_coalesce_into_one_request(coordinators: List[Coordinator], ns: str, dependency: ScriptedDependency) -> None:
    put_policy(coordinators, ns, {**FAST, "breaker": {"minimumCalls": 1000}})
    gate = threading.Barrier(20)

    def failing_then_ok() -> int:
        info = current_attempt()
        if info is not None and info.attempt == 1:
            gate.wait(5)
            raise TimeoutError("the first attempts time out together")
        return 200

    with client(coordinators, ns) as sluice:
        counting = Counting(sluice)
        payments = sluice.dependency(DEP)
        results: List[Any] = []
        threads = [threading.Thread(target=lambda: results.append(payments.call(failing_then_ok, idempotent=True))) for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == [200] * 20
    assert len(counting.asks) == 20 and len({ask["requestId"] for ask in counting.asks}) == 20
    assert counting.calls.get("retries", 0) >= 1 and counting.decision_requests <= 5


def test_a_refused_token_or_a_wrong_url_is_loud_at_start(coordinators: List[Coordinator], ns: str, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ConfigError, match="401"):
        Sluice(base_urls=[coordinators[0].url], namespace=ns, token="wrong", verify=True)
    with pytest.raises(CoordinatorUnavailableError):
        Sluice(base_urls=["http://127.0.0.1:9"], namespace=ns, token=CLIENT_TOKEN, verify=True, request_timeout_ms=300)
    caplog.set_level(logging.WARNING, logger="sluice")
    caplog.clear()
    quiet = Sluice(base_urls=[coordinators[0].url], namespace=ns, token="wrong")
    until = time.monotonic() + 5
    while quiet.status()["mode"] != "config_error" and time.monotonic() < until:
        time.sleep(0.02)
    quiet.close()
    assert quiet.status()["mode"] == "config_error"
    assert any("401" in r.getMessage() and r.levelno == logging.ERROR and r.name == "sluice" for r in caplog.records)


def test_the_decorator_and_reports_reach_the_fleet(coordinators: List[Coordinator], ns: str, dependency: ScriptedDependency) -> None:
    put_policy(coordinators, ns, FAST)
    dependency.answer = lambda n, path: (503, {}) if n % 2 == 0 else (200, {})
    with client(coordinators, ns) as sluice:

        @sluice.retry(DEP, idempotent=True)
        def charge(path: str) -> int:
            return get(dependency.url + path)()

        assert [charge("/c") for _ in range(3)] == [200, 200, 200]
    view = admin(coordinators[0].url, "GET", f"/v1/{ns}/deps/{DEP}")
    assert view["budget"]["requests"] == 3 and view["budget"]["retries"] == 3
    assert view["latency"]["count"] == 6
