"""History from raw records (decoding only what it needs) equals the oracle's: the fold of the
log decoded by fastavro (`tests.audit.history_oracle`)."""

from __future__ import annotations

import pytest

from bench.workload import Workload
from events.codec import encode_event
from events.event import Event
from events.intents import TableCreated, TableRenamed
from projector.audit import history_raw
from projector.audit.history_raw import table_history_raw
from projector.audit.raw import head, skim
from projector.errors import ReplayError
from tests.audit.history_oracle import expected_histories
from tests.audit.scripted import EXPECTED_U, lifecycle
from tests.domain.builders import CATALOG


def _names(events: list[Event]) -> list[tuple[str, str]]:
    names = {(e.intent.schema_name, e.intent.table_name) for e in events
             if isinstance(e.intent, TableCreated)}  # fmt: skip
    names |= {(e.intent.schema_name, e.intent.new_table_name) for e in events
              if isinstance(e.intent, TableRenamed)}  # fmt: skip
    return sorted(names)


def test_the_scripted_lifecycle_gives_the_same_history_from_raw_records() -> None:
    records = [encode_event(e) for e in lifecycle().events]
    oracle = expected_histories(CATALOG, records)
    for name in (("public", "u"), ("public", "p")):
        raw = table_history_raw(CATALOG, records, name)
        assert raw.document() == oracle.of(name)
    by_id = table_history_raw(CATALOG, records, table_id=2)
    assert [(c.resource_version, c.table_id, c.version, c.statement)
            for c in by_id.changes] == EXPECTED_U  # fmt: skip


@pytest.mark.parametrize("long_actor", [False, True])
@pytest.mark.parametrize("batch", [3, 5000])
def test_a_lifecycle_in_many_batches_or_read_record_by_record_gives_the_same_history(
    monkeypatch: pytest.MonkeyPatch, batch: int, long_actor: bool
) -> None:
    """Small batches split the log (the search for keys runs over each batch's bytes); a
    two-byte actor takes the batch off the pattern: the rename must still be followed."""
    monkeypatch.setattr(history_raw, "BATCH", batch)
    actor = "a" * 64 if long_actor else "tester"
    events = [e.model_copy(update={"actor": actor}) if isinstance(e.intent, TableRenamed) else e
              for e in lifecycle().events]  # fmt: skip
    records = [encode_event(e) for e in events]
    oracle = expected_histories(CATALOG, records)
    for name in (("public", "u"), ("public", "p")):
        raw = table_history_raw(CATALOG, records, name)
        assert raw.document() == oracle.of(name)
    assert [c.actor for c in table_history_raw(CATALOG, records, ("public", "u")).changes
            if c.intent == "TableRenamed"] == [actor]  # fmt: skip


@pytest.mark.parametrize(("seed", "batch"), [(3, 5000), (29, 5000), (29, 97)])
def test_every_table_of_a_random_log_has_the_same_history_from_raw_records(
    monkeypatch: pytest.MonkeyPatch, seed: int, batch: int
) -> None:
    monkeypatch.setattr(history_raw, "BATCH", batch)
    workload = Workload(["c1", "c2"], seed, partitions=True)
    workload.run_events(600)
    workload.set_mode("c1", "explicit")
    workload.run_events(900)
    workload.publish_all("c1")
    for catalog in ("c1", "c2"):
        events = workload.catalogs[catalog].events
        records = [encode_event(e) for e in events]
        oracle = expected_histories(catalog, records)
        names = _names(events)
        assert names == oracle.names()
        assert len(names) >= 3  # few names, many tables: a name passes from table to table
        for name in names:
            expected = oracle.of(name)
            assert table_history_raw(catalog, records, name).document() == expected, name
        top = max(t.table_id for e in events for t in e.tables)
        assert top > 20
        for table_id in range(1, top + 2):  # and one no table had
            expected = oracle.of(table_id=table_id)
            if expected is None:
                with pytest.raises(ReplayError):
                    table_history_raw(catalog, records, table_id=table_id)
                continue
            assert table_history_raw(catalog, records, table_id=table_id).document() == expected


def test_a_name_no_table_had_is_an_error_from_raw_records() -> None:
    records = [encode_event(e) for e in lifecycle().events]
    with pytest.raises(ReplayError, match=r"ever had `public\.nope`"):
        table_history_raw(CATALOG, records, ("public", "nope"))


def test_skim_finds_what_head_reads_in_every_record() -> None:
    workload = Workload(["c1"], 5, partitions=True)
    workload.run_events(800)
    for event in workload.catalogs["c1"].events:
        data = encode_event(event)
        envelope = head(data)
        assert skim(data) == (envelope.tables_span, envelope.intent, envelope.at)
        start, end = envelope.tables_span
        assert len(event.tables) == len(envelope.tables) and end > start
