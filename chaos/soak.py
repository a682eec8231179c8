"""The soak: a steady command rate for a long time, the processes' resources sampled.

`python -m chaos.soak --minutes N [--rate 200]` starts three brokers (no
proxies, no faults), one `metalog leader` process, a `metalog project`
process (the Spark projection, unless `--no-projection`) and a load process
of `--clients` clients sending `--rate` alters per second in all (a command
of unknown outcome is counted, not retried); this process follows the
catalog with a `Follower`. Each minute it samples the resident memory, open
file descriptors and threads of every process (the brokers, the leader, the
projection's driver and JVM, the load, itself) from /proc; at the end it fits
a line to each series (the slope per hour, over the whole run and over its
second half, after warm-up) and checks that the follower equals the fold of
the log and the projection's tables equal the follower. It writes
`soak.json` in `--out`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chaos import cluster
from chaos.cluster import Layout
from events.topics import Topics
from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import MetalogError
from producers.leader.log import read_events
from projector.fold.apply import replay
from projector.fold.image import Image
from projector.follower.follower import Follower

CATALOG = "soak"
TABLES = 100
CLIENTS = 32
"""Enough closed-loop clients for 200 commands/s at a 3-broker cluster's ~60 ms per command."""
COLUMNS = (Column(name="id", data_type="int64"),)


def sample(pid: int) -> dict[str, int] | None:
    """Resident memory (KiB), open file descriptors and threads of a process (None: gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {"rss_kib": int(fields["VmRSS"].split()[0]), "fds": fds,
            "threads": int(fields["Threads"])}  # fmt: skip


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float:
    """The least-squares slope of (minute, value) points, per hour (0 with fewer than 2)."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((x - mx) ** 2 for x, _ in points)
    return 0.0 if var == 0 else 60.0 * sum((x - mx) * (y - my) for x, y in points) / var


def load(bootstrap: str, prefix: str, rate: float, seconds: float,
         clients: int = CLIENTS) -> dict[str, int]:
    """Send `rate` alters per second for `seconds` from `clients` threads; the outcome counts."""
    topics = Topics(prefix)
    counts: dict[str, int] = {}
    lock = threading.Lock()
    with MetadataClient(bootstrap, catalog=CATALOG, actor="soak", topics=topics,
                        timeout=30.0) as client:  # fmt: skip
        for t in range(TABLES):
            with contextlib.suppress(MetalogError):  # NameTaken on a rerun
                client.create_table("public", f"t{t}", COLUMNS)
    started = time.monotonic()

    def work(i: int) -> None:
        every = clients / rate
        with MetadataClient(bootstrap, catalog=CATALOG, actor=f"soak{i}", topics=topics,
                            timeout=30.0) as client:  # fmt: skip
            k = 0
            # Paced to the schedule; behind it, as fast as it goes (the achieved rate is
            # reported); it stops at the end of `seconds`, not when the schedule is done.
            while (now := time.monotonic()) < started + seconds:
                due = started + k * every + i * every / clients
                time.sleep(max(0.0, due - now))
                table = f"t{(k * clients + i) % TABLES}"
                try:
                    client.alter_table("public", table, set_options={"k": str(k % 1000)})
                    outcome = "ok"
                except MetalogError as exc:
                    outcome = type(exc).__name__
                with lock:
                    counts[outcome] = counts.get(outcome, 0) + 1
                k += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {**counts, "seconds": round(time.monotonic() - started)}


