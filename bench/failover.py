"""Leader failover: `kill -9` of the leader → the first command the next one commits.

One catalog of `--tables` tables on a one-partition topic set, its snapshot,
the partition's dedupe windows and mark in a snapshot folder (as a leader's
schedule writes them), and two `metalog leader --snapshot-dir` processes in one group: the
owner and a standby. Each round kills the owner, retries `reload()` until one
is committed (by the standby, which loads the snapshot and the tail when the
group gives it the partition, or with `warm` already holds them), then starts
a new standby and lets it join (and, warm, load the partition).

Each takeover's phases come from the new owner's log line ("taken over in").

Run: `python -m bench.failover --tables 1000 1000000 --kills 10 --modes cold warm
--state-dir DIR` (alone on the machine); it starts its own broker unless
`--bootstrap`. With `--state-dir` the broker's data, the logs and snapshots it
builds are kept there and reused by the next run (a 1M-table log takes minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.apply import CATALOG
from bench.leader_load import percentile
from bench.ports import free_port_pair
from bench.workload import Workload, produce
from events.codec import encode_event
from events.topics import Topics
from metalog.stack import broker as stack
from metalog.stack.config import StackConfig
from producers.client.client import MetadataClient
from producers.errors import CommandOutcomeUnknown, LeaderUnavailable, NotLeader
from producers.leader.log import read_partition
from producers.leader.restart import LOOKBACK, read_dedupe, write_dedupe
from projector.kafka.topics import create_metalog_topics
from projector.snapshot.store import (
    PartitionMark,
    Position,
    load_newest,
    read_partition_mark,
    write_partition_mark,
    write_snapshot,
)

PORTS = (19860, 19862, 19864)
JOIN_WAIT_S = 8.0
"""A new standby joins the group (cooperative: the owner keeps its partition) within this."""
WARM_WAIT_S = 300.0
"""A warm standby loads the partition within this (1M tables: seconds)."""
PHASES = ("open", "snapshots", "log", "init", "wait_init", "tail", "elected")
"""A takeover's phases in seconds: `open` in all; loading the snapshots; reading the log after
them; `init_transactions` in all, and how long the owner waited for it once loaded; reading the
last tail; committing `LeaderElected`."""
_REBUILT = re.compile(r"rebuilt in ([\d.]+) s \((\w+)\): snapshots ([\d.]+) s, log from offset "
                      r"\d+ ([\d.]+) s, waiting for init_transactions ([\d.]+) s \(([\d.]+) s "
                      r"in all\), last tail (\d+) offsets ([\d.]+) s")
_TAKEN = re.compile(r"taken over in ([\d.]+) s \(LeaderElected committed in ([\d.]+) s\)")


def _leader(bootstrap: str, topics: Topics, snapshots: Path, session_ms: int,
            log: Path, warm: bool) -> subprocess.Popen[bytes]:  # fmt: skip
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "metalog.cli", "leader", "--bootstrap", bootstrap,
             "--prefix", topics.prefix, "--leader-id", log.stem, "--snapshot-dir",
             str(snapshots), "--session-timeout-ms", str(session_ms),
             *(["--warm-standby"] if warm else [])],
            stdout=subprocess.DEVNULL, stderr=out,
        )  # fmt: skip


def _wait_for(log: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise SystemExit(f"{log}: no '{text}' within {timeout:.0f} s")
        time.sleep(0.2)


def _committed(client: MetadataClient) -> float:
    """Retry `reload()` until one commits; the time it was acknowledged."""
    while True:
        try:
            client.reload(timeout=2.0)
            return time.perf_counter()
        except (CommandOutcomeUnknown, LeaderUnavailable, NotLeader):
            continue


def _phases(log: Path) -> dict[str, float]:
    """The takeover's phases, from the new owner's log lines (`rebuild.take_over`, `open`)."""
    text = log.read_text(errors="replace")
    rebuilt, taken = _REBUILT.search(text), _TAKEN.search(text)
    if rebuilt is None or taken is None:
        return {}
    _, _mode, snapshots, read, waiting, init, tail, tail_s = rebuilt.groups()
    return {"open": float(taken[1]), "snapshots": float(snapshots), "log": float(read),
            "wait_init": float(waiting), "init": float(init), "tail_offsets": float(tail),
            "tail": float(tail_s), "elected": float(taken[2])}  # fmt: skip


def prepared(bootstrap: str, tables: int, state: Path) -> tuple[Topics, Path]:
    """The catalog's log and its snapshot folder: built once per size in `state`."""
    record = state / f"prepared-{tables}.json"
    snapshots = state / f"snapshots-{tables}"
    if record.exists():
        topics = Topics(json.loads(record.read_text())["prefix"])
    else:
        topics = _log_and_snapshot(bootstrap, tables, snapshots)
        record.write_text(json.dumps({"prefix": topics.prefix}))
    mark = read_partition_mark(snapshots, topics.events, 0)
    if mark is None or read_dedupe(snapshots, topics.events, 0, mark.position.next_offset) is None:
        _mark(bootstrap, topics, snapshots)
    return topics, snapshots


