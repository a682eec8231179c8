"""The seeded workload generator of the tests and benchmarks, and a Kafka producer for its logs.

`Workload` drives catalogs (`LocalCatalog`: decide + apply, no Kafka) with
commands, so every event is one the leader would write: real keys,
requirements, versions and hashes. Two mixes: `random_command` tries every
command kind on a few names (rejections included: the tests' workload), and
`grow` builds a big catalog, table creates then alters, renames and attribute
sets (the apply and follower benchmarks). A seed gives the same events in
every process: nothing here iterates a hash-ordered collection (the image's
`immutables.Map` iterates in an order that depends on `PYTHONHASHSEED`).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from confluent_kafka import Producer

from events.codec import encode_event
from events.commands import (
    AddPartition,
    AdvanceStableEpoch,
    AlterTable,
    Command,
    CreateTable,
    DropPartition,
    DropTable,
    ExchangePartition,
    FailoverRegion,
    Publish,
    PurgeTable,
    RecoverTable,
    RenameTable,
    ResetAttributes,
    SetAttributes,
    SetPublishMode,
    TruncatePartition,
    TruncateTable,
)
from events.event import Event
from events.topics import partition_for
from events.values import Column
from producers.decide.core import Stamp
from producers.errors import CommandRejected
from producers.leader.local import LocalCatalog
from projector.kafka.clients import CLIENT_SETTINGS

SCHEMA = "db"
NAMES = ("orders", "users", "items", "events", "logs")
COLUMNS = (Column(name="id", data_type="bigint"), Column(name="name", data_type="varchar"))
GROW_SCHEMAS = ("public", "sales", "ops", "analytics")
"""The schemas `grow` spreads its tables over, in turn."""
POOL = (
    ("id", "bigint"), ("tenant_id", "bigint"), ("created_at", "timestamp"),
    ("updated_at", "timestamp"), ("deleted_at", "timestamp"), ("name", "varchar(255)"),
    ("email", "varchar(255)"), ("status", "varchar(32)"), ("amount", "decimal(18,2)"),
    ("currency", "char(3)"), ("payload", "json"), ("host", "varchar(64)"),
    ("region", "varchar(32)"), ("cpu", "double"), ("memory", "double"), ("ts", "timestamp"),
    ("user_id", "bigint"), ("order_id", "bigint"), ("quantity", "int"), ("price", "decimal(12,2)"),
)  # fmt: skip
"""Common column definitions: a `grow` table has `id` and 7 others drawn from here."""
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _stamps(catalog: str) -> Callable[[], Stamp]:
    counter = itertools.count(1)
    return lambda: (lambda n: Stamp(f"{catalog}-e{n}", _EPOCH + timedelta(seconds=n)))(
        next(counter))


class Workload:
    """Catalogs driven by seeded commands; their logs are what followers and projections read.

    Args:
        catalogs: The catalog names, or catalogs to go on with (their own names).
            A catalog with no events yet first elects `leader-1`.
        seed: The random seed (the workload is deterministic). Command ids are
            `cmd-{seed}-{n}`: a catalog gone on with under another seed never sees
            an id again (dedupe would answer it with the first outcome, writing nothing).
        keep_log: Keep every event (`log`, `events()`). False for big logs:
            nothing is kept but the images, and `grow` hands each event out
            once (the election first).
        partitions: Also exchange and truncate partitions (two more kinds of
            command; without them every seed gives the events it always gave).
    """

    def __init__(
        self,
        catalogs: Sequence[str | LocalCatalog],
        seed: int,
        *,
        keep_log: bool = True,
        partitions: bool = False,
    ) -> None:
        self.rng = random.Random(seed)
        self._kinds = 14 if partitions else 12
        self.catalogs = {
            local.image.catalog: local
            for local in (
                c if isinstance(c, LocalCatalog) else
                LocalCatalog(c, _stamps(c), keep_log=keep_log)
                for c in catalogs
            )
        }  # fmt: skip
        self._ids = (f"cmd-{seed}-{n}" for n in itertools.count(1))
        self._keep_log = keep_log
        self.log: list[Event] = []
        """Every catalog's events interleaved in the order they were written (if kept)."""
        for local in self.catalogs.values():
            if local.image.resource_version == 0:
                local.elect("leader-1")
            if keep_log:
                self.log.extend(local.take_new_events())

    def submit(self, catalog: str, kind: type[Command], **fields: Any) -> bool:
        """Submit one command; False if it was rejected."""
        return self._write(catalog, kind, **fields) is not None

    def _write(self, catalog: str, kind: type[Command], **fields: Any) -> list[Event] | None:
        """Submit one command; the events not handed out yet, or None if it was rejected."""
        fields.setdefault("actor", "tester")
        if "schema_name" in kind.model_fields:
            fields.setdefault("schema_name", SCHEMA)
        local = self.catalogs[catalog]
        try:
            local.submit(kind(command_id=next(self._ids), catalog=catalog, **fields))
        except CommandRejected:
            return None
        new = local.take_new_events()
        if self._keep_log:
            self.log.extend(new)
        return new

    def random_command(self, catalog: str) -> bool:
        """Submit one random DDL command against `catalog`; False if rejected."""
        rng, head = self.rng, self.catalogs[catalog].image.head
        name = rng.choice(NAMES)
        table = head.table_by_name(SCHEMA, name)
        choice = rng.randrange(self._kinds)
        if table is None or choice == 0:
            parts = tuple(f"p{i}" for i in range(rng.randrange(3)))
            return self.submit(catalog, CreateTable, table_name=name, columns=COLUMNS,
                               partitions=parts, regions=rng.randint(1, 2),
                               datanodes=tuple(rng.sample((1, 2, 3), 2)))
        options: dict[int, Callable[[], bool]] = {
            1: lambda: self.submit(catalog, RenameTable, table_name=name,
                                   new_table_name=rng.choice(NAMES)),
            2: lambda: self.submit(catalog, AlterTable, table_name=name,
                                   set_options={"ttl": f"{rng.randrange(9)}d"}),
            3: lambda: self.submit(catalog, DropTable, table_name=name),
            4: lambda: self._recover_or_purge(catalog),
            5: lambda: self.submit(catalog, SetAttributes, table_name=name,
                                   attributes=f"merge_option=deny,zone=z{rng.randrange(3)}"),
            6: lambda: self.submit(catalog, SetAttributes, table_name=name,
                                   partition_name=rng.choice(("p0", "p1")),
                                   attributes="merge_option=allow"),
            7: lambda: self.submit(catalog, ResetAttributes, table_name=name),
            8: lambda: self.submit(catalog, TruncateTable, table_name=name),
            9: lambda: self.submit(catalog, AddPartition, table_name=name,
                                   partition_name=f"p{rng.randrange(4)}"),
            10: lambda: self.submit(catalog, DropPartition, table_name=name,
                                    partition_name=rng.choice(("p0", "p1"))),
            11: lambda: self._failover(catalog, table.table_id),
            12: lambda: self.submit(catalog, ExchangePartition, table_name=name,
                                    partition_name=rng.choice(("p0", "p1")),
                                    other_schema_name=SCHEMA,
                                    other_table_name=rng.choice(self._plain(catalog))),
            13: lambda: self.submit(catalog, TruncatePartition, table_name=name,
                                    partition_name=rng.choice(("p0", "p1"))),
        }
        return options[choice]()

    def _plain(self, catalog: str) -> list[str]:
        """The names of the catalog's live tables without partitions (or all names if none)."""
        head = self.catalogs[catalog].image.head
        tables = (head.table_by_name(SCHEMA, name) for name in NAMES)
        return [t.table_name for t in tables if t is not None and not t.partitions] or list(NAMES)

    def _recover_or_purge(self, catalog: str) -> bool:
        # Sorted: `dropped_tables` scans a HAMT, whose order follows the string hash seed.
        dropped = sorted(self.catalogs[catalog].image.head.dropped_tables(),
                         key=lambda t: t.table_id)
        if not dropped:
            return False
        table = self.rng.choice(dropped)
        if self.rng.random() < 0.5:
            return self.submit(catalog, RecoverTable, table_name=table.table_name,
                               table_id=table.table_id)
        return self.submit(catalog, PurgeTable, table_id=table.table_id)

    def _failover(self, catalog: str, table_id: int) -> bool:
        route = self.catalogs[catalog].image.head.route(table_id)
        if route is None:
            return False
        region = route.region_routes[0]
        return self.submit(catalog, FailoverRegion, table_id=table_id, region_id=region.region_id,
                           to_datanode=region.leader_datanode % 3 + 1, expected_route=route)

    def run(self, commands: int) -> None:
        """Submit `commands` random commands spread over the catalogs."""
        names = list(self.catalogs)
        for _ in range(commands):
            self.random_command(self.rng.choice(names))

    def run_events(self, count: int) -> None:
        """Submit random commands until at least `count` events are logged."""
        names = list(self.catalogs)
        while len(self.log) < count:
            self.random_command(self.rng.choice(names))

    def grow(self, catalog: str, tables: int, events: int) -> Iterator[Event]:
        """Grow `catalog` to resource_version `events`; yield each new event as it is written.

        First up to `tables` creates (`t1`, `t2`, … over `GROW_SCHEMAS`, 8 columns
        from `POOL`, one region on datanode `1 + n % 16`), then random alters (45 %,
        a `ttl` option), renames (25 %) and attribute sets (30 %, `merge_option`)
        of those tables, until the catalog's log holds `events` events.
        """
        rng, local = self.rng, self.catalogs[catalog]
        names: list[tuple[str, str]] = []  # each grown table's (schema, current name)
        while local.image.resource_version < events:
            kind: type[Command]
            fields: dict[str, Any]
            if len(names) < tables:
                n = len(names) + 1
                names.append((GROW_SCHEMAS[n % len(GROW_SCHEMAS)], f"t{n}"))
                kind, fields = CreateTable, {
                    "columns": tuple(Column(name=name, data_type=of, nullable=name != "id")
                                     for name, of in [POOL[0], *rng.sample(POOL[1:], 7)]),
                    "primary_key": ("id",), "datanodes": (1 + n % 16,),
                }  # fmt: skip
                index = n - 1
            else:
                index, roll = rng.randrange(len(names)), rng.random()
                if roll < 0.45:
                    kind, fields = AlterTable, {"set_options": {"ttl": f"{rng.randrange(1, 90)}d"}}
                elif roll < 0.7:
                    renamed = f"t{index + 1}_{local.image.resource_version + 1}"
                    kind, fields = RenameTable, {"new_table_name": renamed}
                else:
                    merge = rng.choice(("allow", "deny"))
                    kind, fields = SetAttributes, {"attributes": f"merge_option={merge}"}
            schema, name = names[index]
            new = self._write(catalog, kind, schema_name=schema, table_name=name, **fields)
            if new is None:
                raise AssertionError(f"the grown catalog {catalog} refused a {kind.__name__}")
            if kind is RenameTable:
                names[index] = (schema, renamed)
            yield from new

    def publish_all(self, catalog: str) -> None:
        """Explicit mode: publish every pending change, then advance stable past them.

        One epoch, at or above every pending one, takes them all; a `Publish`
        stops before a change that waits for another table's (the
        publication-order rule), so the tables are published again until
        nothing is left without an epoch.
        """
        image = self.catalogs[catalog].image
        epoch = max([image.stable_epoch + 1, *(c.schema_epoch for c in image.pending.values())])
        while waiting := sorted({t for c in image.pending.values() if c.schema_epoch == 0
                                 for t in c.table_ids}):
            published = [self.submit(catalog, Publish, table_id=t, epoch=epoch) for t in waiting]
            assert any(published), "the earliest change without an epoch can always take one"
            image = self.catalogs[catalog].image
        self.submit(catalog, AdvanceStableEpoch, epoch=epoch)

    def publish_some(self, catalog: str) -> bool:
        """Explicit mode: publish a random pending table at a random epoch just above
        stable, or advance the stable epoch by 1 or 2; False if rejected."""
        rng, image = self.rng, self.catalogs[catalog].image
        stable = image.stable_epoch
        if image.pending_by_table and rng.random() < 0.7:
            table_id = rng.choice(sorted(image.pending_by_table))
            epoch = stable + rng.randint(1, 3)
            return self.submit(catalog, Publish, table_id=table_id, epoch=epoch)
        return self.submit(catalog, AdvanceStableEpoch, epoch=stable + rng.randint(1, 2))

    def set_mode(self, catalog: str, mode: str) -> None:
        """Switch a catalog's publish mode."""
        assert self.submit(catalog, SetPublishMode, mode=mode)

    def events(self) -> list[Event]:
        """Every catalog's log, catalog after catalog."""
        return [e for local in self.catalogs.values() for e in local.events]


