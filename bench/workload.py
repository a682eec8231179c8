"""Random catalog workloads (LocalCatalog, no Kafka) and a plain Kafka producer for them.

Shared by the Spark tests and `bench.projection`. A seed gives the same events
in every process: nothing here iterates a hash-ordered collection (the image's
`immutables.Map` iterates in an order that depends on `PYTHONHASHSEED`).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Sequence
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
from producers.decide import Stamp
from producers.errors import CommandRejected
from producers.local import LocalCatalog

SCHEMA = "db"
NAMES = ("orders", "users", "items", "events", "logs")
COLUMNS = (Column(name="id", data_type="bigint"), Column(name="name", data_type="varchar"))
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _stamps(catalog: str) -> Callable[[], Stamp]:
    counter = itertools.count(1)
    return lambda: (lambda n: Stamp(f"{catalog}-e{n}", _EPOCH + timedelta(seconds=n)))(
        next(counter))


class Workload:
    """Catalogs driven by random commands; their logs are what the projection reads.

    Args:
        catalogs: The catalog names.
        seed: The random seed (the workload is deterministic).
        partitions: Also exchange and truncate partitions (two more kinds of
            command; without them every seed gives the events it always gave).
    """

    def __init__(self, catalogs: Sequence[str], seed: int, partitions: bool = False) -> None:
        self.rng = random.Random(seed)
        self._kinds = 14 if partitions else 12
        self.catalogs = {name: LocalCatalog(name, _stamps(name)) for name in catalogs}
        self._ids = itertools.count(1)
        self.log: list[Event] = []
        """Every catalog's events interleaved in the order they were written."""
        for local in self.catalogs.values():
            local.elect("leader-1")
            self.log.extend(local.take_new_events())

    def submit(self, catalog: str, kind: type[Command], **fields: Any) -> bool:
        """Submit one command; False if it was rejected."""
        fields.setdefault("actor", "tester")
        if "schema_name" in kind.model_fields:
            fields.setdefault("schema_name", SCHEMA)
        local = self.catalogs[catalog]
        try:
            local.submit(kind(command_id=f"cmd-{next(self._ids)}", catalog=catalog, **fields))
        except CommandRejected:
            return False
        self.log.extend(local.take_new_events())
        return True

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
        # Sorted: `removed_tables` scans a HAMT, whose order follows the string hash seed.
        removed = sorted(self.catalogs[catalog].image.head.removed_tables(),
                         key=lambda t: t.table_id)
        if not removed:
            return False
        table = self.rng.choice(removed)
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

    def publish_all(self, catalog: str) -> None:
        """Explicit mode: publish every pending change, then advance stable past them.

        One epoch, at or above every pending one, takes them all; a `Publish`
        stops before a change that waits for another table's (the
        publication-order rule), so the tables are published again until
        nothing is left without an epoch.
        """
        image = self.catalogs[catalog].image
        epoch = max([image.stable_epoch + 1, *(c.epoch for c in image.pending.values())])
        while waiting := sorted({t for c in image.pending.values() if c.epoch == 0
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
            transactional_id: str | None = None, abort: bool = False) -> None:
    """Write (catalog, value) records, each to its catalog's partition.

    Args:
        bootstrap: The cluster.
        topic: The events topic.
        records: (catalog, encoded value) pairs, in log order.
        partitions: The topic's partition count (murmur2 as the Java client).
        transactional_id: Write in one transaction with this id (plain writes if None).
        abort: Abort that transaction instead of committing it.
    """
    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True}
    if transactional_id is not None:
        config |= {"transactional.id": transactional_id, "transaction.timeout.ms": 10_000}
    producer = Producer(config)
    if transactional_id is not None:
        producer.init_transactions(10)
        producer.begin_transaction()
    for catalog, value in records:
        producer.produce(topic, key=catalog.encode(), value=value,
                         partition=partition_for(catalog, partitions))
    producer.flush(30)
    if transactional_id is not None:
        (producer.abort_transaction if abort else producer.commit_transaction)(10)


def encoded(events: Iterable[Event]) -> list[tuple[str, bytes]]:
    """Events as (catalog, single-object encoded bytes)."""
    return [(e.catalog, encode_event(e)) for e in events]
