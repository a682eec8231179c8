"""`metalog serve` against the Python client and a lone follower, in one run (issue 45).

Why: a service in another language writes and watches through `metalog serve`
instead of `MetadataClient` and `Follower`. This measures what the HTTP hop
costs, against the targets of issue 45:

- commands: closed-loop clients at each `--clients` count, each altering its own
  table with `expected_version` (every command is accepted), first through one
  shared `MetadataClient` in this process, then as HTTP POSTs (one keep-alive
  `http.client` connection per client thread) to a `metalog serve` process,
  whose own shared client sends them: throughput ≥ 0.8x the Python client's,
  p50 overhead ≤ 1 ms at 1 client;
- floor (`bench.http_floor`): the same POSTs at the same counts against the HTTP
  stack alone (the server's uvicorn settings and request model, a fixed answer,
  no Kafka), then against a bare ASGI function on the same uvicorn: what the
  stack costs on this machine before any command is sent;
- watch fan-out (`bench.http_watch`): `--watchers` HTTP watchers of one
  catalog while changes are committed at `--rate`/s: propagation p99 ≤ 2x a
  lone follower's in the same run, and the server's memory per watcher; then the
  same streams of the same commits from a bare asyncio server that follows them
  with metalog's follower (`bench.http_watch_floor`): the design's floor here.

How: ``python -m bench.http`` starts its own broker (a temporary state
directory, fixed bench ports), a ``metalog leader`` process and ``metalog
serve`` processes on a fixed free loopback port, and prints a markdown table
for BENCHMARKS.md. ``--bootstrap`` uses a running broker instead (fresh topics
each phase). The full run takes a few minutes of a quiet 2-core machine; a
short check: ``--clients 1 4 --seconds 2 --warmup 1 --watchers 10 --probes 2
--rate 100 --watch-seconds 2``. docs/benchmarks/http.md has the method.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.apply import CATALOG
from bench.http_watch import FanOut, drain, fan_out, fresh_topics
from bench.http_watch_floor import floor_fan_out
from bench.leader_load import Op, Result, closed_loop, log
from bench.ports import broker, free_port_pair
from events.topics import Topics
from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import CommandOutcomeUnknown, LeaderUnavailable

KAFKA_PORTS = (19392, 19492, 19592)
HTTP_PORTS = (18640, 18650, 18660)
"""Where `metalog serve` listens (the first free one): fixed, never random."""
SCHEMA = "public"
COLUMNS = (Column(name="id", data_type="int64"), Column(name="value", data_type="float64"))
REPO = Path(__file__).resolve().parents[1]


def _metalog(*args: str, out: Any, err: Any = subprocess.STDOUT) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "metalog.cli", *args], cwd=REPO, text=True,
                            stdout=out, stderr=err)  # fmt: skip


@contextmanager
def serving(bootstrap: str, prefix: str) -> Iterator[tuple[str, int]]:
    """`metalog serve` of catalog `bench` on `prefix`'s topics: yields (base URL, its pid)."""
    port = free_port_pair(HTTP_PORTS)
    with tempfile.TemporaryFile("w+") as err:
        server = _metalog("serve", "--bootstrap", bootstrap, "--prefix", prefix, "--catalog",
                          CATALOG, "--port", str(port), out=subprocess.PIPE, err=err)  # fmt: skip
        try:
            assert server.stdout is not None
            first = server.stdout.readline()
            if not first.startswith("metalog serve: listening on "):
                server.wait(60)
                err.seek(0)
                raise SystemExit(f"metalog serve did not start: {err.read()[-2000:]}")
            yield first.split()[4], server.pid
        finally:
            server.terminate()
            server.wait(60)


@contextmanager
def leading(bootstrap: str, prefix: str, log_file: Path) -> Iterator[None]:
    """A `metalog leader` process of `prefix`'s topics, as deployed."""
    with log_file.open("a") as out:
        leader = _metalog("leader", "--bootstrap", bootstrap, "--prefix", prefix, out=out)
        try:
            yield
        finally:
            leader.terminate()
            leader.wait(60)


def make_tables(client: MetadataClient, count: int) -> list[int]:
    """Tables t0… (one per client thread); each one's version. Waits for the leader."""
    deadline = time.monotonic() + 90
    first = str(uuid.uuid4())
    while True:
        try:
            client.create_table(SCHEMA, "t0", COLUMNS, command_id=first, timeout=5.0)
            break
        except (CommandOutcomeUnknown, LeaderUnavailable):
            if time.monotonic() > deadline:
                raise SystemExit("the leader did not answer in 90 s") from None
    for i in range(1, count):
        client.create_table(SCHEMA, f"t{i}", COLUMNS)
    return [1] * count


