"""Test support: real coordinators (the built service, as child processes) and a scripted dependency."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[3]
MAIN = ROOT / "dist" / "apps" / "coordinator" / "src" / "main.js"
NODE = os.environ.get("SLUICE_NODE", "/work/tools/node24/node_modules/.bin/node")
REDIS_URL = os.environ.get("SLUICE_TEST_REDIS_URL", "redis://127.0.0.1:6379")
CLIENT_TOKEN = "py-client-" + uuid.uuid4().hex
ADMIN_TOKEN = "py-admin-" + uuid.uuid4().hex
TOKENS = [
    {"id": "py-admin", "secret": ADMIN_TOKEN, "role": "admin", "namespaces": ["*"]},
    {"id": "py-client", "secret": CLIENT_TOKEN, "role": "client", "namespaces": ["*"]},
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def namespace() -> str:
    return "py-" + uuid.uuid4().hex[:12]


@dataclass
class Coordinator:
    port: int
    process: subprocess.Popen  # type: ignore[type-arg]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def start_coordinator(port: Optional[int] = None, env: Optional[Dict[str, str]] = None) -> Coordinator:
    if not MAIN.exists():
        raise RuntimeError(f"{MAIN} is missing: run npm run build first")
    port = port or free_port()
    process = subprocess.Popen(
        [NODE, str(MAIN)],
        env={
            "PATH": os.environ.get("PATH", ""),
            "SLUICE_PORT": str(port),
            "SLUICE_HOST": "127.0.0.1",
            "SLUICE_LOG_LEVEL": "warn",
            "SLUICE_REDIS_URL": REDIS_URL,
            "SLUICE_TOKENS": json.dumps(TOKENS),
            **(env or {}),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    coordinator = Coordinator(port, process)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{coordinator.url}/health/ready", timeout=1) as response:
                if response.status == 200:
                    warm(coordinator.url)
                    return coordinator
        except (OSError, urllib.error.URLError):
            time.sleep(0.1)
    coordinator.stop()
    raise RuntimeError(f"the coordinator on {port} never became ready")


def warm(base_url: str) -> None:
    """A coordinator's first decisions load its scripts and code paths (~150 ms): take them before a test does."""
    scratch = namespace()
    for path, body in (("deps/warm/retry", {"attempt": 1, "status": 503}), ("retries", {"asks": [{"dep": "warm", "attempt": 1, "status": 503}] * 2})):
        request = urllib.request.Request(
            f"{base_url}/v1/{scratch}/{path}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"authorization": f"Bearer {CLIENT_TOKEN}", "content-type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=10).read()


def admin(base_url: str, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        base_url + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"authorization": f"Bearer {ADMIN_TOKEN}", "content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        text = response.read()
        return json.loads(text) if text else None


@dataclass
class Recorded:
    method: str
    path: str
    headers: Dict[str, str]


@dataclass
class ScriptedDependency:
    """An HTTP server that answers from a script: a function of the request's number (0-based) and path."""

    answer: Callable[[int, str], Tuple[int, Dict[str, str]]] = lambda n, path: (200, {})
    received: List[Recorded] = field(default_factory=list)
    server: Optional[ThreadingHTTPServer] = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> "ScriptedDependency":
        script = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                with lock:
                    n = len(script.received)
                    script.received.append(Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, headers = script.answer(n, self.path)
                body = b"{}"
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 1024  # a storm's connections all come at once

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up on its attempt closed the connection: nothing to say

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
