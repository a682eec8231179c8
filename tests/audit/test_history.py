"""History, diff and replay points over a scripted log, without Kafka."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from datetime import timedelta

import pytest

from events.codec import encode_event
from events.commands import AdvanceStableEpoch, AlterTable, Publish
from events.event import Event
from projector.audit.diff import catalog_diff
from projector.audit.history import TableHistory
from projector.audit.history_raw import table_history_raw
from projector.errors import ApplyError, ReplayError
from projector.fold.apply import replay
from projector.fold.image import Image
from projector.replay.point import END, Point, parse_point, replay_until
from tests.audit.scripted import EXPECTED_U, lifecycle
from tests.domain.builders import CATALOG, EPOCH, command, create, local


def _history(
    catalog: str, events: Sequence[Event], name: tuple[str, str] | None = None,
    table_id: int | None = None,
) -> TableHistory:  # fmt: skip
    """The history of a table from the events' records, as `metalog audit history` reads it."""
    return table_history_raw(catalog, [encode_event(e) for e in events], name, table_id)


def test_history_follows_a_table_across_rename_truncate_exchange_drop_and_recover() -> None:
    events = lifecycle().events
    history = _history(CATALOG, events, ("public", "u"))
    rows = [(c.resource_version, c.table_id, c.version, c.statement) for c in history.changes]
    assert rows == EXPECTED_U
    assert history.names == ["public.t", "public.u"] and history.table_ids == [1, 2, 4]
    assert [c.actor for c in history.changes][-3] == "bob"
    assert all(c.schema_epoch > 0 and c.published_at == c.resource_version
               for c in history.changes)  # fmt: skip
    by_id = _history(CATALOG, events, table_id=2)  # an id it had in the middle
    assert [c.resource_version for c in by_id.changes] == [rv for rv, *_ in EXPECTED_U]


def test_history_gives_each_change_its_key_level_diff() -> None:
    history = _history(CATALOG, lifecycle().events, ("public", "u"))
    rename = {k.key: k for k in history.changes[1].keys}
    assert rename["__table_name/c/public/t"].op == "removed"
    assert rename["__table_name/c/public/u"].op == "added"
    assert rename["__table_info/1"].fields() == {"table_name": ("t", "u"), "version": (1, 2)}
    exchange = {k.key: k.op for k in history.changes[3].keys}
    assert exchange["__table_info/2"] == "removed" and exchange["__table_info/4"] == "added"
    assert history.changes[3].keys[0].document()["kind"] == "__table_info"
    drop = {k.key: k.op for k in history.changes[6].keys}
    assert drop["__removed-__table_info/4"] == "added" and drop["__table_info/4"] == "removed"


def test_history_of_the_partitioned_table_holds_the_exchange_and_not_the_other_table() -> None:
    history = _history(CATALOG, lifecycle().events, ("public", "p"))
    assert [c.resource_version for c in history.changes] == [5, 6]
    assert history.table_ids == [3]


def test_history_in_explicit_mode_gives_the_epoch_and_the_release() -> None:
    catalog = local("explicit")
    catalog.submit(create("a"))
    table = catalog.image.head.table_id("public", "a")
    assert table is not None
    catalog.submit(command(AlterTable, table_name="a", set_options={"x": "1"}))
    catalog.submit(command(Publish, table_id=table, epoch=3))
    catalog.submit(command(AdvanceStableEpoch, epoch=3))
    history = _history(CATALOG, catalog.events, ("public", "a"))
    assert [(c.resource_version, c.schema_epoch, c.published_at) for c in history.changes] == [
        (2, 3, 5), (3, 3, 5)]  # fmt: skip


def test_history_of_an_unknown_table_names_it() -> None:
    with pytest.raises(ReplayError, match=r"`public\.nope`"):
        _history(CATALOG, lifecycle().events, ("public", "nope"))


def test_diff_counts_keys_per_kind_and_says_each_table_in_ddl_words() -> None:
    events = lifecycle().events
    start = replay(Image.empty(CATALOG), events[:3])  # t created and renamed to u
    diff, end = catalog_diff(start, events, Point(resource_version=7))
    assert (diff.from_resource_version, diff.to_resource_version) == (3, 7)
    assert diff.tables == {
        "public.u": "TRUNCATE TABLE public.u; ALTER TABLE public.p EXCHANGE PARTITION p0 WITH "
                    "TABLE public.u; ALTER TABLE public.u ATTRIBUTES='k=v'",
        "public.p": "CREATE TABLE public.p; ALTER TABLE public.p EXCHANGE PARTITION p0 WITH "
                    "TABLE public.u",
    }  # fmt: skip
    counts = diff.counts()
    # u's id went 1 → 2 → 4: info 1 removed, 4 added (2 came and went); p's info 3 added.
    assert counts["__table_info"] == {"added": 2, "changed": 0, "removed": 1}
    assert counts["__table_name"] == {"added": 1, "changed": 1, "removed": 0}  # p; u's id
    assert counts["__label_rule"] == {"added": 1, "changed": 0, "removed": 0}
    assert end == replay(Image.empty(CATALOG), events[:7])


def test_a_time_point_stops_after_the_last_event_at_or_before_it() -> None:
    events = lifecycle().events  # event n occurred at EPOCH + n seconds
    at = parse_point((EPOCH + timedelta(seconds=5, milliseconds=500)).isoformat())
    past: list[Event] = []
    assert replay_until(Image.empty(CATALOG), events, at, past=past) == replay(
        Image.empty(CATALOG), events[:5])  # fmt: skip
    assert past == [events[5]]  # the first event past the point, where the rest begins
    past.clear()
    third = replay_until(Image.empty(CATALOG), iter(events), Point(resource_version=3), past=past)
    assert third == replay(Image.empty(CATALOG), events[:3]) and past == [events[3]]
    assert parse_point("7") == Point(resource_version=7)
    assert parse_point("2026-01-01T00:00:05").time == EPOCH + timedelta(seconds=5)
    with pytest.raises(ReplayError, match="neither a resource_version"):
        parse_point("yesterday")


def test_a_replay_pauses_the_cycle_collector_and_leaves_it_as_it_found_it() -> None:
    """The image is acyclic: a replay runs with the collector off (a quarter faster at 100k
    tables), and turns it back on only if it was on, even when an event does not fit."""
    events = lifecycle().events
    during: list[bool] = []
    seen = lambda _event: during.append(gc.isenabled())  # noqa: E731
    assert gc.isenabled()
    replay_until(Image.empty(CATALOG), events, END, seen)
    assert during and not any(during) and gc.isenabled()
    gc.disable()
    try:
        replay_until(Image.empty(CATALOG), events, END)
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ApplyError):  # the fourth event left out: a gap
        replay_until(Image.empty(CATALOG), [*events[:3], *events[4:]], END)
    assert gc.isenabled()
    catalog_diff(Image.empty(CATALOG), events, END)
    assert gc.isenabled()
