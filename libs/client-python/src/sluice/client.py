"""The synchronous client: :class:`Sluice` and its :class:`Dependency` policies."""

from __future__ import annotations

import functools
import inspect
import logging
import time
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, TypeVar, Union, cast

from . import context
from ._options import check_name, make_options
from .core.call import Call, admission_refusal, after_verdict, auto_timeout_ms, budget_wait, give_up_before_asking, retry_ask, wait_before_asking
from .core.classification import Classifier, Failure, classify, is_dependency_failure, response_failure
from .core.local import Verdict
from .core.policy import BackoffPolicy
from .core.state import DependencyState
from .engine import Engine, epoch_ms
from .errors import ConfigError, CoordinatorUnavailableError, DeadlineExceededError, GiveUpError
from .hooks import BreakerChange, ConfigErrorEvent, FallbackChange, GiveUpEvent, Hook, RetryEvent

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
E = TypeVar("E", bound=BaseException)
logger = logging.getLogger("sluice")

DEFAULT_DEADLINE_MS = 10_000
DEFAULT_MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Response:
    """An answer read by :meth:`Dependency.urlopen`: its status, headers (lower-case names) and body."""

    status: int
    headers: Dict[str, str]
    body: bytes


class Policy:
    """A dependency's per-call defaults and rules, shared by the sync and asyncio dependencies."""

    def __init__(
        self,
        name: str,
        state: DependencyState,
        engine: Engine,
        client_retry: Hook[RetryEvent],
        client_give_up: Hook[GiveUpEvent],
        *,
        max_attempts: int,
        deadline_ms: int,
        attempt_timeout_ms: Union[int, str],
        idempotent: bool,
        retry_when_serving_retry: bool,
        classifiers: Sequence[Classifier],
    ) -> None:
        self.name = name
        self.state = state
        self.engine = engine
        self.max_attempts = max_attempts
        self.deadline_ms = deadline_ms
        self.attempt_timeout_ms = attempt_timeout_ms
        self.idempotent = idempotent
        self.retry_when_serving_retry = retry_when_serving_retry
        self.classifiers = tuple(classifiers)
        #: Before each retry's backoff: see :class:`sluice.hooks.RetryEvent`.
        self.on_retry: Hook[RetryEvent] = Hook()
        #: When a call gives up: see :class:`sluice.hooks.GiveUpEvent`.
        self.on_give_up: Hook[GiveUpEvent] = Hook()
        self._client_retry = client_retry
        self._client_give_up = client_give_up

    def new_call(self, idempotent: Optional[bool], idempotency_key: Optional[str], deadline_ms: Optional[int], max_attempts: Optional[int], now: float) -> Call:
        if deadline_ms is not None and (not isinstance(deadline_ms, int) or deadline_ms < 1):
            raise ValueError(f"deadline_ms must be a positive integer, got {deadline_ms!r}")
        if max_attempts is not None and (not isinstance(max_attempts, int) or not 1 <= max_attempts <= 100):
            raise ValueError(f"max_attempts must be an integer from 1 to 100, got {max_attempts!r}")
        deadline_at = now + (deadline_ms if deadline_ms is not None else self.deadline_ms)
        incoming = context.incoming_request()
        serving_attempt = 1
        if incoming is not None:
            serving_attempt = incoming.attempt
            if incoming.deadline_at is not None and incoming.deadline_at < deadline_at:
                deadline_at = incoming.deadline_at
        return Call(
            dependency=self.name,
            deadline_at=deadline_at,
            idempotent=self.idempotent if idempotent is None else idempotent,
            key=idempotency_key,
            max_attempts=max_attempts or self.max_attempts,
            serving_attempt=serving_attempt,
            retry_when_serving_retry=self.retry_when_serving_retry,
        )

    def attempt_info(self, call: Call, now: float) -> context.AttemptInfo:
        left = call.deadline_at - now
        fixed = self.attempt_timeout_ms
        timeout = min(left, auto_timeout_ms(self.state.p99) if fixed == "auto" else float(fixed))
        return context.AttemptInfo(call.launched, max(1, int(timeout)), call.key)

    def needs_admission(self, bstate: str) -> bool:
        return self.state.limited or bstate not in ("closed", "forced_closed")

    def admitted(self, call: Call, admission: Dict[str, Any]) -> float:
        """The time the admitted attempt goes out. An admission that lets it out after the call's
        deadline (its answer came in time for the decision, not for the call) sends nothing: its
        lease is released, its probe kept (a local one given back), and the call gives up
        ``deadline_exceeded`` without an attempt."""
        now = self.engine.now()
        if call.deadline_at <= now:
            self.engine.abandon_admission(self.state, admission)
            raise self.giving_up(DeadlineExceededError(self.name, call.launched, call.last_error))
        return now

    def refusal(self, call: Call, answer: Dict[str, Any]) -> GiveUpError:
        return self.giving_up(admission_refusal(call, answer, self.engine.breaker_facts(self.state, self.engine.now())))

    def outcome(self, value: Any, error: Optional[BaseException]) -> "tuple[Optional[BaseException], Optional[Failure], bool]":
        """(the attempt's error or None, its classification, whether it is the dependency's failure)."""
        if error is None:
            if type(value).__module__ == "builtins":
                return None, None, False
            error = response_failure(value)
            if error is None:
                return None, None, False
        failure = classify(error, self.classifiers)
        return error, failure, is_dependency_failure(failure)

    def attempt_ended(
        self, call: Call, started: float, value: Any, raised: Optional[BaseException], admission: Optional[Dict[str, Any]]
    ) -> "Optional[tuple[BaseException, Failure]]":
        """Counts the attempt's outcome and settles its admission: None on success, else (error, failure)."""
        error, failure, failed = self.outcome(value, raised)
        self.record(call, started, failed)
        if admission is not None:
            self.engine.settle_admission(self.state, admission, not failed)
        if error is None or failure is None:
            return None
        call.last_error = error
        return error, failure

    def retry_after_wait(self, call: Call, error: BaseException, failure: Failure) -> int:
        """The wait before the retry ask (the dependency's Retry-After, ms); raises the give-up that comes before asking instead."""
        now = self.engine.now()
        stop = give_up_before_asking(call, error, failure, now)
        if stop is error:
            raise error
        wait = 0
        if stop is None:
            stop, wait = wait_before_asking(call, error, failure, now)
        if stop is not None:
            raise self.giving_up(stop)
        return wait

    def ask_for(self, call: Call, error: BaseException, failure: Failure) -> Dict[str, Any]:
        """The retry ask for the coordinator, once the Retry-After is waited out; raises the give-up when no time is left."""
        now = self.engine.now()
        if call.deadline_at <= now:
            raise self.giving_up(DeadlineExceededError(self.name, call.launched, error))
        return retry_ask(call, failure, now)

    def granted_delay(self, call: Call, verdict: Verdict, error: BaseException) -> int:
        """The wait before the granted retry (announced); raises the give-up a denial is instead."""
        now = self.engine.now()
        stop, delay = after_verdict(call, verdict, error, now, self.engine.breaker_facts(self.state, now))
        if stop is not None:
            raise self.giving_up(stop)
        self.retrying(call, delay, error)
        return delay

    def record(self, call: Call, started: float, failed: bool) -> None:
        engine = self.engine
        now = engine.now()
        with engine.lock:
            self.state.record_outcome(now, now - started, failed)
            if call.granted_retry and not failed:
                self.state.record_retry_succeeded(now)

    def retrying(self, call: Call, delay_ms: int, error: BaseException) -> None:
        call.granted_retry = True
        event = RetryEvent(self.name, call.launched + 1, delay_ms, error)
        self.on_retry.emit(event)
        self._client_retry.emit(event)
        logger.debug("%s: retry %d in %d ms after %r", self.name, call.launched + 1, delay_ms, error)

    def giving_up(self, error: E) -> E:
        """Announces a give-up; tells the caller of the request being served not to retry it either."""
        if isinstance(error, GiveUpError):
            event = GiveUpEvent(self.name, error.reason, error)
            self.on_give_up.emit(event)
            self._client_give_up.emit(event)
            incoming = context.incoming_request()
            if incoming is not None and error.reason != "not_idempotent":
                incoming.no_retry = error.reason
        return error


