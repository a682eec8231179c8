"""Logs for the follower tests: random workloads through `LocalCatalog`, and hand-made faults."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence

from confluent_kafka import Producer

from events.chain import seal
from events.codec import encode_event
from events.commands import (
    AdvanceStableEpoch,
    AlterTable,
    DropTable,
    FailoverRegion,
    Publish,
    RecoverTable,
    RenameTable,
    SetAttributes,
)
from events.event import Event
from producers.errors import CommandRejected
from producers.local import LocalCatalog
from tests.domain.builders import CATALOG, command, create, local
from tests.fixtures.kafka import TopicSet

__all__ = [
    "CATALOG",
    "explicit_log",
    "produce",
    "produce_raw",
    "random_log",
    "reseal",
    "wait_until",
]


MERGE = ("allow", "deny")


def random_log(steps: int, seed: int, catalog: LocalCatalog | None = None) -> LocalCatalog:
    """A catalog after `steps` random commands (creates, alters, renames, drops,
    recovers, attributes, failovers); rejected commands write nothing."""
    rng = random.Random(seed)
    catalog = catalog or local()
    if not catalog.events:
        catalog.elect("leader-a")
    names: list[str] = []
    for step in range(steps):
        roll = rng.random()
        try:
            if roll < 0.3 or not names:
                names.append(f"t{step}")
                catalog.submit(create(names[-1], regions=2, datanodes=(1, 2, 3)))
            elif roll < 0.45:
                catalog.submit(command(AlterTable, table_name=rng.choice(names),
                                       set_options={"ttl": f"{step}d"}))  # fmt: skip
            elif roll < 0.55:
                old = rng.choice(names)
                names[names.index(old)] = new = f"{old}r"
                catalog.submit(command(RenameTable, table_name=old, new_table_name=new))
            elif roll < 0.65:
                catalog.submit(command(SetAttributes, table_name=rng.choice(names),
                                       attributes=f"merge_option={rng.choice(MERGE)}"))  # fmt: skip
            elif roll < 0.75:
                name = rng.choice(names)
                catalog.submit(command(DropTable, table_name=name))
                catalog.submit(command(RecoverTable, table_name=name))
            else:
                failover(catalog, rng.choice(names), rng.choice((1, 2, 3)))
        except CommandRejected:
            pass
    return catalog


def failover(catalog: LocalCatalog, table: str, to_datanode: int, region: int = 0) -> None:
    """Move region `region` (by position) of `table` to `to_datanode`."""
    info = catalog.image.head.table_by_name("public", table)
    assert info is not None
    route = catalog.image.head.route(info.table_id)
    assert route is not None
    catalog.submit(command(FailoverRegion, table_id=info.table_id,
                           region_id=route.region_routes[region].region_id,
                           to_datanode=to_datanode, expected_route=route))  # fmt: skip


def explicit_log() -> LocalCatalog:
    """Explicit mode: a, b published together at epoch 1; c at 2; d stays pending."""
    catalog = local("explicit")
    for name in ("a", "b", "c", "d"):
        catalog.submit(create(name))
    ids = {n: catalog.image.head.table_id("public", n) for n in "abcd"}
    catalog.submit(command(Publish, table_id=ids["a"], epoch=1))
    catalog.submit(command(Publish, table_id=ids["b"], epoch=1))
    catalog.submit(command(AlterTable, table_name="c", set_options={"x": "1"}))
    catalog.submit(command(Publish, table_id=ids["c"], epoch=2))
    catalog.submit(command(AdvanceStableEpoch, epoch=1))
    catalog.submit(command(AdvanceStableEpoch, epoch=2))
    return catalog


def reseal(event: Event, **update: object) -> Event:
    """A copy of `event` with fields changed and its hash recomputed."""
    return seal(event.model_copy(update=update))


def produce_raw(wire: TopicSet, records: Sequence[bytes], key: str = CATALOG) -> None:
    """Produce records in one transaction to partition 0 of the events topic."""
    producer = Producer({"bootstrap.servers": wire.bootstrap,
                         "transactional.id": f"test-{uuid.uuid4()}"})  # fmt: skip
    producer.init_transactions(30)
    producer.begin_transaction()
    for record in records:
        producer.produce(wire.events, key=key.encode(), value=record, partition=0)
    producer.commit_transaction(30)


def produce(wire: TopicSet, events: Sequence[Event]) -> None:
    """Produce events (encoded) in one transaction."""
    produce_raw(
        wire, [encode_event(e) for e in events], key=events[0].catalog if events else CATALOG
    )


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll `condition` until it holds; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)
