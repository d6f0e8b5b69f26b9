"""Whether the coordinator answers: the switch to the local fallback and back."""

from __future__ import annotations

import logging
from typing import Callable, List, Optional

from ..errors import ConfigError, CoordinatorUnavailableError

FAILURES_BEFORE_FALLBACK = 3
CONFIG_ERROR_LOG_INTERVAL_MS = 30_000

logger = logging.getLogger("sluice")


class CoordinatorLink:
    """Counts failed exchanges; after ``failures_before_fallback`` in a row the fallback decides.

    An exchange started before the last counted failure was noticed adds no evidence, and a 503
    ``overloaded`` neither counts nor resets. A 401/403 is a configuration error, never an outage.

    >>> link = CoordinatorLink(failures_before_fallback=2)
    >>> error = CoordinatorUnavailableError("down")
    >>> link.failed("report", error, now=1), link.failed("report", error, now=2)
    (False, True)
    """

    def __init__(self, failures_before_fallback: int = FAILURES_BEFORE_FALLBACK, mode: str = "local") -> None:
        self.fallback = False
        self.config_error: Optional[ConfigError] = None
        self.failures_before_fallback = failures_before_fallback
        self.mode = mode
        self._failures = 0
        self._last_failure_at = float("-inf")
        self._last_config_log_at = float("-inf")
        #: Called with (active, during) when the fallback starts or ends.
        self.on_change: List[Callable[[bool, str], None]] = []
        #: Called with (error, during) when a refusal of the token starts or changes.
        self.on_config_error: List[Callable[[ConfigError, str], None]] = []

    def failed(self, during: str, error: BaseException, now: float, started_at: Optional[float] = None) -> bool:
        """Counts a failed exchange; True once the fallback decides."""
        if isinstance(error, ConfigError):
            self._refused(during, error, now)
            return False
        if self.fallback:
            return True
        if isinstance(error, CoordinatorUnavailableError) and error.overloaded:
            return False
        if started_at is not None and started_at < self._last_failure_at:
            return False
        self._last_failure_at = now
        self._failures += 1
        if self._failures < self.failures_before_fallback:
            return False
        self.fallback = True
        logger.warning("coordinator unavailable during %s (%s); using the %s fallback", during, error, self.mode)
        self._emit(True, during)
        return True

    def succeeded(self, during: str) -> None:
        self._failures = 0
        if self.config_error is not None:
            self.config_error = None
            logger.info("the coordinator accepts this client's token again (%s)", during)
        if not self.fallback:
            return
        self.fallback = False
        logger.info("coordinator answers again (%s); back to fleet decisions", during)
        self._emit(False, during)

    def _refused(self, during: str, error: ConfigError, now: float) -> None:
        previous = self.config_error
        self.config_error = error
        self._failures = 0
        if now - self._last_config_log_at >= CONFIG_ERROR_LOG_INTERVAL_MS:
            self._last_config_log_at = now
            logger.error("%s during %s: check the client's token and namespace; no fallback is used for this", error, during)
        if self.fallback:
            self.fallback = False
            self._emit(False, during)
        if previous is None or previous.status != error.status or str(previous) != str(error):
            for listener in list(self.on_config_error):
                listener(error, during)

    def _emit(self, active: bool, during: str) -> None:
        for listener in list(self.on_change):
            listener(active, during)
