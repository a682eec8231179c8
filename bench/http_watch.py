"""Watch fan-out for ``bench.http``: N HTTP watchers of one catalog next to a lone follower.

One run at N watchers (`fan_out`):

1. fresh topics and a ``metalog serve`` process of catalog ``bench`` on them
   (no leader: the changes are produced straight to the events topic);
2. the server's resident memory (``VmRSS``) before and after the watchers
   connect: the difference over N is the memory per watcher;
3. N - P "drain" watchers in a child process (``--drain``: asyncio sockets
   that read and throw the stream away, so the watchers' own parsing does not
   load this process) and P "probe" watchers here that note when each
   resource_version first arrives; a lone ``Follower`` here notes when each
   resource_version becomes visible in its image: the reference, same run;
4. a child (``bench.follower --leader``) commits the changes in transactions
   at a steady rate and returns each one's commit ack time
   (``time.monotonic()``: CLOCK_MONOTONIC, one clock for all processes);
5. propagation = first arrival (or visibility) - commit ack, per resource_version.

Watchers speak HTTP/1.0, so the stream comes unchunked (closed at its end).
"""

from __future__ import annotations

import asyncio
import json
import selectors
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.apply import CATALOG
from bench.leader_load import percentile
from events.topics import Topics
from projector.fold.image import Image
from projector.follower.follower import Follower
from projector.kafka.topics import create_metalog_topics

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Floor:
    """The same fan-out from a bare asyncio server (`bench.http_watch_floor`)."""

    p50_ms: float
    p99_ms: float
    idle: float
    """The machine's idle share of its CPU time while the lines came due."""


NO_FLOOR = Floor(float("nan"), float("nan"), float("nan"))


@dataclass(frozen=True)
class FanOut:
    """What one fan-out run measured."""

    watchers: int
    rate: float
    changes: int
    watch_p50_ms: float
    watch_p99_ms: float
    follower_p50_ms: float
    follower_p99_ms: float
    rss_per_watcher_kib: float
    samples: int
    """(probe, resource_version) arrivals timed (a change without mutations sends no line)."""
    dropped: int
    """Drain watchers whose stream ended before the run did (an ERROR line, a closed socket)."""
    line_bytes: int
    """The mean length of a change line the probe watchers read."""
    idle: float
    """The machine's idle share of its CPU time while the changes were committed."""
    floor: Floor = NO_FLOOR
    """The bare fan-out of metalog's follower, the same changes committed."""


def cpu_jiffies() -> tuple[int, int]:
    """The machine's idle and total CPU time so far, in jiffies (Linux `/proc/stat`)."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)  # idle + iowait, everything


def idle_since(before: tuple[int, int]) -> float:
    """The machine's idle share of its CPU time since `before` (`cpu_jiffies`)."""
    idle, total = cpu_jiffies()
    return (idle - before[0]) / max(1, total - before[1])


def fresh_topics(bootstrap: str) -> Topics:
    """New metalog topics (one partition each) for one run."""
    topics = Topics(f"bhttp{uuid.uuid4().hex[:8]}")
    create_metalog_topics(bootstrap, topics.prefix, 1)
    return topics


def commit(bootstrap: str, prefix: str, rate: int, seconds: float) -> tuple[dict[str, Any],
                                                                           float]:  # fmt: skip
    """Commit `rate` changes a second for `seconds` to `prefix`'s topics (`bench.follower
    --leader`, a child process): its result (`acked`: each change's ack time, `achieved`:
    the rate) and the machine's idle share meanwhile."""
    jiffies = cpu_jiffies()
    produced = subprocess.run(
        [sys.executable, "-m", "bench.follower", "--leader", bootstrap, prefix, str(rate),
         str(seconds)],
        check=True, capture_output=True, text=True, timeout=3600, cwd=REPO)  # fmt: skip
    idle = idle_since(jiffies)
    return json.loads(produced.stdout.strip().splitlines()[-1]), idle


