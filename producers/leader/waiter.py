"""A call waiting for its one outcome, handed over by another thread."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class Waiter(Generic[T]):
    """One call waiting for its outcome: a bare lock, released when the outcome is set.

    (A `threading.Event` is a lock plus a `Condition`; with 64 threads on one
    client, waking them through `Condition.notify` took a third of the
    reply reader's time.)
    """

    __slots__ = ("_done", "_outcome", "_set")

    def __init__(self) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        self._outcome: T | None = None
        self._set = False

    def set(self, outcome: T) -> None:
        """Hand over the outcome (one thread sets; a repeated outcome is ignored)."""
        if not self._set:
            self._set = True
            self._outcome = outcome
            self._done.release()

    def wait(self, timeout: float) -> T | None:
        """The outcome, or None when none came within `timeout` seconds."""
        return self._outcome if self._done.acquire(timeout=max(timeout, 0.0)) else None
