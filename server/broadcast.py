"""Live watch streams written in one pass per wake: the fan-out of `metalog serve`.

A watcher catches up on its own task (`server.watch`: ASGI sends, flow control).
Once live, when the server runs on `server.run`'s protocol (the request's scope
carries its connection, `CONNECTION`), it joins its catalog's `Broadcast`: on each
wake one pass writes the new lines to every live stream's connection, one body per
(position, key prefix, framing) shared by the streams there, one write per stream.
At 1,000 watchers a task per watcher and the ASGI send chain per write kept the
server seconds behind (docs/benchmarks/http.md).

A stream whose connection holds more than the transport's high-water mark is skipped,
and passed over again every `RETRY` seconds until it drains; one that falls more than
`watch_lag_limit` changes behind, or takes no data for `send_timeout` seconds, is ended
(`Live.ended`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from events.errors import MetalogError
from projector.errors import ResourceVersionTooOld
from server.catalogs import ServerSettings
from server.changes import Changes
from server.errors import SlowReader

if TYPE_CHECKING:
    from uvicorn.protocols.http.h11_impl import RequestResponseCycle

CONNECTION = "metalog.connection"
"""The scope extension holding a request's connection (uvicorn's h11 request cycle)."""
RETRY = 0.05
"""Seconds before another pass when a stream was skipped, its connection full."""


def chunk(body: bytes) -> bytes:
    """`body` as one HTTP/1.1 chunk (what h11 writes for a response body of unknown length)."""
    return b"%x\r\n%b\r\n" % (len(body), body)


class Live:
    """One live stream of a broadcast: its position, its filter and its connection.

    Attributes:
        ended: Set when the broadcast ends the stream: the error to tell the client
            (None: the connection is gone or stuck, nothing more can be written).
    """

    __slots__ = ("chunked", "connection", "ended", "index", "key_prefix", "stuck_since")

    def __init__(self, index: int, key_prefix: str | None,
                 connection: RequestResponseCycle) -> None:  # fmt: skip
        self.index = index
        self.key_prefix = key_prefix
        self.chunked = connection.scope["http_version"] != "1.0"
        """HTTP/1.1: each write is a chunk (h11 chose chunked framing: no content-length)."""
        self.connection = connection
        self.stuck_since: float | None = None
        """When its connection was first seen paused, if it still is."""
        self.ended: asyncio.Future[MetalogError | None] = (
            asyncio.get_running_loop().create_future())  # fmt: skip


class Broadcast:
    """The live streams of one catalog, written by one pass each time it changes."""

    def __init__(self, changes: Changes, settings: ServerSettings) -> None:
        self._changes = changes
        self._settings = settings
        self._streams: dict[Live, None] = {}  # insertion-ordered
        self._task: asyncio.Task[None] | None = None

    def join(self, live: Live) -> None:
        """Write `live`'s changes from its index on, from the next pass."""
        self._streams[live] = None
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    def leave(self, live: Live) -> None:
        """Write nothing more to `live`."""
        self._streams.pop(live, None)

    def close(self) -> None:
        """Stop writing (the server stops)."""
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            woken = self._changes.changed()
            skipped = self._pass()
            # A stream skipped while its connection was full gets its lines once it drains,
            # even if the catalog is quiet by then: another pass soon.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RETRY if skipped else None):
                    await woken.wait()

    def _pass(self) -> bool:
        """Write what each stream lacks; whether one was skipped (its connection full)."""
        changes, settings = self._changes, self._settings
        skipped = False
        end = changes.end
        now = asyncio.get_running_loop().time()
        bodies: dict[tuple[int, str | None, bool], bytes] = {}
        for live in list(self._streams):
            if live.index >= end:
                continue
            cycle = live.connection
            if cycle.disconnected or cycle.transport.is_closing():
                self._end(live, None)
                continue
            if end - live.index > settings.watch_lag_limit:
                self._end(live, SlowReader(settings.watch_lag_limit))
                continue
            if cycle.flow.write_paused:  # its socket and its buffer are full: next pass
                skipped = True
                if live.stuck_since is None:
                    live.stuck_since = now
                elif now - live.stuck_since > settings.send_timeout:
                    self._end(live, None)
                continue
            live.stuck_since = None
            key = (live.index, live.key_prefix, live.chunked)
            body = bodies.get(key)
            if body is None:
                try:
                    lines, _ = changes.lines(live.index, end - live.index, live.key_prefix)
                except ResourceVersionTooOld as exc:
                    self._end(live, exc)
                    continue
                body = bodies[key] = chunk(lines) if live.chunked and lines else lines
            if body:
                try:
                    cycle.transport.write(body)
                except (RuntimeError, OSError):  # the connection broke under it: this one only
                    self._end(live, None)
                    continue
            live.index = end
        return skipped

    def _end(self, live: Live, error: MetalogError | None) -> None:
        self.leave(live)
        if not live.ended.done():
            live.ended.set_result(error)
