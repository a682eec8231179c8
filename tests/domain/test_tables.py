"""Table lifecycle rules: create, drop, recover, purge, rename, alter, truncate."""

import pytest

from events.changes import KeyAbsent, KeyAtVersion, KeyPresent
from events.commands import AlterTable, DropTable, PurgeTable, RecoverTable, RenameTable
from events.intents import TableCreated, TableDropped
from events.values import (
    Column,
    DatanodeTableValue,
    RegionRoute,
    TableInfoValue,
    TableNameValue,
    TableRouteValue,
    TableVersion,
)
from producers.errors import (
    ColumnExists,
    ColumnNotFound,
    NameTaken,
    NotDropped,
    TableNotFound,
    VersionConflict,
)
from tests.domain.builders import CATALOG, command, create, deleted, last, local, writes

INFO, ROUTE = "__table_info/1", "__table_route/1"
NAME = f"__table_name/{CATALOG}/public/orders"
REMOVED_INFO, REMOVED_ROUTE = "__removed-__table_info/1", "__removed-__table_route/1"


def test_create_allocates_ids_places_regions_round_robin_and_writes_every_key_in_one_change() -> (
    None
):
    catalog = local()
    committed = catalog.submit(create(regions=3, datanodes=(7, 8), partitions=("p0", "p1")))
    event = last(catalog)
    assert isinstance(event.intent, TableCreated)
    assert event.requirements == (KeyAbsent(key=NAME), KeyAbsent(key=INFO), KeyAbsent(key=ROUTE))
    assert event.tables == (TableVersion(table_id=1, version=1),)
    assert committed.resource_version == 1 and committed.tables == event.tables
    put = writes(event)
    info = put[INFO]
    assert isinstance(info, TableInfoValue) and info.version == 1
    assert [(p.name, p.partition_id) for p in info.partitions] == [("p0", 2), ("p1", 3)]
    assert put[NAME] == TableNameValue(table_id=1)
    assert put[ROUTE] == TableRouteValue(
        table_id=1,
        region_routes=(
            RegionRoute(region_id=1 << 32, leader_datanode=7),
            RegionRoute(region_id=(1 << 32) | 1, leader_datanode=8),
            RegionRoute(region_id=(1 << 32) | 2, leader_datanode=7),
        ),
    )
    assert put["__dn_table/7/1"] == DatanodeTableValue(
        datanode_id=7, table_id=1, regions=(0, 2), version=1
    )
    assert put["__dn_table/8/1"] == DatanodeTableValue(
        datanode_id=8, table_id=1, regions=(1,), version=1
    )
    head = catalog.image.head
    assert head.table_by_name("public", "orders") == info
    assert [v.table_id for v in head.datanode_tables(7)] == [1]
    assert catalog.image.max_id == 3


def test_create_of_a_taken_name_is_rejected_and_writes_nothing() -> None:
    catalog = local()
    catalog.submit(create())
    with pytest.raises(NameTaken, match=r"`public\.orders` already exists"):
        catalog.submit(create())
    assert catalog.image.resource_version == 1


def test_drop_moves_info_and_route_to_removed_and_deletes_name_and_datanode_keys_at_once() -> None:
    catalog = local()
    catalog.submit(create(datanodes=(1,)))
    catalog.submit(command(DropTable, table_name="orders"))
    event = last(catalog)
    assert isinstance(event.intent, TableDropped)
    assert event.requirements == (KeyAtVersion(key=INFO, version=1),)
    assert deleted(event) == {INFO, ROUTE, NAME, "__dn_table/1/1"}
    dropped_info = writes(event)[REMOVED_INFO]
    assert isinstance(dropped_info, TableInfoValue) and dropped_info.version == 2
    assert writes(event)[REMOVED_ROUTE] == catalog.image.head.dropped_route(1)
    head = catalog.image.head
    assert head.table(1) is None and head.table_by_name("public", "orders") is None
    assert head.dropped_table(1) == dropped_info
    assert head.datanode_tables(1) == ()


def test_drop_at_a_stale_expected_version_is_a_version_conflict_with_the_current_version() -> None:
    catalog = local()
    catalog.submit(create())
    with pytest.raises(VersionConflict) as caught:
        catalog.submit(command(DropTable, table_name="orders", expected_version=3))
    assert caught.value.current_version == 1
    assert str(caught.value) == (
        "table `public.orders` is at version 1, not 3 (table id 1): re-read it and retry"
    )


def test_drop_of_a_missing_table_is_table_not_found() -> None:
    with pytest.raises(TableNotFound, match=r"`public\.nope` does not exist"):
        local().submit(command(DropTable, table_name="nope"))


def test_recover_reverses_drop_under_the_name_and_keeps_label_rules() -> None:
    catalog = local()
    catalog.submit(create(datanodes=(1, 2), regions=2))
    before = catalog.image.head
    catalog.submit(command(DropTable, table_name="orders"))
    catalog.submit(command(RecoverTable, table_name="orders"))
    event = last(catalog)
    assert event.requirements == (KeyAtVersion(key=REMOVED_INFO, version=2), KeyAbsent(key=NAME))
    assert deleted(event) == {REMOVED_INFO, REMOVED_ROUTE}
    head = catalog.image.head
    info = head.table(1)
    assert info is not None and info.version == 3
    assert head.route(1) == before.route(1)
    assert [v.regions for v in head.datanode_tables(2)] == [(1,)]
    assert head.table_id("public", "orders") == 1


