"""Partition DDL (TiDB) and region failover (GreptimeDB)."""

import pytest

from events.changes import KeyAtVersion, ValueEquals
from events.commands import (
    AddPartition,
    DropPartition,
    ExchangePartition,
    FailoverRegion,
    SetAttributes,
    TruncatePartition,
)
from events.labels import partition_rule_ranges, record_key_range
from events.values import DatanodeTableValue, TableRouteValue
from producers.errors import PartitionExists, RegionNotFound, RouteChanged, VersionConflict
from producers.leader.local import LocalCatalog
from tests.domain.builders import command, create, deleted, last, local, writes


def _partitioned() -> LocalCatalog:
    catalog = local()
    catalog.submit(create(partitions=("p0", "p1")))
    catalog.submit(command(SetAttributes, table_name="orders", attributes="a=1"))
    catalog.submit(
        command(SetAttributes, table_name="orders", partition_name="p0", attributes="b=2")
    )
    return catalog


def test_add_partition_takes_a_fresh_id_and_the_table_rule_covers_it() -> None:
    catalog = _partitioned()
    catalog.submit(command(AddPartition, table_name="orders", partition_name="p2"))
    head = catalog.image.head
    assert [p.partition_id for p in head.table(1).partitions] == [2, 3, 4]  # type: ignore[union-attr]
    assert head.label_rule("schema/public/orders").ranges[-1] == record_key_range(4)  # type: ignore[union-attr]
    with pytest.raises(PartitionExists):
        catalog.submit(command(AddPartition, table_name="orders", partition_name="p2"))


def test_drop_partition_deletes_its_rule_at_once_and_shrinks_the_table_rule() -> None:
    catalog = _partitioned()
    catalog.submit(command(DropPartition, table_name="orders", partition_name="p0"))
    event = last(catalog)
    assert "__label_rule/schema/public/orders/p0" in deleted(event)
    head = catalog.image.head
    assert head.label_rule("schema/public/orders").ranges == (  # type: ignore[union-attr]
        record_key_range(1),
        record_key_range(3),
    )


def test_truncate_partition_gives_a_new_id_that_both_rules_follow() -> None:
    catalog = _partitioned()
    catalog.submit(command(TruncatePartition, table_name="orders", partition_name="p0"))
    head = catalog.image.head
    assert [p.partition_id for p in head.table(1).partitions] == [4, 3]  # type: ignore[union-attr]
    assert head.label_rule("schema/public/orders/p0").ranges == partition_rule_ranges(4)  # type: ignore[union-attr]
    assert head.label_rule("schema/public/orders").ranges == tuple(  # type: ignore[union-attr]
        record_key_range(i) for i in (1, 3, 4)
    )


def test_exchange_partition_swaps_ids_and_the_rules_with_their_ids_and_ranges() -> None:
    catalog = _partitioned()
    catalog.submit(create("plain", datanodes=(2,)))  # id 4
    catalog.submit(command(SetAttributes, table_name="plain", attributes="c=3"))
    catalog.submit(
        command(
            ExchangePartition,
            table_name="orders",
            partition_name="p0",
            other_schema_name="public",
            other_table_name="plain",
            expected_version=3,
            other_expected_version=2,
        )
    )
    event = last(catalog)
    assert event.requirements == (
        KeyAtVersion(key="__table_info/1", version=3),
        KeyAtVersion(key="__table_info/4", version=2),
    )
    # `plain` takes id 2 above the version id 4 leaves its name at (3), not at 1.
    assert [(t.table_id, t.version) for t in event.tables] == [(1, 4), (4, 3), (2, 4)]
    head = catalog.image.head
    assert [p.partition_id for p in head.table(1).partitions] == [4, 3]  # type: ignore[union-attr]
    assert head.table_id("public", "plain") == 2 and head.table(4) is None
    assert head.route(2).region_routes[0].region_id == 2 << 32  # type: ignore[union-attr]
    assert [v.table_id for v in head.datanode_tables(2)] == [2]
    part = head.label_rule("schema/public/orders/p0")
    plain = head.label_rule("schema/public/plain")
    assert part is not None and plain is not None
    assert (part.labels[0].key, part.ranges) == ("c", partition_rule_ranges(4))
    assert (plain.labels[0].key, plain.ranges) == ("b", (record_key_range(2),))


def test_exchange_checks_both_expected_versions() -> None:
    catalog = _partitioned()
    catalog.submit(create("plain"))
    with pytest.raises(VersionConflict, match=r"`public\.plain` is at version 1, not 5"):
        catalog.submit(
            command(
                ExchangePartition,
                table_name="orders",
                partition_name="p0",
                other_schema_name="public",
                other_table_name="plain",
                other_expected_version=5,
            )
        )


def _failover_setup() -> tuple[LocalCatalog, TableRouteValue]:
    catalog = local()
    catalog.submit(create(regions=2, datanodes=(1, 2)))
    route = catalog.image.head.route(1)
    assert route is not None
    return catalog, route


def test_failover_puts_the_route_and_moves_the_region_between_datanode_keys() -> None:
    catalog, route = _failover_setup()
    region = route.region_routes[1].region_id  # on datanode 2
    catalog.submit(
        command(FailoverRegion, table_id=1, region_id=region, to_datanode=1, expected_route=route)
    )
    event = last(catalog)
    assert event.requirements == (ValueEquals(key="__table_route/1", value=route),)
    assert deleted(event) == {"__dn_table/2/1"}
    assert writes(event)["__dn_table/1/1"] == DatanodeTableValue(
        datanode_id=1, table_id=1, regions=(0, 1), version=2
    )
    new_route = catalog.image.head.route(1)
    assert isinstance(new_route, TableRouteValue)
    assert [r.leader_datanode for r in new_route.region_routes] == [1, 1]
    assert catalog.image.head.datanode_tables(2) == ()


def test_failover_keeps_the_old_datanode_key_while_it_has_regions_left() -> None:
    catalog = local()
    catalog.submit(create(regions=3, datanodes=(1, 2)))
    route = catalog.image.head.route(1)
    assert route is not None
    catalog.submit(
        command(FailoverRegion, table_id=1, region_id=1 << 32, to_datanode=3, expected_route=route)
    )
    head = catalog.image.head
    assert [v.regions for v in head.datanode_tables(1)] == [(2,)]
    assert [v.regions for v in head.datanode_tables(3)] == [(0,)]


def test_failover_against_a_stale_snapshot_is_route_changed() -> None:
    catalog, route = _failover_setup()
    region = route.region_routes[1].region_id
    catalog.submit(
        command(FailoverRegion, table_id=1, region_id=region, to_datanode=1, expected_route=route)
    )
    with pytest.raises(RouteChanged, match="changed since your snapshot: re-read it"):
        catalog.submit(
            command(
                FailoverRegion, table_id=1, region_id=region, to_datanode=3, expected_route=route
            )
        )
    with pytest.raises(RegionNotFound):
        fresh = catalog.image.head.route(1)
        catalog.submit(
            command(FailoverRegion, table_id=1, region_id=99, to_datanode=3, expected_route=fresh)
        )
