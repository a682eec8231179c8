"""etcd for ``bench.leader``: install, start on loopback, compare-and-put transactions.

The client speaks etcd's JSON gRPC gateway (``POST /v3/kv/txn``) over one
HTTP/1.1 keep-alive connection per client thread (``http.client``), not the
gRPC API: the only Python gRPC client on PyPI, ``etcd3`` 0.12.0 (2020,
unmaintained), fails to import with current protobuf ("Descriptors cannot be
created directly") unless protobuf is pinned below 4 or run in its slow
pure-Python mode, and it would add grpcio/protobuf to the project. The gateway
runs inside the etcd process; it adds a JSON encode/decode and a loopback
gRPC hop per request on etcd's side, so etcd's numbers are, if anything, a
little low.
"""

from __future__ import annotations

import base64
import http.client
import json
import shutil
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from metalog.errors import StackError

START_TIMEOUT_S = 30.0


def ensure_etcd() -> str:
    """The path of the ``etcd`` binary, installing Debian's ``etcd-server`` if it is missing."""
    found = shutil.which("etcd")
    if found:
        return found
    for step in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "etcd-server"]):
        done = subprocess.run(step, capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0 and step[1] == "install":
            raise StackError(f"`{' '.join(step)}` failed: {done.stderr.strip()[-500:]}")
    found = shutil.which("etcd")
    if not found:
        raise StackError("etcd-server is installed but there is no `etcd` on PATH")
    return found


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


class EtcdServer:
    """A single-member etcd on 127.0.0.1 with its data in ``data_dir``; a context manager.

    Runs with its defaults (WAL fsync on every commit, as a real deployment).
    """

    def __init__(self, binary: str, data_dir: Path, port: int) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.port = port
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        peer = f"http://127.0.0.1:{self.port + 1}"
        client = f"http://127.0.0.1:{self.port}"
        log = (self.data_dir.parent / "etcd.log").open("wb")
        self._process = subprocess.Popen(
            [self.binary, "--name", "bench", "--data-dir", str(self.data_dir),
             "--listen-client-urls", client, "--advertise-client-urls", client,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"bench={peer}", "--initial-cluster-state", "new",
             "--log-level", "warn", "--logger", "zap"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise StackError(f"etcd exited with {self._process.returncode}: see {log.name}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1.0)
                conn.request("GET", "/health")
                if b'"true"' in conn.getresponse().read():
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        self.__exit__(None, None, None)
        raise StackError(f"etcd did not become healthy in {START_TIMEOUT_S:.0f} s")

    @property
    def pid(self) -> int:
        """The etcd process's id (for its CPU per command)."""
        assert self._process is not None, "enter the server first"
        return self._process.pid

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        process = self._process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10.0)


class EtcdKey:
    """One client's key: compare-and-put its new value, like a command with ``expected_version``.

    Each ``put`` is one ``/v3/kv/txn``: compare ``version(key) == expected``,
    on success put the value (the size of an encoded event), else fail. The
    connection is this object's own (use one per thread).
    """

    def __init__(self, port: int, key: str, value: bytes) -> None:
        self._conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10.0)
        self._key = _b64(key.encode())
        self._value = _b64(value)
        self.version = 0

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self._conn.request(
            "POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"}
        )
        response = self._conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"etcd {path}: HTTP {response.status}: {data[:200]!r}")
        decoded: dict[str, Any] = json.loads(data)
        return decoded

    def create(self) -> None:
        """Write the key's first version (no compare)."""
        self._post("/v3/kv/put", {"key": self._key, "value": self._value})
        self.version = 1

    def put(self) -> None:
        """Compare-and-put; raises if the compare failed (another writer got there first)."""
        reply = self._post(
            "/v3/kv/txn",
            {
                "compare": [{"key": self._key, "target": "VERSION", "result": "EQUAL",
                             "version": self.version}],
                "success": [{"request_put": {"key": self._key, "value": self._value}}],
            },
        )  # fmt: skip
        if not reply.get("succeeded"):
            raise RuntimeError(f"etcd compare failed at version {self.version}")
        self.version += 1

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()
