"""`metalog leader` processes, each reaching the brokers through its own group's proxies."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

from chaos.cluster import Layout

log = logging.getLogger(__name__)
SESSION_TIMEOUT_MS = 6000
"""The broker's least: a paused or cut-off leader loses its partition soonest."""


class LeaderProcess:
    """One `metalog leader` of the chaos cluster's leader group, named after its process group.

    Args:
        layout: The cluster.
        group: Its process group (`leader0`, `leader1`): whose proxies it goes through.
        log_dir: Where its stderr is appended (`{group}.log`).
    """

    def __init__(self, layout: Layout, group: str, log_dir: Path) -> None:
        self.layout = layout
        self.group = group
        self.log_file = log_dir / f"{group}.log"
        self.exits: list[int] = []
        """The exit codes of its earlier processes that stopped without being told to."""
        self._process: subprocess.Popen[bytes] | None = None
        self._paused = False

    def start(self) -> None:
        """Start its process (a new one: the last one has exited)."""
        with self.log_file.open("ab") as err:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "metalog.cli", "leader",
                 "--bootstrap", self.layout.bootstrap(self.group),
                 "--prefix", self.layout.prefix, "--group", f"{self.layout.prefix}-leaders",
                 "--leader-id", self.group, "--instance-id", self.group,
                 "--session-timeout-ms", str(SESSION_TIMEOUT_MS)],
                # An unexpected error's traceback goes to the leader's log, not only its name.
                env={**os.environ, "PYTHONUNBUFFERED": "1", "METALOG_TRACEBACK": "1"},
                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
            )  # fmt: skip

    @property
    def pid(self) -> int | None:
        """Its process id while it runs."""
        return None if self._process is None else self._process.pid

    def alive(self) -> bool:
        """Whether its process runs (a paused one does)."""
        return self._process is not None and self._process.poll() is None

    def kill9(self) -> None:
        """`kill -9` it."""
        if self.alive():
            assert self._process is not None
            self._process.kill()
            self._process.wait()

    def pause(self) -> None:
        """SIGSTOP: its heartbeats stop; it wakes up later believing it still leads."""
        if self.alive():
            assert self._process is not None
            self._process.send_signal(signal.SIGSTOP)
            self._paused = True

    def resume(self) -> None:
        """SIGCONT after `pause`."""
        if self._paused and self.alive():
            assert self._process is not None
            self._process.send_signal(signal.SIGCONT)
        self._paused = False

    def ensure_running(self) -> None:
        """Restart it if it exited by itself, keeping its exit code in `exits`."""
        if self._process is not None and not self.alive():
            code = self._process.returncode
            self.exits.append(code)
            log.warning("leader %s had exited (code %s): restarting it", self.group, code)
            self.start()

    def stop(self) -> None:
        """SIGTERM, a bounded wait, then SIGKILL."""
        self.resume()
        if self._process is None or not self.alive():
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=30.0)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
