"""Checks the constructor's options (shared by the sync and asyncio clients)."""

from __future__ import annotations

import re
from typing import Optional, Sequence, Union

from .core.policy import BackoffPolicy
from .engine import Options, default_reporter

NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
FALLBACK_MODES = ("local", "fail-open", "fail-closed")


def check_name(kind: str, value: str) -> str:
    if not isinstance(value, str) or not NAME.match(value):
        raise ValueError(f"{kind} must match {NAME.pattern}, got {value!r}")
    return value


def _integer(name: str, value: int, low: int, high: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, got {value!r}")
    return value


def make_options(
    base_urls: Union[str, Sequence[str]],
    namespace: str,
    token: Optional[str],
    reporter: Optional[str],
    report_interval_ms: int,
    decision_timeout_ms: int,
    request_timeout_ms: int,
    connect_timeout_ms: int,
    coalesce_retry_asks: bool,
    sse: bool,
    poll_interval_ms: int,
    fallback: str,
    fallback_share: Optional[float],
    failures_before_fallback: int,
    report_retries_succeeded: Optional[bool],
    backoff: Optional[BackoffPolicy],
) -> Options:
    urls = (base_urls,) if isinstance(base_urls, str) else tuple(base_urls)
    if not urls:
        raise ValueError("base_urls needs at least one coordinator URL")
    if fallback not in FALLBACK_MODES:
        raise ValueError(f"fallback must be one of {', '.join(FALLBACK_MODES)}, got {fallback!r}")
    if fallback_share is not None and not 0 < fallback_share <= 1:
        raise ValueError("fallback_share must be in (0, 1]")
    return Options(
        base_urls=urls,
        namespace=check_name("namespace", namespace),
        token=token,
        reporter=reporter or default_reporter(),
        report_interval_ms=_integer("report_interval_ms", report_interval_ms, 1, 60_000),
        decision_timeout_ms=_integer("decision_timeout_ms", decision_timeout_ms, 1, 60_000),
        request_timeout_ms=_integer("request_timeout_ms", request_timeout_ms, 1, 60_000),
        connect_timeout_ms=_integer("connect_timeout_ms", connect_timeout_ms, 1, 60_000),
        coalesce=bool(coalesce_retry_asks),
        sse=bool(sse),
        poll_interval_ms=_integer("poll_interval_ms", poll_interval_ms, 1, 600_000),
        fallback=fallback,
        fallback_share=fallback_share,
        failures_before_fallback=_integer("failures_before_fallback", failures_before_fallback, 1, 100),
        report_retries_succeeded=report_retries_succeeded,
        backoff=backoff,
    )
