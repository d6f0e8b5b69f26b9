"""The coalescer's window: the quiet that closes a batch counts only while the process ran."""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional

import pytest

import sluice.engine as engine_module
from sluice.engine import Coalescer, Options
from sluice.transport import Arrival

GRANT = {"allow": True, "reason": "granted", "delayMs": 0}


class RecordingTransport:
    """Answers every ask with a grant and records each request's asks."""

    def __init__(self) -> None:
        self.requests: List[List[Dict[str, Any]]] = []
        self.sent = threading.Event()

    def retry(self, dep: str, ask: Dict[str, Any], timeout_ms: float, reask_ms: float, arrival: Optional[Arrival] = None) -> Dict[str, Any]:
        self.requests.append([ask])
        self.sent.set()
        return dict(GRANT)

    def retries(self, asks: List[Dict[str, Any]], timeout_ms: float, reask_ms: float, arrival: Optional[Arrival] = None) -> Dict[str, Any]:
        self.requests.append(list(asks))
        self.sent.set()
        return {"decisions": [dict(GRANT) for _ in asks]}


def test_a_window_whose_thread_woke_late_waits_for_the_asks_that_had_no_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = RecordingTransport()
    options = Options(base_urls=("http://127.0.0.1:1",), namespace="shop", token=None, reporter="test", coalesce_window_ms=10)
    coalescer = Coalescer(transport, options)  # type: ignore[arg-type]
    real_sleep, real_monotonic = time.sleep, time.monotonic
    clock = [0.0]  # the process's monotonic clock, moved only by the batch's naps
    naps = 0
    second_nap = threading.Event()
    second_ask_made = threading.Event()

    def sleep(seconds: float) -> None:
        nonlocal naps
        if threading.current_thread().name != "sluice-ask":
            return real_sleep(seconds)
        naps += 1
        if naps == 1:
            clock[0] += seconds + 0.008  # woke 8 ms late: the process was not scheduled meanwhile
        else:
            if naps == 2:
                second_nap.set()
                second_ask_made.wait(2)
            clock[0] += seconds + 1e-9  # never a nap that moves no time
        real_sleep(0)

    monkeypatch.setattr(engine_module.time, "sleep", sleep)
    monkeypatch.setattr(engine_module.time, "monotonic", lambda: clock[0])
    first = coalescer.submit("payments-api", {"attempt": 1, "requestId": "a"})
    deadline = real_monotonic() + 2
    while not (second_nap.is_set() or transport.sent.is_set()) and real_monotonic() < deadline:
        real_sleep(0.001)
    # The thread whose failure came with the first one's gets its turn only now.
    second = coalescer.submit("payments-api", {"attempt": 1, "requestId": "b"})
    second_ask_made.set()
    assert first.done.wait(2) and second.done.wait(2)
    assert [[ask["requestId"] for ask in asks] for asks in transport.requests] == [["a", "b"]]
