"""The decision timeout bounds the coordinator's answer, not this process's turn to read it."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from typing import Any, List

import pytest

from sluice import GiveUpError, Sluice, current_attempt
from support import CLIENT_TOKEN, Coordinator, admin, namespace

DEP = "payments-api"
DECISION_TIMEOUT_MS = 50
#: Far past the decision timeout, far within the request timeout (1000 ms).
LATE_S = 0.25


class DelayingProxy:
    """A TCP proxy in front of a coordinator that holds each of its answers back ``delay_s``."""

    def __init__(self, target_port: int, delay_s: float) -> None:
        self.target_port = target_port
        self.delay_s = delay_s
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
            threading.Thread(target=self._pipe, args=(client, upstream, 0.0), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, self.delay_s), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket, delay_s: float) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                time.sleep(delay_s)
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
