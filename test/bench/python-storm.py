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
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List

TESTS = Path(__file__).resolve().parents[2] / "libs" / "client-python" / "tests"
sys.path.insert(0, str(TESTS))

from support import CLIENT_TOKEN, ScriptedDependency, admin, namespace, start_coordinator  # noqa: E402

PROCESSES = 8
CALLS = 50
DEP = "storm-dep"
#: 400 threads in 8 interpreters on this shared 2-core machine: an answer the coordinator sends in a
#: few ms waits longer for its thread's turn (the conformance harness gives 500 ms too).
DECISION_TIMEOUT_MS = int(os.environ.get("STORM_DECISION_TIMEOUT_MS", "500"))

WORKER = r"""
import json, sys, threading, time, urllib.request
from collections import Counter
from sluice import GiveUpError, Sluice, current_attempt
from sluice.errors import CoordinatorUnavailableError
spec = json.loads(sys.argv[1])
counts = Counter()
lock = threading.Lock()
with Sluice(base_urls=spec["baseUrls"], namespace=spec["namespace"], token=spec["token"], reporter=spec["reporter"], decision_timeout_ms=spec["decisionTimeoutMs"]) as sluice:
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
    payments = sluice.dependency(spec["dep"])
    sluice.ready()
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
    dependency = ScriptedDependency(answer=lambda n, path: (503, {})).start()
    ns = namespace()
    try:
        admin(coordinators[0].url, "PUT", f"/admin/v1/{ns}/policies/deps/{DEP}", {"breaker": {"minimumCalls": 100000}})
        start_at = time.time() + 8  # every process started and warm by then
        workers = []
        for index in range(PROCESSES):
            spec = {
                "baseUrls": [c.url for c in coordinators],
                "namespace": ns,
                "token": CLIENT_TOKEN,
                "reporter": f"storm-{index}",
                "dep": DEP,
                "target": dependency.url + "/charge",
                "startAt": start_at,
                "calls": CALLS,
                "decisionTimeoutMs": DECISION_TIMEOUT_MS,
            }
            workers.append(subprocess.Popen([python, "-c", WORKER, json.dumps(spec)], stdout=subprocess.PIPE, text=True))
        totals: Counter[str] = Counter()
        for worker in workers:
            out, _ = worker.communicate(timeout=120)
            assert worker.returncode == 0, f"a worker failed ({worker.returncode})"
            totals.update(json.loads(out))
        time.sleep(0.5)
        attempts = Counter(r.headers.get("sluice-attempt") for r in dependency.received if r.path == "/charge")
        received_retries = sum(count for attempt, count in attempts.items() if attempt not in (None, "1"))
        budget = admin(coordinators[0].url, "GET", f"/v1/{ns}/deps/{DEP}")["budget"]
    finally:
        dependency.stop()
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