def python_ops(client: MetadataClient, versions: list[int], clients: int) -> list[Op]:
    """One op per thread: `alter_table` of its own table at its version."""

    def op(i: int) -> Op:
        def alter() -> None:
            done = client.alter_table(SCHEMA, f"t{i}", set_options={"n": str(versions[i])},
                                      expected_version=versions[i])  # fmt: skip
            versions[i] = done.tables[0].version

        return alter

    return [op(i) for i in range(clients)]


def http_ops(url: str, versions: list[int], clients: int) -> list[Op]:
    """One op per thread: the same command as a POST on a keep-alive connection of its own."""
    hostport = url.removeprefix("http://")
    path = f"/v1/catalogs/{CATALOG}/commands/AlterTable"

    def op(i: int) -> Op:
        connection = http.client.HTTPConnection(hostport, timeout=60)

        def alter() -> None:
            body = json.dumps({"schema_name": SCHEMA, "table_name": f"t{i}",
                               "set_options": {"n": str(versions[i])},
                               "expected_version": versions[i]})  # fmt: skip
            connection.request("POST", path, body, {"Content-Type": "application/json"})
            answer = connection.getresponse()
            data = answer.read()
            if answer.status != 200:
                raise RuntimeError(f"{answer.status}: {data[:200]!r}")
            versions[i] = json.loads(data)["tables"][0]["version"]

        return alter

    return [op(i) for i in range(clients)]


def commands(bootstrap: str, args: argparse.Namespace, log_file: Path) -> list[Result]:
    """Python client and HTTP, each at every `--clients` count, in one run."""
    prefix = fresh_topics(bootstrap).prefix
    results: list[Result] = []
    with (leading(bootstrap, prefix, log_file),
          MetadataClient(bootstrap, catalog=CATALOG, actor="bench", topics=Topics(prefix),
                         timeout=30.0) as client,
          serving(bootstrap, prefix) as (url, _)):  # fmt: skip
        versions = make_tables(client, max(args.clients))
        log(f"commands: {max(args.clients)} tables; warming up {args.warmup:.0f} s each")
        for clients in args.clients:
            for system, ops in (("python", python_ops(client, versions, clients)),
                                ("http", http_ops(url, versions, clients))):  # fmt: skip
                result = closed_loop(system, ops, args.warmup, args.seconds)
                log(f"{system} x{clients}: {result.rate:.0f}/s, p50 {result.p50_ms:.2f} ms, "
                    f"{result.errors} errors")  # fmt: skip
                results.append(result)
    return results