def soak(out: Path, minutes: float, rate: float, base_port: int, clients: int = CLIENTS,
         projection: bool = True) -> dict[str, Any]:
    """Run the soak; see the module docstring."""
    out.mkdir(parents=True, exist_ok=True)
    layout = Layout(out / "cluster", base=base_port, prefix="soak")
    topics = Topics(layout.prefix)
    cluster.up(layout, None)
    leader_log = (out / "leader.log").open("ab")
    leader = subprocess.Popen(
        [sys.executable, "-m", "metalog.cli", "leader", "--bootstrap", layout.direct,
         "--prefix", layout.prefix], stdout=subprocess.DEVNULL, stderr=leader_log,
    )  # fmt: skip
    loader = subprocess.Popen(
        [sys.executable, "-m", "chaos.soak", "--load", "--bootstrap", layout.direct,
         "--prefix", layout.prefix, "--rate", str(rate), "--minutes", str(minutes),
         "--clients", str(clients)],
        stdout=subprocess.PIPE, stderr=(out / "load.log").open("ab"),
    )  # fmt: skip
    projector: subprocess.Popen[bytes] | None = None
    if projection:  # it reads Delta tables (the `[spark]` extra); `--no-projection` needs none
        from chaos import soak_projection

        projector = soak_projection.start(out, layout.direct, layout.prefix)
    samples: list[dict[str, Any]] = []
    tables: dict[str, Any] | None = None
    try:
        with Follower(layout.direct, CATALOG, topics=topics) as follower:
            began = time.monotonic()
            pids = {**cluster.broker_pids(layout), "leader": leader.pid, "load": loader.pid,
                    "follower": os.getpid()}  # fmt: skip
            if projector is not None:
                pids["projection"] = projector.pid
            while loader.poll() is None:
                minute = (time.monotonic() - began) / 60.0
                if projector is not None and "projection_jvm" not in pids:
                    jvm = soak_projection.jvm_pid(projector.pid)
                    if jvm is not None:
                        pids["projection_jvm"] = jvm
                row: dict[str, Any] = {"minute": round(minute, 2),
                                       "resource_version": follower.current().resource_version}
                for name, pid in pids.items():
                    row[name] = sample(pid)
                samples.append(row)
                (out / "samples.json").write_text(json.dumps(samples))
                _wait(loader, 60.0)
            counts = json.loads(loader.stdout.read() if loader.stdout else "{}")
            events = read_events(layout.direct, topics.events, _partition(follower))
            events = [e for e in events if e.catalog == CATALOG]
            equal = (follower.wait_caught_up(timeout=60.0)
                     and follower.current() == replay(Image.empty(CATALOG), events))  # fmt: skip
            if projector is not None:
                tables = soak_projection.tables_equal(out / "tables", follower.current())
    finally:
        if projector is not None:
            projector.terminate()
            _wait(projector, 60.0)
            if projector.poll() is None:
                projector.kill()
        leader.terminate()
        leader.wait(timeout=60.0)
        if loader.poll() is None:
            loader.kill()
        for n in range(1, cluster.BROKERS + 1):
            cluster.kill_broker(layout, n)
        shutil.rmtree(layout.state_dir, ignore_errors=True)
    report = {"minutes": minutes, "rate": rate, "commands": counts, "log_events": len(events),
              "follower_equals_log": equal, "tables_equal_follower": tables,
              "slopes_per_hour": _slopes(samples),
              "last": samples[-1] if samples else None}  # fmt: skip
    (out / "soak.json").write_text(json.dumps(report, indent=2))
    return report


def _wait(process: subprocess.Popen[bytes], seconds: float) -> None:
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=seconds)


def _partition(follower: Follower) -> int:
    return follower.published()[CATALOG].partition


def _slopes(samples: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per process and measure: the slope per hour over all samples and over the second half."""
    names = sorted({k for s in samples for k in s} - {"minute", "resource_version"})
    found: dict[str, dict[str, dict[str, float]]] = {}
    for name in names:
        for measure in ("rss_kib", "fds", "threads"):
            points = [(s["minute"], float(s[name][measure])) for s in samples if s.get(name)]
            half = points[len(points) // 2:]
            found.setdefault(name, {})[measure] = {
                "first": points[0][1] if points else 0.0,
                "last": points[-1][1] if points else 0.0,
                "all": round(slope_per_hour(points), 1),
                "second_half": round(slope_per_hour(half), 1),
            }  # fmt: skip
    return found


def main(argv: list[str] | None = None) -> int:
    """`python -m chaos.soak`: see the module docstring."""
    parser = argparse.ArgumentParser(prog="python -m chaos.soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=200.0, help="commands per second")
    parser.add_argument("--out", type=Path, default=Path(".metalog") / "soak")
    parser.add_argument("--base-port", type=int, default=29300)
    parser.add_argument("--clients", type=int, default=CLIENTS,
                        help="closed-loop clients sharing the rate (default: %(default)s)")
    parser.add_argument("--no-projection", action="store_true",
                        help="without the Spark projection (`metalog project`)")
    parser.add_argument("--load", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.load:
        print(json.dumps(load(args.bootstrap, args.prefix, args.rate, args.minutes * 60.0,
                              args.clients)))
        return 0
    report = soak(args.out.absolute(), args.minutes, args.rate, args.base_port, args.clients,
                  projection=not args.no_projection)
    print(json.dumps(report, indent=2))
    tables = report["tables_equal_follower"]
    return 0 if report["follower_equals_log"] and (tables is None or tables["equal"]) else 1


if __name__ == "__main__":
    sys.exit(main())
