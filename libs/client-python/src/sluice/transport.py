"""The client's HTTP calls to the coordinators (blocking, ``http.client``), with base-URL rotation
and re-asks: after a 503 ``overloaded`` or a connection never made, any call goes to another
instance; after any other 503, a 502/504, a lost connection or a timeout, only a decision (it
carries a ``requestId``) is asked again, with the same id, so nothing is decided twice."""

from __future__ import annotations

import errno
import http.client
import json
import select
import socket
import threading
import time
import uuid
from typing import Any, Dict, List, Optional, Set, Tuple
from urllib.parse import quote, urlsplit

from .core.backoff import parse_retry_after
from .errors import ConfigError, CoordinatorUnavailableError

MAX_REASKS = 2
NOT_CONNECTED_ERRNOS = {errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH}


def new_request_id() -> str:
    """A fresh caller-chosen id (``requestId``) for one state-changing call."""
    return str(uuid.uuid4())


class _Base:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"a coordinator base URL must be http(s)://host[:port], got {url!r}")
        self.url = url
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.idle: List[http.client.HTTPConnection] = []

    def connect(self, timeout: float) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)


class Arrival:
    """Whether a decision's answer has reached this process, read or not.

    A waiting call asks this when its decision time is up: an answer already in the socket came in
    time from the coordinator, and only this process was too busy to read it (threads waiting for
    the interpreter lock on a loaded machine), so the call takes it instead of giving up.
    """

    def __init__(self) -> None:
        self._sock: Optional[socket.socket] = None
        self.seen = False
        #: Set once the request is written (or the exchange is over): the decision time starts there.
        self.written = threading.Event()

    def watch(self, sock: Optional[socket.socket]) -> None:
        """A request was written on ``sock``: its answer is awaited (an earlier exchange's is forgotten)."""
        self.seen = False
        self._sock = sock
        self.written.set()

    def at_door(self) -> bool:
        """True once the answer has been seen, or is waiting unread in the socket."""
        if self.seen:
            return True
        sock = self._sock
        if sock is None:
            return False
        try:
            return _readable(sock, 0)
        except (OSError, ValueError):  # closed meanwhile: the reader has it (or its failure)
            return self.seen


