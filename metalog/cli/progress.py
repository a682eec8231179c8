"""Progress of long work on the command line: a rich bar on stderr, with a rate.

Shown only on a terminal, and only once the work has run `LONG_S`: a short
command prints nothing but its result.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

_Batch = TypeVar("_Batch")

LONG_S = 2.0
"""Work still running after this long shows its progress bar (on a terminal)."""


class LongProgress:
    """A bar that appears once the work has run `LONG_S`; `close` removes it.

    Args:
        console: Where to draw (stderr for a command whose output is its result).
        verb: What the work is doing ("replaying", "verifying").
        unit: What the rate counts ("events", "records").
    """

    def __init__(self, console: Console, verb: str, unit: str) -> None:
        self._console = console
        self._verb = verb
        self._unit = unit
        self._started = time.monotonic()
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def update(self, done: int, completed: int | None = None, total: int | None = None) -> None:
        """`done` items so far (the rate); the bar at `completed` of `total` records
        (`done` of an unknown total when not given)."""
        elapsed = time.monotonic() - self._started
        if self._bar is None:
            if elapsed < LONG_S or not self._console.is_terminal:
                return
            self._bar = Progress(
                TextColumn(self._verb), BarColumn(), TextColumn("{task.completed:,} records"),
                TextColumn(f"{{task.fields[rate]:,.0f}} {self._unit}/s"), TimeElapsedColumn(),
                console=self._console, transient=True,
            )  # fmt: skip
            self._bar.start()
            self._task = self._bar.add_task(self._verb, total=total, rate=0.0)
        assert self._task is not None
        self._bar.update(self._task, completed=done if completed is None else completed,
                         total=total, rate=done / elapsed)  # fmt: skip

    def close(self) -> None:
        """Remove the bar."""
        if self._bar is not None:
            self._bar.stop()


def counted(
    batches: Iterable[_Batch], progress: LongProgress, size: Callable[[_Batch], int]
) -> Iterator[_Batch]:
    """The batches, each counted on `progress` (by `size`: its records) once it is taken."""
    done = 0
    for batch in batches:
        yield batch
        done += size(batch)
        progress.update(done)
