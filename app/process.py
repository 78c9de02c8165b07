"""A real `apace serve` child process on a free loopback port (for `apace bench` and tests)."""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
"""The folder holding the `app` package: the checkout, or site-packages when apace is
installed from its wheel. A child `python -m app` started there imports this same code."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(args: list[str] | tuple[str, ...], env: dict[str, str] | None,
               scratch: Path) -> dict[str, str]:
    """The environment of a harness's server: the caller's, with the data folder in
    `scratch` unless the caller names one (`--data-dir`, or APACE_DATA_DIR in `env`).

    A bench's or a test's server must not read or write the user's lists and timers: a
    timer a bench set rang in the next test's server, which adopts the owner's timers,
    and its reply came before the question's."""
    own = "--data-dir" in args or any(a.startswith("--data-dir=") for a in args)
    data = {} if own or (env and "APACE_DATA_DIR" in env) else {"APACE_DATA_DIR": str(scratch)}
    return {**os.environ, "PYTHONUNBUFFERED": "1", **data, **(env or {})}


class ServerProcess:
    def __init__(self, *args: str, port: int | None = None, timeout: float = 180,
                 env: dict[str, str] | None = None, verbose: bool = False) -> None:
        self.port = port or free_port()
        scheme = "https" if "--self-signed" in args or "--tls-cert" in args else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.log = b""
        self.scratch = Path(tempfile.mkdtemp(prefix="apace-server-"))
        """The server's data folder unless the caller names one; removed at `stop`."""
        self.env = server_env(args, env, self.scratch)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app", *(["-v"] if verbose else []), "serve",
             "--port", str(self.port), *args],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env,
        )
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        assert self.proc.stdout is not None
        selector = selectors.DefaultSelector()
        selector.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while b"apace ready" not in self.log:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"server did not start:\n{self.log.decode(errors='replace')}")
            if selector.select(timeout=1.0):
                self.log += os.read(self.proc.stdout.fileno(), 65536)
        selector.close()
        # Keep draining its output so a chatty server never blocks on a full pipe.
        threading.Thread(target=self._drain, name="server-log", daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        while chunk := self.proc.stdout.read1(65536):  # type: ignore[attr-defined]
            self.log += chunk

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return json.loads(response.read())

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> tuple[int, Any]:
        request = urllib.request.Request(self.url + path, data=body, method="POST",
                                         headers={"Content-Type": content_type})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        scratch: Path | None = getattr(self, "scratch", None)  # a subclass may start its own
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