def start_drain(url: str, count: int) -> subprocess.Popen[str]:
    """`count` watchers of `url` in a child process (`drain`), connected; tell it "stop"
    on stdin, then its last line says how many streams ended early."""
    drained = subprocess.Popen([sys.executable, "-m", "bench.http", "--drain", url, str(count)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               cwd=REPO)  # fmt: skip
    assert drained.stdout is not None
    if drained.stdout.readline().strip() != "ready":
        drained.kill()
        raise RuntimeError("the drain watchers did not connect")
    return drained


def since_ack(seen: dict[int, float], acked: list[float]) -> list[float]:
    """Milliseconds from each change's ack (`acked[rv - 1]`) to when it was `seen`."""
    return [max(0.0, at - acked[rv - 1]) * 1000 for rv, at in seen.items()
            if 0 < rv <= len(acked)]  # fmt: skip


def rss_kib(pid: int) -> int:
    """The resident memory of process `pid`, KiB (Linux `/proc/PID/status`)."""
    for text in Path(f"/proc/{pid}/status").read_text().splitlines():
        if text.startswith("VmRSS:"):
            return int(text.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


async def open_watch(host: str, port: int, path: str) -> tuple[asyncio.StreamReader,
                                                                asyncio.StreamWriter]:  # fmt: skip
    """An HTTP/1.0 watch stream past its headers and its first line (a BOOKMARK)."""
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
    writer.write(f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    await writer.drain()
    status = await reader.readline()
    if b" 200 " not in status:
        raise RuntimeError(f"watch {path}: {status!r}")
    while await reader.readline() not in (b"\r\n", b""):
        pass
    await reader.readline()
    return reader, writer


def _open_raw(host: str, port: int, path: str) -> socket.socket:
    """A blocking socket past a watch's headers and first line (a BOOKMARK)."""
    sock = socket.create_connection((host, port), timeout=60)
    sock.sendall(f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head or b"\n" not in head.partition(b"\r\n\r\n")[2]:
        chunk = sock.recv(4096)
        if not chunk:
            raise RuntimeError(f"watch {path}: closed after {head!r}")
        head += chunk
    if b" 200 " not in head.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"watch {path}: {head[:200]!r}")
    return sock


def drain(url: str, count: int) -> dict[str, int]:
    """(In a child process) `count` watches of `url` read and thrown away until stdin says
    stop: one epoll loop reading into one buffer, the least CPU a reader can spend, so
    that the watchers' side takes as little as it can of the machine the server runs on."""
    hostport, _, path = url.removeprefix("http://").partition("/")
    host, port = hostport.split(":")
    streams = [_open_raw(host, int(port), "/" + path) for _ in range(count)]
    print("ready", flush=True)
    ended = total = 0
    buffer = bytearray(1 << 20)
    with selectors.EpollSelector() as selector:
        for sock in streams:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
        selector.register(sys.stdin, selectors.EVENT_READ)
        while True:
            for key, _ in selector.select(1.0):
                if key.fileobj is sys.stdin:
                    for sock in streams:
                        sock.close()
                    return {"ended": ended, "bytes": total}
                assert isinstance(key.fileobj, socket.socket)
                try:
                    read = key.fileobj.recv_into(buffer)
                except BlockingIOError:
                    continue
                except OSError:
                    read = 0
                if read == 0:
                    ended += 1
                    selector.unregister(key.fileobj)
                total += read


class Probes:
    """P watchers in a thread of their own, each noting when every resource_version arrives."""

    def __init__(self, url: str, count: int) -> None:
        hostport, _, path = url.removeprefix("http://").partition("/")
        host, port = hostport.split(":")
        self.seen: list[dict[int, float]] = [{} for _ in range(count)]
        self.lines = self.bytes = 0  # the change lines read, and their bytes
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(host, int(port), "/" + path),
                                        daemon=True)  # fmt: skip

    def __enter__(self) -> Probes:
        self._thread.start()
        if not self._ready.wait(60) or self._error is not None:
            raise RuntimeError(f"the probe watchers did not connect: {self._error}")
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def latencies(self, acked: list[float]) -> list[float]:
        """Every probe's milliseconds from ack to arrival, sorted (`since_ack`)."""
        return sorted(ms for seen in self.seen for ms in since_ack(seen, acked))

    def wait_for(self, resource_version: int, timeout: float) -> None:
        """Until every probe saw `resource_version` (the last change), or `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not all(seen and max(seen) >= resource_version
                                                      for seen in self.seen):  # fmt: skip
            time.sleep(0.2)

    def _run(self, host: str, port: int, path: str) -> None:
        try:
            asyncio.run(self._probe(host, port, path))
        except BaseException as exc:  # reported by __enter__ or the results
            self._error = exc
            self._ready.set()

    async def _probe(self, host: str, port: int, path: str) -> None:
        streams = [await open_watch(host, port, path) for _ in self.seen]
        self._ready.set()

        async def read(reader: asyncio.StreamReader, seen: dict[int, float]) -> None:
            while line := await reader.readline():
                now = time.monotonic()
                if b'"BOOKMARK"' in line or b'"ERROR"' in line:
                    continue
                seen.setdefault(json.loads(line)["resourceVersion"], now)
                self.lines += 1
                self.bytes += len(line)

        tasks = [asyncio.ensure_future(read(r, s)) for (r, _), s in zip(streams, self.seen,
                                                                       strict=True)]
        while not self._stop.is_set():
            await asyncio.sleep(0.1)
        for task in tasks:
            task.cancel()
        for _, writer in streams:
            writer.close()


def _wait(url: str, deadline_s: float = 60.0) -> None:
    import requests  # only the bench's set-up uses it

    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        try:
            if requests.get(url, timeout=10).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {deadline_s:.0f} s")


def fan_out(bootstrap: str, serve: Any, watchers: int, probes: int, rate: int,
            seconds: float) -> FanOut:  # fmt: skip
    """One run at `watchers` watchers (`probes` of them timed) and `rate` changes/s.

    Args:
        serve: `bench.http.serving`: a context manager running `metalog serve` of a
            prefix, yielding (base URL, pid).
    """
    topics = fresh_topics(bootstrap)
    count = int(rate * seconds)
    with serve(bootstrap, topics.prefix) as (url, pid):
        base = f"{url}/v1/catalogs/{CATALOG}"
        _wait(base)
        before = rss_kib(pid)
        drained = start_drain(f"{base}/watch", watchers - probes)
        with Probes(f"{base}/watch", probes) as probed, \
                Follower(bootstrap, CATALOG, topics=topics) as follower:  # fmt: skip
            follower.wait_caught_up(30)
            time.sleep(1.0)  # let the server settle with every watcher open
            after = rss_kib(pid)
            visible = _observe(follower)
            result, idle = commit(bootstrap, topics.prefix, rate, seconds)
            follower.wait_for(count, timeout=120)
            probed.wait_for(count, 10)
            visible.stop()
        out, _ = drained.communicate("stop\n", timeout=120)
    watch = probed.latencies(result["acked"])
    lone = sorted(since_ack(visible.seen, result["acked"]))
    return FanOut(watchers, result["achieved"], count, percentile(watch, 0.5),
                  percentile(watch, 0.99), percentile(lone, 0.5), percentile(lone, 0.99),
                  (after - before) / watchers, len(watch),
                  json.loads(out.strip().splitlines()[-1])["ended"],
                  probed.bytes // max(1, probed.lines), idle)  # fmt: skip


class _Observer:
    def __init__(self, follower: Follower) -> None:
        self.seen: dict[int, float] = {}
        self._done = threading.Event()
        self._follower = follower
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        image: Image | None = None
        top = self._follower.current(CATALOG).resource_version
        while not self._done.is_set():
            image = self._follower.next_image(image, 0.5) or image
            now = time.monotonic()
            reached = 0 if image is None else image.resource_version
            for rv in range(top + 1, reached + 1):
                self.seen[rv] = now
            top = max(top, reached)

    def stop(self) -> None:
        self._done.set()
        self._thread.join(30)


def _observe(follower: Follower) -> _Observer:
    """A thread noting when each resource_version becomes visible in `follower`'s image."""
    return _Observer(follower)
