"""A batch's envelopes read at once (one pattern over the joined bytes) are what `skim` reads."""

from __future__ import annotations

import pytest

from bench.workload import Workload
from events.codec import encode_event
from projector.audit import envelopes
from projector.audit.envelopes import INTENTS, NOT_AN_EVENT, Skimmed, skim_batch
from projector.audit.raw import NotAnEvent, skim
from tests.audit.scripted import lifecycle
from tests.events import event_golden as golden


def _skimmed_one_by_one(records: list[bytes]) -> list[tuple[bytes, int, int]]:
    """What `raw.skim` reads in each record, as `skim_batch` gives it."""
    out = []
    for data in records:
        try:
            (start, end), intent, at = skim(data)
        except NotAnEvent:
            out.append((b"", NOT_AN_EVENT, 0))
            continue
        out.append((data[start:end], 2 * INTENTS.index(intent), at))
    return out


def _rows(skimmed: Skimmed) -> list[tuple[bytes, int, int]]:
    return list(zip(skimmed.tables, skimmed.intents, skimmed.ats, strict=True))


@pytest.fixture
def pattern_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail if a batch is read record by record: the pattern must read it."""

    def refuse(records: list[bytes]) -> Skimmed:
        raise AssertionError("the batch was read record by record")

    monkeypatch.setattr(envelopes, "_one_by_one", refuse)


@pytest.mark.usefixtures("pattern_only")
def test_the_pattern_reads_what_skim_reads_in_every_record_of_a_random_log() -> None:
    workload = Workload(["c1"], 5, partitions=True)
    workload.run_events(700)
    workload.set_mode("c1", "explicit")
    workload.run_events(1000)
    workload.publish_all("c1")
    records = [encode_event(e) for e in workload.catalogs["c1"].events]
    intents = {type(e.intent).__name__ for e in workload.catalogs["c1"].events}
    assert {"TableCreated", "TableRenamed", "PartitionExchanged", "EpochAssigned"} <= intents
    assert _rows(skim_batch(records)) == _skimmed_one_by_one(records)


@pytest.mark.usefixtures("pattern_only")
def test_the_pattern_reads_every_schema_version() -> None:
    versions = (golden.EVENTS_V1, golden.EVENTS_V2, golden.EVENTS)
    records = [bytes.fromhex(data) for version in versions for data in version.values()]
    assert len({r[2:10] for r in records}) == 3
    assert _rows(skim_batch(records)) == _skimmed_one_by_one(records)


@pytest.mark.usefixtures("pattern_only")
def test_a_branch_its_writer_lacks_is_not_an_event() -> None:
    v1 = bytes.fromhex(golden.EVENTS_V1["Reloaded"])
    _, _, at = skim(v1)
    late = v1[: at - 1] + bytes([2 * INTENTS.index("LeaderResigned")]) + v1[at:]  # a v2 branch
    with pytest.raises(NotAnEvent):
        skim(late)
    skimmed = skim_batch([v1, late])
    assert skimmed.intents == bytes([2 * INTENTS.index("Reloaded"), NOT_AN_EVENT])
    assert list(skimmed.where(frozenset({"Reloaded", "LeaderResigned"}))) == [0]


@pytest.mark.parametrize("at", [2, 10])
def test_a_record_the_pattern_cannot_read_turns_the_batch_to_skim(at: int) -> None:
    events = lifecycle().events
    assert len(events) == 10  # at 10: the odd records end the batch
    renamed = events[2].model_copy(update={"actor": "a" * 64})  # a two-byte length
    assert type(renamed.intent).__name__ == "TableRenamed"
    records = [encode_event(e) for e in events]
    records[at:at] = [encode_event(renamed), b"not an event"]
    rows = _rows(skim_batch(records))
    assert rows == _skimmed_one_by_one(records)
    assert [row[1] for row in rows[at : at + 2]] == [2 * INTENTS.index("TableRenamed"),
                                                      NOT_AN_EVENT]  # fmt: skip
