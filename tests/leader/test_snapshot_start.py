"""A leader takes over from its partition's snapshots and the tail of the log."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from events.values import Column
from producers.client.client import MetadataClient
from producers.decide.sizes import DEFAULT_RECORD_LIMIT
from producers.errors import TooLarge
from producers.leader.leader import Leader
from producers.leader.log import read_events, read_partition
from producers.leader.owner import LeaderOptions, PartitionOwner, stamp_now
from producers.leader.rebuild import make_catalog
from producers.leader.restart import LOOKBACK, read_dedupe
from producers.leader.standby import Standby
from projector.fold.apply import replay
from projector.fold.image import Image
from projector.snapshot.store import list_snapshots, read_partition_mark
from tests.fixtures.kafka import TopicSet
from tests.leader.test_survival import _lower_record_limit, _options

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)
CATALOGS = ("greptime", "shop")


def _serve(wire: TopicSet, options: LeaderOptions, tables: range) -> None:
    """One leader creates tables in both catalogs in turn (command ids `{catalog}-{n}`)."""
    with Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                options=options) as leader, MetadataClient(
                    wire.bootstrap, catalog=CATALOGS[0], actor="alice", topics=wire.topics
                ) as client:  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0), "the leader never owned its partition"
        for n in tables:
            for catalog in CATALOGS:
                client.create_table("public", f"t{n}", COLUMNS, catalog=catalog,
                                    command_id=f"{catalog}-{n}")  # fmt: skip


def _replayed(wire: TopicSet) -> dict[str, Image]:
    log = read_events(wire.bootstrap, wire.events, 0)
    return {c: replay(Image.empty(c), [e for e in log if e.catalog == c]) for c in CATALOGS}


def _take_over(wire: TopicSet, options: LeaderOptions) -> PartitionOwner:
    owner = PartitionOwner(wire.bootstrap, wire.topics, 0, "next", options)
    owner.open()
    return owner


def _snapshotted(wire: TopicSet, tmp_path: Path) -> LeaderOptions:
    """A log with snapshots of both catalogs part-way, and events after them.

    Two leaders in turn, so that each catalog has two snapshots however slow the writes
    (a restart point that comes while a snapshot is written is skipped): each leader's
    first restart point is written, and stopping waits for it.
    """
    options = LeaderOptions(snapshot_dir=tmp_path, snapshot_every=8, dedupe_lookback=0)
    _serve(wire, options, range(12))
    _serve(wire, options, range(12, 24))
    _serve(wire, LeaderOptions(), range(24, 27))  # the tail: no snapshot covers it
    return options


def test_a_takeover_from_snapshots_equals_a_takeover_by_full_replay(
    wire: TopicSet, tmp_path: Path
) -> None:
    options = _snapshotted(wire, tmp_path)
    mark = read_partition_mark(tmp_path, wire.events, 0)
    assert mark is not None and set(mark.catalogs) == set(CATALOGS)

    owner = _take_over(wire, options)
    try:
        # From the oldest of the snapshots it loaded (an unchanged catalog keeps an older one).
        assert 0 < owner.rebuilt_from <= mark.position.next_offset
        from_snapshots = {c: owner.catalogs[c].image for c in CATALOGS}
        assert from_snapshots == _replayed(wire)  # both ends include the new LeaderElected
    finally:
        owner.close()
    replayed = _take_over(wire, LeaderOptions())
    try:
        assert replayed.rebuilt_from == 0
        for catalog in CATALOGS:  # the same next resource_version, one LeaderElected later
            assert replayed.catalogs[catalog].image.resource_version == (
                from_snapshots[catalog].resource_version + 1
            )
        assert {c: replayed.catalogs[c].image for c in CATALOGS} == _replayed(wire)
    finally:
        replayed.close()


@pytest.mark.parametrize("corrupt", ["newest", "all"])
def test_a_corrupt_snapshot_falls_back_to_an_older_one_or_the_log(
    wire: TopicSet, tmp_path: Path, corrupt: str
) -> None:
    options = _snapshotted(wire, tmp_path)
    snapshots = list_snapshots(tmp_path, "shop")
    assert len(snapshots) >= 2, "the schedule wrote one snapshot only"
    for path in snapshots[: 1 if corrupt == "newest" else None]:
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))

    owner = _take_over(wire, options)
    try:
        if corrupt == "all":
            assert owner.rebuilt_from == 0
        else:
            assert owner.rebuilt_from > 0
        assert {c: owner.catalogs[c].image for c in CATALOGS} == _replayed(wire)
    finally:
        owner.close()


def test_a_retry_of_a_command_before_the_snapshot_is_answered_not_applied_again(
    wire: TopicSet, tmp_path: Path
) -> None:
    options = LeaderOptions(snapshot_dir=tmp_path, snapshot_every=8)
    _serve(wire, options, range(10))
    before = read_events(wire.bootstrap, wire.events, 0)
    [first] = [e for e in before if e.command_id == "shop-0"]
    with Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                options=options) as leader, MetadataClient(
                    wire.bootstrap, catalog="shop", actor="alice", topics=wire.topics
                ) as client:  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        again = client.create_table("public", "t0", COLUMNS, command_id="shop-0")
    assert again.resource_version == first.resource_version
    after = read_events(wire.bootstrap, wire.events, 0)
    assert [e.command_id for e in after].count("shop-0") == 1


def test_the_dedupe_windows_written_with_the_snapshots_answer_a_retry_without_a_lookback(
    wire: TopicSet, tmp_path: Path
) -> None:
    # No lookback: only the windows stored beside the snapshots know shop-0's outcome.
    options = LeaderOptions(snapshot_dir=tmp_path, snapshot_every=8, dedupe_lookback=0)
    _serve(wire, options, range(10))
    mark = read_partition_mark(tmp_path, wire.events, 0)
    assert mark is not None
    windows = read_dedupe(tmp_path, wire.events, 0, mark.position.next_offset)
    assert windows is not None and "shop-0" in dict(windows["shop"])
    [first] = [e for e in read_events(wire.bootstrap, wire.events, 0) if e.command_id == "shop-0"]
    with Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                options=options) as leader, MetadataClient(
                    wire.bootstrap, catalog="shop", actor="alice", topics=wire.topics
                ) as client:  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        again = client.create_table("public", "t0", COLUMNS, command_id="shop-0")
    assert again.resource_version == first.resource_version
    after = read_events(wire.bootstrap, wire.events, 0)
    assert [e.command_id for e in after].count("shop-0") == 1


def test_the_client_reads_an_image_from_a_snapshot_and_the_tail(
    wire: TopicSet, tmp_path: Path
) -> None:
    _snapshotted(wire, tmp_path)
    with MetadataClient(wire.bootstrap, catalog="shop", actor="alice", topics=wire.topics,
                        snapshot_dir=tmp_path) as client:  # fmt: skip
        assert client.image() == _replayed(wire)["shop"]


def test_after_a_failed_commit_the_leader_returns_to_its_last_committed_images(
    wire: TopicSet, topics: Callable[[int], TopicSet]
) -> None:
    # Restart points every 4 events, no snapshots: a failed commit re-reads from the last one.
    options = LeaderOptions(snapshot_every=4)
    with Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                options=options) as leader, MetadataClient(
                    wire.bootstrap, catalog="shop", actor="alice", topics=wire.topics
                ) as client:  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        for n in range(10):
            client.create_table("public", f"t{n}", COLUMNS)
        # Lowered after the leader read the limit: decide accepts what the broker refuses,
        # the commit fails, and the leader goes back to what it committed.
        _lower_record_limit(wire, topics(1), 100_000)
        with pytest.raises(TooLarge):
            client.alter_table("public", "t0", set_options=_options(0, count=150), timeout=90.0)
        after = client.alter_table("public", "t1", set_options={"ttl": "1d"}, timeout=90.0)
        owner = leader._owners[0]
        assert owner.rebuilt_from > 0
        image = owner.catalogs["shop"].image
    log = [e for e in read_events(wire.bootstrap, wire.events, 0) if e.catalog == "shop"]
    assert image == replay(Image.empty("shop"), log)
    assert after.resource_version == log[-1].resource_version == 12  # elected, 10 creates, alter


def test_a_takeover_by_a_warm_standby_equals_a_takeover_by_full_replay(
    wire: TopicSet, tmp_path: Path
) -> None:
    options = _snapshotted(wire, tmp_path)
    standby = Standby(wire.bootstrap, wire.events, 1, tmp_path, LOOKBACK,
                      functools.partial(make_catalog, leader_id="next", stamps=stamp_now,
                                        limit=DEFAULT_RECORD_LIMIT, checkpoints=None),
                      poll_s=3600.0)  # fmt: skip (warm once, then no poll: a last tail)
    standby.start()
    try:
        kept = _kept(standby, read_end(wire))
        _serve(wire, LeaderOptions(), range(27, 30))  # committed after the standby's poll
        warm = standby.take(0)
    finally:
        standby.stop()
    assert warm is not None and warm.next_offset == kept < read_end(wire)
    owner = PartitionOwner(wire.bootstrap, wire.topics, 0, "next", options)
    owner.open(warm)
    try:
        from_standby = {c: owner.catalogs[c].image for c in CATALOGS}
        assert from_standby == _replayed(wire)
        windows = {c: dict(owner.catalogs[c]._outcomes) for c in CATALOGS}
    finally:
        owner.close()
    replayed = _take_over(wire, LeaderOptions())
    try:
        for catalog in CATALOGS:  # the same next resource_version, one LeaderElected later
            assert replayed.catalogs[catalog].image.resource_version == (
                from_standby[catalog].resource_version + 1
            )
        # The same dedupe window: every command id of the log, with the same outcome.
        assert windows == {c: dict(replayed.catalogs[c]._outcomes) for c in CATALOGS}
        assert len(windows["shop"]) == 30
    finally:
        replayed.close()


def read_end(wire: TopicSet) -> int:
    """The events partition's end."""
    return read_partition(wire.bootstrap, wire.events, 0, start=1 << 62).end


def _kept(standby: Standby, end: int) -> int:
    """Wait until the standby keeps partition 0 up to `end`; that offset."""
    for _ in range(600):
        offset = standby.offset(0)
        if offset is not None and offset >= end:
            return offset
        time.sleep(0.1)
    raise AssertionError(f"the standby never kept partition 0 up to offset {end}")
