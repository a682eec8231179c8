"""Watch: `GET /v1/catalogs/{catalog}/watch?resourceVersion=N[&keyPrefix=…]`, an NDJSON stream.

Each line is one JSON object, Kubernetes' watch event:
`{"type": "ADDED"|"MODIFIED"|"DELETED", "object": {"key": k, "value": v}, "resourceVersion": n}`
(`value` is null for DELETED). Quiet streams get `{"type": "BOOKMARK", "object": {"key": null,
"value": null}, "resourceVersion": n}` every `bookmark_every` seconds: every change up to n
was sent, so a client resumes from n. A stream the server ends carries a last line
`{"type": "ERROR", "object": <problem>}` that names the reason (410 too old, 503 slow reader).

A watcher costs a cursor into the catalog's shared `Changes`, no thread and no
buffer: one that falls more than `watch_lag_limit` changes behind, or whose socket
takes no data for `send_timeout` seconds, is disconnected. It catches up on its own
task; once live, on `server.run`'s protocol, its catalog's `Broadcast` writes its
changes and its task only the bookmarks.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated, Any

from fastapi import APIRouter, Query
from prometheus_client import Gauge
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from events.errors import MetalogError
from projector.errors import ResourceVersionTooOld
from server.broadcast import CONNECTION, Broadcast, Live
from server.catalogs import Catalogs, ServerSettings
from server.changes import Changes, dumps
from server.errors import SlowReader
from server.problems import COMMON, documented, problem, problem_body
from server.reads import RESOURCE_VERSION, parse_resource_version

log = logging.getLogger(__name__)

NDJSON = "application/x-ndjson"
CHUNK = 256
"""Changes written per send."""


class Hub:
    """The `Changes` of each watched catalog, made in the event loop on the first watch."""

    def __init__(self, catalogs: Catalogs, watches: Gauge) -> None:
        self.catalogs = catalogs
        self.watches = watches
        self._changes: dict[str, tuple[Changes, Broadcast]] = {}

    async def changes(self, catalog: str) -> tuple[Changes, Broadcast]:
        """The catalog's `Changes` (its follower started on first use) and `Broadcast`."""
        made = self._changes.get(catalog)
        if made is None:
            follower = await run_in_threadpool(self.catalogs.follower, catalog)
            made = self._changes.get(catalog)
            if made is None:
                settings = self.catalogs.settings
                changes = Changes(follower, catalog, asyncio.get_running_loop(),
                                  settings.history_limit)  # fmt: skip
                made = self._changes[catalog] = (changes, Broadcast(changes, settings))
        return made

    async def open(self, catalog: str, resource_version: str | None,
                   key_prefix: str | None) -> Response:  # fmt: skip
        """A watch of `catalog`'s keys under `key_prefix` (None: all) after `resource_version`.

        The one way a stream opens: `/watch` and every collection's `?watch=true` call it.

        Returns:
            The stream, or a 410 problem when `resource_version` is older than the history kept.

        Raises:
            InvalidResourceVersion: `resource_version` is not a whole number.
            CatalogNotServed: The catalog is not served here.
        """
        wanted = parse_resource_version(resource_version)
        changes, broadcast = await self.changes(catalog)
        try:
            index = changes.start(wanted)
        except ResourceVersionTooOld as exc:
            return problem(exc)
        return WatchStream(changes, broadcast, index, key_prefix, self.catalogs.settings,
                           changes.at if wanted is None else wanted, self.watches)  # fmt: skip

    def close(self) -> None:
        """Stop waking the loop."""
        for changes, broadcast in self._changes.values():
            broadcast.close()
            changes.close()
        self._changes.clear()


def bookmark(resource_version: int) -> bytes:
    """A BOOKMARK line: every change up to `resource_version` was sent."""
    return dumps({"type": "BOOKMARK", "object": {"key": None, "value": None},
                   "resourceVersion": resource_version})  # fmt: skip


def error_line(error: MetalogError) -> bytes:
    """The last line of a stream the server ends: an ERROR with the problem body."""
    return dumps({"type": "ERROR", "object": problem_body(error)})


