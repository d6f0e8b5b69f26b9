"""One fleet, three languages: a Python process, a TypeScript process (the built SDK) and a Go
process (libs/client-go) calling the same dependency through the same two coordinators share one
budget (each grant counted once, the limit exact across the three) and one breaker (a trip through
the CLI fails each process's next call with the operator's reason, with no attempt sent)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from sluice import BreakerOpenError, GiveUpError, Sluice
from support import ADMIN_TOKEN, CLIENT_TOKEN, NODE, ROOT, Coordinator, admin, namespace

DEP = "payments-api"
HERE = os.path.dirname(os.path.abspath(__file__))


class Peer:
    """A process of the fleet in another language, driven one JSON line at a time."""

    def __init__(self, command: List[str], spec: Dict[str, Any], env: Dict[str, str]) -> None:
        self.process = subprocess.Popen([*command, json.dumps(spec)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def send(self, command: Dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def answer(self) -> Dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the peer exited with {self.process.wait(10)}"
        return dict(json.loads(line))

    def ask(self, command: Dict[str, Any]) -> Dict[str, Any]:
        self.send(command)
        return self.answer()

    def close(self) -> None:
        try:
            self.ask({"op": "close"})
        finally:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture(scope="module")
def go_peer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """fleet_peer_go built against libs/client-go (Go's standard library only, nothing fetched)."""
    go = shutil.which("go")
    assert go is not None, "go is not on PATH: the Go peer of the three-language fleet needs it"
    binary = tmp_path_factory.mktemp("go") / "fleet_peer_go"
    built = subprocess.run([go, "build", "-o", str(binary), "."], cwd=os.path.join(HERE, "fleet_peer_go"), capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    return binary


def test_one_budget_and_one_breaker_across_python_typescript_and_go(coordinators: List[Coordinator], go_peer: Path) -> None:
    ns = namespace()
    # A fixed limit of exactly 5 retries in the window: floor(0 × requests + 0.5 × 10).
    policy = {"retryBudget": {"ratio": 0, "minRetriesPerSecond": 0.5, "windowSeconds": 10}, "backoff": {"baseMs": 5, "capMs": 20, "jitter": "full"}, "breaker": {"minimumCalls": 100000}}
    admin(coordinators[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", policy)
    urls = [c.url for c in coordinators]
    env = {"PATH": os.environ.get("PATH", "")}
    typescript = Peer([NODE, os.path.join(HERE, "fleet_peer.mjs")], {"baseUrls": list(reversed(urls)), "namespace": ns, "token": CLIENT_TOKEN, "dep": DEP}, {**env, "SLUICE_SDK": str(ROOT / "dist" / "libs" / "client" / "src" / "index.js")})
    go = Peer([str(go_peer)], {"baseUrls": urls, "namespace": ns, "token": CLIENT_TOKEN, "dep": DEP}, env)
    try:
        with Sluice(base_urls=urls, namespace=ns, token=CLIENT_TOKEN, reporter="peer-py", decision_timeout_ms=500, verify=True) as sluice:
            payments = sluice.dependency(DEP)
            python_grants: List[Any] = []
            sluice.on_retry(python_grants.append)
            python_attempts: List[int] = []

            class Unavailable(Exception):
                status = 503

            def failing() -> None:
                python_attempts.append(1)
                raise Unavailable("the dependency answered 503")

            python_reasons: List[str] = []

            def python_side() -> None:
                for _ in range(6):
                    try:
                        payments.call(failing, idempotent=True, deadline_ms=5000)
                    except GiveUpError as error:
                        python_reasons.append(error.reason)

            # The three fail at once: 18 calls, each of which would take two retries.
            typescript.send({"op": "fail", "calls": 6})
            go.send({"op": "fail", "calls": 6})
            side = threading.Thread(target=python_side)
            side.start()
            side.join()
            typescript_failed, go_failed = typescript.answer(), go.answer()
            grants = len(python_grants) + typescript_failed["grants"] + go_failed["grants"]
            assert grants == 5, (len(python_grants), typescript_failed, go_failed)
            assert admin(urls[0], "GET", f"/v1/{ns}/deps/{DEP}")["budget"]["retries"] == 5
            assert len(python_attempts) == 6 + len(python_grants)
            assert "budget_exhausted" in python_reasons + typescript_failed["reasons"] + go_failed["reasons"]

            trip = subprocess.run(
                [NODE, str(ROOT / "dist" / "apps" / "cli" / "src" / "main.js"), "--url", urls[1], "trip", ns, DEP, "--reason", "payments incident 42", "--yes"],
                env={**env, "SLUICE_TOKEN": ADMIN_TOKEN}, capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            assert trip.returncode == 0, trip.stderr
            assert typescript.ask({"op": "wait_breaker", "state": "forced_open"})["state"] == "forced_open"
            assert go.ask({"op": "wait_breaker", "state": "forced_open"})["state"] == "forced_open"
            until = time.monotonic() + 5
            while sluice.breaker_state(DEP) != "forced_open" and time.monotonic() < until:
                time.sleep(0.01)
            sent: List[int] = []
            try:
                payments.call(lambda: sent.append(1), idempotent=True)
                raise AssertionError("the call went through a tripped breaker")
            except BreakerOpenError as error:
                python_refusal = (error.reason, error.operator_reason, error.attempts, len(sent))
            typescript_refusal = typescript.ask({"op": "call"})
            go_refusal = go.ask({"op": "call"})
        assert python_refusal == ("breaker_open", "payments incident 42", 0, 0)
        refusal = {"ok": False, "reason": "breaker_open", "operatorReason": "payments incident 42", "attempts": 0}
        assert typescript_refusal == refusal
        assert go_refusal == refusal
    finally:
        typescript.close()
        go.close()
