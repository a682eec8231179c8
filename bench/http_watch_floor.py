"""The watch fan-out's floor: the same streams fed by a bare asyncio server that follows
the same commits with metalog's own follower, no HTTP stack (for ``bench.http``).

Why: it says what this machine does with the fan-out and nothing more: one asyncio
process (as `metalog serve` is one) follows the catalog with `Follower` and
`server.changes.Changes` (the same typed NDJSON lines, about 2.5 a change in this
workload), answers each GET with an HTTP/1.0 200 and a BOOKMARK line, then on each
wake writes the new lines, joined once, to every open stream: one `transport.write`
per stream per wake, no framework, no coroutine and no check per watcher, the least a
Python server can do per watcher. The same drain and probe watchers as
`bench.http_watch` read them, while the same commits as the HTTP run's go through the
broker; propagation is arrival at a probe minus commit ack, as for `metalog serve`.

Run in a child process by `floor_fan_out` (`--serve PORT BOOTSTRAP PREFIX`).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.apply import CATALOG
from bench.http_watch import Floor, Probes, commit, fresh_topics, start_drain
from bench.leader_load import percentile
from events.topics import Topics
from projector.follower.follower import Follower
from server.changes import Changes

REPO = Path(__file__).resolve().parents[1]
BOOKMARK = b'{"type":"BOOKMARK","object":{"key":null,"value":null},"resourceVersion":0}\n'
HEAD = b"HTTP/1.0 200 OK\r\ncontent-type: application/x-ndjson\r\n\r\n"


class Stream(asyncio.Protocol):
    """One watch: past its request's head, it is in `streams` until it closes."""

    def __init__(self, streams: set[asyncio.Transport]) -> None:
        self.streams = streams
        self.head = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.transport in self.streams or self.transport is None:
            return
        self.head += data
        if b"\r\n\r\n" in self.head:
            self.transport.write(HEAD + BOOKMARK)
            self.streams.add(self.transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.transport is not None:
            self.streams.discard(self.transport)


async def _serve(port: int, bootstrap: str, prefix: str) -> None:
    streams: set[asyncio.Transport] = set()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Stream(streams), "127.0.0.1", port, backlog=2048)
    with Follower(bootstrap, CATALOG, topics=Topics(prefix)) as follower:
        follower.wait_caught_up(60)
        changes = Changes(follower, CATALOG, loop, 100_000)
        print("listening", flush=True)
        stop = loop.run_in_executor(None, sys.stdin.readline)
        index = changes.end
        while not stop.done():
            woken = changes.changed()
            end = changes.end
            if end > index:
                lines, _ = changes.lines(index, end - index, None)
                index = end
                for transport in streams:
                    transport.write(lines)
                continue
            waits: list[asyncio.Future[Any]] = [asyncio.ensure_future(woken.wait()), stop]
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        changes.close()
    server.close()


def floor_fan_out(port: int, bootstrap: str, watchers: int, probes: int, rate: int,
                  seconds: float) -> Floor:  # fmt: skip
    """Propagation p50 and p99 of the bare fan-out at `watchers` streams (`probes` timed)
    while `rate` changes a second are committed for `seconds` to fresh topics, and the
    machine's idle share meanwhile."""
    prefix = fresh_topics(bootstrap).prefix
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.http_watch_floor", "--serve", str(port), bootstrap, prefix],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)  # fmt: skip
    assert server.stdout is not None
    try:
        if server.stdout.readline().strip() != "listening":
            raise RuntimeError("the floor server did not start")
        url = f"http://127.0.0.1:{port}/watch"
        drained = start_drain(url, watchers - probes)
        with Probes(url, probes) as probed:
            result, idle = commit(bootstrap, prefix, rate, seconds)
            probed.wait_for(len(result["acked"]), 30)
        drained.communicate("stop\n", timeout=120)
        server.communicate("stop\n", timeout=60)
    finally:
        server.kill()
    latencies = probed.latencies(result["acked"])
    return Floor(percentile(latencies, 0.5), percentile(latencies, 0.99), idle)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        asyncio.run(_serve(int(sys.argv[2]), sys.argv[3], sys.argv[4]))
