"""Callbacks that run inside a Kafka client, made safe: the first failure is kept, not raised.

An exception that escapes a callback into confluent-kafka (2.16 on Python 3.11) surfaces
from the client's next `poll` or `close` as an unrelated `SystemError`, its cause lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec

P = ParamSpec("P")


class KeptFailure:
    """Guards callbacks; the caller takes the first failure among them when it is ready."""

    def __init__(self) -> None:
        self._failure: BaseException | None = None

    def guard(self, callback: Callable[P, None]) -> Callable[P, None]:
        """`callback`, keeping what it raises instead of raising it."""

        def guarded(*args: P.args, **kwargs: P.kwargs) -> None:
            try:
                callback(*args, **kwargs)
            except BaseException as exc:
                if self._failure is None:
                    self._failure = exc

        return guarded

    def take(self) -> BaseException | None:
        """The first failure since the last `take`, if any (and forget it)."""
        failure, self._failure = self._failure, None
        return failure
