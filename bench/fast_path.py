"""Where one alter's time goes in-process: decide, seal (fast and reference), apply.

Run: `.venv/bin/python -m bench.fast_path` (defaults: 200 tables, 2,000 alters,
min of 5 rounds). The image is grown by `bench.workload.Workload.grow`; each
alter sets a `ttl` option of one of its tables, as `bench.leader`'s clients do.
Every part is timed over the same alters, each round alternating the parts, and
the best round is kept (load from other processes only ever adds time):

- `decide`: `producers.decide.core.decide_record` (rules, event, seal, size);
- `seal`: `events.chain.seal_record` of the decided (unsealed) events;
- `seal_reference`: `events.chain.seal_record_reference`, the Avro-dict path;
- `apply`: `projector.fold.apply.apply` of the sealed events, one after the other.

`--part NAME --counted` runs the part once to warm it, then once inside
`functools.reduce` (which nothing else calls once warm), for instruction counts
of that run alone: `valgrind --tool=callgrind --collect-atstart=no
--toggle-collect=functools_reduce` (docs/benchmarks/fast-path.md).
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from bench.workload import GROW_SCHEMAS, Workload
from events.base import built
from events.chain import Sealed, seal_record, seal_record_reference
from events.commands import AlterTable
from events.event import Event
from producers.decide.core import Stamp, decide_record
from projector.fold.apply import apply
from projector.fold.image import Image

CATALOG = "bench"
PARTS = ("decide", "seal", "seal_reference", "apply")


def grown(tables: int) -> Image:
    """An image of `tables` grown tables (`t1`, …), nothing else changed yet."""
    workload = Workload([CATALOG], 7, keep_log=False)
    for _ in workload.grow(CATALOG, tables, tables + 1):
        pass
    return workload.catalogs[CATALOG].image


def alters(tables: int, count: int) -> list[AlterTable]:
    """`count` alters spread over the grown tables, in turn."""
    return [
        AlterTable(command_id=f"fast-{n}", catalog=CATALOG, actor="bench",
                   schema_name=GROW_SCHEMAS[(1 + n % tables) % len(GROW_SCHEMAS)],
                   table_name=f"t{1 + n % tables}", set_options={"ttl": f"{n % 90}d"})
        for n in range(count)
    ]  # fmt: skip


def parts(image: Image, commands: list[AlterTable]) -> dict[str, Callable[[], object]]:
    """One function per part, each over every command."""
    start = datetime(2026, 1, 2, tzinfo=UTC)
    stamps = [Stamp(f"fast-e{n}", start + timedelta(seconds=n)) for n in range(len(commands))]
    sealed: list[Sealed] = []
    state = image
    for command, stamp in zip(commands, stamps, strict=True):
        outcome = decide_record(state, command, stamp)
        assert isinstance(outcome, Sealed), outcome
        sealed.append(outcome)
        state = apply(state, outcome.event)
    unsealed = [built(Event, {**s.event.__dict__, "hash": b""}) for s in sealed]

    def decide() -> None:
        for command, stamp in zip(commands, stamps, strict=True):
            decide_record(image, command, stamp)

    def seal() -> None:
        for event in unsealed:
            seal_record(event)

    def seal_reference() -> None:
        for event in unsealed:
            seal_record_reference(event)

    def fold() -> None:
        state = image
        for s in sealed:
            state = apply(state, s.event)

    return {"decide": decide, "seal": seal, "seal_reference": seal_reference, "apply": fold}


def best_us(runs: dict[str, Callable[[], object]], count: int, rounds: int) -> dict[str, float]:
    """Microseconds per alter of each part: the best of `rounds` rounds."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            best[name] = min(best[name], (time.perf_counter() - started) / count * 1e6)
    return best


def main() -> None:
    """Print µs per alter of each part."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--alters", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--part", choices=PARTS, action="append", help="only these parts")
    parser.add_argument("--counted", action="store_true",
                        help="run each part once warm, then once inside reduce (callgrind)")
    args = parser.parse_args()
    image = grown(args.tables)
    runs = parts(image, alters(args.tables, args.alters))
    chosen = {name: runs[name] for name in args.part or PARTS}
    if args.counted:
        for run in chosen.values():
            run()
            functools.reduce(lambda _, part: part(), [run], None)  # what callgrind counts
        return
    for name, us in best_us(chosen, args.alters, args.rounds).items():
        print(f"{name:15} {us:8.1f} µs per alter")


if __name__ == "__main__":
    main()
