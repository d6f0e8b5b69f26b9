"""The asyncio client, the WSGI and ASGI middleware, and the fallback, against real coordinators."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess

import time
import urllib.request
import wsgiref.util
from pathlib import Path
from typing import Any, Dict, Iterable, List

import pytest

from sluice import BreakerOpenError, GiveUpError, Sluice, current_attempt, incoming_request
from sluice.aio import AsyncSluice
from sluice.middleware import ASGIMiddleware, WSGIMiddleware
from support import CLIENT_TOKEN, Coordinator, ScriptedDependency, admin, free_port, namespace, start_coordinator

DEP = "payments-api"
FAST = {"backoff": {"baseMs": 5, "capMs": 20, "jitter": "full"}}
HERE = Path(__file__).resolve().parent


def test_the_asyncio_client_retries_with_the_fleets_grant_and_fails_fast_on_a_trip(coordinators: List[Coordinator]) -> None:
    ns = namespace()
    admin(coordinators[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", FAST)
    attempts: List[Dict[str, str]] = []

    async def charge() -> str:
        info = current_attempt()
        assert info is not None
        attempts.append(info.headers)
        if info.attempt == 1:
            raise ConnectionResetError("the first attempt's connection broke")
        return "receipt"

    async def scenario() -> None:
        async with AsyncSluice(base_urls=[c.url for c in coordinators], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=500) as sluice:
            await sluice.ready()
            payments = sluice.dependency(DEP)
            assert await payments.call(charge, idempotency_key="order-1") == "receipt"

            @sluice.retry(DEP, idempotent=True)
            async def decorated(value: str) -> str:
                return value

            assert await decorated("through the policy") == "through the policy"

            async def slow() -> str:
                await asyncio.sleep(5)
                return "never"

            with pytest.raises(GiveUpError) as raised:
                await sluice.dependency(DEP, attempt_timeout_ms=50, max_attempts=1).call(slow, idempotent=True)
            assert raised.value.reason == "max_attempts" and isinstance(raised.value.last_error, TimeoutError)
            admin(coordinators[0].url, "POST", f"/admin/v1/{ns}/breakers/{DEP}/trip", {"reason": "db migration"})
            until = time.monotonic() + 5
            while sluice.breaker_state(DEP) != "forced_open" and time.monotonic() < until:
                await asyncio.sleep(0.01)
            with pytest.raises(BreakerOpenError) as tripped:
                await payments.call(charge, idempotent=True)
            assert tripped.value.operator_reason == "db migration"

    asyncio.run(scenario())
    assert [a["sluice-attempt"] for a in attempts] == ["1", "2"] and attempts[1]["Idempotency-Key"] == "order-1"
    view = admin(coordinators[0].url, "GET", f"/v1/{ns}/deps/{DEP}")
    assert view["budget"]["retries"] == 1


def test_wsgi_middleware_reads_the_deadline_and_answers_no_retry(coordinators: List[Coordinator]) -> None:
    ns = namespace()
    dependency = ScriptedDependency(answer=lambda n, path: (503, {})).start()
    seen: List[Any] = []
    with Sluice(base_urls=[c.url for c in coordinators], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=500) as sluice:
        payments = sluice.dependency(DEP)

        def app(environ: Dict[str, Any], start_response: Any) -> Iterable[bytes]:
            seen.append(incoming_request())
            try:
                payments.urlopen(dependency.url + "/charge", idempotent=True)
            except GiveUpError as error:
                start_response("502 Bad Gateway", [("content-type", "text/plain")])
                return [error.reason.encode()]
            start_response("200 OK", [])
            return [b"ok"]

        environ: Dict[str, Any] = {"REQUEST_METHOD": "GET", "HTTP_SLUICE_DEADLINE_MS": "400", "HTTP_SLUICE_ATTEMPT": "2"}
        wsgiref.util.setup_testing_defaults(environ)
        statuses: List[Any] = []
        body = WSGIMiddleware(app)(environ, lambda status, headers, *exc: statuses.append((status, dict(headers))))
    dependency.stop()
    assert b"".join(body) == b"upstream_retry"  # serving a retry: the retry is left to the caller
    assert statuses[0][1]["sluice-no-retry"] == "upstream_retry"
    assert seen[0].attempt == 2 and seen[0].deadline_at is not None
    assert int(dependency.received[0].headers["sluice-deadline-ms"]) <= 400


def test_asgi_middleware_keeps_calls_within_the_callers_deadline(coordinators: List[Coordinator]) -> None:
    ns = namespace()
    sent: List[Any] = []

    async def scenario() -> None:
        async with AsyncSluice(base_urls=[c.url for c in coordinators], namespace=ns, token=CLIENT_TOKEN) as sluice:
            payments = sluice.dependency(DEP)

            async def app(scope: Any, receive: Any, send: Any) -> None:
                async def slow() -> None:
                    await asyncio.sleep(1)

                try:
                    await payments.call(slow, idempotent=True)
                    status = 200
                except GiveUpError:
                    status = 504
                await send({"type": "http.response.start", "status": status, "headers": []})
                await send({"type": "http.response.body", "body": b""})

            async def send(message: Any) -> None:
                sent.append(message)

            async def receive() -> Any:
                return {"type": "http.request"}

            started = time.monotonic()
            await ASGIMiddleware(app)({"type": "http", "headers": [(b"sluice-deadline-ms", b"150")]}, receive, send)
            assert time.monotonic() - started < 0.9

    asyncio.run(scenario())
    assert sent[0]["status"] == 504 and (b"sluice-no-retry", b"deadline_exceeded") in sent[0]["headers"]


def test_the_local_fallback_takes_over_when_both_coordinators_are_gone_and_returns(coordinators: List[Coordinator]) -> None:
    ports = [free_port(), free_port()]
    pair = [start_coordinator(port) for port in ports]
    ns = namespace()
    admin(pair[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", {**FAST, "retryBudget": {"ratio": 0, "minRetriesPerSecond": 0.3, "windowSeconds": 10}})
    changes: List[bool] = []
    failures = {"n": 0}

    def flaky() -> str:
        failures["n"] += 1
        if failures["n"] % 2 == 1:
            raise ConnectionRefusedError("dependency refused")
        return "ok"

    try:
        with Sluice(base_urls=[c.url for c in pair], namespace=ns, token=CLIENT_TOKEN, decision_timeout_ms=500, poll_interval_ms=100, request_timeout_ms=300) as sluice:
            sluice.on_fallback(lambda change: changes.append(change.active))
            payments = sluice.dependency(DEP)
            assert payments.call(flaky, idempotent=True) == "ok"
            for coordinator in pair:
                coordinator.stop()
            until = time.monotonic() + 10
            while not sluice.fallback_active and time.monotonic() < until:
                time.sleep(0.05)
            assert sluice.fallback_active and sluice.status()["mode"] == "fallback"
            # The local budget: the policy's floor (3 retries) for this process, the only reporter.
            outcomes = []
            for _ in range(5):
                try:
                    outcomes.append(payments.call(flaky, idempotent=True))
                except GiveUpError as error:
                    outcomes.append(error.reason)
            assert "coordinator_unavailable" not in outcomes and outcomes.count("ok") >= 1
            assert "budget_exhausted" in outcomes
            pair = [start_coordinator(port) for port in ports]
            until = time.monotonic() + 15
            while sluice.fallback_active and time.monotonic() < until:
                time.sleep(0.05)
            assert not sluice.fallback_active and changes == [True, False]
    finally:
        for coordinator in pair:
            coordinator.stop()


def readme_example() -> str:
    text = (HERE.parent / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)[0]


def test_the_wheel_installs_into_a_clean_venv_and_the_readme_example_runs(coordinators: List[Coordinator], tmp_path: Path) -> None:
    wheel = next((HERE.parent / "dist").glob("sluice_client-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--no-index", "--no-deps", str(wheel)], check=True, capture_output=True)
    listed = subprocess.run([str(venv / "bin/python"), "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True).stdout
    assert {p["name"] for p in json.loads(listed)} <= {"pip", "setuptools", "sluice-client"}  # nothing else came with it
    ns = namespace()
    dependency = ScriptedDependency(answer=lambda n, path: (503, {}) if n == 0 else (201, {})).start()
    script = tmp_path / "example.py"
    script.write_text(readme_example().replace('namespace="shop"', f'namespace="{ns}"'))
    env = {"PATH": os.environ.get("PATH", ""), "SLUICE_TOKEN": CLIENT_TOKEN, "SLUICE_URLS": ",".join(c.url for c in coordinators), "PAYMENTS_URL": dependency.url}
    result = subprocess.run([str(venv / "bin/python"), str(script)], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    dependency.stop()
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("charged:"), result.stdout + result.stderr
    assert [r.headers.get("idempotency-key") for r in dependency.received] == ["order-42", "order-42"]
    assert admin(coordinators[0].url, "GET", f"/v1/{ns}/deps/{DEP}")["budget"]["retries"] == 1

