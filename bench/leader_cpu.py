"""CPU per acknowledged command, per process, for ``bench.leader`` (Linux ``/proc``).

The machine has few cores, so CPU per command bounds throughput: a window's CPU
seconds of the broker (or etcd), the leader and the bench process itself (the
clients, or the raw committer), divided by the commands acknowledged in that window.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.leader_load import Result

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far (None without ``/proc`` or once it exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the parenthesised name (which may hold spaces): utime, stime are 14, 15.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


@dataclass(slots=True)
class CpuWindow:
    """Samples the CPU of named processes at the start and the end of a window.

    Start it just before the load, with the load's warm-up and duration: it
    samples once the warm-up has passed and again when the window closes.
    """

    pids: dict[str, int]
    warmup: float
    duration: float
    used: dict[str, float] = field(default_factory=dict)
    _thread: threading.Thread | None = None

    def start(self) -> CpuWindow:
        """Begin waiting for the window in a background thread."""
        self._thread = threading.Thread(target=self._run, name="cpu-window", daemon=True)
        self._thread.start()
        return self

    def join(self) -> dict[str, float]:
        """Wait for the window to close; CPU seconds per name in it."""
        if self._thread is not None:
            self._thread.join()
        return self.used

    def _run(self) -> None:
        time.sleep(self.warmup)
        before = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        time.sleep(self.duration)
        for name, pid in self.pids.items():
            start, end = before[name], cpu_seconds(pid)
            if start is not None and end is not None:
                self.used[name] = end - start


def per_command_us(used: dict[str, float], ops: int) -> dict[str, float]:
    """CPU microseconds per acknowledged command, per name (empty when nothing was acked)."""
    return {name: seconds / ops * 1e6 for name, seconds in used.items()} if ops else {}


def describe(per_command: dict[str, float]) -> str:
    """``broker 327, leader 339, clients 205 = 871 µs``."""
    if not per_command:
        return "—"
    parts = ", ".join(f"{name} {us:,.0f}" for name, us in per_command.items())
    return f"{parts} = {sum(per_command.values()):,.0f} µs"


def measured(result: Callable[[], Result], pids: dict[str, int], warmup: float,
             duration: float) -> Result:  # fmt: skip
    """``result()`` with the CPU per acknowledged command of ``pids`` over its window."""
    window = CpuWindow(pids, warmup, duration).start()
    done = result()
    return dataclasses.replace(done, cpu_us=per_command_us(window.join(), done.ops))