class Dependency(Policy):
    """One dependency's retry policy under the fleet's budget and breaker.

    Example::

        payments = sluice.dependency("payments-api", max_attempts=3, deadline_ms=2000)
        receipt = payments.call(lambda: charge(order), idempotent=True)
    """

    def call(
        self,
        fn: Callable[[], T],
        *,
        idempotent: Optional[bool] = None,
        idempotency_key: Optional[str] = None,
        deadline_ms: Optional[int] = None,
        max_attempts: Optional[int] = None,
    ) -> T:
        """Calls ``fn`` (no arguments) and retries it when the fleet grants a retry.

        A retriable failure (a timeout, a connection error, 408, 429, 5xx, raised or returned as a
        response) waits out the dependency's ``Retry-After`` (when it sent one), asks the
        coordinator for a retry, waits its backoff and tries again, all within the deadline. Inside ``fn``,
        :func:`sluice.current_attempt` gives the attempt's number, time left and the headers to
        forward (``sluice-deadline-ms``, ``sluice-attempt``, ``Idempotency-Key``).

        Raises ``fn``'s own error when it is not retriable (e.g. a 404), :class:`GiveUpError`
        (``reason``, ``attempts``, ``last_error``) when a failure is not retried, and
        :class:`BreakerOpenError` when a breaker refused the call.

        Example::

            user = users.call(lambda: requests.get(url, timeout=2).json(), idempotent=True)
            payments.call(lambda: charge(order), idempotency_key=order.id, deadline_ms=1500)
        """
        engine = self.engine
        now = engine.now()
        call = self.new_call(idempotent, idempotency_key, deadline_ms, max_attempts, now)
        if self.state.policy is None:
            engine.wait_first_view(self.state, min(engine.options.request_timeout_ms, (call.deadline_at - now) / 2))
            now = engine.now()
        while True:
            if call.deadline_at <= now:
                raise self.giving_up(DeadlineExceededError(self.name, call.launched, call.last_error))
            bstate = engine.breaker_state(self.state, now)
            admission: Optional[Dict[str, Any]] = None
            if self.needs_admission(bstate):
                admission = self._admit(call, bstate)
                now = self.admitted(call, admission)
            call.launched += 1
            if call.launched == 1:
                with engine.lock:
                    self.state.record_request(now)
            value: Any = None
            raised: Optional[BaseException] = None
            token = context._attempt.set(self.attempt_info(call, now))
            started = now
            try:
                value = fn()
            except Exception as exc:  # noqa: BLE001 - classified below
                raised = exc
            finally:
                context._attempt.reset(token)
            failing = self.attempt_ended(call, started, value, raised, admission)
            if failing is None:
                return cast(T, value)
            error, failure = failing
            time.sleep(self.retry_after_wait(call, error, failure) / 1000)
            verdict = engine.retry(self.state, self.ask_for(call, error, failure))
            wait = budget_wait(call, verdict, failure, engine.now())
            if wait:
                time.sleep(wait / 1000)
                verdict = engine.retry(self.state, self.ask_for(call, error, failure))
            time.sleep(self.granted_delay(call, verdict, error) / 1000)
            now = engine.now()

    def urlopen(
        self,
        url: str,
        *,
        method: str = "GET",
        data: Optional[bytes] = None,
        headers: Optional[Dict[str, str]] = None,
        idempotent: Optional[bool] = None,
        idempotency_key: Union[str, bool, None] = None,
        deadline_ms: Optional[int] = None,
        max_attempts: Optional[int] = None,
    ) -> Response:
        """An HTTP request with ``urllib`` under this policy: each attempt sends the client's headers
        (``sluice-deadline-ms``, ``sluice-attempt``, ``Idempotency-Key``) and times out with the time
        it has left. ``idempotent`` defaults by method (false for POST and PATCH); an
        ``idempotency_key`` of True makes a random one, the same on every attempt. A status other
        than 2xx raises ``urllib.error.HTTPError`` (a 404 at once; a 503 after the retries the
        fleet grants, as the :class:`GiveUpError`'s ``last_error``).

        Example::

            response = payments.urlopen("http://payments/charges", method="POST", data=body, idempotency_key=order.id)
            print(response.status, response.body)
        """
        verb = method.upper()
        key = uuid.uuid4().hex if idempotency_key is True else (idempotency_key or None)
        safe = verb not in ("POST", "PATCH")

        def attempt() -> Response:
            info = context.current_attempt()
            sent = dict(headers or {})
            if info is not None:
                sent.update(info.headers)
            timeout = info.deadline_ms / 1000 if info is not None else None
            request = urllib.request.Request(url, data=data, headers=sent, method=verb)
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return Response(answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read())

        return self.call(
            attempt,
            idempotent=safe if idempotent is None else idempotent,
            idempotency_key=key if isinstance(key, str) else None,
            deadline_ms=deadline_ms,
            max_attempts=max_attempts,
        )

    def _admit(self, call: Call, bstate: str) -> Dict[str, Any]:
        engine = self.engine
        while True:
            answer = engine.admit(self.state, bstate, call.deadline_at)
            if answer.get("allow"):
                return answer
            reason = answer.get("reason")
            wait_ms = max(1.0, float(answer.get("retryAfterMs") or 0))
            if reason not in ("rate_limited", "concurrency_limited") or engine.now() + wait_ms >= call.deadline_at:
                raise self.refusal(call, answer)
            time.sleep(wait_ms / 1000)
            bstate = engine.breaker_state(self.state, engine.now())
            if not self.needs_admission(bstate):
                return {"allow": True}


