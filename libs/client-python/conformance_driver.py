#!/usr/bin/env python3
"""The conformance driver of the Python client: reads one run spec on stdin, runs its steps
through one Sluice client, prints one JSON event per line (see test/conformance/README.md).

CONFORMANCE_BREAK (comma-separated) makes it a broken client on purpose, to show the suite
catches one: ``drop-request-id`` (asks go out without their requestId), ``no-feed`` (no event
stream, no polling), ``no-coalesce`` (one request per retry ask, no held denials),
``fail-closed`` (no local fallback).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import urllib.error
from typing import Any, Dict, Optional

from sluice import BackoffPolicy, BreakerOpenError, GiveUpError, HttpStatusError, Sluice
from sluice.transport import Transport

broken = {name for name in os.environ.get("CONFORMANCE_BREAK", "").split(",") if name}
_out = threading.Lock()


def emit(event: Dict[str, Any]) -> None:
    with _out:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def drop_request_ids() -> None:
    """A broken client: every requestId is stripped before an ask leaves."""
    original = Transport.json

    def stripped(self: Transport, method: str, path: str, body: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(body, dict):
            body = {k: v for k, v in body.items() if k != "requestId"}
            if isinstance(body.get("asks"), list):
                body["asks"] = [{k: v for k, v in ask.items() if k != "requestId"} for ask in body["asks"]]
        return original(self, method, path, body, *args, **kwargs)

    Transport.json = stripped  # type: ignore[method-assign]


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="python driver: %(name)s %(levelname)s %(message)s")
    spec = json.load(sys.stdin)
    options = spec.get("client") or {}
    if "drop-request-id" in broken:
        drop_request_ids()
    backoff = options.get("backoff")
    kwargs: Dict[str, Any] = {}
    for name, key in (("report_interval_ms", "reportIntervalMs"), ("request_timeout_ms", "requestTimeoutMs"), ("decision_timeout_ms", "decisionTimeoutMs"), ("poll_interval_ms", "pollIntervalMs")):
        if options.get(key) is not None:
            kwargs[name] = int(options[key])
    if "no-feed" in broken:
        kwargs["poll_interval_ms"] = 600_000
    sluice = Sluice(
        base_urls=spec["baseUrls"],
        namespace=spec["namespace"],
        token=spec.get("token"),
        reporter=spec.get("reporter"),
        sse="no-feed" not in broken,
        coalesce_retry_asks="no-coalesce" not in broken,
        fallback="fail-closed" if "fail-closed" in broken else "local",
        backoff=BackoffPolicy(base_ms=backoff["baseMs"], cap_ms=backoff["capMs"], jitter=backoff.get("jitter", "full")) if backoff else None,
        **kwargs,
    )
    name = spec["dependency"]
    dependency = sluice.dependency(name)  # first: the client follows its breaker from the start
    try:
        sluice.ready()
    except Exception as error:  # noqa: BLE001 - the scenarios decide what must happen
        print(f"python driver: start check: {error}", file=sys.stderr)
    emit({"event": "ready"})

    def call(step: Dict[str, Any]) -> None:
        attempts = 0
        status: Optional[int] = None
        policy = dependency if step.get("maxAttempts") is None else sluice.dependency(name, max_attempts=int(step["maxAttempts"]))
        url = spec["targetUrl"] + step["path"]
        method = step.get("method", "GET")

        def counted_attempt() -> Any:
            nonlocal attempts, status
            from sluice import current_attempt
            import urllib.request

            info = current_attempt()
            assert info is not None
            attempts = max(attempts, info.attempt)
            request = urllib.request.Request(url, headers=dict(info.headers), method=method)
            try:
                with urllib.request.urlopen(request, timeout=info.deadline_ms / 1000) as answer:
                    status = answer.status
                    answer.read()
                    return answer.status
            except urllib.error.HTTPError as error:
                status = error.code
                raise

        idempotent = step.get("idempotent")
        if idempotent is None:
            idempotent = method.upper() not in ("POST", "PATCH")
        try:
            result = policy.call(counted_attempt, idempotent=idempotent, idempotency_key=step.get("idempotencyKey"), deadline_ms=step.get("deadlineMs"))
            emit({"event": "call", "id": step["id"], "ok": True, "status": result, "attempts": attempts})
        except GiveUpError as error:
            operator = error.operator_reason if isinstance(error, BreakerOpenError) else None
            last = error.last_error
            if isinstance(last, HttpStatusError):
                status = last.status
            emit({"event": "call", "id": step["id"], "ok": False, "reason": error.reason, "status": status, "attempts": attempts, "operatorReason": operator, "message": str(error)})
        except Exception as error:  # noqa: BLE001 - not retriable: the dependency's own answer
            emit({"event": "call", "id": step["id"], "ok": False, "reason": "not_retriable", "status": status, "attempts": attempts, "operatorReason": None, "message": str(error)})

    def wait_for(read: Any, expected: str, timeout_ms: Optional[int]) -> bool:
        until = time.monotonic() + (timeout_ms or 3000) / 1000
        while read() != expected and time.monotonic() < until:
            time.sleep(0.01)
        return bool(read() == expected)

    for step in spec["steps"]:
        op = step.get("op")
        if op == "call":
            call(step)
        elif op == "concurrent":
            threads = [threading.Thread(target=call, args=(each,)) for each in step["calls"]]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        elif op == "sleep":
            time.sleep(step["ms"] / 1000)
        elif op == "wait_breaker":
            reached = wait_for(lambda: sluice.breaker_state(name), step["state"], step.get("timeoutMs"))
            emit({"event": "breaker", "state": sluice.breaker_state(name), **({} if reached else {"timedOut": True})})
        elif op == "wait_mode":
            mode = lambda: "fallback" if sluice.fallback_active else "fleet"  # noqa: E731
            reached = wait_for(mode, step["mode"], step.get("timeoutMs"))
            emit({"event": "mode", "mode": mode(), **({} if reached else {"timedOut": True})})
        else:
            print(f"python driver: unknown step {step!r}", file=sys.stderr)
    sluice.close()
    emit({"event": "done"})


if __name__ == "__main__":
    main()
