"""The decision timeout bounds the coordinator's answer, not this process's turn to read it."""

from __future__ import annotations

import asyncio
import http.client
import math
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import pytest

from sluice import BreakerOpenError, DeadlineExceededError, GiveUpError, Sluice, current_attempt
from sluice.aio import AsyncSluice
from support import CLIENT_TOKEN, Coordinator, admin, namespace

DEP = "payments-api"
DECISION_TIMEOUT_MS = 50
#: Far past the decision timeout, far within the request timeout (1000 ms).
LATE_S = 0.25


class DelayingProxy:
    """A TCP proxy in front of a coordinator that holds its answers back ``delay_s``: all of them, or
    with a ``marker``, only the answers to the first ``times`` requests that carry it."""

    def __init__(self, target_port: int, delay_s: float, marker: Optional[bytes] = None, times: int = 1) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
        self.marker = marker
        self.times = times
        self.lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            held = threading.Event()  # the connection's next answer is held back
            threading.Thread(target=self._pipe, args=(client, upstream, held, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, held, True), daemon=True).start()

    def _marked(self, data: bytes) -> bool:
        with self.lock:
            if self.marker is None or self.marker not in data or self.times <= 0:
                return False
            self.times -= 1
            return True

    def _pipe(self, source: socket.socket, sink: socket.socket, held: threading.Event, answers: bool) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if not answers and self._marked(data):
                    held.set()
                elif answers and (self.marker is None or held.is_set()):
                    held.clear()
                    time.sleep(self.delay_s)
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.closed = True
        self.listener.close()


@pytest.fixture
def ns(coordinators: List[Coordinator]) -> str:
    name = namespace()
    admin(coordinators[0].url, "PUT", f"/admin/v1/{name}/policies/deps/{DEP}", {"backoff": {"baseMs": 1, "capMs": 2, "jitter": "full"}})
    return name


def failing_once() -> int:
    info = current_attempt()
    if info is not None and info.attempt == 1:
        raise TimeoutError("the first attempt times out")
    return 200


