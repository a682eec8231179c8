"""Versions never repeat for a name (docs/design.md "version", issue 50 item 1): no ABA write.

Each test gives a name to another table id by one rule (exchange, truncate,
create after a drop or a purge, rename onto a freed name, recover and
FLASHBACK … TO) and then sends the write a client could have built from a
version it read before: it must be a `VersionConflict` naming the current
version and the table id, and the name's versions go on from the highest it
showed. Each event replays to the leader's image.
"""

import pytest

from events.chain import seal
from events.commands import (
    AlterTable,
    DropTable,
    ExchangePartition,
    PurgeTable,
    RecoverTable,
    RenameTable,
    TruncateTable,
)
from events.event import Event
from events.values import DatanodeTableValue, TableInfoValue
from producers.errors import VersionConflict
from producers.leader.local import LocalCatalog
from projector.errors import Divergence
from projector.fold.apply import apply, replay
from projector.fold.image import Image
from tests.domain.builders import CATALOG, SCHEMA, command, create, local


def _alter(catalog: LocalCatalog, table: str, times: int = 1) -> None:
    for n in range(times):
        catalog.submit(command(AlterTable, table_name=table, set_options={"n": str(n)}))


def _version(catalog: LocalCatalog, table: str) -> tuple[int, int]:
    """(table id, version) of the live table of that name."""
    info = catalog.image.head.table_by_name(SCHEMA, table)
    assert info is not None
    return info.table_id, info.version


def _stale_write_conflicts(catalog: LocalCatalog, table: str, seen: int) -> None:
    """A write conditioned on a version `seen` under the name earlier is refused."""
    table_id, current = _version(catalog, table)
    assert current > seen
    with pytest.raises(VersionConflict) as caught:
        catalog.submit(
            command(AlterTable, table_name=table, set_options={"x": "y"}, expected_version=seen)
        )
    assert caught.value.current_version == current
    assert f"is at version {current}, not {seen} (table id {table_id})" in str(caught.value)
    assert replay(Image.empty(CATALOG), catalog.events) == catalog.image


def test_exchange_partition_continues_the_versions_of_the_plain_tables_name() -> None:
    catalog = local()
    catalog.submit(create("pt", partitions=("p",)))  # ids 1 and 2 (partition p)
    catalog.submit(create("n1"))  # id 3
    _alter(catalog, "n1", 3)  # n1 at version 4
    catalog.submit(
        command(
            ExchangePartition,
            table_name="pt",
            partition_name="p",
            other_schema_name=SCHEMA,
            other_table_name="n1",
        )
    )
    # Id 3 leaves the name at 5 (it becomes the partition): id 2 takes it at 6, not 1.
    assert _version(catalog, "n1") == (2, 6)
    assert dict(catalog.image.name_versions) == {(SCHEMA, "n1"): 5}
    _stale_write_conflicts(catalog, "n1", seen=1)


def test_truncate_table_continues_the_versions_under_the_new_id() -> None:
    catalog = local()
    catalog.submit(create("orders"))
    _alter(catalog, "orders", 2)  # version 3
    catalog.submit(command(TruncateTable, table_name="orders"))
    assert _version(catalog, "orders") == (2, 5)  # id 1 leaves at 4
    _stale_write_conflicts(catalog, "orders", seen=1)


def test_create_after_a_drop_continues_the_names_versions() -> None:
    catalog = local()
    catalog.submit(create("orders"))
    _alter(catalog, "orders")  # version 2
    catalog.submit(command(DropTable, table_name="orders"))  # id 1 leaves at 3
    catalog.submit(create("orders"))
    assert _version(catalog, "orders") == (2, 4)
    _stale_write_conflicts(catalog, "orders", seen=1)
    _stale_write_conflicts(catalog, "orders", seen=2)


def test_create_after_a_drop_and_a_purge_still_continues_the_names_versions() -> None:
    catalog = local()
    catalog.submit(create("orders"))
    _alter(catalog, "orders")
    catalog.submit(command(DropTable, table_name="orders"))
    catalog.submit(command(PurgeTable, table_id=1))  # nothing of id 1 is left in the head
    catalog.submit(create("orders"))
    assert _version(catalog, "orders") == (2, 4)
    _stale_write_conflicts(catalog, "orders", seen=1)


def test_rename_onto_a_freed_name_continues_its_versions() -> None:
    catalog = local()
    catalog.submit(create("a"))
    _alter(catalog, "a")  # `a` at version 2
    catalog.submit(command(RenameTable, table_name="a", new_table_name="x"))  # leaves at 3
    catalog.submit(create("b"))
    catalog.submit(command(RenameTable, table_name="b", new_table_name="a"))
    assert _version(catalog, "a") == (2, 4)
    _stale_write_conflicts(catalog, "a", seen=2)