def _readable(sock: socket.socket, timeout_s: float) -> bool:
    """Whether ``sock`` has something to read (data or its end) within ``timeout_s``, reading nothing.
    ``poll`` where there is one: ``select`` refuses descriptors past 1023, common in a busy process."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN | select.POLLPRI)
        return bool(poller.poll(timeout_s * 1000))
    readable, _, _ = select.select([sock], [], [], timeout_s)
    return bool(readable)


class ReAsks:
    """Whether a call that got no answer may be asked again, and where (see the module's rules)."""

    def __init__(self, instances: int, repeatable: bool) -> None:
        self.instances = instances
        self.repeatable = repeatable
        self.untouched: Set[int] = set()
        self.count = 0
        self.telling: Optional[CoordinatorUnavailableError] = None
        self.last: Optional[CoordinatorUnavailableError] = None

    def next(self, index: int, failure: CoordinatorUnavailableError, time_left: bool) -> Optional[int]:
        nothing_done = failure.overloaded or failure.not_connected
        if nothing_done:
            self.untouched.add(index)
        if not failure.overloaded:
            self.telling = failure
        self.last = failure
        if not failure.unanswered or not time_left or self.count >= MAX_REASKS:
            return None
        following = (index + 1) % self.instances
        if (following in self.untouched) if nothing_done else not self.repeatable:
            return None
        self.count += 1
        return following

    @property
    def error(self) -> Optional[CoordinatorUnavailableError]:
        return self.telling or self.last


class Transport:
    """Blocking calls to the coordinators; thread-safe (a small pool of kept-alive connections per URL)."""

    def __init__(self, base_urls: List[str], namespace: str, token: Optional[str], connect_timeout_ms: int = 100) -> None:
        self.bases = [_Base(url) for url in base_urls]
        self.namespace = namespace
        self.token = token
        self.connect_timeout_ms = connect_timeout_ms
        self.current = 0
        self._lock = threading.Lock()
        self.closed = False

    # --- the API's calls --------------------------------------------------------------------
    def retry(self, dep: str, ask: Dict[str, Any], timeout_ms: float, reask_within_ms: float, arrival: Optional[Arrival] = None) -> Dict[str, Any]:
        """``POST /v1/{ns}/deps/{dep}/retry`` (the ask carries its ``requestId``)."""
        return _object(self.json("POST", f"deps/{quote(dep)}/retry", ask, timeout_ms, True, reask_within_ms, arrival))

    def retries(self, asks: List[Dict[str, Any]], timeout_ms: float, reask_within_ms: float, arrival: Optional[Arrival] = None) -> Dict[str, Any]:
        """``POST /v1/{ns}/retries``: many asks, each with its own ``requestId``."""
        return _object(self.json("POST", "retries", {"asks": asks}, timeout_ms, True, reask_within_ms, arrival))

    def admit(self, dep: str, timeout_ms: float, reask_within_ms: float, arrival: Optional[Arrival] = None) -> Dict[str, Any]:
        """``POST /v1/{ns}/deps/{dep}/admit`` (with a fresh ``requestId``)."""
        body = {"requestId": new_request_id()}
        return _object(self.json("POST", f"deps/{quote(dep)}/admit", body, timeout_ms, True, reask_within_ms, arrival))

    def release_lease(self, dep: str, lease: str, timeout_ms: float) -> None:
        self.json("DELETE", f"deps/{quote(dep)}/leases/{quote(lease, safe='')}", None, timeout_ms, False)

    def report(self, body: Dict[str, Any], timeout_ms: float) -> Dict[str, Any]:
        """``POST /v1/{ns}/reports``."""
        return _object(self.json("POST", "reports", body, timeout_ms, False))

    def read_dependency(self, dep: str, etag: Optional[str], timeout_ms: float) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        """``GET /v1/{ns}/deps/{dep}`` with ``If-None-Match``: (view or None when unchanged, etag)."""
        headers = {"if-none-match": etag} if etag else {}
        status, body, response_headers = self.exchange("GET", f"deps/{quote(dep)}", None, timeout_ms, False, timeout_ms, headers)
        new_etag = response_headers.get("etag") or etag
        if status == 304:
            return None, new_etag
        return _object(json.loads(body)), new_etag

    def open_events(self, deps: List[str], timeout_ms: float) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """``GET /v1/{ns}/events?deps=…``: the open stream (status 200), or raises."""
        index = self.current
        base = self.bases[index]
        path = f"{base.prefix}/v1/{self.namespace}/events?deps={','.join(quote(d) for d in deps)}"
        connection = base.connect(timeout_ms / 1000)
        try:
            connection.request("GET", path, headers=self._headers(None, {"accept": "text/event-stream"}))
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            self._move_on(index)
            raise self._unavailable(error) from error
        if response.status != 200:
            text = response.read().decode("utf-8", "replace")
            connection.close()
            if response.status in (401, 403):
                raise _refusal(response.status, text)
            if response.status == 503:
                self._move_on(index)
            raise CoordinatorUnavailableError(f"the event stream answered {response.status}", status=response.status)
        return connection, response

    # --- one call: its exchanges and re-asks -----------------------------------------------
    def json(
        self,
        method: str,
        path: str,
        body: Any,
        timeout_ms: float,
        repeatable: bool,
        reask_within_ms: Optional[float] = None,
        arrival: Optional[Arrival] = None,
    ) -> Any:
        status, text, _ = self.exchange(method, path, body, timeout_ms, repeatable, reask_within_ms or timeout_ms, arrival=arrival)
        return json.loads(text) if text else None

    def exchange(
        self,
        method: str,
        path: str,
        body: Any,
        timeout_ms: float,
        repeatable: bool,
        reask_within_ms: float,
        extra_headers: Optional[Dict[str, str]] = None,
        arrival: Optional[Arrival] = None,
    ) -> Tuple[int, bytes, Dict[str, str]]:
        sent_at = time.monotonic()
        ends_at = sent_at + timeout_ms / 1000
        reasks = ReAsks(len(self.bases), repeatable)
        index = self.current
        payload = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        while True:
            try:
                return self._once(index, method, path, payload, ends_at - time.monotonic(), extra_headers or {}, arrival)
            except ConfigError:
                raise
            except CoordinatorUnavailableError as failure:
                if failure.unanswered:
                    self._move_on(index)
                now = time.monotonic()
                time_left = (now - sent_at) * 1000 < reask_within_ms and ends_at - now >= 0.001
                following = reasks.next(index, failure, time_left)
                if following is None:
                    raise reasks.error or failure
                index = following

    def _once(
        self,
        index: int,
        method: str,
        path: str,
        payload: Optional[bytes],
        left_s: float,
        extra: Dict[str, str],
        arrival: Optional[Arrival] = None,
    ) -> Tuple[int, bytes, Dict[str, str]]:
        if self.closed:
            raise CoordinatorUnavailableError("the client is closed")
        base = self.bases[index]
        wait = max(0.001, left_s)
        url = f"{base.prefix}/v1/{self.namespace}/{path}"
        headers = self._headers(payload, extra)
        for reused in (True, False):
            connection = self._take(base, reused)
            if connection is None:
                continue
            if connection.sock is None:
                try:
                    connection.timeout = min(wait, self.connect_timeout_ms / 1000)
                    connection.connect()
                except OSError as error:
                    connection.close()
                    raise CoordinatorUnavailableError(f"no connection to {base.url}: {error!r}", not_connected=True) from error
            try:
                assert connection.sock is not None
                connection.sock.settimeout(wait)
                connection.request(method, url, body=payload, headers=headers)
                if arrival is not None:
                    arrival.watch(connection.sock)
                    # Unread until seen: a caller whose time is up meanwhile still finds it in the socket.
                    arrival.seen = _readable(connection.sock, wait)
                response = connection.getresponse()
                text = response.read()
            except (OSError, http.client.HTTPException) as error:
                connection.close()
                if reused and isinstance(error, (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected)):
                    continue  # a kept-alive connection the server had closed: once more on a fresh one
                raise self._unavailable(error) from error
            response_headers = {k.lower(): v for k, v in response.getheaders()}
            if response.will_close:
                connection.close()
            else:
                with self._lock:
                    base.idle.append(connection)
            status = response.status
            if status in (401, 403):
                raise _refusal(status, text.decode("utf-8", "replace"))
            if status < 200 or status >= 300:
                if status == 304:
                    return status, text, response_headers
                decoded = text.decode("utf-8", "replace")
                raise CoordinatorUnavailableError(
                    f"the coordinator answered {status}: {decoded[:200]}",
                    status=status,
                    code=_field(decoded, "code"),
                    retry_after_ms=parse_retry_after(response_headers.get("retry-after"), time.time() * 1000),
                )
            return status, text, response_headers
        raise CoordinatorUnavailableError("no connection")  # pragma: no cover - the loop always returns or raises

    def _take(self, base: _Base, reused: bool) -> Optional[http.client.HTTPConnection]:
        if reused:
            with self._lock:
                return base.idle.pop() if base.idle else None
        return base.connect(self.connect_timeout_ms / 1000)

    def _headers(self, payload: Optional[bytes], extra: Dict[str, str]) -> Dict[str, str]:
        headers = dict(extra)
        if payload is not None:
            headers["content-type"] = "application/json"
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        return headers

    def _unavailable(self, error: BaseException) -> CoordinatorUnavailableError:
        if isinstance(error, (socket.timeout, TimeoutError)):
            return CoordinatorUnavailableError(f"the coordinator did not answer in time ({error})")
        not_connected = isinstance(error, ConnectionRefusedError) or (isinstance(error, OSError) and error.errno in NOT_CONNECTED_ERRNOS)
        return CoordinatorUnavailableError(f"the coordinator is unreachable: {error!r}", not_connected=not_connected)

    def _move_on(self, index: int) -> None:
        with self._lock:
            if self.current == index:
                self.current = (index + 1) % len(self.bases)

    def close(self) -> None:
        self.closed = True
        with self._lock:
            for base in self.bases:
                for connection in base.idle:
                    connection.close()
                base.idle.clear()


def _field(text: str, name: str) -> Optional[str]:
    try:
        value = json.loads(text).get(name)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _refusal(status: int, text: str) -> ConfigError:
    code = _field(text, "code") or ("unauthorized" if status == 401 else "forbidden")
    return ConfigError(status, code, _field(text, "message") or text[:200] or "no message")


def _object(value: Any) -> Dict[str, Any]:
    """A JSON answer that must be an object."""
    if not isinstance(value, dict):
        raise CoordinatorUnavailableError(f"the coordinator answered {type(value).__name__}, not an object")
    return value
