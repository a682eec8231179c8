"""Domain core benchmark: apply throughput vs the codec's decode rate, and memory per table.

Run: `.venv/bin/python -m bench.apply` (defaults: 1,000,000 events over
100,000 tables). Events are generated once, in memory, before timing: table
creates (8 columns drawn from a pool of common column definitions), then a
mix of alters (set an option), renames and attribute sets, each checked and
written exactly as `producers.decide` would (same keys, requirements,
versions). Hashes are placeholders: apply checks the chain link
(`prev_hash == last hash`), not the digest.
"""

import argparse
import gc
import random
import time
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime

from events.changes import KeyAbsent, KeyAtVersion, Mutation, MutationOp, Requirement
from events.codec import decode_event, encode_event
from events.event import Event
from events.intents import AttributesSet, ChangeIntent, TableAltered, TableCreated, TableRenamed
from events.keys import (
    datanode_table_key,
    label_rule_key,
    table_info_key,
    table_name_key,
    table_route_key,
)
from events.values import (
    Column,
    DatanodeTableValue,
    KeyValue,
    Label,
    RegionRoute,
    TableInfoValue,
    TableNameValue,
    TableRouteValue,
    TableVersion,
)
from projector.apply import replay
from projector.image import Image
from projector.labels import label_rule, rule_id, table_rule_ranges

CATALOG = "bench"
SCHEMAS = ("public", "sales", "ops", "analytics")
_POOL = (
    ("id", "bigint"), ("tenant_id", "bigint"), ("created_at", "timestamp"),
    ("updated_at", "timestamp"), ("deleted_at", "timestamp"), ("name", "varchar(255)"),
    ("email", "varchar(255)"), ("status", "varchar(32)"), ("amount", "decimal(18,2)"),
    ("currency", "char(3)"), ("payload", "json"), ("host", "varchar(64)"),
    ("region", "varchar(32)"), ("cpu", "double"), ("memory", "double"), ("ts", "timestamp"),
    ("user_id", "bigint"), ("order_id", "bigint"), ("quantity", "int"), ("price", "decimal(12,2)"),
)  # fmt: skip
_AT = datetime(2026, 1, 1, tzinfo=UTC)