def produce(bootstrap: str, topic: str, records: Iterable[tuple[str, bytes]], partitions: int,
            transactional_id: str | None = None, abort: bool = False,
            per_txn: int | None = None) -> int:  # fmt: skip
    """Write (catalog, value) records, each to its catalog's partition.

    Args:
        bootstrap: The cluster.
        topic: The events topic.
        records: (catalog, encoded value) pairs, in log order.
        partitions: The topic's partition count (murmur2 as the Java client).
        transactional_id: Write in one transaction with this id (plain writes if None).
        abort: Abort that transaction instead of committing it.
        per_txn: A big log: commit every `per_txn` records (needs `transactional_id`),
            with large batches and a deep queue.

    Returns:
        The number of records written.
    """
    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True, **CLIENT_SETTINGS}
    if transactional_id is not None:
        config |= {"transactional.id": transactional_id, "transaction.timeout.ms": 10_000}
    if per_txn is not None:
        config |= {"linger.ms": 20, "batch.size": 1_000_000, "transaction.timeout.ms": 60_000,
                   "queue.buffering.max.messages": 1_000_000,
                   "queue.buffering.max.kbytes": 1_048_576}  # fmt: skip
    producer = Producer(config)
    if transactional_id is not None:
        producer.init_transactions(30)
        producer.begin_transaction()
    count = 0
    for count, (catalog, value) in enumerate(records, 1):
        while True:
            try:
                producer.produce(topic, key=catalog.encode(), value=value,
                                 partition=partition_for(catalog, partitions))  # fmt: skip
                break
            except BufferError:  # the queue is full: let librdkafka send some first
                producer.poll(0.05)
        if per_txn is not None and count % per_txn == 0:
            producer.commit_transaction(120)
            producer.begin_transaction()
    producer.flush(30)
    if transactional_id is not None:
        (producer.abort_transaction if abort else producer.commit_transaction)(120)
    return count


def encoded(events: Iterable[Event]) -> list[tuple[str, bytes]]:
    """Events as (catalog, single-object encoded bytes)."""
    return [(e.catalog, encode_event(e)) for e in events]
