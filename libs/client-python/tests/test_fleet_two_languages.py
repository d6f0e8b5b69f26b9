"""One fleet, two languages: a Python process and a TypeScript process (the built SDK) calling the
same dependency share one budget (each grant counted once, the limit exact across both) and one
breaker (a trip through the CLI fails both processes' next call with the operator's reason)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from typing import Any, Dict, List

from sluice import BreakerOpenError, GiveUpError, Sluice
from support import ADMIN_TOKEN, CLIENT_TOKEN, NODE, ROOT, Coordinator, admin, namespace

DEP = "payments-api"
HERE = os.path.dirname(os.path.abspath(__file__))


class Peer:
    def __init__(self, spec: Dict[str, Any]) -> None:
        env = {"PATH": os.environ.get("PATH", ""), "SLUICE_SDK": str(ROOT / "dist" / "libs" / "client" / "src" / "index.js")}
        self.process = subprocess.Popen([NODE, os.path.join(HERE, "fleet_peer.mjs"), json.dumps(spec)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)

    def ask(self, command: Dict[str, Any]) -> Dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return dict(json.loads(self.process.stdout.readline()))

    def close(self) -> None:
        try:
            self.ask({"op": "close"})
        finally:
            self.process.kill()
            self.process.wait(10)


def test_one_budget_and_one_breaker_across_python_and_typescript(coordinators: List[Coordinator]) -> None:
    ns = namespace()
    # A fixed limit of exactly 5 retries in the window: floor(0 × requests + 0.5 × 10).
    policy = {"retryBudget": {"ratio": 0, "minRetriesPerSecond": 0.5, "windowSeconds": 10}, "backoff": {"baseMs": 5, "capMs": 20, "jitter": "full"}, "breaker": {"minimumCalls": 100000}}
    admin(coordinators[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", policy)
    urls = [c.url for c in coordinators]
    peer = Peer({"baseUrls": list(reversed(urls)), "namespace": ns, "token": CLIENT_TOKEN, "dep": DEP})
    try:
        with Sluice(base_urls=urls, namespace=ns, token=CLIENT_TOKEN, reporter="peer-py", decision_timeout_ms=500, verify=True) as sluice:
            payments = sluice.dependency(DEP)
            python_grants: List[Any] = []
            sluice.on_retry(python_grants.append)

            class Unavailable(Exception):
                status = 503

            def failing() -> None:
                raise Unavailable("the dependency answered 503")

            python_reasons: List[str] = []

            def python_side() -> None:
                for _ in range(6):
                    try:
                        payments.call(failing, idempotent=True, deadline_ms=5000)
                    except GiveUpError as error:
                        python_reasons.append(error.reason)

            side = threading.Thread(target=python_side)
            side.start()
            typescript = peer.ask({"op": "fail", "calls": 6})
            side.join()
            grants = len(python_grants) + typescript["grants"]
            assert grants == 5, (len(python_grants), typescript)
            assert admin(urls[0], "GET", f"/v1/{ns}/deps/{DEP}")["budget"]["retries"] == 5
            assert "budget_exhausted" in python_reasons + typescript["reasons"]

            trip = subprocess.run(
                [NODE, str(ROOT / "dist" / "apps" / "cli" / "src" / "main.js"), "--url", urls[1], "trip", ns, DEP, "--reason", "payments incident 42", "--yes"],
                env={"PATH": os.environ.get("PATH", ""), "SLUICE_TOKEN": ADMIN_TOKEN}, capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            assert trip.returncode == 0, trip.stderr
            assert peer.ask({"op": "wait_breaker", "state": "forced_open"})["state"] == "forced_open"
            until = time.monotonic() + 5
            while sluice.breaker_state(DEP) != "forced_open" and time.monotonic() < until:
                time.sleep(0.01)
            try:
                payments.call(lambda: "ok", idempotent=True)
                raise AssertionError("the call went through a tripped breaker")
            except BreakerOpenError as error:
                python_refusal = (error.reason, error.operator_reason, error.attempts)
            typescript_refusal = peer.ask({"op": "call"})
        assert python_refusal == ("breaker_open", "payments incident 42", 0)
        assert typescript_refusal == {"ok": False, "reason": "breaker_open", "operatorReason": "payments incident 42"}
    finally:
        peer.close()