def _log_and_snapshot(bootstrap: str, tables: int, snapshots: Path) -> Topics:
    """`bench.follower.load_log`'s log, and its image's snapshot at the log's end.

    The image is the one the generator folded while writing: no second pass.
    """
    topics = Topics(f"bfol{uuid.uuid4().hex[:8]}")
    create_metalog_topics(bootstrap, topics.prefix, 1)
    workload = Workload([CATALOG], seed=7, keep_log=False)
    grown = workload.grow(CATALOG, tables, tables + 1)
    records = ((event.catalog, encode_event(event)) for event in grown)
    produce(bootstrap, topics.events, records, 1, str(uuid.uuid4()), per_txn=10_000)
    end = read_partition(bootstrap, topics.events, 0, start=1 << 62).end
    write_snapshot(snapshots, workload.catalogs[CATALOG].image, Position(topics.events, 0, end))
    return topics


def _mark(bootstrap: str, topics: Topics, snapshots: Path) -> None:
    """The partition's dedupe windows and mark, as a leader writes them after its snapshots."""
    found = load_newest(snapshots, CATALOG)
    assert found is not None, f"no snapshot in {snapshots}"
    image, position = found
    start = max(0, position.next_offset - LOOKBACK)
    read = read_partition(bootstrap, topics.events, 0, start, {CATALOG: image.resource_version})
    window = [(seen.command_id, (seen.resource_version, seen.tables, seen.schema_epoch))
              for seen in read.covered]  # fmt: skip
    write_dedupe(snapshots, topics.events, 0, position.next_offset, {CATALOG: window})
    write_partition_mark(snapshots, PartitionMark(position, (CATALOG,)))


def failovers(bootstrap: str, tables: int, kills: int, session_ms: int, warm: bool,
              state: Path) -> tuple[list[float], list[dict[str, float]]]:  # fmt: skip
    """Seconds from each kill to the next committed command, and each takeover's phases."""
    topics, snapshots = prepared(bootstrap, tables, state)
    with tempfile.TemporaryDirectory(prefix="metalog-bench-failover-") as tmp:
        logs = Path(tmp)
        n = 0
        owner = _leader(bootstrap, topics, snapshots, session_ms, logs / "L0.log", warm)
        took: list[float] = []
        phases: list[dict[str, float]] = []
        with MetadataClient(bootstrap, catalog=CATALOG, actor="bench", topics=topics) as client:
            _committed(client)  # the first owner serves
            try:
                for _ in range(kills):
                    n += 1
                    log = logs / f"L{n}.log"
                    standby = _leader(bootstrap, topics, snapshots, session_ms, log, warm)
                    time.sleep(JOIN_WAIT_S)
                    if warm:
                        _wait_for(log, "standby: partition 0 warm", WARM_WAIT_S)
                    _committed(client)
                    owner.kill()
                    owner.wait()
                    killed = time.perf_counter()
                    took.append(_committed(client) - killed)
                    owner = standby
                    phases.append(_phases(log))
                    print(f"  {tables:,} tables {'warm' if warm else 'cold'}: failover "
                          f"{took[-1]:.2f} s {phases[-1]}", flush=True)  # fmt: skip
            finally:
                owner.kill()
                owner.wait()
    return took, phases


def main() -> None:
    """Measure each size and mode; print a row for each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--modes", nargs="+", choices=["cold", "warm"], default=["cold"])
    parser.add_argument("--session-timeout-ms", type=int, default=6_000)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--state-dir", type=Path, default=None,
                        help="keep (and reuse) the broker's data, logs and snapshots here")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}", flush=True)

    def run(bootstrap: str, state: Path) -> None:
        for tables in args.tables:
            for mode in args.modes:
                took, phases = failovers(bootstrap, tables, args.kills, args.session_timeout_ms,
                                         mode == "warm", state)  # fmt: skip
                took.sort()
                mean = {k: sum(p.get(k, 0.0) for p in phases) / len(phases) for k in PHASES}
                print(f"| {tables:,} tables | {mode} | {len(took)} kills "
                      f"| p50 {percentile(took, 0.5):.2f} s | p99 {percentile(took, 0.99):.2f} s "
                      f"| max {took[-1]:.2f} s | session timeout "
                      f"{args.session_timeout_ms / 1000:.0f} s | takeover phases (mean s) "
                      f"{ {k: round(v, 2) for k, v in mean.items()} } |", flush=True)  # fmt: skip

    if args.bootstrap:
        state = args.state_dir or Path(tempfile.mkdtemp(prefix="metalog-bench-failover-"))
        run(args.bootstrap, state)
    else:
        with tempfile.TemporaryDirectory(prefix="metalog-bench-failover-broker-") as tmp:
            state = args.state_dir or Path(tmp)
            state.mkdir(parents=True, exist_ok=True)
            port_file = state / "port"
            port = int(port_file.read_text()) if port_file.exists() else free_port_pair(PORTS)
            port_file.write_text(str(port))
            config = StackConfig(state_dir=state / "broker", port=port, controller_port=port + 1)
            stack.up(config)
            try:
                run(config.bootstrap, state)
            finally:
                stack.down(config)
    print(f"load average after: {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
