"""The follower on a real broker: it shows what the log says, in order, and only that."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from events.values import Column
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from producers.leader.log import read_events
from projector.fold.apply import replay
from projector.fold.image import Image
from projector.follower.follower import Follower
from projector.follower.watch import WatchEvent
from projector.snapshot.store import list_snapshots, read_snapshot
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import (
    CATALOG,
    explicit_log,
    failover,
    one_table_log,
    produce,
    random_log,
    wait_until,
)

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"), Column(name="v", data_type="string"))


def test_the_follower_equals_the_replayed_log_after_a_leader_workload(wire: TopicSet) -> None:
    with (
        Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-l") as leader,
        MetadataClient(wire.bootstrap, catalog="shop", actor="a", topics=wire.topics) as client,
        Follower(wire.bootstrap, "shop", topics=wire.topics) as follower,
    ):
        assert leader.wait_until_serving(1, timeout=60.0)
        for n in range(12):
            client.create_table("public", f"t{n}", COLUMNS, regions=2, datanodes=(1, 2))
            if n % 3 == 0:
                client.alter_table("public", f"t{n}", set_options={"ttl": "7d"})
            if n % 4 == 1:
                client.rename_table("public", f"t{n}", f"r{n}")
        last = client.set_attributes("public", "t0", "merge_option=allow")
        image = follower.wait_for(last.resource_version, timeout=30.0)
    log = [e for e in read_events(wire.bootstrap, wire.events, 0) if e.catalog == "shop"]
    assert image == replay(Image.empty("shop"), log)
    assert image.published.table_by_name("public", "r1") is not None


def test_random_local_workloads_and_the_follower_agree(wire: TopicSet, tmp_path: Path) -> None:
    catalog = random_log(80, seed=11)
    with Follower(wire.bootstrap, CATALOG, topics=wire.topics, max_batch=7,
                  snapshot_dir=tmp_path, snapshot_every=30) as follower:  # fmt: skip
        produce(wire, catalog.events[:40])
        produce(wire, catalog.events[40:])
        image = follower.wait_for(catalog.image.resource_version, timeout=30.0)
        assert follower.stats().applied == len(catalog.events)
        assert follower.lag().events <= 1
    assert image == catalog.image
    snapshots = list_snapshots(tmp_path, CATALOG)
    assert snapshots, "no automatic snapshot was taken"
    for path in snapshots:
        taken, _ = read_snapshot(path)
        assert taken == replay(Image.empty(CATALOG), catalog.events[: taken.resource_version])


def test_explicit_publish_shows_no_pending_change_and_epochs_in_order(wire: TopicSet) -> None:
    catalog = explicit_log()
    seen: list[Image] = []
    with Follower(wire.bootstrap, CATALOG, topics=wire.topics, max_batch=1) as follower:
        changes: list[WatchEvent] = []
        watch = follower.watch(changes.append, from_resource_version=0)
        for event in catalog.events:
            produce(wire, [event])
            seen.append(follower.wait_for(event.resource_version, timeout=30.0))
        last = catalog.events[-1].resource_version
        wait_until(lambda: bool(changes) and changes[-1].resource_version == last)
        watch.cancel()
    expected = {e.resource_version: replay(Image.empty(CATALOG), catalog.events[:i + 1])
                for i, e in enumerate(catalog.events)}  # fmt: skip
    for image in seen:
        assert image.published == expected[image.resource_version].published
        for change in image.pending.values():
            for mutation in change.event.mutations:
                assert image.published.get(mutation.key) != mutation.value
    stables = [image.stable_epoch for image in seen]
    assert stables == sorted(stables) and stables[-1] == 2
    visible = {c.key: c.resource_version for c in changes if c.key.startswith("__table_info/")}
    ids = {n: catalog.image.head.table_id("public", n) for n in "abcd"}
    assert visible[f"__table_info/{ids['a']}"] == visible[f"__table_info/{ids['b']}"]
    assert visible[f"__table_info/{ids['c']}"] > visible[f"__table_info/{ids['a']}"]
    assert f"__table_info/{ids['d']}" not in visible
    assert [c.schema_epoch for c in changes] == sorted(c.schema_epoch for c in changes)


def test_start_from_a_snapshot_equals_full_replay_and_a_corrupt_one_falls_back(
    wire: TopicSet, tmp_path: Path
) -> None:
    catalog = random_log(60, seed=21)
    events = catalog.events
    produce(wire, events[:30])
    with Follower(wire.bootstrap, CATALOG, topics=wire.topics, snapshot_dir=tmp_path) as first:
        first.wait_for(events[29].resource_version, timeout=30.0)
        older = first.snapshot()
        produce(wire, events[30:45])
        first.wait_for(events[44].resource_version, timeout=30.0)
        newer = first.snapshot()
    produce(wire, events[45:])
    assert list_snapshots(tmp_path, CATALOG) == [newer, older]
    with Follower(wire.bootstrap, CATALOG, topics=wire.topics, snapshot_dir=tmp_path) as again:
        assert again.current().resource_version == events[44].resource_version
        image = again.wait_for(catalog.image.resource_version, timeout=30.0)
        assert again.stats().applied == len(events) - 45
    assert image == catalog.image
    newer.write_bytes(newer.read_bytes()[:-10])
    with Follower(wire.bootstrap, CATALOG, topics=wire.topics, snapshot_dir=tmp_path) as third:
        assert third.current().resource_version == events[29].resource_version
        assert third.wait_for(catalog.image.resource_version, timeout=30.0) == catalog.image


def test_datanode_callbacks_follow_a_region_failover(wire: TopicSet) -> None:
    catalog = one_table_log()
    produce(wire, catalog.events)
    calls: list[tuple[str, int, int]] = []
    done = threading.Event()

    def record(kind: str) -> object:
        def call(table_id: int, region: int) -> None:
            calls.append((kind, table_id, region))
            if kind == "close":
                done.set()

        return call

    with Follower(wire.bootstrap, CATALOG, topics=wire.topics) as follower:
        follower.wait_for(catalog.image.resource_version, timeout=30.0)
        with follower.watch_datanode(1, record("open"), record("close")):  # type: ignore[arg-type]
            before = len(catalog.events)
            failover(catalog, "t0", 3)
            produce(wire, catalog.events[before:])
            assert done.wait(30.0)
    table_id = catalog.image.head.table_id("public", "t0")
    assert calls[0][0] == "open" and calls[0][1] == table_id
    assert calls[-1] == ("close", *calls[0][1:])