def test_recover_when_the_name_was_taken_again_is_name_taken() -> None:
    catalog = local()
    catalog.submit(create())
    catalog.submit(command(DropTable, table_name="orders"))
    catalog.submit(create())
    with pytest.raises(NameTaken):
        catalog.submit(command(RecoverTable, table_name="orders", table_id=1))


def test_recover_by_name_picks_the_newest_dropped_table() -> None:
    catalog = local()
    for _ in range(2):
        catalog.submit(create())
        catalog.submit(command(DropTable, table_name="orders"))
    catalog.submit(command(RecoverTable, table_name="orders"))
    assert catalog.image.head.table_id("public", "orders") == 2


def test_purge_deletes_removed_keys_and_the_tables_label_rules() -> None:
    from events.commands import SetAttributes

    catalog = local()
    catalog.submit(create(partitions=("p0",)))
    catalog.submit(command(SetAttributes, table_name="orders", attributes="a=1"))
    catalog.submit(
        command(SetAttributes, table_name="orders", partition_name="p0", attributes="b=2")
    )
    catalog.submit(command(DropTable, table_name="orders"))
    assert len(catalog.image.head.label_rules()) == 2
    catalog.submit(command(PurgeTable, table_id=1))
    event = last(catalog)
    assert event.requirements == (
        KeyAtVersion(key=REMOVED_INFO, version=4),
        KeyPresent(key=REMOVED_ROUTE),
    )
    assert deleted(event) == {
        REMOVED_INFO,
        REMOVED_ROUTE,
        "__label_rule/schema/public/orders",
        "__label_rule/schema/public/orders/p0",
    }
    assert len(catalog.image.head) == 0


def test_purge_of_a_live_table_is_not_dropped_and_of_an_unknown_id_table_not_found() -> None:
    catalog = local()
    catalog.submit(create())
    with pytest.raises(NotDropped, match="drop it before purging"):
        catalog.submit(command(PurgeTable, table_id=1))
    with pytest.raises(TableNotFound):
        catalog.submit(command(PurgeTable, table_id=9))


def test_ids_are_never_reused_after_a_purge() -> None:
    catalog = local()
    catalog.submit(create(partitions=("p0",)))
    catalog.submit(command(DropTable, table_name="orders"))
    catalog.submit(command(PurgeTable, table_id=1))
    catalog.submit(create())
    assert catalog.image.head.table_id("public", "orders") == 3


def test_rename_deletes_the_old_name_puts_the_new_one_and_the_info_at_version_plus_one() -> None:
    catalog = local()
    catalog.submit(create())
    catalog.submit(command(RenameTable, table_name="orders", new_table_name="sales"))
    event = last(catalog)
    new_name = f"__table_name/{CATALOG}/public/sales"
    assert event.requirements == (
        KeyAtVersion(key=INFO, version=1),
        KeyAbsent(key=new_name),
    )
    assert deleted(event) == {NAME}
    info = writes(event)[INFO]
    assert isinstance(info, TableInfoValue) and (info.table_name, info.version) == ("sales", 2)
    assert writes(event)[new_name] == TableNameValue(table_id=1)
    assert catalog.image.head.table_by_name("public", "sales") == info


def test_rename_onto_a_taken_name_is_name_taken() -> None:
    catalog = local()
    catalog.submit(create())
    catalog.submit(create("sales"))
    with pytest.raises(NameTaken):
        catalog.submit(command(RenameTable, table_name="orders", new_table_name="sales"))


def test_alter_puts_the_info_with_columns_and_options_changed_at_version_plus_one() -> None:
    catalog = local()
    catalog.submit(create(options={"ttl": "7d", "x": "1"}))
    extra = Column(name="amount", data_type="decimal")
    catalog.submit(
        command(
            AlterTable,
            table_name="orders",
            expected_version=1,
            add_columns=(extra,),
            drop_columns=("name",),
            set_options={"ttl": "30d"},
            unset_options=("x",),
        )
    )
    event = last(catalog)
    assert event.requirements == (KeyAtVersion(key=INFO, version=1),)
    info = catalog.image.head.table(1)
    assert info is not None and info.version == 2
    assert [c.name for c in info.columns] == ["id", "amount"]
    assert info.options == {"ttl": "30d"}


def test_alter_rejects_an_existing_column_and_a_missing_one() -> None:
    catalog = local()
    catalog.submit(create())
    with pytest.raises(ColumnExists):
        catalog.submit(
            command(
                AlterTable, table_name="orders", add_columns=(Column(name="id", data_type="x"),)
            )
        )
    with pytest.raises(ColumnNotFound):
        catalog.submit(command(AlterTable, table_name="orders", drop_columns=("nope",)))
