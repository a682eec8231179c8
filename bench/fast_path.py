"""Where one alter's time goes in-process: decide, seal (fast and reference), apply.

Run: `.venv/bin/python -m bench.fast_path` (defaults: 200 tables, 2,000 alters,
min of 5 rounds). The image is grown by `bench.workload.Workload.grow`; each
alter sets a `ttl` option of one of its tables, as `bench.leader`'s clients do.
Every part is timed over the same alters, each round alternating the parts, and
the best round's CPU time (this process's) is kept: load from other processes only
ever adds time:

- `decide`: `producers.decide.core.decide_record` (rules, event, seal, size);
- `seal`: `events.chain.seal_record` of the decided (unsealed) events;
- `seal_reference`: `events.chain.seal_record_reference`, the Avro-dict path;
- `apply`: `projector.fold.apply.apply` of the sealed events, one after the other;
- `restore`: `LocalCatalog.restore` of the same events, then its image (a leader's
  rebuild: the events folded as one run, `projector.fold.running.Running`);
- `serve`: the leader's Python per command, from the command's record: decoded, then
  decided in batches of `--batch` (`PartitionOwner.decide`, as `serve` calls it:
  stamp, decide, seal, apply, dedupe, reply encoded); no Kafka client is made.

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
from events.codec import decode_command, encode_command
from events.commands import AlterTable
from events.event import Event
from events.topics import Topics
from producers.decide.core import Stamp, decide_record
from producers.leader.committer import Batch, Input
from producers.leader.local import LocalCatalog
from producers.leader.options import LeaderOptions
from producers.leader.owner import PartitionOwner
from projector.fold.apply import apply
from projector.fold.image import Image

CATALOG = "bench"
PARTS = ("decide", "seal", "seal_reference", "apply", "restore", "serve")


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
                   table_name=f"t{1 + n % tables}", set_options={"ttl": f"{n % 90}d"},
                   reply_to="bench-client")
        for n in range(count)
    ]  # fmt: skip


def parts(
    image: Image, commands: list[AlterTable], size: int = 64
) -> dict[str, Callable[[], object]]:
    """One function per part, each over every command (`serve` in batches of `size`)."""
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

    def restore() -> None:
        catalog = LocalCatalog(CATALOG, lambda: stamps[0], keep_log=False)
        catalog.reset(image)
        for s in sealed:
            catalog.restore(s.event)
        assert catalog.image.resource_version == sealed[-1].event.resource_version

    return {"decide": decide, "seal": seal, "seal_reference": seal_reference, "apply": fold,
            "restore": restore, "serve": serving(image, commands, size)}  # fmt: skip


def serving(image: Image, commands: list[AlterTable], size: int = 64) -> Callable[[], object]:
    """The `serve` part: a leader's owner (never opened: no Kafka) serving the records in
    batches of `size` (about what 64 clients in a closed loop give)."""
    records = [encode_command(command) for command in commands]
    owner = PartitionOwner("127.0.0.1:1", Topics(), 0, "bench-leader", LeaderOptions())
    owner.close()  # its commit thread is not needed: batches are only built
    catalog = owner.catalogs[CATALOG] = owner._catalog(CATALOG)

    def serve() -> int:
        catalog.reset(image)  # every round decides the same commands on the same image
        written = 0
        for at in range(0, len(records), size):
            batch, inputs = Batch(at + size), []
            for value in records[at : at + size]:  # as `Input.read` reads them
                command = decode_command(value)
                inputs.append(Input(command, reply_to=command.reply_to,
                                    command_id=command.command_id))  # fmt: skip
            for item in inputs:  # as `PartitionOwner.serve` decides a batch
                owner.decide(batch, item)
            written += len(batch.records)
        assert written == 2 * len(records), "an event and a reply per command"
        return written

    return serve


def best_us(runs: dict[str, Callable[[], object]], count: int, rounds: int) -> dict[str, float]:
    """Microseconds of CPU per alter of each part (this process's): the best of `rounds`."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for name, run in runs.items():
            started = time.process_time()
            run()
            best[name] = min(best[name], (time.process_time() - started) / count * 1e6)
    return best


def main() -> None:
    """Print µs per alter of each part."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument("--alters", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64, help="commands per batch (serve)")
    parser.add_argument("--part", choices=PARTS, action="append", help="only these parts")
    parser.add_argument("--counted", action="store_true",
                        help="run each part once warm, then once inside reduce (callgrind)")
    args = parser.parse_args()
    image = grown(args.tables)
    runs = parts(image, alters(args.tables, args.alters), args.batch)
    chosen = {name: runs[name] for name in args.part or PARTS}
    if args.counted:
        for run in chosen.values():
            run()
            functools.reduce(lambda _, part: part(), [run], None)  # what callgrind counts
        return
    for name, us in best_us(chosen, args.alters, args.rounds).items():
        print(f"{name:15} {us:8.1f} µs CPU per alter")


if __name__ == "__main__":
    main()
