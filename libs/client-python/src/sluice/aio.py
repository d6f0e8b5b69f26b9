"""The asyncio client: :class:`AsyncSluice` and its :class:`AsyncDependency` policies.

It runs the same machinery as :class:`sluice.Sluice` (the sans-IO core under the blocking
``http.client`` transport and its two daemon threads), and awaits the caller's coroutines on the
event loop. Why the blocking transport in a thread rather than asyncio streams: one
implementation of the wire protocol (re-asks with the same ``requestId``, base-URL rotation,
coalescing) serves both APIs, and asks from tasks and threads of one process share one batch; the
reports and the breaker feed run whatever the loop is doing (a busy loop delays no report, a
loop that is not running yet or was replaced loses no state); and the hot path, a success through
a closed breaker, never leaves the loop: only a failure's retry decision (and a half-open or
limited dependency's admission) hops to the default executor, for the few milliseconds the ask
takes.

Example::

    from sluice.aio import AsyncSluice

    async with AsyncSluice(base_urls=["http://127.0.0.1:8080"], namespace="shop", token=token) as sluice:
        receipt = await sluice.dependency("payments-api").call(lambda: charge_async(order), idempotent=True)
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from typing import Any, Awaitable, Callable, Dict, Optional, Sequence, TypeVar, Union, cast

from . import context
from .client import Policy, Sluice
from .core.call import Call, budget_wait
from .core.classification import Classifier
from .errors import DeadlineExceededError

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])


class AsyncDependency(Policy):
    """One dependency's retry policy, for coroutines.

    Example::

        payments = sluice.dependency("payments-api")
        receipt = await payments.call(lambda: client.post(url, json=order), idempotency_key=order["id"])
    """

    async def call(
        self,
        fn: Callable[[], Awaitable[T]],
        *,
        idempotent: Optional[bool] = None,
        idempotency_key: Optional[str] = None,
        deadline_ms: Optional[int] = None,
        max_attempts: Optional[int] = None,
    ) -> T:
        """Awaits ``fn()`` and retries it when the fleet grants a retry (as :meth:`sluice.Dependency.call`).

        Each attempt is also cut at its time (``current_attempt().deadline_ms``) with
        ``asyncio.wait_for``: a timed-out attempt fails as a timeout.

        Example::

            data = await search.call(lambda: session.get(url), idempotent=True, deadline_ms=800)
        """
        engine = self.engine
        loop = asyncio.get_running_loop()
        now = engine.now()
        call = self.new_call(idempotent, idempotency_key, deadline_ms, max_attempts, now)
        if self.state.policy is None:
            wait_ms = min(engine.options.request_timeout_ms, (call.deadline_at - now) / 2)
            await loop.run_in_executor(None, engine.wait_first_view, self.state, wait_ms)
            now = engine.now()
        while True:
            if call.deadline_at <= now:
                raise self.giving_up(DeadlineExceededError(self.name, call.launched, call.last_error))
            bstate = engine.breaker_state(self.state, now)
            admission: Optional[Dict[str, Any]] = None
            if self.needs_admission(bstate):
                admission = await self._admit(call, bstate)
                now = self.admitted(call, admission)
            call.launched += 1
            if call.launched == 1:
                engine.record_request(self.state, now)
            info = self.attempt_info(call, now)
            value: Any = None
            raised: Optional[BaseException] = None
            with context.attempt_scope(info):
                started = engine.now()
                try:
                    value = await asyncio.wait_for(fn(), info.deadline_ms / 1000)
                except asyncio.TimeoutError as timeout:
                    raised = TimeoutError(f"the attempt took more than {info.deadline_ms} ms")
                    raised.__cause__ = timeout
                except Exception as exc:  # noqa: BLE001 - classified below
                    raised = exc
            failing = self.attempt_ended(call, started, value, raised, admission)
            if failing is None:
                return cast(T, value)
            error, failure = failing
            await asyncio.sleep(self.retry_after_wait(call, error, failure) / 1000)
            verdict = await loop.run_in_executor(None, engine.retry, self.state, self.ask_for(call, error, failure))
            wait = budget_wait(call, verdict, failure, engine.now())
            if wait:
                await asyncio.sleep(wait / 1000)
                verdict = await loop.run_in_executor(None, engine.retry, self.state, self.ask_for(call, error, failure))
            await asyncio.sleep(self.granted_delay(call, verdict, error) / 1000)
            now = engine.now()

    async def _admit(self, call: Call, bstate: str) -> Dict[str, Any]:
        engine = self.engine
        loop = asyncio.get_running_loop()
        while True:
            answer = await loop.run_in_executor(None, engine.admit, self.state, bstate, call.deadline_at)
            if answer.get("allow"):
                return answer
            wait_ms = max(1.0, float(answer.get("retryAfterMs") or 0))
            if answer.get("reason") not in ("rate_limited", "concurrency_limited") or engine.now() + wait_ms >= call.deadline_at:
                raise self.refusal(call, answer)
            await asyncio.sleep(wait_ms / 1000)
            bstate = engine.breaker_state(self.state, engine.now())
            if not self.needs_admission(bstate):
                return {"allow": True}


class AsyncSluice(Sluice):
    """The Sluice client for asyncio: the same options as :class:`sluice.Sluice`.

    ``close()``, ``ready()`` and ``flush()`` are coroutines here; ``dependency()`` gives
    :class:`AsyncDependency` policies, and ``retry()`` decorates coroutine functions.

    Example::

        async with AsyncSluice(base_urls=["http://sluice:8080"], namespace="shop", token=token) as sluice:
            await sluice.ready()

            @sluice.retry("payments-api", idempotent=True)
            async def charge(order: dict) -> dict:
                ...
    """

    _policy_class = AsyncDependency

    def dependency(  # type: ignore[override]
        self,
        name: str,
        *,
        max_attempts: Optional[int] = None,
        deadline_ms: Optional[int] = None,
        attempt_timeout_ms: Union[int, str, None] = None,
        idempotent: bool = False,
        retry_when_serving_retry: bool = False,
        classify: Sequence[Classifier] = (),
    ) -> AsyncDependency:
        """A dependency's policy for coroutines; without options the same instance is returned for a name."""
        return cast(
            AsyncDependency,
            super().dependency(
                name, max_attempts=max_attempts, deadline_ms=deadline_ms, attempt_timeout_ms=attempt_timeout_ms,
                idempotent=idempotent, retry_when_serving_retry=retry_when_serving_retry, classify=classify,
            ),
        )  # fmt: skip

    def retry(self, dependency: str, *, idempotent: Optional[bool] = None, deadline_ms: Optional[int] = None, max_attempts: Optional[int] = None) -> Callable[[F], F]:
        """A decorator for coroutine functions: every call goes through ``dependency``'s policy.

        Example::

            @sluice.retry("payments-api", idempotent=True)
            async def charge(order: dict) -> dict:
                async with session.post(url, json=order) as response:
                    response.raise_for_status()
                    return await response.json()
        """
        policy = self.dependency(dependency)

        def decorate(fn: F) -> F:
            if not inspect.iscoroutinefunction(fn):
                raise TypeError("AsyncSluice.retry decorates coroutine functions; use Sluice.retry for plain ones")

            @functools.wraps(fn)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                def attempt() -> Awaitable[Any]:
                    return fn(*args, **kwargs)

                return await policy.call(attempt, idempotent=idempotent, deadline_ms=deadline_ms, max_attempts=max_attempts)

            return cast(F, wrapper)

        return decorate

    async def ready(self) -> None:  # type: ignore[override]
        """Checks the token with the coordinator (see :meth:`sluice.Sluice.ready`)."""
        await asyncio.get_running_loop().run_in_executor(None, self._engine.verify)

    async def flush(self) -> None:  # type: ignore[override]
        """Sends the pending report now."""
        await asyncio.get_running_loop().run_in_executor(None, self._engine.deliver)

    async def close(self) -> None:  # type: ignore[override]
        """Stops the event stream and the reporter and sends the last report."""
        await asyncio.get_running_loop().run_in_executor(None, self._engine.close)

    async def __aenter__(self) -> "AsyncSluice":
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()
