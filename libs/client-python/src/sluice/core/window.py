"""Counters over a sliding window of per-second buckets, and the retry budget's limit."""

from __future__ import annotations

from typing import Dict

SCALE = 1_000_000


def retry_budget_limit(ratio: float, min_retries_per_second: float, window_seconds: int, requests: int) -> int:
    """``floor(ratio * requests + min_retries_per_second * window_seconds)`` in integer millionths.

    >>> retry_budget_limit(0.1, 10, 10, 400)
    140
    >>> retry_budget_limit(0.29, 0, 10, 100)
    29
    """
    per_million = round(ratio * SCALE)
    floor_millionths = round(min_retries_per_second * SCALE) * window_seconds
    millions, rest = divmod(int(requests), SCALE)
    return per_million * millions + (per_million * rest + floor_millionths) // SCALE


class SlidingWindow:
    """Named counters in per-second buckets; the window at second ``s`` covers ``s - window + 1 … s``.

    >>> w = SlidingWindow()
    >>> w.add(100, 10, "requests", 5); w.add(105, 10, "requests", 1)
    >>> w.sum(110, 10, "requests")
    1
    """

    def __init__(self) -> None:
        self._buckets: Dict[int, Dict[str, float]] = {}
        self._pruned = (-1, -1)

    def _prune(self, second: int, window_seconds: int) -> None:
        if self._pruned == (second, window_seconds):
            return
        self._pruned = (second, window_seconds)
        oldest = second - window_seconds + 1
        for at in [at for at in self._buckets if at < oldest or at > second]:
            del self._buckets[at]

    def add(self, second: int, window_seconds: int, name: str, delta: float) -> None:
        self._prune(second, window_seconds)
        if delta == 0:
            return
        bucket = self._buckets.setdefault(second, {})
        bucket[name] = bucket.get(name, 0) + delta

    def sum(self, second: int, window_seconds: int, name: str) -> float:
        self._prune(second, window_seconds)
        return sum(bucket.get(name, 0) for bucket in self._buckets.values())

    def clear(self) -> None:
        self._buckets.clear()
        self._pruned = (-1, -1)
