"""Faults on a real broker: gaps, duplicates, stale leaders, garbage, divergence, old watches."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from events.changes import KeyPresent
from events.topics import REASON_HEADER, Topics
from projector.errors import DivergedAt, FollowerStopped, ResourceVersionTooOld
from projector.follower.follower import Follower
from projector.follower.watch import WatchEvent
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import (
    CATALOG,
    produce,
    produce_raw,
    random_log,
    reseal,
    wait_until,
)

pytestmark = pytest.mark.integration


def _dlq(wire: TopicSet, count: int) -> list[tuple[bytes, str]]:
    consumer = Consumer({"bootstrap.servers": wire.bootstrap, "group.id": str(uuid.uuid4()),
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(wire.dlq, 0, 0)])
    found: list[tuple[bytes, str]] = []
    try:
        while len(found) < count:
            message = consumer.poll(30.0)
            assert message is not None, f"only {len(found)} of {count} DLQ records"
            headers = dict(message.headers() or [])
            reason = headers[REASON_HEADER]
            text = reason.decode() if isinstance(reason, bytes) else str(reason)
            found.append((message.value() or b"", text))
    finally:
        consumer.close()
    return found


def test_gap_duplicate_stale_leader_and_garbage(wire: TopicSet) -> None:
    events = random_log(12, seed=8).events
    n = len(events)
    stale = reseal(events[6], leader_epoch=0)
    with Follower(wire.bootstrap, CATALOG, topics=wire.topics) as follower:
        produce(wire, [*events[:4], events[5], events[1]])
        follower.wait_for(4, timeout=30.0)
        produce(wire, [stale])
        wait_until(lambda: follower.stats().waiting_for == 5)
        produce(wire, [events[4]])
        image = follower.wait_for(6, timeout=30.0)
        assert image.resource_version == 6
        produce_raw(wire, [b"\xc3\x01garbage"])
        produce(wire, events[7:])
        produce(wire, [events[6]])
        image = follower.wait_for(n, timeout=30.0)
        stats = follower.stats()
    assert image.resource_version == n
    assert (stats.gaps, stats.duplicates, stats.held, stats.waiting_for) == (2, 1, 0, None)
    assert stats.dead_lettered == 2
    letters = _dlq(wire, 2)
    assert letters[0][0] != b"" and "leader_epoch 0" in letters[0][1]
    assert letters[1][0] == b"\xc3\x01garbage" and "shorter than" in letters[1][1]


def test_a_failed_requirement_stops_the_follower_naming_the_offset(wire: TopicSet) -> None:
    events = random_log(6, seed=9).events
    bad = reseal(events[4], requirements=(KeyPresent(key="__table_info/999"),))
    with Follower(wire.bootstrap, CATALOG, topics=wire.topics) as follower:
        produce(wire, [*events[:4], bad, *events[5:]])
        with pytest.raises(DivergedAt, match=r"partition 0 offset 4: .*requirement"):
            follower.wait_for(len(events), timeout=30.0)
        assert follower.current().resource_version == 4
        assert isinstance(follower.failure, DivergedAt)


def test_watch_from_an_old_version_replays_exactly_the_missed_changes(
    wire: TopicSet, tmp_path: Path
) -> None:
    catalog = random_log(30, seed=12)
    events = catalog.events
    produce(wire, events[:10])
    with Follower(wire.bootstrap, CATALOG, topics=wire.topics, snapshot_dir=tmp_path) as follower:
        follower.wait_for(10, timeout=30.0)
        follower.snapshot()
        live: list[WatchEvent] = []
        old: list[WatchEvent] = []
        with follower.watch(live.append, from_resource_version=10):
            produce(wire, events[10:])
            follower.wait_for(len(events), timeout=30.0)
            with follower.watch(old.append, from_resource_version=4, key_prefix="__table_info/"):
                wanted = [e for e in events[4:] if any(
                    m.key.startswith("__table_info/") for m in e.mutations)]  # fmt: skip
                wait_until(lambda: len({c.change_resource_version for c in old}) == len(wanted))
            wait_until(lambda: bool(live) and live[-1].resource_version == len(events))
    assert [(c.resource_version, c.key) for c in live] == [
        (e.resource_version, m.key) for e in events[10:] for m in e.mutations
    ]
    assert [(c.resource_version, c.key) for c in old] == [
        (e.resource_version, m.key) for e in events[4:] for m in e.mutations
        if m.key.startswith("__table_info/")
    ]  # fmt: skip
    with Follower(wire.bootstrap, CATALOG, topics=wire.topics, snapshot_dir=tmp_path) as later:
        with pytest.raises(ResourceVersionTooOld, match="re-list"):
            later.watch(print, from_resource_version=3)
        later.watch(print, from_resource_version=10).cancel()


def test_an_unreachable_events_topic_stops_the_follower_with_a_metalog_error(
    wire: TopicSet,
) -> None:
    """The read side tells Kafka's failures in metalog's words (the one error table), as
    the write side does: no raw `KafkaException` reaches the caller."""
    topics = Topics(f"missing-{uuid.uuid4().hex[:8]}")
    follower = Follower(wire.bootstrap, CATALOG, topics=topics)
    follower.start()
    try:
        wait_until(lambda: follower.failure is not None, timeout=60.0)
        assert isinstance(follower.failure, FollowerStopped), repr(follower.failure)
        # The topic is missing ("run `metalog up`"), or the metadata request timed out
        # first on a busy machine ("`metalog status`"): either way in metalog's words.
        told = str(follower.failure)
        assert told.startswith("the follower stopped: "), told
        assert "run `metalog up`" in told or "check that it runs (`metalog status`)" in told, told
        with pytest.raises(FollowerStopped):
            follower.wait_for(1, timeout=1.0)
    finally:
        follower.stop()
