"""`metalog sql` reads over an N-table catalog: query latency and the relations' start-up.

The catalog is grown once with `bench.workload.Workload.grow` (N creates over four
schemas, then N/5 alters, renames and attribute sets, so about 6 % of the tables
carry a label rule) and written as a follower's snapshot; later runs load that
snapshot (`--snapshot-dir`). Then, as the shell does after a start from a snapshot:

1. **load**: `read_snapshot` (the image, values built lazily on first read);
2. **relations**: each relation the queries use, built the first time a query names
   it (`producers.sql.engine.Engine`), timed one by one;
3. **queries**: each kind `--repeat` times, with a fresh literal each time, through
   the shell's own path (`producers.sql.translate` then `Engine.query`); p50 / p99.

Run: `python -m bench.sql --tables 1000000` (the first run at a size builds its
snapshot: minutes at 1M; `--json` prints the numbers as one JSON object).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.workload import GROW_SCHEMAS, Workload
from producers.sql.engine import Engine
from producers.sql.translate import Read, Settings, translate
from projector.fold.image import Image
from projector.heap import collector_paused
from projector.snapshot.store import Position, list_snapshots, read_snapshot, write_snapshot

CATALOG = "bench-sql"
QUERIES: dict[str, Callable[[random.Random, list[tuple[str, str]]], str]] = {
    "point lookup by name": lambda rng, names: (
        "SELECT table_id, version, columns FROM table_info "
        "WHERE schema_name = '{}' AND table_name = '{}'".format(*rng.choice(names))),
    "REGION_LABEL filtered": lambda rng, names: (
        "SELECT * FROM INFORMATION_SCHEMA.REGION_LABEL "
        f"WHERE RULE_ID LIKE 'schema/{rng.choice(GROW_SCHEMAS)}/t{rng.randrange(1, 10)}%' "
        "AND REGION_LABEL = '\"merge_option=deny\"' LIMIT 20"),
    "join + aggregate": lambda rng, names: (
        "SELECT t.schema_name, count(*) AS tables, count(DISTINCT r.leader_datanode) AS nodes, "
        "max(t.version) AS newest FROM table_info t JOIN table_route r USING (table_id) "
        f"WHERE r.leader_datanode <> {rng.randrange(1, 17)} GROUP BY 1 ORDER BY 1"),
}  # fmt: skip
"""Each query kind: a fresh statement per run (no cache of the engine's can answer it)."""


def snapshot(directory: Path, tables: int, seed: int = 5) -> tuple[Path, float]:
    """The snapshot of the grown catalog of `tables` tables, written on first use.

    Returns:
        Its path, and the seconds spent building it (0 when it was there).
    """
    folder = directory / str(tables)
    found = list_snapshots(folder, CATALOG)
    if found:
        return found[0], 0.0
    start = time.perf_counter()
    with collector_paused():  # the image is acyclic: the collector only rescans it
        work = Workload([CATALOG], seed, keep_log=False)
        for _ in work.grow(CATALOG, tables, tables + tables // 5):
            pass
        image = work.catalogs[CATALOG].image
        path = write_snapshot(folder, image, Position("bench", 0, image.resource_version))
    return path, time.perf_counter() - start


def percentile(samples: list[float], q: float) -> float:
    """The `q` quantile (0 to 1) of `samples`, nearest rank."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(tables: int, directory: Path, repeat: int, seed: int = 1) -> dict[str, Any]:
    """Every measure of the module docstring, as a dict of seconds and counts."""
    path, built = snapshot(directory, tables)
    gc.collect()
    start = time.perf_counter()
    image: Image = read_snapshot(path)[0]
    loaded = time.perf_counter() - start
    gc.freeze()  # as the CLI's follower does (freeze_gc): the image stays out of collections
    engine = Engine(image)
    relation_s = {}
    for name in ("table_name", "table_info", "table_route", "region_label"):
        start = time.perf_counter()
        relation = engine.relation(name)
        relation_s[name] = (time.perf_counter() - start, relation.num_rows)
    rows = engine.relation("table_name").select(["schema_name", "table_name"]).to_pylist()
    names = [(r["schema_name"], r["table_name"]) for r in rows]
    rng = random.Random(seed)
    settings = Settings(catalog=CATALOG)
    latency: dict[str, dict[str, float]] = {}
    for kind, make in QUERIES.items():
        samples, returned = [], 0
        for _ in range(repeat):
            text = make(rng, names)
            start = time.perf_counter()
            [statement] = translate(text, settings)
            assert isinstance(statement, Read)
            result = engine.query(statement.action.sql, statement.action.params)  # type: ignore[union-attr]
            samples.append(time.perf_counter() - start)
            returned += len(result.rows)
        latency[kind] = {"p50_ms": percentile(samples, 0.5) * 1e3,
                         "p99_ms": percentile(samples, 0.99) * 1e3,
                         "mean_ms": statistics.fmean(samples) * 1e3,
                         "rows_per_query": returned / repeat}  # fmt: skip
    # Frozen objects outlive the interpreter's teardown, and DuckDB's bindings then
    # report them as leaks on stderr.
    gc.unfreeze()
    return {
        "tables": tables, "keys": len(image.published.values),
        "label_rules": len(image.published.rules), "snapshot": str(path),
        "snapshot_mb": path.stat().st_size / 1e6, "build_s": built, "load_s": loaded,
        "relations": {n: {"seconds": s, "rows": r} for n, (s, r) in relation_s.items()},
        "relations_s": sum(s for s, _ in relation_s.values()), "queries": latency,
        "repeat": repeat,
    }  # fmt: skip


def report(result: dict[str, Any]) -> str:
    """The result as BENCHMARKS.md's table rows."""
    lines = [
        f"| catalog | {result['tables']:,} tables, {result['keys']:,} keys, "
        f"{result['label_rules']:,} label rules; snapshot {result['snapshot_mb']:.1f} MB |",
    ]
    if result["build_s"]:
        lines.append(f"| grow + write the snapshot (once per size) | {result['build_s']:.1f} s |")
    lines.append(f"| load the snapshot | {result['load_s']:.2f} s |")
    for name, built in result["relations"].items():
        lines.append(f"| build `{name}` on first use | {built['seconds']:.2f} s "
                     f"({built['rows']:,} rows) |")  # fmt: skip
    ready = result["load_s"] + result["relations_s"]
    lines.append(f"| load + the four relations | {ready:.2f} s |")
    for kind, took in result["queries"].items():
        lines.append(f"| {kind} ({result['repeat']} runs, {took['rows_per_query']:.1f} rows) | "
                     f"p50 {took['p50_ms']:.1f} ms, p99 {took['p99_ms']:.1f} ms |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    """Run at `--tables` and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=200, help="runs of each query kind")
    parser.add_argument("--snapshot-dir", type=Path, default=Path(".metalog/bench/sql"),
                        help="where the grown catalogs' snapshots are kept")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    result = run(args.tables, args.snapshot_dir, args.repeat)
    print(json.dumps(result, sort_keys=True) if args.json else report(result))


if __name__ == "__main__":
    main()
