"""Logs for the follower tests: the seeded workload on one catalog, and hand-made faults."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence

from bench.workload import Workload
from bench.workload import produce as produce_records
from events.chain import seal
from events.codec import encode_event
from events.commands import AdvanceStableEpoch, AlterTable, FailoverRegion, Publish
from events.event import Event
from producers.leader.local import LocalCatalog
from tests.domain.builders import CATALOG, command, create, local
from tests.fixtures.kafka import TopicSet

__all__ = [
    "CATALOG",
    "explicit_log",
    "failover",
    "one_table_log",
    "produce",
    "produce_raw",
    "random_log",
    "reseal",
    "wait_until",
]


def random_log(steps: int, seed: int, catalog: LocalCatalog | None = None) -> LocalCatalog:
    """Catalog `CATALOG` (or `catalog`, to go on with) after `steps` random commands of
    `bench.workload.Workload` (every command kind; rejected commands write nothing)."""
    catalog = catalog or local()
    Workload([catalog], seed).run(steps)
    return catalog


def one_table_log() -> LocalCatalog:
    """An elected catalog with one table, `t0`: 2 regions, on datanodes 1 and 2 of (1, 2, 3)."""
    catalog = local()
    catalog.elect("leader-a")
    catalog.submit(create("t0", regions=2, datanodes=(1, 2, 3)))
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
    """Produce records in one transaction to the events topic (one partition)."""
    produce_records(wire.bootstrap, wire.events, [(key, record) for record in records], 1,
                    transactional_id=f"test-{uuid.uuid4()}")  # fmt: skip


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
