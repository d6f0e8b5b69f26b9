"""The errors the client raises. A decision that says no ends a call with a :class:`GiveUpError`."""

from __future__ import annotations

from typing import Any, Optional


class SluiceError(Exception):
    """The base of every error the client raises itself."""


class GiveUpError(SluiceError):
    """The call failed and was not retried (again).

    ``reason`` is one of ``budget_exhausted``, ``breaker_open``, ``deadline_exceeded``,
    ``max_attempts``, ``not_idempotent``, ``upstream_retry``, ``downstream_retried``,
    ``coordinator_unavailable``, ``config_error``, ``rate_limited``, ``concurrency_limited``;
    ``attempts`` how many attempts went out; ``last_error`` the last attempt's error (also
    ``__cause__``), None when no attempt went out.

    Example::

        try:
            payments.call(lambda: charge(order), idempotent=True)
        except GiveUpError as error:
            log.warning("gave up: %s after %d attempts", error.reason, error.attempts)
    """

    def __init__(self, dependency: str, reason: str, attempts: int, last_error: Optional[BaseException], message: Optional[str] = None) -> None:
        self.dependency = dependency
        self.reason = reason
        self.attempts = attempts
        self.last_error = last_error
        plural = "" if attempts == 1 else "s"
        super().__init__(message or f"{dependency}: gave up after {attempts} attempt{plural} ({reason})")
        self.__cause__ = last_error


class BreakerOpenError(GiveUpError):
    """A breaker refused the call (``reason`` is ``breaker_open``).

    ``state`` is the breaker's state (``open``, ``forced_open``, ``half_open``),
    ``operator_reason`` the operator's reason when one forced it open (else None),
    ``open_until`` (epoch ms) and ``retry_after_ms`` when known.

    Example::

        except BreakerOpenError as error:
            if error.state == "forced_open":
                log.warning("payments held open by an operator: %s", error.operator_reason)
    """

    def __init__(
        self,
        dependency: str,
        state: str,
        operator_reason: Optional[str],
        open_until: Optional[float],
        retry_after_ms: Optional[float],
        attempts: int,
        last_error: Optional[BaseException],
    ) -> None:
        self.state = state
        self.operator_reason = operator_reason
        self.open_until = open_until
        self.retry_after_ms = retry_after_ms
        why = f" ({operator_reason})" if operator_reason else ""
        super().__init__(dependency, "breaker_open", attempts, last_error, f"{dependency}: the breaker is {state}{why}")


class DeadlineExceededError(GiveUpError):
    """The call's deadline leaves no room for another attempt (``reason`` is ``deadline_exceeded``)."""

    def __init__(self, dependency: str, attempts: int, last_error: Optional[BaseException]) -> None:
        super().__init__(dependency, "deadline_exceeded", attempts, last_error, f"{dependency}: the deadline passed after {attempts} attempt(s)")


class LimitedError(GiveUpError):
    """A rate or concurrency limit refused the call; ``retry_after_ms`` says when to try again."""

    def __init__(self, dependency: str, reason: str, retry_after_ms: float, attempts: int, last_error: Optional[BaseException]) -> None:
        self.retry_after_ms = retry_after_ms
        super().__init__(dependency, reason, attempts, last_error, f"{dependency}: {reason} (retry after {retry_after_ms:.0f} ms)")


class HttpStatusError(SluiceError):
    """A failing HTTP answer (408, 429, 5xx) that ``fn`` returned rather than raised: ``response`` is it.

    Example::

        except GiveUpError as error:
            if isinstance(error.last_error, HttpStatusError):
                print(error.last_error.status, error.last_error.response)
    """

    def __init__(self, status: int, response: Any, retry_after_ms: Optional[int] = None, no_retry: Optional[str] = None) -> None:
        self.status = status
        self.response = response
        self.retry_after_ms = retry_after_ms
        self.no_retry = no_retry
        super().__init__(f"the dependency answered {status}")


class ConfigError(SluiceError):
    """The coordinator refuses this client's token (401 or 403): ``status``, ``code`` and its message.

    Example::

        sluice = Sluice(base_urls=[url], namespace="shop", token=token, verify=True)  # raises ConfigError on a bad token
    """

    def __init__(self, status: int, code: str, message: str) -> None:
        self.status = status
        self.code = code
        super().__init__(f"the coordinator answered {status} {code}: {message}")


class CoordinatorUnavailableError(SluiceError):
    """No coordinator answered: no connection, a timeout, or a non-2xx other than 401/403.

    ``status`` and ``code`` are the answer's when there was one; ``overloaded`` is True for a
    503 ``overloaded`` (the instance shed the request before doing anything).
    """

    def __init__(
        self,
        message: str,
        status: Optional[int] = None,
        code: Optional[str] = None,
        retry_after_ms: Optional[int] = None,
        not_connected: bool = False,
    ) -> None:
        self.status = status
        self.code = code
        self.retry_after_ms = retry_after_ms
        self.not_connected = not_connected
        super().__init__(message)

    @property
    def overloaded(self) -> bool:
        return self.status == 503 and self.code == "overloaded"

    @property
    def unanswered(self) -> bool:
        """No answer at all: no connection, no response in time, or a 502, 503 or 504."""
        return self.status is None or self.status in (502, 503, 504)


class AskNotSentError(SluiceError):
    """A retry ask whose deadline passed before its batch went out: nothing was asked."""