def test_recover_under_a_name_another_table_used_meanwhile_continues_its_versions() -> None:
    catalog = local()
    catalog.submit(create("a"))
    catalog.submit(command(DropTable, table_name="a"))  # id 1 dropped at 2
    catalog.submit(create("a"))  # id 2 at 3
    _alter(catalog, "a", 2)  # id 2 at 5
    catalog.submit(command(DropTable, table_name="a"))  # id 2 leaves at 6
    catalog.submit(command(RecoverTable, table_name="a", table_id=1))
    assert _version(catalog, "a") == (1, 7)
    _stale_write_conflicts(catalog, "a", seen=3)


def test_flashback_to_a_name_another_table_used_meanwhile_continues_its_versions() -> None:
    # FLASHBACK TABLE old TO a: recover `old`, then rename it to `a` (producers.sql.writes).
    catalog = local()
    catalog.submit(create("old"))
    catalog.submit(command(DropTable, table_name="old"))
    catalog.submit(create("a"))
    _alter(catalog, "a", 3)  # id 2 at 4
    catalog.submit(command(DropTable, table_name="a"))  # leaves at 5
    catalog.submit(command(RecoverTable, table_name="old"))  # id 1 at 3 under `old`
    catalog.submit(command(RenameTable, table_name="old", new_table_name="a"))
    assert _version(catalog, "a") == (1, 6)
    _stale_write_conflicts(catalog, "a", seen=4)


def test_a_table_id_and_version_pair_still_never_repeats_across_the_name_rules() -> None:
    catalog = local()
    catalog.submit(create("pt", partitions=("p",)))
    catalog.submit(create("n1"))
    exchange = command(
        ExchangePartition,
        table_name="pt",
        partition_name="p",
        other_schema_name=SCHEMA,
        other_table_name="n1",
    )
    seen = [_version(catalog, "n1")]
    for n in range(3):  # n1 moves between ids 3 and 2; each id counts on from its own past
        catalog.submit(exchange.model_copy(update={"command_id": f"x{n}"}))
        seen.append(_version(catalog, "n1"))
        _alter(catalog, "n1")
        seen.append(_version(catalog, "n1"))
    catalog.submit(command(TruncateTable, table_name="n1"))
    seen.append(_version(catalog, "n1"))
    catalog.submit(command(DropTable, table_name="n1"))
    catalog.submit(create("n1"))
    seen.append(_version(catalog, "n1"))
    assert [version for _, version in seen] == sorted({version for _, version in seen})
    assert len({table_id for table_id, _ in seen}) == 4  # ids 3, 2, the truncate's, the create's
    pairs = [(t.table_id, t.version) for e in catalog.events for t in e.tables]
    assert len(pairs) == len(set(pairs))
    assert replay(Image.empty(CATALOG), catalog.events) == catalog.image


def _renumbered(event: Event, version: int) -> Event:
    """The event with its one table, its info and datanode keys at `version`, sealed again."""
    mutations = tuple(
        m.model_copy(update={"value": m.value.model_copy(update={"version": version})})
        if isinstance(m.value, TableInfoValue | DatanodeTableValue)
        else m
        for m in event.mutations
    )
    (table,) = event.tables
    tables = (table.model_copy(update={"version": version}),)
    return seal(event.model_copy(update={"mutations": mutations, "tables": tables}))


def test_the_fold_takes_the_names_next_version_or_a_pre_rule_logs_and_refuses_any_other() -> None:
    catalog = local()
    catalog.submit(create("orders"))
    catalog.submit(command(DropTable, table_name="orders"))  # leaves the name at 2
    before = catalog.image
    catalog.submit(create("orders"))
    taken = catalog.events[-1]
    assert [(t.table_id, t.version) for t in taken.tables] == [(2, 3)]
    assert apply(before, taken) == catalog.image
    # A log written before the rule gave the new id its own next version: it still replays,
    # and the name keeps what it remembered.
    old = apply(before, _renumbered(taken, 1))
    assert old.head.table(2).version == 1  # type: ignore[union-attr]
    assert dict(old.name_versions) == {(SCHEMA, "orders"): 2}
    with pytest.raises(
        Divergence, match=r"goes to version 4 but is at 0 \(its new name was last at 2\)"
    ):
        apply(before, _renumbered(taken, 4))
