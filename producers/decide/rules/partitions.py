"""Partition rules (TiDB): add, drop, truncate, exchange.

A partition's id is a physical table id from the same sequence as table ids.
The table's rule lists every partition's range, so each of these moves the
table rule's ranges too; a dropped partition's own rule goes at once.
"""

from events.commands import AddPartition, DropPartition, ExchangePartition, TruncatePartition
from events.intents import PartitionAdded, PartitionDropped, PartitionExchanged, PartitionTruncated
from events.keys import table_info_key, table_name_key, table_route_key
from events.values import PartitionDef, TableInfoValue, TableNameValue
from producers.decide.rules.common import (
    Change,
    at_version,
    bumped,
    check_version,
    delete,
    delete_datanode_tables,
    find_partition,
    live_table,
    mutations,
    new_ids,
    put,
    put_datanode_tables,
    qualified,
    rekeyed_route,
    touched,
    version_taking_name,
)
from producers.decide.rules.labels import follow_rules, follow_table_rule, swapped_rules
from producers.errors import InvalidCommand, PartitionExists
from projector.fold.image import Image


def add(image: Image, command: AddPartition) -> Change:
    """AddPartition: a fresh id; the table rule's ranges grow to cover it."""
    info = live_table(image, command.schema_name, command.table_name)
    check_version(info, command.expected_version)
    if any(p.name == command.partition_name for p in info.partitions):
        raise PartitionExists(
            f"table `{qualified(info.schema_name, info.table_name)}` already has partition "
            f"`{command.partition_name}`: choose another name"
        )
    (partition_id,) = new_ids(image, 1)
    partition = PartitionDef(partition_id=partition_id, name=command.partition_name)
    changed = bumped(info, partitions=(*info.partitions, partition))
    return _partition_change(
        image, info, changed, PartitionAdded(table_id=info.table_id, partition=partition)
    )


def drop(image: Image, command: DropPartition) -> Change:
    """DropPartition: its rule is deleted at once; the table rule drops its range."""
    info = live_table(image, command.schema_name, command.table_name)
    check_version(info, command.expected_version)
    partition = find_partition(info, command.partition_name)
    changed = bumped(info, partitions=tuple(p for p in info.partitions if p != partition))
    return _partition_change(
        image, info, changed, PartitionDropped(table_id=info.table_id, partition=partition)
    )


def truncate(image: Image, command: TruncatePartition) -> Change:
    """TruncatePartition: a new partition id; its range follows in both rules."""
    info = live_table(image, command.schema_name, command.table_name)
    check_version(info, command.expected_version)
    partition = find_partition(info, command.partition_name)
    (new_id,) = new_ids(image, 1)
    changed = bumped(
        info,
        partitions=tuple(
            p.model_copy(update={"partition_id": new_id}) if p == partition else p
            for p in info.partitions
        ),
    )
    intent = PartitionTruncated(
        table_id=info.table_id,
        partition_name=partition.name,
        old_partition_id=partition.partition_id,
        new_partition_id=new_id,
    )
    return _partition_change(image, info, changed, intent)


def _partition_change(
    image: Image,
    info: TableInfoValue,
    changed: TableInfoValue,
    intent: PartitionAdded | PartitionDropped | PartitionTruncated,
) -> Change:
    return Change(
        intent=intent,
        requirements=(at_version(info),),
        mutations=mutations(
            [put(table_info_key(info.table_id), changed)],
            follow_rules(image.head, info, changed),
        ),
        tables=touched(image, info.table_id),
    )


def exchange(image: Image, command: ExchangePartition) -> Change:
    """ExchangePartition: partition p takes the plain table's id and the table takes p's.

    The plain table's keys move to p's old id (info, route, datanode keys,
    name); the two label rules swap, each taking the other's rule id and the
    ranges of its new id (TiDB's exchange). The plain table takes its name at
    p's id (`version_taking_name`): above both the last version p's id had as a
    table, if it had one (an exchange back), and the version the table leaves
    the name at, so neither a (table_id, version) nor a (name, version) pair
    repeats.
    """
    info = live_table(image, command.schema_name, command.table_name)
    check_version(info, command.expected_version)
    other = live_table(image, command.other_schema_name, command.other_table_name)
    check_version(other, command.other_expected_version)
    partition = find_partition(info, command.partition_name)
    if other.partitions or other.table_id == info.table_id:
        raise InvalidCommand(
            f"`{qualified(other.schema_name, other.table_name)}` must be a plain, "
            "non-partitioned table other than the partitioned one: choose another table"
        )
    pid, oid = partition.partition_id, other.table_id
    changed = bumped(
        info,
        partitions=tuple(
            p.model_copy(update={"partition_id": oid}) if p == partition else p
            for p in info.partitions
        ),
    )
    version = version_taking_name(image, pid, other.schema_name, other.table_name)
    moved_other = other.model_copy(update={"table_id": pid, "version": version})
    route = image.head.route(oid)
    assert route is not None, "a live table always has a route"
    new_route = rekeyed_route(route, pid)
    return Change(
        intent=PartitionExchanged(
            table_id=info.table_id,
            partition_name=partition.name,
            partition_id=pid,
            other_table_id=oid,
        ),
        requirements=(at_version(info), at_version(other)),
        mutations=mutations(
            [put(table_info_key(info.table_id), changed)],
            [delete(table_info_key(oid)), delete(table_route_key(oid))],
            delete_datanode_tables(route),
            [
                put(table_info_key(pid), moved_other),
                put(table_route_key(pid), new_route),
                put(
                    table_name_key(image.catalog, other.schema_name, other.table_name),
                    TableNameValue(table_id=pid),
                ),
            ],
            put_datanode_tables(new_route, moved_other.version),
            follow_table_rule(image.head, info, changed),
            swapped_rules(image.head, info, partition.name, other, moved_other),
        ),
        tables=touched(image, info.table_id, oid, pid, named=moved_other),
    )
