"""LocalCatalog: decide + apply in memory, dedupe by command_id, rebuild from the log."""

from datetime import datetime

import pytest

from events.codec import decode_event, encode_event
from events.commands import DropTable
from events.values import TableInfoValue
from producers.decide.core import Stamp
from producers.errors import NameTaken, TableNotFound
from producers.leader.local import LocalCatalog
from projector.fold.packing import pack, unpack
from tests.domain.builders import CATALOG, COLUMNS, command, create, local, stamps


def test_a_retried_command_returns_the_first_outcome_and_writes_nothing() -> None:
    catalog = local()
    first = create()
    committed = catalog.submit(first)
    assert catalog.submit(first) == committed
    assert len(catalog.events) == 1
    missing = command(DropTable, table_name="nope")
    with pytest.raises(TableNotFound) as caught:
        catalog.submit(missing)
    catalog.submit(create("nope"))
    with pytest.raises(TableNotFound) as again:
        catalog.submit(missing)
    assert again.value is caught.value


def test_the_dedupe_window_is_rebuilt_from_a_replayed_log() -> None:
    catalog = local()
    first = create()
    committed = catalog.submit(first)
    catalog.elect("leader-1")
    rebuilt = LocalCatalog.from_log(CATALOG, stamps(), catalog.events)
    assert rebuilt.image == catalog.image
    assert rebuilt.submit(first) == committed
    assert rebuilt.take_new_events() == []


def test_the_dedupe_window_is_bounded_oldest_first() -> None:
    catalog = LocalCatalog(CATALOG, stamps(), window=2)
    commands = [create(f"t{i}") for i in range(3)]
    for c in commands:
        catalog.submit(c)
    catalog.submit(commands[2])
    assert len(catalog.events) == 3
    with pytest.raises(NameTaken):
        catalog.submit(commands[0])


def test_elect_writes_leader_elected_with_the_next_leader_epoch() -> None:
    catalog = local()
    event = catalog.elect("a")
    assert (event.leader_epoch, event.command_id, event.actor) == (1, None, "a")
    assert catalog.submit(create()).resource_version == 2
    assert catalog.events[-1].leader_epoch == 1


def test_a_stamp_must_be_aware_utc() -> None:
    with pytest.raises(ValueError, match="aware UTC"):
        Stamp(event_id="x", occurred_at=datetime(2026, 1, 1))  # noqa: DTZ001


def test_packing_round_trips_every_value_and_shares_equal_columns() -> None:
    catalog = local()
    catalog.submit(create("a", partitions=("p",)))
    catalog.submit(create("b"))
    for event in catalog.events:
        for mutation in event.mutations:
            assert mutation.value is not None
            assert unpack(pack(mutation.value)) == mutation.value
    head = catalog.image.head
    a, b = head.table(1), head.table(3)
    assert a is not None and b is not None and a.columns == b.columns == COLUMNS
    assert all(x is y for x, y in zip(a.columns, b.columns, strict=True))
    # A packed info is a full model: copy, dump and validate behave as usual.
    bumped = a.model_copy(update={"version": 9})
    assert bumped.version == 9 and a.version == 1
    assert TableInfoValue.model_validate(a.model_dump()) == a


def test_an_info_decode_event_read_is_stored_as_it_is_and_any_other_is_packed() -> None:
    catalog = local()
    catalog.submit(create("a"))
    built = next(m.value for m in catalog.events[-1].mutations if type(m.value) is TableInfoValue)
    read = next(
        m.value
        for m in decode_event(encode_event(catalog.events[-1])).mutations
        if type(m.value) is TableInfoValue
    )
    assert pack(read) is read  # the reader pooled its parts already
    packed = pack(built)
    assert packed is not built and packed == built == read
    assert packed.columns[0] is read.columns[0] and packed.catalog is read.catalog
    assert pack(packed) is packed
    # A changed copy is not marked: its columns are shared again.
    changed = read.model_copy(update={"columns": tuple(c.model_copy() for c in read.columns)})
    repacked = pack(changed)
    assert repacked is not changed and repacked.columns[0] is read.columns[0]


def test_new_events_are_taken_once_and_a_leader_may_keep_no_log() -> None:
    catalog = LocalCatalog(CATALOG, stamps(), keep_log=False)
    catalog.elect("leader-1")
    catalog.submit(create())
    taken = catalog.take_new_records()
    assert [type(s.event.intent).__name__ for s in taken] == ["LeaderElected", "TableCreated"]
    # Each event comes with its record, as the plain encoder writes it: nothing to encode again.
    assert [s.record for s in taken] == [encode_event(s.event) for s in taken]
    assert catalog.take_new_events() == []
    assert catalog.events == ()
    assert catalog.image.resource_version == 2
