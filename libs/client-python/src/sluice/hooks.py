"""The client's events as hooks: subscribe with a listener, call the returned function to unsubscribe."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Generic, List, Optional, TypeVar

from .errors import ConfigError, GiveUpError

T = TypeVar("T")
logger = logging.getLogger("sluice")


@dataclass(frozen=True)
class RetryEvent:
    """A retry about to go out: its attempt number (2 = first retry), the backoff and the error it follows."""

    dependency: str
    attempt: int
    delay_ms: int
    error: BaseException


@dataclass(frozen=True)
class GiveUpEvent:
    """A call ended without (another) retry: the reason and the error raised."""

    dependency: str
    reason: str
    error: GiveUpError


@dataclass(frozen=True)
class BreakerChange:
    """A breaker state change: pushed by the fleet (``fleet``) or made by the local fallback (``local``)."""

    dependency: str
    from_state: str
    to_state: str
    source: str


@dataclass(frozen=True)
class FallbackChange:
    """The local fallback started (``active``) or ended; ``during`` says what the client was doing."""

    active: bool
    during: str


@dataclass(frozen=True)
class ConfigErrorEvent:
    """The coordinator refuses this client's token (401/403)."""

    error: ConfigError
    during: str


class Hook(Generic[T]):
    """Listeners of one event; a listener that raises is logged, never breaks the caller.

    Example::

        unsubscribe = sluice.on_retry(lambda event: print(event.dependency, event.attempt))
        unsubscribe()
    """

    def __init__(self) -> None:
        self._listeners: List[Callable[[T], None]] = []

    def __call__(self, listener: Callable[[T], None]) -> Callable[[], None]:
        self._listeners = [*self._listeners, listener]

        def unsubscribe() -> None:
            self._listeners = [other for other in self._listeners if other is not listener]

        return unsubscribe

    @property
    def active(self) -> bool:
        return bool(self._listeners)

    def emit(self, value: T) -> None:
        for listener in self._listeners:
            try:
                listener(value)
            except Exception:  # noqa: BLE001 - a listener's failure is its own business
                logger.exception("a sluice event listener failed")