class WatchStream(Response):
    """The ASGI response of one watch: changes from `index` on, bookmarks, then live."""

    media_type = NDJSON

    def __init__(self, changes: Changes, broadcast: Broadcast, index: int,
                 key_prefix: str | None, settings: ServerSettings, resource_version: int,
                 watches: Gauge) -> None:  # fmt: skip
        super().__init__(status_code=200, media_type=NDJSON)
        self.changes = changes
        self.broadcast = broadcast
        self.watches = watches
        self.index = index
        self.key_prefix = key_prefix
        self.settings = settings
        self.sent_to = resource_version

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream until the client leaves, falls behind, or the server stops."""
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", NDJSON.encode()),
                                (b"cache-control", b"no-cache"),
                                (b"x-accel-buffering", b"no")]})  # fmt: skip
        # The client leaving cancels this task (`_listen`): the loop below waits on one
        # event, with no task of its own per wait (at 1,000 watchers they were the cost).
        streaming = asyncio.current_task()
        assert streaming is not None
        gone = asyncio.Event()
        listener = asyncio.create_task(_listen(receive, gone, streaming))
        self.watches.inc()
        try:
            ended = await self._stream(send, scope.get("extensions", {}).get(CONNECTION))
            if ended is not None:
                await self._send(send, error_line(ended))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not gone.is_set():
                raise  # the server stops
            streaming.uncancel()  # the client left: nothing more to write
        except (TimeoutError, OSError) as exc:
            log.info("watch of %s dropped: %s", self.changes.catalog, exc or type(exc).__name__)
        finally:
            self.watches.dec()
            listener.cancel()

    async def _stream(self, send: Send, connection: Any) -> MetalogError | None:
        """Write changes and bookmarks until the error that ends the stream (or a cancel).

        Args:
            connection: The request's connection (`server.broadcast.CONNECTION`), or None:
                this task writes the changes when live too.
        """
        changes, settings = self.changes, self.settings
        await self._send(send, bookmark(self.sent_to))
        live = False
        while True:
            woken = changes.changed()
            at = changes.at  # every change up to it is in `changes` (`Changes.refresh`)
            behind = changes.end - self.index
            if live and behind > settings.watch_lag_limit:
                return SlowReader(settings.watch_lag_limit)
            try:
                lines, end = changes.lines(self.index, CHUNK, self.key_prefix)
            except ResourceVersionTooOld as exc:
                return exc
            if end > self.index:
                self.index = end
                if lines:
                    await self._send(send, lines)
                continue
            if connection is not None:
                return await self._pushed(send, Live(self.index, self.key_prefix, connection))
            live = True
            if at > self.sent_to:
                self.sent_to = at
            try:
                async with asyncio.timeout(settings.bookmark_every):
                    await woken.wait()
            except TimeoutError:
                await self._send(send, bookmark(self.sent_to))
                changes.refresh()  # a quiet catalog: its resource_version may move all the same

    async def _pushed(self, send: Send, live: Live) -> MetalogError | None:
        """Live in the catalog's broadcast: it writes the changes, this task the bookmarks.

        Raises:
            TimeoutError: The client took no data for `send_timeout` seconds.
        """
        changes = self.changes
        self.broadcast.join(live)
        try:
            while True:
                done, _ = await asyncio.wait([live.ended], timeout=self.settings.bookmark_every)
                if done:
                    error = live.ended.result()
                    if error is None:
                        raise TimeoutError(f"no data taken for {self.settings.send_timeout} s")
                    return error
                changes.refresh()  # a quiet catalog: its resource_version may move all the same
                if live.index >= changes.end:
                    self.sent_to = max(self.sent_to, changes.at)
                await self._send(send, bookmark(self.sent_to))
        finally:
            self.broadcast.leave(live)

    async def _send(self, send: Send, body: bytes) -> None:
        message: Message = {"type": "http.response.body", "body": body, "more_body": True}
        async with asyncio.timeout(self.settings.send_timeout):  # no task per send (`wait_for`)
            await send(message)


async def _listen(receive: Receive, gone: asyncio.Event, streaming: asyncio.Task[Any]) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
            streaming.cancel()
            return


def router(catalogs: Catalogs, hub: Hub) -> APIRouter:
    """The watch route."""
    routes = APIRouter(prefix="/v1/catalogs/{catalog}", tags=["watch"])
    watch_responses: dict[int | str, dict[str, Any]] = {
        200: {"description": "an NDJSON stream of watch events (see docs/http.md)",
              "content": {NDJSON: {"schema": {"type": "string"}}}},
        **documented(*COMMON, 410),
    }

    @routes.get("/watch", responses=watch_responses, response_class=WatchStream,
                 status_code=200)
    async def watch(
        catalog: str,
        resource_version: Annotated[str | None, RESOURCE_VERSION] = None,
        key_prefix: Annotated[str | None, Query(alias="keyPrefix", max_length=1024)] = None,
    ) -> Response:
        """Changes after `resourceVersion` (none: from now), then live, as NDJSON lines."""
        return await hub.open(catalog, resource_version, key_prefix)

    return routes
