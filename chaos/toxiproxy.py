"""Toxiproxy: its server as a child process, driven over its HTTP API.

One proxy forwards one loopback port to another. Faults are toxics
(Toxiproxy's word): `latency` (+ `jitter`), `bandwidth`, `reset_peer`,
`timeout` (data stops; with `timeout=0` the connection stays open and
silent), or a disabled proxy (its connections closed and new ones refused: a
partition). A toxic acts on one direction: `upstream` (client → server) or
`downstream` (server → client).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from chaos import gobuild
from chaos.errors import ProxyError

Direction = Literal["upstream", "downstream"]
START_TIMEOUT_S = 30.0


class Toxiproxy:
    """A Toxiproxy server on `127.0.0.1:api_port`, started by `start`, stopped by `stop`.

    Args:
        api_port: Its HTTP API's port on loopback.
        log: Where its output goes.
        seed: Seed of its randomness (jitter, toxicity), for a repeatable run.
    """

    def __init__(self, api_port: int, log: Path, seed: int = 0) -> None:
        self.api_port = api_port
        self.log = log
        self.seed = seed
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> Self:
        """Build (once) and start the server; wait until its API answers.

        Raises:
            ProxyError: The port is taken or the server did not answer in time.
        """
        if _port_open(self.api_port):
            raise ProxyError(f"port {self.api_port} is already in use: stop what holds it or "
                             "choose another --base-port")  # fmt: skip
        binary = gobuild.toxiproxy_server()
        with self.log.open("ab") as out:
            self._process = subprocess.Popen(
                [str(binary), "-host", "127.0.0.1", "-port", str(self.api_port),
                 "-seed", str(self.seed)], stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise ProxyError(f"toxiproxy exited at start; see {self.log}")
            try:
                self._call("GET", "/version")
                return self
            except ProxyError:
                time.sleep(0.1)
        raise ProxyError(f"toxiproxy did not answer on port {self.api_port} within "
                         f"{START_TIMEOUT_S:.0f} s; see {self.log}")  # fmt: skip

    def stop(self) -> None:
        """Stop the server (its proxies go with it)."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- the API -------------------------------------------------------------

    def create(self, name: str, listen: int, upstream: int) -> None:
        """A proxy `name` from `127.0.0.1:listen` to `127.0.0.1:upstream`."""
        self._call("POST", "/proxies", {"name": name, "listen": f"127.0.0.1:{listen}",
                                        "upstream": f"127.0.0.1:{upstream}", "enabled": True})

    def enable(self, name: str, enabled: bool) -> None:
        """Enable a proxy, or disable it: its connections close and new ones are refused."""
        self._call("POST", f"/proxies/{name}", {"enabled": enabled})

    def add_toxic(
        self, proxy: str, toxic: str, kind: str, stream: Direction, **attributes: int
    ) -> None:
        """Add a toxic named `toxic` of type `kind` on one direction of a proxy."""
        self._call("POST", f"/proxies/{proxy}/toxics", {
            "name": toxic, "type": kind, "stream": stream, "toxicity": 1.0,
            "attributes": attributes})  # fmt: skip

    def remove_toxic(self, proxy: str, toxic: str) -> None:
        """Remove a toxic (absent is fine)."""
        try:
            self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic}")
        except ProxyError as exc:
            if "404" not in str(exc):
                raise

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._call("POST", "/reset")

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.api_port}{path}", data=data, method=method,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=10.0) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise ProxyError(f"toxiproxy {method} {path}: {exc.code} {detail}") from exc
        except OSError as exc:
            raise ProxyError(f"toxiproxy {method} {path}: {exc}") from exc
        return json.loads(raw) if raw else None


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0
