"""Pure parts of the read side: snapshot round trip, watch changes, region diffs, the feed."""

from __future__ import annotations

from functools import reduce
from pathlib import Path

import pytest

from events.changes import KeyPresent
from projector.errors import DivergedAt, ResourceVersionTooOld, SnapshotError
from projector.fold.apply import apply, replay
from projector.fold.image import Image
from projector.fold.layered import WrittenValues
from projector.follower.feed import CatalogFeed
from projector.follower.watch import History, datanode_regions, published_changes, region_diff
from projector.snapshot.store import (
    Position,
    list_snapshots,
    load_newest,
    read_snapshot,
    write_snapshot,
)
from tests.follower.workload import (
    CATALOG,
    explicit_log,
    failover,
    one_table_log,
    random_log,
    reseal,
)

POSITION = Position("t.events", 0, 42)


def _feed(image: Image | None = None) -> CatalogFeed:
    image = image or Image.empty(CATALOG)
    return CatalogFeed(image, 0, History(image.resource_version))


@pytest.mark.parametrize("make", [lambda: random_log(60, seed=3), explicit_log])
def test_a_snapshot_round_trip_equals_the_replayed_image(tmp_path: Path, make: object) -> None:
    catalog = make()  # type: ignore[operator]
    path = write_snapshot(tmp_path, catalog.image, POSITION)
    image, position = read_snapshot(path)
    assert image == replay(Image.empty(CATALOG), catalog.events)
    assert image.published == catalog.image.published and image.pending == catalog.image.pending
    assert position == POSITION


def test_a_corrupt_snapshot_is_skipped_for_the_next_older(tmp_path: Path) -> None:
    catalog = random_log(20, seed=1)
    older = write_snapshot(tmp_path, catalog.image, POSITION)
    random_log(10, seed=2, catalog=catalog)
    newer = write_snapshot(tmp_path, catalog.image, Position("t.events", 0, 99))
    assert list_snapshots(tmp_path, CATALOG) == [newer, older]
    data = bytearray(newer.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newer.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match="sha256"):
        read_snapshot(newer)
    found = load_newest(tmp_path, CATALOG)
    assert found is not None and found[1] == POSITION
    older.unlink()
    assert load_newest(tmp_path, CATALOG) is None


def test_published_changes_follow_what_published_shows() -> None:
    catalog = explicit_log()
    image = Image.empty(CATALOG)
    shown: dict[str, object] = {}
    for event in catalog.events:
        for change in published_changes(image, event):
            assert change.resource_version == event.resource_version
            shown[change.key] = change.value
            if change.value is None:
                del shown[change.key]
        image = replay(image, [event])
        assert shown == dict(image.published.items())
    epochs = [c.schema_epoch for e in catalog.events for c in published_changes(image, e)]
    assert epochs == sorted(epochs)


def test_history_resumes_from_any_kept_version_and_refuses_older() -> None:
    catalog = random_log(40, seed=5)
    history, image = History(0, limit=50), Image.empty(CATALOG)
    for event in catalog.events:
        history.extend(published_changes(image, event), event.resource_version)
        image = replay(image, [event])
    assert history.floor > 0
    with pytest.raises(ResourceVersionTooOld):
        history.start(history.floor - 1)
    items, _ = history.read(history.start(history.floor), 0)
    assert items and all(i.resource_version > history.floor for i in items)
    assert items[-1].resource_version == image.resource_version


def test_a_failover_moves_regions_between_datanodes() -> None:
    catalog = one_table_log()
    before = catalog.image.published
    failover(catalog, "t0", 3, region=0)
    after = catalog.image.published
    moved = region_diff(datanode_regions(before, 1), datanode_regions(after, 1))
    gained = region_diff(datanode_regions(before, 3), datanode_regions(after, 3))
    assert moved[0] == [] and len(moved[1]) == 1
    assert gained == ([moved[1][0]], [])


def test_the_feed_holds_at_a_gap_ignores_duplicates_and_resumes_in_order() -> None:
    events = random_log(10, seed=4).events
    feed = _feed()
    for offset, event in enumerate(events[:3] + events[4:6] + events[1:2]):
        assert feed.offer(event, offset) == []
    assert feed.image.resource_version == 3
    assert (feed.stats.held, feed.stats.waiting_for, feed.stats.gaps) == (2, 4, 1)
    assert feed.stats.duplicates == 1 and feed.held_offset() == 3
    feed.offer(events[3], 9)
    assert feed.image == replay(Image.empty(CATALOG), events[:6])
    assert (feed.stats.held, feed.stats.waiting_for, feed.held_offset()) == (0, None, None)


def test_the_feed_dead_letters_a_stale_leader_and_stops_on_divergence() -> None:
    events = random_log(6, seed=4).events
    feed = _feed(replay(Image.empty(CATALOG), events[:3]))
    stale = reseal(events[3], leader_epoch=0)
    [letter] = feed.offer(stale, 7, b"raw")
    assert (letter.offset, letter.raw) == (7, b"raw") and "leader_epoch" in letter.reason
    feed.offer(events[3], 8)
    bad = reseal(events[4], requirements=(KeyPresent(key="__table_info/999"),))
    with pytest.raises(DivergedAt, match="offset 9"):
        feed.offer(bad, 9)
    assert feed.image.resource_version == 4


def test_a_feed_catching_up_folds_its_events_as_one_run_and_goes_on_past_a_stale_leader() -> None:
    """A batch read from the log is folded as a replay folds it: one draft, its views built
    when the image is read; a stale leader's event in the middle is dead-lettered and the
    run goes on."""
    events = random_log(60, seed=5).events
    middle = len(events) // 2
    feed = _feed()
    for offset, event in enumerate(events[:middle]):
        assert feed.offer(event, offset) == []
    [letter] = feed.offer(reseal(events[middle], leader_epoch=0), middle, b"raw")
    assert "leader_epoch" in letter.reason
    for offset, event in enumerate(events[middle:], middle + 1):
        assert feed.offer(event, offset) == []
    image = feed.image
    stepwise = reduce(apply, events, Image.empty(CATALOG))
    assert image == replay(Image.empty(CATALOG), events) == stepwise
    assert isinstance(image.head.values.cold, WrittenValues)  # one run: the dict of writes
    assert len(image.head.values.changes) == 0
    assert (feed.stats.applied, feed.stats.dead_lettered) == (len(events), 1)
    feed.flush()
    expected, before = [], Image.empty(CATALOG)
    for event in events:
        expected += published_changes(before, event)
        before = apply(before, event)
    items, _ = feed.history.read(feed.history.start(0), 0)
    assert items == expected  # the watch sees what applying event by event would show
