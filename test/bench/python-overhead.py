#!/usr/bin/env python3
"""Per-call overhead of the Python client through a closed breaker, beside tenacity's
``@retry(stop=stop_after_attempt(3))``, on the same successful call, in one run.

Run: npm run bench:python (starts one built coordinator; the client reports to it as usual).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "libs" / "client-python" / "tests"))

import tenacity  # noqa: E402  (Debian's python3-tenacity)

from sluice import Sluice  # noqa: E402
from support import CLIENT_TOKEN, namespace, start_coordinator  # noqa: E402

CALLS = 20_000
ROUNDS = 7


def work() -> int:
    return 42


def per_call_us(fn: object) -> float:
    call = fn  # type: ignore[assignment]
    started = time.perf_counter()
    for _ in range(CALLS):
        call()  # type: ignore[operator]
    return (time.perf_counter() - started) / CALLS * 1e6


def main() -> None:
    coordinator = start_coordinator()
    try:
        with Sluice(base_urls=[coordinator.url], namespace=namespace(), token=CLIENT_TOKEN, verify=True) as sluice:
            payments = sluice.dependency("bench-dep")
            payments.call(work, idempotent=True)  # the first view is read

            def through_sluice() -> int:
                return payments.call(work, idempotent=True)

            through_tenacity = tenacity.retry(stop=tenacity.stop_after_attempt(3))(work)
            results = {"bare": [], "sluice": [], "tenacity": []}  # type: ignore[var-annotated]
            for _ in range(ROUNDS):  # interleaved, so a busy moment of the machine hits all three
                results["bare"].append(per_call_us(work))
                results["sluice"].append(per_call_us(through_sluice))
                results["tenacity"].append(per_call_us(through_tenacity))
        bare = statistics.median(results["bare"])
        sluice_overhead = statistics.median(results["sluice"]) - bare
        tenacity_overhead = statistics.median(results["tenacity"]) - bare
        print(f"python {sys.version.split()[0]}, tenacity {getattr(tenacity, '__version__', '?')}, {CALLS} calls x {ROUNDS} rounds (medians)")
        print(f"bare call                     {bare:8.2f} us")
        print(f"sluice (closed breaker)       {sluice_overhead:8.2f} us over the bare call")
        print(f"tenacity stop_after_attempt(3) {tenacity_overhead:7.2f} us over the bare call")
        verdict = "at most" if sluice_overhead <= tenacity_overhead else "MORE than"
        print(f"sluice's overhead is {verdict} tenacity's ({sluice_overhead / tenacity_overhead:.2f}x)")
        if sluice_overhead > tenacity_overhead:
            sys.exit(1)
    finally:
        coordinator.stop()


if __name__ == "__main__":
    main()
