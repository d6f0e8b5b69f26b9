"""Server-side middleware: reads ``sluice-deadline-ms``, ``sluice-attempt`` and
``Idempotency-Key`` from each incoming request into the request context, so every call made while
serving it keeps within the caller's deadline and knows whether it serves a retry; when such a
call gives up, the response carries ``sluice-no-retry: <reason>`` so the caller does not retry
either."""

from __future__ import annotations

import time
from typing import Any, Awaitable, Callable, Dict, Iterable, List, MutableMapping, Optional, Tuple

from .context import IncomingRequest, request_from_headers, serving
from .core.call import NO_RETRY_HEADER

WSGIApp = Callable[[Dict[str, Any], Callable[..., Any]], Iterable[bytes]]
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class WSGIMiddleware:
    """Wraps a WSGI application (Flask, Django, …).

    Example::

        from sluice.middleware import WSGIMiddleware
        app.wsgi_app = WSGIMiddleware(app.wsgi_app)  # Flask
    """

    def __init__(self, app: WSGIApp) -> None:
        self.app = app

    def __call__(self, environ: Dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        headers = {key[5:].replace("_", "-").lower(): str(value) for key, value in environ.items() if key.startswith("HTTP_")}
        request = request_from_headers(headers, time.time() * 1000)

        def start(status: str, response_headers: List[Tuple[str, str]], exc_info: Any = None) -> Any:
            if request.no_retry is not None:
                response_headers = [*response_headers, (NO_RETRY_HEADER, request.no_retry)]
            return start_response(status, response_headers, exc_info) if exc_info is not None else start_response(status, response_headers)

        with serving(request):
            # The body is produced within the request's context (a generator body runs as it is read).
            return list(self.app(environ, start))


class ASGIMiddleware:
    """Wraps an ASGI application (Starlette, FastAPI, Django's ASGI handler, …).

    Example::

        from sluice.middleware import ASGIMiddleware
        app = ASGIMiddleware(app)
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("headers") or []
        headers = {bytes(name).decode("latin-1").lower(): bytes(value).decode("latin-1") for name, value in raw}
        request = request_from_headers(headers, time.time() * 1000)

        async def sending(message: Message) -> None:
            if message.get("type") == "http.response.start" and request.no_retry is not None:
                message = dict(message)
                message["headers"] = [*message.get("headers", []), (NO_RETRY_HEADER.encode(), request.no_retry.encode("latin-1"))]
            await send(message)

        with serving(request):
            await self.app(scope, receive, sending)


def current_request() -> Optional[IncomingRequest]:
    """The request being served, as the middleware read it (None outside one)."""
    from .context import incoming_request

    return incoming_request()