@contextmanager
def floor_serving(kind: str) -> Iterator[str]:
    """`bench.http_floor`'s `kind` app in a child process: yields its base URL."""
    port = free_port_pair(HTTP_PORTS)
    child = subprocess.Popen([sys.executable, "-m", "bench.http_floor", kind, str(port)],
                             cwd=REPO, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert child.stdout is not None
        if child.stdout.readline().strip() != "ready":
            raise SystemExit(f"bench.http_floor {kind} did not start")
        deadline = time.monotonic() + 30
        while not _listening(port):
            if time.monotonic() > deadline:
                raise SystemExit(f"bench.http_floor {kind} does not listen on {port}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        child.terminate()
        child.wait(60)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def floors(args: argparse.Namespace) -> list[Result]:
    """The same POSTs against the HTTP stack alone (`bench.http_floor`), at each count."""
    results: list[Result] = []
    kinds = ["fastapi", "asgi"]
    if importlib.util.find_spec("granian") is not None:  # the alternative, where installed
        kinds += ["granian-fastapi", "granian-asgi"]
    for kind in kinds:
        with floor_serving(kind) as url:
            for clients in args.clients:
                ops = http_ops(url, [1] * clients, clients)
                result = closed_loop(f"floor-{kind}", ops, args.warmup, args.seconds)
                log(f"floor ({kind}) x{clients}: {result.rate:.0f}/s, p50 {result.p50_ms:.2f} ms")
                results.append(result)
    return results


def report(results: list[Result], fans: list[FanOut]) -> None:
    """The markdown tables for BENCHMARKS.md."""
    if results:
        print("| clients | Python client /s | HTTP /s | HTTP ÷ Python (≥ 0.8) | p50 Python ms "
              "| p50 HTTP ms | p50 overhead ms (≤ 1 at 1 client) | p99 Python / HTTP ms "
              "| errors |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|")
        by = {(r.system, r.clients): r for r in results}
        for clients in sorted({r.clients for r in results if r.system == "http"}):
            py, web = by[("python", clients)], by[("http", clients)]
            print(f"| {clients} | {py.rate:,.0f} | {web.rate:,.0f} | "
                  f"{web.rate / py.rate if py.rate else float('nan'):.2f} | {py.p50_ms:.2f} | "
                  f"{web.p50_ms:.2f} | {web.p50_ms - py.p50_ms:+.2f} | "
                  f"{py.p99_ms:.1f} / {web.p99_ms:.1f} | {py.errors + web.errors} |")
    floor = [r for r in results if r.system.startswith("floor-")]
    if floor:
        print()
        print("| the HTTP stack alone (no Kafka) | clients | POSTs/s | p50 ms | p99 ms |")
        print("|---|---|---|---|---|")
        for r in floor:
            server = "Granian" if "granian" in r.system else "uvicorn (h11)"
            app = "FastAPI route" if r.system.endswith("fastapi") else "a bare ASGI function"
            stack = f"{server} + {app}"
            print(f"| {stack} | {r.clients} | {r.rate:,.0f} | {r.p50_ms:.2f} | {r.p99_ms:.1f} |")
    if fans:
        print()
        print("| watchers | changes/s (achieved) | HTTP watch p50 / p99 ms | lone follower "
              "p50 / p99 ms | p99 ÷ follower's (≤ 2) | bare asyncio fan-out of the follower "
              "p50 / p99 ms | machine idle: HTTP / floor | line bytes | server RSS per "
              "watcher | timed | dropped |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for f in fans:
            print(f"| {f.watchers:,} | {f.rate:,.0f} ({f.changes:,} changes) | "
                  f"{f.watch_p50_ms:.1f} / {f.watch_p99_ms:.1f} | {f.follower_p50_ms:.1f} / "
                  f"{f.follower_p99_ms:.1f} | {f.watch_p99_ms / f.follower_p99_ms:.2f} | "
                  f"{f.floor.p50_ms:.1f} / {f.floor.p99_ms:.1f} | {f.idle:.0%} / "
                  f"{f.floor.idle:.0%} | {f.line_bytes} | {f.rss_per_watcher_kib:.1f} KiB | "
                  f"{f.samples:,} | {f.dropped} |")


def run(bootstrap: str, args: argparse.Namespace, scratch: Path) -> None:
    """The chosen phases, then the tables."""
    results = commands(bootstrap, args, scratch / "leader.log") if "commands" in args.phases \
        else []  # fmt: skip
    if "floor" in args.phases:
        results += floors(args)
    fans = []
    if "watch" in args.phases:
        for watchers in args.watchers:
            log(f"watch: {watchers} watchers at {args.rate}/s for {args.watch_seconds:.0f} s")
            probes = min(args.probes, watchers)
            fan = fan_out(bootstrap, serving, watchers, probes, args.rate, args.watch_seconds)
            log(f"watch floor: {watchers} streams of the same commits, bare asyncio")
            floor = floor_fan_out(free_port_pair(HTTP_PORTS), bootstrap, watchers, probes,
                                  args.rate, args.watch_seconds)  # fmt: skip
            fans.append(replace(fan, floor=floor))
    report(results, fans)


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, start what is needed, print the tables."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.http", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--phases", nargs="+", default=["commands", "floor", "watch"],
                        choices=["commands", "floor", "watch"])  # fmt: skip
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 64],
                        help="closed-loop client counts (default 1 64)")
    parser.add_argument("--seconds", type=float, default=20.0, help="measured window per count")
    parser.add_argument("--warmup", type=float, default=5.0, help="unmeasured seconds first")
    parser.add_argument("--watchers", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--probes", type=int, default=8,
                        help="of the watchers, how many are timed (the rest only read)")
    parser.add_argument("--rate", type=int, default=1000, help="changes/s during the watch")
    parser.add_argument("--watch-seconds", type=float, default=20.0)
    parser.add_argument("--bootstrap", default=None, help="a running broker (default: its own)")
    parser.add_argument("--drain", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.drain:
        print(json.dumps(drain(args.drain[0], int(args.drain[1]))), flush=True)
        return 0
    with (tempfile.TemporaryDirectory(prefix="metalog-bench-http-") as tmp,
          broker(args.bootstrap, KAFKA_PORTS, Path(tmp)) as bootstrap):  # fmt: skip
        run(bootstrap, args, Path(tmp))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", str(REPO))
    sys.exit(main())