class Generator:
    """Builds a consistent log: every event fits the state the previous ones leave."""

    def __init__(self, tables: int, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.tables = tables
        self.rv = 0
        self.infos: list[TableInfoValue] = []

    def events(self, count: int) -> Iterator[Event]:
        """`tables` creates, then random alters, renames and attribute sets up to `count`."""
        for table_id in range(1, self.tables + 1):
            yield self._create(table_id)
        for _ in range(count - self.tables):
            table = self.rng.randrange(self.tables)
            roll = self.rng.random()
            if roll < 0.45:
                yield self._alter(table)
            elif roll < 0.7:
                yield self._rename(table)
            else:
                yield self._attributes(table)

    def _event(
        self,
        intent: ChangeIntent,
        info: TableInfoValue,
        requirements: tuple[Requirement, ...],
        mutations: list[tuple[str, KeyValue | None]],
    ) -> Event:
        self.rv += 1
        return Event(
            event_id=f"ev-{self.rv}",
            catalog=CATALOG,
            resource_version=self.rv,
            leader_epoch=0,
            schema_epoch=self.rv,  # auto mode: every change is the next epoch
            command_id=f"cmd-{self.rv}",
            actor="bench",
            occurred_at=_AT,
            tables=(TableVersion(table_id=info.table_id, version=info.version),),
            intent=intent,
            requirements=requirements,
            mutations=tuple(
                Mutation(key=k, op=MutationOp.PUT if v is not None else MutationOp.DELETE, value=v)
                for k, v in mutations
            ),
            prev_hash=(self.rv - 1).to_bytes(32, "big"),
            hash=self.rv.to_bytes(32, "big"),
        )

    def _create(self, table_id: int) -> Event:
        schema = SCHEMAS[table_id % len(SCHEMAS)]
        columns = tuple(
            Column(name=n, data_type=t, nullable=n != "id")
            for n, t in [_POOL[0], *self.rng.sample(_POOL[1:], 7)]
        )
        info = TableInfoValue(
            table_id=table_id, catalog=CATALOG, schema_name=schema, table_name=f"t{table_id}",
            columns=columns, primary_key=("id",), version=1,
        )  # fmt: skip
        self.infos.append(info)
        datanode = 1 + table_id % 16
        route = TableRouteValue(
            table_id=table_id,
            region_routes=(RegionRoute(region_id=table_id << 32, leader_datanode=datanode),),
        )
        name = table_name_key(CATALOG, schema, info.table_name)
        return self._event(
            TableCreated(table_id=table_id, schema_name=schema, table_name=info.table_name),
            info,
            (KeyAbsent(key=name), KeyAbsent(key=table_info_key(table_id))),
            [
                (table_info_key(table_id), info),
                (name, TableNameValue(table_id=table_id)),
                (table_route_key(table_id), route),
                (
                    datanode_table_key(datanode, table_id),
                    DatanodeTableValue(
                        datanode_id=datanode, table_id=table_id, regions=(0,), version=1
                    ),
                ),
            ],
        )

    def _bump(self, index: int, **update: object) -> tuple[TableInfoValue, TableInfoValue]:
        old = self.infos[index]
        new = old.model_copy(update={**update, "version": old.version + 1})
        self.infos[index] = new
        return old, new

    def _alter(self, index: int) -> Event:
        options = {"ttl": f"{self.rng.randrange(1, 90)}d"}
        old, new = self._bump(index, options=options)
        return self._event(
            TableAltered(table_id=old.table_id, set_options=options),
            new,
            (KeyAtVersion(key=table_info_key(old.table_id), version=old.version),),
            [(table_info_key(old.table_id), new)],
        )

    def _rename(self, index: int) -> Event:
        new_name = f"t{self.infos[index].table_id}_v{self.infos[index].version + 1}"
        old, new = self._bump(index, table_name=new_name)
        old_key = table_name_key(CATALOG, old.schema_name, old.table_name)
        new_key = table_name_key(CATALOG, old.schema_name, new_name)
        return self._event(
            TableRenamed(
                table_id=old.table_id,
                schema_name=old.schema_name,
                old_table_name=old.table_name,
                new_table_name=new_name,
            ),
            new,
            (
                KeyAtVersion(key=table_info_key(old.table_id), version=old.version),
                KeyAbsent(key=new_key),
            ),
            [
                (old_key, None),
                (new_key, TableNameValue(table_id=old.table_id)),
                (table_info_key(old.table_id), new),
            ],
        )

    def _attributes(self, index: int) -> Event:
        old, new = self._bump(index)
        labels = (Label(key="merge_option", value=self.rng.choice(("allow", "deny"))),)
        # Rule ids hold names; the bench keeps rules keyed by the create-time name.
        rule = rule_id(old.schema_name, f"t{old.table_id}")
        return self._event(
            AttributesSet(rule_id=rule, table_id=old.table_id, labels=labels),
            new,
            (KeyAtVersion(key=table_info_key(old.table_id), version=old.version),),
            [
                (table_info_key(old.table_id), new),
                (label_rule_key(rule), label_rule(rule, labels, table_rule_ranges(new))),
            ],
        )


def throughput(events: int, tables: int, sample: int, chunks: int = 200) -> dict[str, float]:
    """Apply rate over the whole log and decode rate over an evenly spread sample.

    The two are timed in alternating chunks (apply a slice of the log, decode
    the sample's share of it), so load from other processes hits both alike.
    """
    started = time.perf_counter()
    log = list(Generator(tables).events(events))
    generated = time.perf_counter() - started
    stride = max(1, events // sample)
    encoded = [encode_event(e) for e in log[::stride]]
    gc.collect()
    gc.freeze()  # the log is long-lived; keep the collector from rescanning it
    image = Image.empty(CATALOG)
    applied = decoded = 0.0
    step, share = -(-events // chunks), -(-len(encoded) // chunks)
    for chunk in range(chunks):
        started = time.perf_counter()
        image = replay(image, log[chunk * step : (chunk + 1) * step])
        applied += time.perf_counter() - started
        started = time.perf_counter()
        for data in encoded[chunk * share : (chunk + 1) * share]:
            decode_event(data)
        decoded += time.perf_counter() - started
    assert image.resource_version == events and len(image.head.values) >= 4 * tables
    return {
        "generate_s": generated,
        "apply_s": applied,
        "apply_per_s": events / applied,
        "decode_per_s": len(encoded) / decoded,
        "decode_sample": len(encoded),
        "bytes_per_event": sum(map(len, encoded)) / len(encoded),
    }


def memory_per_table(tables: int) -> float:
    """Bytes traced per table of an image holding `tables` creates (8 columns each)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    image = replay(Image.empty(CATALOG), Generator(tables, seed=11).events(tables))
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert len(image.head.values) == 4 * tables
    return used / tables


def main() -> None:
    """Print the numbers as the BENCHMARKS.md rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--tables", type=int, default=100_000)
    parser.add_argument("--sample", type=int, default=50_000, help="events decoded")
    args = parser.parse_args()
    per_table = memory_per_table(args.tables)
    result = throughput(args.events, args.tables, args.sample)
    ratio = result["apply_per_s"] / result["decode_per_s"]
    print(f"| events applied | {args.events:,} over {args.tables:,} tables |")
    print(f"| generate (excluded) | {result['generate_s']:.1f} s |")
    print(f"| apply | {result['apply_per_s']:,.0f} events/s ({result['apply_s']:.1f} s) |")
    print(
        f"| decode (events.codec.decode_event, {result['decode_sample']:,} evenly spread events, "
        "timed interleaved with apply,"
        f" {result['bytes_per_event']:.0f} B avg) | {result['decode_per_s']:,.0f} events/s |"
    )
    print(f"| apply / decode | {ratio:.2f}x (target >= 2x) |")
    print(f"| image memory per table (8 columns) | {per_table:,.0f} B (target <= 2048) |")


if __name__ == "__main__":
    main()
