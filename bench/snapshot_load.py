"""Snapshot load alone: `read_snapshot` of one catalog's newest snapshot, in a fresh process.

A cold leader's takeover and a follower's cold start both begin with this
load, in a process that has not loaded one before (no pyarrow warmed up, no
memory the allocator already holds), so each run is a new child. Prints the
wall time, the CPU split (user, system: page faults show in system) and the
peak RSS of each run, with the 1-minute load average beside it.

Run: `python -m bench.snapshot_load DIR [DIR …] --catalog bench --runs 3`
(each DIR a snapshot folder, as `bench.failover --state-dir` leaves
`snapshots-1000000`); the folders take turns, run after run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from projector.snapshot.store import list_snapshots, read_snapshot


def load_once(folder: Path, catalog: str) -> dict[str, float]:
    """(In the child) load the newest snapshot; its seconds, CPU and peak RSS."""
    path = list_snapshots(folder, catalog)[0]
    before, began = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    image, _ = read_snapshot(path)
    took = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {"seconds": took, "user_s": after.ru_utime - before.ru_utime,
            "system_s": after.ru_stime - before.ru_stime, "rss_mb": after.ru_maxrss / 1024,
            "keys": len(image.head), "mb": path.stat().st_size / 1e6}  # fmt: skip


def main() -> None:
    """Load each folder's snapshot `--runs` times, each in a new process; a row per load."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--catalog", default="bench")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(load_once(args.folders[0], args.catalog)))
        return
    print("| snapshot | keys | file | load | user CPU | system CPU | peak RSS | load average |")
    print("|---|---|---|---|---|---|---|---|")
    for _ in range(args.runs):
        for folder in args.folders:
            load = os.getloadavg()[0]
            out = subprocess.run(
                [sys.executable, "-m", "bench.snapshot_load", str(folder), "--catalog",
                 args.catalog, "--child"], capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip
            r = json.loads(out)
            print(f"| {folder} | {r['keys']:,} | {r['mb']:.0f} MB | {r['seconds']:.2f} s "
                  f"| {r['user_s']:.2f} s | {r['system_s']:.2f} s | {r['rss_mb']:,.0f} MB "
                  f"| {load:.1f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
