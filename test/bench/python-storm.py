#!/usr/bin/env python3
"""A storm: 8 Python processes × 50 calls failing at once against two coordinators.

Checks: decision requests (POST …/retry and …/retries) per failed call ≤ 0.1, every grant used
(the retries the dependency received = the grants), no call ends coordinator_unavailable, no 503
from a coordinator. Run: npm run bench:python-storm.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List

TESTS = Path(__file__).resolve().parents[2] / "libs" / "client-python" / "tests"
sys.path.insert(0, str(TESTS))

from support import CLIENT_TOKEN, admin, namespace, start_coordinator  # noqa: E402

PROCESSES = 8
CALLS = 50
DEP = "storm-dep"
FAILING_DEPENDENCY = Path(__file__).resolve().parent / "failing-dependency.mjs"
#: The client's default.
DECISION_TIMEOUT_MS = int(os.environ.get("STORM_DECISION_TIMEOUT_MS", "50"))
#: The callers' CPU priority, as in the TypeScript storm (test/bench/storm.mjs): in a deployment they
#: run on their own hosts; here 8 interpreters share 2 cores with the coordinators and Redis, and at
#: an equal priority they take the CPU the coordinators need to answer. STORM_CALLER_NICE=0 shares
#: it evenly.
CALLER_NICE = int(os.environ.get("STORM_CALLER_NICE", "19"))

WORKER = r"""
import json, sys, threading, time, urllib.request
from collections import Counter
from sluice import GiveUpError, Sluice, current_attempt
from sluice.errors import CoordinatorUnavailableError
spec = json.loads(sys.argv[1])
counts = Counter()
lock = threading.Lock()
with Sluice(base_urls=spec["baseUrls"], namespace=spec["namespace"], token=spec["token"], reporter=spec["reporter"], decision_timeout_ms=spec["decisionTimeoutMs"]) as sluice:
    payments = sluice.dependency(spec["dep"])
    warm = sluice.dependency(spec["dep"] + "-warm")
    sluice.ready()
    def warm_call():
        with urllib.request.urlopen(spec["target"] + "-warm", timeout=5) as response:
            return response.status
    def warm_one():
        try:
            warm.call(warm_call, idempotent=True)
        except GiveUpError:
            pass
    # As in the TypeScript storm: every call failing at once, twice, on a dependency of its own (its
    # budget is not the storm's), so the connections are open and the batched decision path is warm.
    for _ in range(2):
        warming = [threading.Thread(target=warm_one) for _ in range(spec["calls"])]
        for thread in warming: thread.start()
        for thread in warming: thread.join()
    time.sleep(0.3)
    transport = sluice._engine.transport
    original = transport.exchange
    def counted(method, path, *args, **kwargs):
        kind = path.rsplit("/", 1)[-1]
        if kind in ("retry", "retries"):
            with lock: counts["decision_requests"] += 1
        try:
            return original(method, path, *args, **kwargs)
        except CoordinatorUnavailableError as error:
            if error.status == 503:
                with lock: counts["coordinator_503"] += 1
            raise
    transport.exchange = counted
    sluice.on_retry(lambda event: counts.update(["grants"]))
    payments.call(lambda: None, idempotent=True)  # the first view is read
    def attempt():
        info = current_attempt()
        request = urllib.request.Request(spec["target"], headers=info.headers)
        with urllib.request.urlopen(request, timeout=info.deadline_ms / 1000) as response:
            return response.status
    def one():
        time.sleep(max(0, spec["startAt"] - time.time()))
        try:
            payments.call(attempt, idempotent=True)
            reason = "ok"
        except GiveUpError as error:
            reason = error.reason
        with lock: counts["reason:" + reason] += 1
    threads = [threading.Thread(target=one) for _ in range(spec["calls"])]
    for thread in threads: thread.start()
    for thread in threads: thread.join()
print(json.dumps(counts))
"""


def main() -> None:
    python = sys.executable
    coordinators = [start_coordinator(), start_coordinator()]
    dependency = subprocess.Popen(["node", str(FAILING_DEPENDENCY), str(PROCESSES * CALLS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert dependency.stdout is not None
    dependency_url = dependency.stdout.readline().strip()
    ns = namespace()
    try:
        admin(coordinators[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", {"breaker": {"minimumCalls": 100000}})
        start_at = time.time() + 12  # every process started and warm by then
        workers = []
        for index in range(PROCESSES):
            spec = {
                "baseUrls": [c.url for c in coordinators],
                "namespace": ns,
                "token": CLIENT_TOKEN,
                "reporter": f"storm-{index}",
                "dep": DEP,
                "target": dependency_url + "/charge",
                "startAt": start_at,
                "calls": CALLS,
                "decisionTimeoutMs": DECISION_TIMEOUT_MS,
            }
            workers.append(subprocess.Popen(["nice", "-n", str(CALLER_NICE), python, "-c", WORKER, json.dumps(spec)], stdout=subprocess.PIPE, text=True))
        totals: Counter[str] = Counter()
        for worker in workers:
            out, _ = worker.communicate(timeout=120)
            assert worker.returncode == 0, f"a worker failed ({worker.returncode})"
            totals.update(json.loads(out))
        time.sleep(0.5)
        with urllib.request.urlopen(dependency_url + "/received", timeout=5) as response:
            attempts = json.loads(response.read())["attempts"]
        received_retries = sum(count for attempt, count in attempts.items() if attempt not in ("none", "1"))
        budget = admin(coordinators[0].url, "GET", f"/v1/{ns}/deps/{DEP}")["budget"]
    finally:
        dependency.communicate(timeout=10)  # stdin closed: it ends
        for coordinator in coordinators:
            coordinator.stop()
    failed_calls = sum(count for key, count in totals.items() if key.startswith("reason:") and key != "reason:ok")
    per_call = totals["decision_requests"] / max(1, failed_calls)
    reasons = {key[7:]: count for key, count in totals.items() if key.startswith("reason:")}
    print(f"{PROCESSES} processes x {CALLS} calls, the dependency failing every call (503), decision timeout {DECISION_TIMEOUT_MS} ms")
    print(f"failed calls: {failed_calls}; reasons: {reasons}")
    print(f"decision requests: {totals['decision_requests']} ({per_call:.3f} per failed call, at most 0.1)")
    print(f"grants: {totals['grants']}; retries the dependency received: {received_retries}; the fleet's budget counted {budget['retries']} (limit {budget['limit']})")
    print(f"calls ended coordinator_unavailable: {reasons.get('coordinator_unavailable', 0)}; coordinator 503s: {totals['coordinator_503']}")
    ok = (
        per_call <= 0.1
        and totals["grants"] == received_retries == budget["retries"]
        and reasons.get("coordinator_unavailable", 0) == 0
        and totals["coordinator_503"] == 0
        and failed_calls == PROCESSES * CALLS
    )
    print("storm: " + ("pass" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