class Sluice:
    """The Sluice client: one per process, shared by every dependency.

    It keeps each dependency's fleet breaker current over one event stream, batches outcomes into
    one report every ~200 ms, asks the coordinator before every retry (coalescing a burst of asks
    into one request, and holding a denial that says when to ask again), and falls back to a local
    budget and breaker at ``1 / reporters`` of the fleet's floor when no coordinator answers.

    Example::

        import os
        from sluice import Sluice, GiveUpError, BreakerOpenError

        with Sluice(base_urls=["http://127.0.0.1:8080"], namespace="shop", token=os.environ["SLUICE_TOKEN"]) as sluice:
            payments = sluice.dependency("payments-api")
            receipt = payments.call(lambda: charge(order), idempotent=True)

    Options: ``token`` (a ``client`` token for ``namespace``), ``reporter`` (this process's name in
    reports), ``report_interval_ms`` (200), ``decision_timeout_ms`` (50: how long a call waits for a
    retry decision), ``request_timeout_ms`` (1000), ``connect_timeout_ms`` (100),
    ``coalesce_retry_asks`` (True), ``sse`` (True; False polls), ``poll_interval_ms`` (1000),
    ``fallback`` (``local``, ``fail-open`` or ``fail-closed``), ``fallback_share`` (default learned:
    1 / reporters), ``failures_before_fallback`` (3), ``report_retries_succeeded`` (None: sent when
    the coordinator's policy shows adaptive budgets), ``backoff`` (the local fallback's backoff),
    ``verify`` (True: the constructor checks the token and raises :class:`ConfigError` on a refusal
    or :class:`CoordinatorUnavailableError` when no base URL answers), ``deadline_ms`` and
    ``max_attempts`` (every dependency's defaults).
    """

    #: The policies this client makes (the asyncio client's are coroutine-based).
    _policy_class: Any = Dependency

    def __init__(
        self,
        base_urls: Union[str, Sequence[str]],
        namespace: str,
        token: Optional[str] = None,
        *,
        reporter: Optional[str] = None,
        report_interval_ms: int = 200,
        decision_timeout_ms: int = 50,
        request_timeout_ms: int = 1000,
        connect_timeout_ms: int = 100,
        coalesce_retry_asks: bool = True,
        sse: bool = True,
        poll_interval_ms: int = 1000,
        fallback: str = "local",
        fallback_share: Optional[float] = None,
        failures_before_fallback: int = 3,
        report_retries_succeeded: Optional[bool] = None,
        backoff: Optional[BackoffPolicy] = None,
        verify: bool = False,
        deadline_ms: int = DEFAULT_DEADLINE_MS,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        clock: Callable[[], float] = epoch_ms,
    ) -> None:
        options = make_options(
            base_urls, namespace, token, reporter, report_interval_ms, decision_timeout_ms, request_timeout_ms,
            connect_timeout_ms, coalesce_retry_asks, sse, poll_interval_ms, fallback, fallback_share,
            failures_before_fallback, report_retries_succeeded, backoff,
        )  # fmt: skip
        self._engine = Engine(options, clock)
        self._defaults = {"deadline_ms": deadline_ms, "max_attempts": max_attempts}
        self._policies: Dict[str, Any] = {}
        #: Before each retry's backoff, for every dependency.
        self.on_retry: Hook[RetryEvent] = Hook()
        #: When a call gives up, for every dependency.
        self.on_give_up: Hook[GiveUpEvent] = Hook()
        #: A breaker state change (``source``: ``fleet`` or ``local``).
        self.on_break: Hook[BreakerChange] = self._engine.on_break
        #: A breaker closed again.
        self.on_reset: Hook[BreakerChange] = Hook()
        #: A breaker half-opened (its probes may go out).
        self.on_half_open: Hook[BreakerChange] = Hook()
        self.on_break(self._forward_transition)
        #: The local fallback started or ended.
        self.on_fallback: Hook[FallbackChange] = self._engine.on_fallback
        #: The coordinator refuses the token (401/403).
        self.on_config_error: Hook[ConfigErrorEvent] = self._engine.on_config_error
        self._start_check(verify)

    def _forward_transition(self, change: BreakerChange) -> None:
        if change.to_state == "closed":
            self.on_reset.emit(change)
        elif change.to_state == "half_open":
            self.on_half_open.emit(change)

    def _start_check(self, verify: bool) -> None:
        """A refused token or a wrong URL is loud at start: raised with ``verify``, else logged."""
        if verify:
            try:
                self._engine.verify()
            except Exception:
                self._engine.close()
                raise
            return

        def check() -> None:
            try:
                self._engine.verify()
            except ConfigError:
                pass  # the link logs it as an error
            except CoordinatorUnavailableError as error:
                logger.warning("no coordinator answered the start check at %s: %s", ", ".join(self._engine.options.base_urls), error)

        import threading

        threading.Thread(target=check, daemon=True, name="sluice-start-check").start()

    def ready(self) -> None:
        """Checks the token with the coordinator (an empty report, which changes nothing).

        Raises :class:`ConfigError` when it refuses the token (its message names the 401 or 403
        and the coordinator's own message) and :class:`CoordinatorUnavailableError` when no base
        URL answers within ``request_timeout_ms``.

        Example::

            sluice = Sluice(base_urls=["http://sluice:8080"], namespace="shop", token=token)
            sluice.ready()  # "the coordinator answered 401 unauthorized: unknown token" on a wrong token
        """
        self._engine.verify()

    def dependency(
        self,
        name: str,
        *,
        max_attempts: Optional[int] = None,
        deadline_ms: Optional[int] = None,
        attempt_timeout_ms: Union[int, str, None] = None,
        idempotent: bool = False,
        retry_when_serving_retry: bool = False,
        classify: Sequence[Classifier] = (),
    ) -> Dependency:
        """A dependency's policy; without options the same instance is returned for a name.

        ``attempt_timeout_ms`` is what one attempt may take (default ``"auto"``: 2 × the fleet's p99,
        within [100, 3000] ms, 3000 while unknown), never past the deadline: ``fn`` reads it from
        :func:`sluice.current_attempt` (``deadline_ms``) and applies it to its own request.

        Example::

            payments = sluice.dependency("payments-api", max_attempts=2, deadline_ms=1500)
        """
        if self._engine.closed:
            raise RuntimeError("this Sluice client is closed")
        plain = max_attempts is None and deadline_ms is None and attempt_timeout_ms is None and not idempotent and not retry_when_serving_retry and not classify
        if plain and name in self._policies:
            return cast(Dependency, self._policies[name])
        state = self._engine.dependency(check_name("a dependency name", name))
        policy = self._policy_class(
            name, state, self._engine, self.on_retry, self.on_give_up,
            max_attempts=max_attempts or int(self._defaults["max_attempts"]),
            deadline_ms=deadline_ms or int(self._defaults["deadline_ms"]),
            attempt_timeout_ms="auto" if attempt_timeout_ms is None else attempt_timeout_ms, idempotent=idempotent,
            retry_when_serving_retry=retry_when_serving_retry, classifiers=classify,
        )  # fmt: skip
        if plain:
            self._policies[name] = policy
        return cast(Dependency, policy)

    def retry(self, dependency: str, *, idempotent: Optional[bool] = None, deadline_ms: Optional[int] = None, max_attempts: Optional[int] = None) -> Callable[[F], F]:
        """A decorator: every call of the function goes through ``dependency``'s policy.

        Example::

            @sluice.retry("payments-api", idempotent=True)
            def charge(order: Order) -> Receipt:
                return payments_client.charge(order)
        """
        policy = self.dependency(dependency)

        def decorate(fn: F) -> F:
            if inspect.iscoroutinefunction(fn):
                raise TypeError("Sluice.retry decorates plain functions; use sluice.aio.AsyncSluice.retry for coroutines")

            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                def attempt() -> Any:
                    return fn(*args, **kwargs)

                return policy.call(attempt, idempotent=idempotent, deadline_ms=deadline_ms, max_attempts=max_attempts)

            return cast(F, wrapper)

        return decorate

    @property
    def fallback_active(self) -> bool:
        """True while no coordinator answers and the local fallback decides."""
        return self._engine.link.fallback

    def status(self) -> Dict[str, Any]:
        """``mode`` (``fleet``, ``fallback``, ``config_error``), ``streaming`` and the config error if any.

        >>> # sluice.status()  # {'mode': 'fleet', 'streaming': True, 'config_error': None}
        """
        link = self._engine.link
        mode = "config_error" if link.config_error else "fallback" if link.fallback else "fleet"
        return {"mode": mode, "streaming": self._engine.streaming, "config_error": link.config_error}

    def breaker_state(self, dependency: str) -> str:
        """This process's view of a dependency's breaker now (the fleet's, or the fallback's)."""
        return self._engine.breaker_state(self.dependency(dependency).state, self._engine.now())

    def flush(self) -> None:
        """Sends the pending report now."""
        self._engine.deliver()

    def close(self) -> None:
        """Stops the event stream and the reporter, and sends the last report. Call it on shutdown."""
        self._engine.close()

    def __enter__(self) -> "Sluice":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
