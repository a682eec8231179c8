"""The watch fan-out's floor: the same streams fed by a bare asyncio server, no HTTP stack,
no Kafka (for ``bench.http``'s watch phase).

Why: `metalog serve`'s watch streams fall behind at 1,000 watchers. This says what
this machine does with the same fan-out and nothing else: one asyncio process (as
`metalog serve` is one) answers each GET with an HTTP/1.0 200 and a BOOKMARK line,
then, once told to go, makes `rate` lines a second come due, each `line_bytes` long
(a resource_version and padding: the size of the server's lines in the same run),
and writes what came due since its last round to every open stream, one
`transport.write` per stream per round, back to back: no framework, no coroutine
and no check per watcher, the least a Python server can do per watcher. The same
drain and probe watchers as `bench.http_watch` read them; a line's propagation is
its arrival at a probe minus the moment it came due (one CLOCK_MONOTONIC for every
process).

Run in a child process by `floor_fan_out` (`--serve PORT RATE COUNT LINE_BYTES`).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

from bench.http_watch import Floor, Probes, cpu_jiffies, idle_since
from bench.leader_load import percentile

REPO = Path(__file__).resolve().parents[1]
BOOKMARK = b'{"type":"BOOKMARK","object":{"key":null,"value":null},"resourceVersion":0}\n'
HEAD = b"HTTP/1.0 200 OK\r\ncontent-type: application/x-ndjson\r\n\r\n"


def line(resource_version: int, size: int) -> bytes:
    """A MODIFIED line of about `size` bytes for `resource_version`."""
    start = b'{"type":"MODIFIED","object":{"key":"k","value":"'
    end = b'"},"resourceVersion":%d}\n' % resource_version
    return start + b"x" * max(0, size - len(start) - len(end)) + end


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


async def _serve(port: int, rate: float, count: int, size: int) -> float:
    streams: set[asyncio.Transport] = set()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Stream(streams), "127.0.0.1", port, backlog=2048)
    print("listening", flush=True)
    await loop.run_in_executor(None, sys.stdin.readline)  # "go"
    began, sent = time.monotonic(), 0
    while sent < count:
        due = min(count, int((time.monotonic() - began) * rate) + 1)
        if due > sent:
            body = b"".join(line(rv, size) for rv in range(sent + 1, due + 1))
            for transport in streams:
                transport.write(body)
            sent = due
        await asyncio.sleep(max(0.0, began + sent / rate - time.monotonic()))  # the next due
    await loop.run_in_executor(None, sys.stdin.readline)  # "stop"
    server.close()
    return began


def serve(port: int, rate: float, count: int, size: int) -> None:
    """(In the child) serve until told to stop, then print when the first line came due."""
    print(json.dumps({"began": asyncio.run(_serve(port, rate, count, size))}), flush=True)


def floor_fan_out(port: int, watchers: int, probes: int, rate: int, seconds: float, size: int,
                  load: list[str] | None = None) -> Floor:  # fmt: skip
    """Propagation p50 and p99 of the bare fan-out at `watchers` streams (`probes` timed),
    and the machine's idle share while the lines came due.

    Args:
        load: A command run while the lines come due (`bench.http`: the same commits to
            Kafka as the HTTP run's), or None.
    """
    count = int(rate * seconds)
    server = subprocess.Popen(
        [sys.executable, "-m", "bench.http_watch_floor", "--serve", str(port), str(rate),
         str(count), str(size)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    try:
        if server.stdout.readline().strip() != "listening":
            raise RuntimeError("the floor server did not start")
        url = f"http://127.0.0.1:{port}/watch"
        drained = subprocess.Popen(
            [sys.executable, "-m", "bench.http", "--drain", url, str(watchers - probes)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)  # fmt: skip
        assert drained.stdout is not None
        if drained.stdout.readline().strip() != "ready":
            drained.kill()
            raise RuntimeError("the drain watchers did not connect")
        with Probes(url, probes) as probed:
            time.sleep(1.0)
            jiffies = cpu_jiffies()
            server.stdin.write("go\n")
            server.stdin.flush()
            if load is not None:
                subprocess.run(load, check=True, capture_output=True, timeout=3600, cwd=REPO)
            else:
                time.sleep(seconds)
            idle = idle_since(jiffies)
            deadline = time.monotonic() + seconds + 30
            while time.monotonic() < deadline and not all(s and max(s) >= count
                                                          for s in probed.seen):
                time.sleep(0.2)
        drained.communicate("stop\n", timeout=120)
        out, _ = server.communicate("stop\n", timeout=60)
    finally:
        server.kill()
    began = json.loads(out.strip().splitlines()[-1])["began"]
    latencies = sorted(max(0.0, at - (began + (rv - 1) / rate)) * 1000
                       for seen in probed.seen for rv, at in seen.items())  # fmt: skip
    return Floor(percentile(latencies, 0.5), percentile(latencies, 0.99), idle)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