def test_an_answer_that_came_in_time_is_taken_by_a_process_too_busy_to_read_it(
    coordinators: List[Coordinator], ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = http.client.HTTPConnection.getresponse

    def busy_reader(connection: http.client.HTTPConnection) -> http.client.HTTPResponse:
        time.sleep(LATE_S)  # the answer may be in the socket; the thread that reads it gets no turn yet
        return original(connection)

    monkeypatch.setattr(http.client.HTTPConnection, "getresponse", busy_reader)
    with Sluice(base_urls=[coordinators[0].url], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=DECISION_TIMEOUT_MS) as sluice:
        sluice.ready()
        assert sluice.dependency(DEP).call(failing_once, idempotent=True) == 200


def test_the_decision_time_starts_when_the_ask_is_written(coordinators: List[Coordinator], ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    original = http.client.HTTPConnection.request

    def busy_sender(connection: http.client.HTTPConnection, method: str, url: str, *args: Any, **kwargs: Any) -> None:
        if url.endswith("/retry") or url.endswith("/retries"):
            time.sleep(LATE_S)  # a process too busy to send the ask: that time is the call's
        original(connection, method, url, *args, **kwargs)

    monkeypatch.setattr(http.client.HTTPConnection, "request", busy_sender)
    with Sluice(base_urls=[coordinators[0].url], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=DECISION_TIMEOUT_MS) as sluice:
        sluice.ready()
        assert sluice.dependency(DEP).call(failing_once, idempotent=True) == 200


def test_an_answer_that_comes_after_the_decision_timeout_allows_no_retry(coordinators: List[Coordinator], ns: str) -> None:
    proxy = DelayingProxy(coordinators[0].port, LATE_S)
    try:
        with Sluice(base_urls=[f"http://127.0.0.1:{proxy.port}"], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=DECISION_TIMEOUT_MS) as sluice:
            sluice.ready()
            attempts: List[Any] = []

            def failing() -> int:
                attempts.append(current_attempt())
                raise TimeoutError("the attempt times out")

            with pytest.raises(GiveUpError) as given_up:
                sluice.dependency(DEP).call(failing, idempotent=True)
            assert given_up.value.reason == "coordinator_unavailable"
            assert len(attempts) == 1
    finally:
        proxy.close()


def test_a_retry_ask_is_waited_for_until_the_calls_deadline_at_most(coordinators: List[Coordinator], ns: str) -> None:
    # The answer (250 ms) would come after the decision timeout (200 ms), which is after the call's
    # deadline (100 ms): the deadline ends the wait, and the call gives up deadline_exceeded.
    proxy = DelayingProxy(coordinators[0].port, LATE_S)
    try:
        with Sluice(base_urls=[f"http://127.0.0.1:{proxy.port}"], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=200) as sluice:
            sluice.ready()
            attempts: List[Any] = []

            def failing() -> int:
                attempts.append(current_attempt())
                raise TimeoutError("the attempt times out")

            with pytest.raises(DeadlineExceededError):
                sluice.dependency(DEP).call(failing, idempotent=True, deadline_ms=100)
            assert len(attempts) == 1
    finally:
        proxy.close()


# --- a probe granted too late -------------------------------------------------------------------
#: The harness's decision timeout (room for a loaded machine); an admission held back far past it.
PROBE_DECISION_TIMEOUT_MS = 500
PROBE_LATE_S = 0.9
BREAKER = {"minimumCalls": 2, "failureRateThreshold": 0.5, "windowSeconds": 10, "openMs": 300, "maxOpenMs": 300, "halfOpenProbes": 1, "closeAfterSuccesses": 1}


class Admissions:
    """The client's admissions (each ask and its answer, late or not) and the probes its reports carried."""

    def __init__(self, client: Sluice) -> None:
        self.asked = 0
        self.answers: List[Dict[str, Any]] = []
        self.reported: List[Dict[str, Any]] = []
        transport = client._engine.transport
        admit, report = transport.admit, transport.report

        def admitting(*args: Any, **kwargs: Any) -> Dict[str, Any]:
            self.asked += 1
            answer = dict(admit(*args, **kwargs))
            self.answers.append(answer)
            return answer

        def reporting(body: Dict[str, Any], *args: Any, **kwargs: Any) -> Dict[str, Any]:
            for entry in body["deps"]:
                self.reported.extend(entry.get("probes", []))
            return dict(report(body, *args, **kwargs))

        transport.admit = admitting  # type: ignore[method-assign]
        transport.report = reporting  # type: ignore[method-assign]


def wait_for(condition: Callable[[], Any], timeout_s: float = 5) -> None:
    until = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < until, "timed out"
        time.sleep(0.01)


def failing_call() -> int:
    raise TimeoutError("the dependency times out")


def succeeding_call() -> int:
    return 200


def late_probe(coordinators: List[Coordinator], ns: str, breaker: Dict[str, Any], run: Callable[[Sluice, Admissions, str], None]) -> None:
    """Opens the fleet's breaker, lets it half-open, and has a call's admission answered too late
    (with the probe): that call is refused; then ``run`` goes on with the kept probe's token."""
    admin(coordinators[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", {"breaker": breaker})
    proxy = DelayingProxy(coordinators[0].port, PROBE_LATE_S, marker=b"/admit")
    try:
        with Sluice(base_urls=[f"http://127.0.0.1:{proxy.port}"], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=PROBE_DECISION_TIMEOUT_MS) as sluice:
            sluice.ready()
            admissions = Admissions(sluice)
            payments = sluice.dependency(DEP, max_attempts=1)
            for _ in range(2):
                with pytest.raises(GiveUpError):
                    payments.call(failing_call, idempotent=True)
            wait_for(lambda: sluice.breaker_state(DEP) == "half_open")
            with pytest.raises(BreakerOpenError) as refused:
                payments.call(succeeding_call, idempotent=True)
            assert refused.value.attempts == 0 and admissions.asked == 1
            # The late answer is handled on the admission's own thread: once it ended, the answer is in.
            wait_for(lambda: not any(thread.name == "sluice-admit" for thread in threading.enumerate()))
            probe = admissions.answers[0].get("probe")
            assert admissions.answers[0]["allow"] and isinstance(probe, dict)
            run(sluice, admissions, probe["token"])
    finally:
        proxy.close()


def test_a_probe_granted_too_late_lets_the_next_call_out_without_asking(coordinators: List[Coordinator], ns: str) -> None:
    def run(sluice: Sluice, admissions: Admissions, token: str) -> None:
        assert sluice.dependency(DEP).call(succeeding_call, idempotent=True) == 200
        assert admissions.asked == 1  # no second admission
        wait_for(lambda: sluice.breaker_state(DEP) == "closed")
        assert admissions.reported == [{"token": token, "success": True}]

    late_probe(coordinators, ns, {**BREAKER, "probeLeaseMs": 10_000}, run)


def test_a_kept_probe_is_not_used_once_it_expired(coordinators: List[Coordinator], ns: str) -> None:
    def run(sluice: Sluice, admissions: Admissions, token: str) -> None:
        expires_at = admissions.answers[0]["probe"]["expiresAt"]
        time.sleep(max(0, expires_at - time.time() * 1000) / 1000 + 0.05)
        assert sluice.dependency(DEP).call(succeeding_call, idempotent=True) == 200
        assert admissions.asked == 2  # asked again: the fleet's probe lease had lapsed too
        wait_for(lambda: sluice.breaker_state(DEP) == "closed")
        fresh = admissions.answers[1]["probe"]["token"]
        assert fresh != token and admissions.reported == [{"token": fresh, "success": True}]

    late_probe(coordinators, ns, {**BREAKER, "probeLeaseMs": 1500}, run)


def test_a_kept_probe_is_dropped_when_the_breaker_leaves_half_open(coordinators: List[Coordinator], ns: str) -> None:
    def run(sluice: Sluice, admissions: Admissions, token: str) -> None:
        admin(coordinators[0].url, "POST", f"/admin/v1/{ns}/breakers/{DEP}/trip", {"reason": "bad deploy"})
        wait_for(lambda: sluice.breaker_state(DEP) == "forced_open")
        admin(coordinators[0].url, "POST", f"/admin/v1/{ns}/breakers/{DEP}/reset", {"reason": "fixed"})
        wait_for(lambda: sluice.breaker_state(DEP) == "closed")
        payments = sluice.dependency(DEP, max_attempts=1)
        for _ in range(2):
            with pytest.raises(GiveUpError):
                payments.call(failing_call, idempotent=True)
        wait_for(lambda: sluice.breaker_state(DEP) == "half_open")
        assert payments.call(succeeding_call, idempotent=True) == 200
        assert admissions.asked == 2  # the kept probe went with the half-open state: asked again
        fresh = admissions.answers[1]["probe"]["token"]
        assert fresh != token and {"token": token, "success": True} not in admissions.reported

    late_probe(coordinators, ns, {**BREAKER, "probeLeaseMs": 10_000}, run)


# --- a probe granted after the call's deadline ----------------------------------------------------
#: A call's deadline, and its admission's answer held back past it, well within the decision timeout (500 ms).
DEADLINE_MS = 150
PAST_DEADLINE_S = 0.3


def half_open(sluice: Sluice) -> Admissions:
    """Opens the fleet's breaker with two failed calls and waits until it is half-open."""
    admissions = Admissions(sluice)
    for _ in range(2):
        with pytest.raises(GiveUpError):
            sluice.dependency(DEP, max_attempts=1).call(failing_call, idempotent=True)
    wait_for(lambda: sluice.breaker_state(DEP) == "half_open")
    return admissions


def the_kept_probe_goes_out_next(sluice: Sluice, admissions: Admissions) -> None:
    """The probe the deadline's call did not use is the next call's, without a second admission."""
    wait_for(lambda: not any(thread.name == "sluice-admit" for thread in threading.enumerate()))
    probe = admissions.answers[0].get("probe")
    assert admissions.answers[0]["allow"] and isinstance(probe, dict)
    assert sluice.dependency(DEP).call(succeeding_call, idempotent=True) == 200
    assert admissions.asked == 1  # no second admission
    wait_for(lambda: sluice.breaker_state(DEP) == "closed")
    assert admissions.reported == [{"token": probe["token"], "success": True}]


def test_a_probe_granted_after_the_calls_deadline_sends_nothing_and_is_kept(coordinators: List[Coordinator], ns: str) -> None:
    admin(coordinators[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", {"breaker": {**BREAKER, "probeLeaseMs": 10_000}})
    proxy = DelayingProxy(coordinators[0].port, PAST_DEADLINE_S, marker=b"/admit")
    try:
        with Sluice(base_urls=[f"http://127.0.0.1:{proxy.port}"], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=PROBE_DECISION_TIMEOUT_MS) as sluice:
            sluice.ready()
            admissions = half_open(sluice)
            sent: List[Any] = []
            with pytest.raises(DeadlineExceededError) as given_up:
                sluice.dependency(DEP).call(lambda: sent.append(1), idempotent=True, deadline_ms=DEADLINE_MS)
            assert given_up.value.attempts == 0 and sent == [] and admissions.asked == 1
            the_kept_probe_goes_out_next(sluice, admissions)
    finally:
        proxy.close()


def test_an_admission_answered_in_time_but_after_the_deadline_sends_nothing_and_keeps_its_probe(
    coordinators: List[Coordinator], ns: str
) -> None:
    """An engine whose wait for the answer does not stop at the deadline: the answer is taken as one
    in time (the deadline passed while it was read), and the call still sends nothing."""
    admin(coordinators[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", {"breaker": {**BREAKER, "probeLeaseMs": 10_000}})
    with Sluice(base_urls=[coordinators[0].url], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=PROBE_DECISION_TIMEOUT_MS) as sluice:
        sluice.ready()
        admissions = half_open(sluice)
        engine = sluice._engine
        admit = engine.admit

        def slow_admit(state: Any, bstate: str, deadline_at: float = math.inf) -> Dict[str, Any]:
            answer = admit(state, bstate)  # in time for the decision, whatever the call's deadline
            time.sleep(PAST_DEADLINE_S)  # read once the call's deadline has passed
            return answer

        engine.admit = slow_admit  # type: ignore[method-assign]
        sent: List[Any] = []
        with pytest.raises(DeadlineExceededError) as given_up:
            sluice.dependency(DEP).call(lambda: sent.append(1), idempotent=True, deadline_ms=DEADLINE_MS)
        assert given_up.value.attempts == 0 and sent == [] and admissions.asked == 1
        engine.admit = admit  # type: ignore[method-assign]
        the_kept_probe_goes_out_next(sluice, admissions)


def test_the_asyncio_client_sends_nothing_after_the_deadline_either(coordinators: List[Coordinator], ns: str) -> None:
    admin(coordinators[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", {"breaker": {**BREAKER, "probeLeaseMs": 10_000}})
    proxy = DelayingProxy(coordinators[0].port, PAST_DEADLINE_S, marker=b"/admit")

    async def failing() -> int:
        raise TimeoutError("the dependency times out")

    async def scenario() -> None:
        async with AsyncSluice(base_urls=[f"http://127.0.0.1:{proxy.port}"], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=PROBE_DECISION_TIMEOUT_MS) as sluice:
            await sluice.ready()
            admissions = Admissions(sluice)
            payments = sluice.dependency(DEP, max_attempts=1)
            for _ in range(2):
                with pytest.raises(GiveUpError):
                    await payments.call(failing, idempotent=True)
            wait_for(lambda: sluice.breaker_state(DEP) == "half_open")
            sent: List[Any] = []

            async def sending() -> int:
                sent.append(1)
                return 200

            with pytest.raises(DeadlineExceededError) as given_up:
                await sluice.dependency(DEP).call(sending, idempotent=True, deadline_ms=DEADLINE_MS)
            assert given_up.value.attempts == 0 and sent == [] and admissions.asked == 1
            wait_for(lambda: not any(thread.name == "sluice-admit" for thread in threading.enumerate()))
            token = admissions.answers[0]["probe"]["token"]
            assert await sluice.dependency(DEP).call(sending, idempotent=True) == 200
            assert admissions.asked == 1 and sent == [1]
            wait_for(lambda: sluice.breaker_state(DEP) == "closed")
            assert admissions.reported == [{"token": token, "success": True}]

    try:
        asyncio.run(scenario())
    finally:
        proxy.close()


def test_a_local_probe_whose_attempt_does_not_go_out_is_given_back(coordinators: List[Coordinator], ns: str) -> None:
    with Sluice(base_urls=[coordinators[0].url], namespace=ns, token=CLIENT_TOKEN) as sluice:
        payments = sluice.dependency(DEP)
        state, now = payments.state, sluice._engine.now()
        state.local.adopt("half_open", None, now, None)
        assert state.local.try_probe(now) and not state.local.try_probe(now)  # one probe at a time
        past = payments.new_call(True, None, 1, None, now - 10)
        with pytest.raises(DeadlineExceededError):
            payments.admitted(past, {"allow": True, "reason": "granted", "local_probe": True})
        assert state.local.try_probe(now)  # given back: the local breaker lets its probe out again
