"""Table lifecycle rules: create, drop, recover, purge, rename, alter (truncate: `truncate`).

GreptimeDB's single-transaction DDL: each command writes all its keys in one
change, guarded by the compare conditions it records as requirements.
"""

from events.changes import KeyAbsent, KeyPresent
from events.commands import (
    AlterTable,
    CreateTable,
    DropTable,
    PurgeTable,
    RecoverTable,
    RenameTable,
)
from events.intents import (
    TableAltered,
    TableCreated,
    TableDropped,
    TablePurged,
    TableRecovered,
    TableRenamed,
)
from events.keys import removed, table_info_key, table_name_key, table_route_key
from events.values import PartitionDef, TableInfoValue, TableNameValue, TableRouteValue
from producers.decide.rules.common import (
    Change,
    at_version,
    bumped,
    check_version,
    delete,
    delete_datanode_tables,
    live_table,
    mutations,
    new_ids,
    placed_route,
    put,
    put_datanode_tables,
    qualified,
    touched,
    version_taking_name,
)
from producers.decide.rules.labels import follow_rules
from producers.decide.trusted import replaced
from producers.errors import (
    ColumnExists,
    ColumnNotFound,
    InvalidCommand,
    NameTaken,
    NotDropped,
    TableNotFound,
)
from projector.fold.image import Image


def name_free(image: Image, schema_name: str, table_name: str) -> KeyAbsent:
    """The requirement that the name is free, or `NameTaken`."""
    key = table_name_key(image.catalog, schema_name, table_name)
    if key in image.head:
        raise NameTaken(
            f"table `{qualified(schema_name, table_name)}` already exists: "
            "choose another name, or drop the existing table first"
        )
    return KeyAbsent(key=key)


def create(image: Image, command: CreateTable) -> Change:
    """CreateTable: fresh ids, round-robin regions, every key in one change."""
    names = command.partitions
    if command.regions < 1 or not command.datanodes or len(set(names)) != len(names):
        raise InvalidCommand(
            f"CreateTable `{qualified(command.schema_name, command.table_name)}` needs at "
            "least one region, one datanode and distinct partition names: fix the command"
        )
    name = name_free(image, command.schema_name, command.table_name)
    table_id, *partition_ids = new_ids(image, 1 + len(names))
    info = TableInfoValue(
        table_id=table_id,
        catalog=image.catalog,
        schema_name=command.schema_name,
        table_name=command.table_name,
        columns=command.columns,
        primary_key=command.primary_key,
        options=command.options,
        partitions=tuple(
            PartitionDef(partition_id=pid, name=n)
            for pid, n in zip(partition_ids, names, strict=True)
        ),
        version=version_taking_name(image, table_id, command.schema_name, command.table_name),
    )
    route = placed_route(table_id, command.regions, command.datanodes)
    return Change(
        intent=TableCreated(
            table_id=table_id, schema_name=info.schema_name, table_name=info.table_name
        ),
        requirements=(
            name,
            KeyAbsent(key=table_info_key(table_id)),
            KeyAbsent(key=table_route_key(table_id)),
        ),
        mutations=mutations(
            [
                put(table_info_key(table_id), info),
                put(name.key, TableNameValue(table_id=table_id)),
                put(table_route_key(table_id), route),
            ],
            put_datanode_tables(route, info.version),
        ),
        tables=touched(image, table_id, named=info),
    )


def drop(image: Image, command: DropTable) -> Change:
    """DropTable: info and route move under `__removed-`; name and datanode keys go."""
    info = live_table(image, command.schema_name, command.table_name)
    check_version(info, command.expected_version)
    route = live_route(image, info.table_id)
    info_key, route_key = table_info_key(info.table_id), table_route_key(info.table_id)
    return Change(
        intent=TableDropped(
            table_id=info.table_id, schema_name=info.schema_name, table_name=info.table_name
        ),
        requirements=(at_version(info),),
        mutations=mutations(
            [
                put(removed(info_key), bumped(info)),
                put(removed(route_key), route),
                delete(info_key),
                delete(route_key),
                delete(table_name_key(image.catalog, info.schema_name, info.table_name)),
            ],
            delete_datanode_tables(route),
        ),
        tables=touched(image, info.table_id),
    )


def recover(image: Image, command: RecoverTable) -> Change:
    """RecoverTable: the reverse of drop; label rules stay as they are."""
    info = _dropped(image, command)
    check_version(info, command.expected_version)
    name = name_free(image, info.schema_name, info.table_name)
    route = image.head.dropped_route(info.table_id)
    assert route is not None, "a drop moves info and route together"
    info_key, route_key = table_info_key(info.table_id), table_route_key(info.table_id)
    recovered = replaced(
        info, version=version_taking_name(image, info.table_id, info.schema_name, info.table_name)
    )
    return Change(
        intent=TableRecovered(
            table_id=info.table_id, schema_name=info.schema_name, table_name=info.table_name
        ),
        requirements=(at_version(info, dropped=True), name),
        mutations=mutations(
            [
                put(info_key, recovered),
                put(route_key, route),
                put(name.key, TableNameValue(table_id=info.table_id)),
                delete(removed(info_key)),
                delete(removed(route_key)),
            ],
            put_datanode_tables(route, recovered.version),
        ),
        tables=touched(image, info.table_id, named=recovered),
    )


def purge(image: Image, command: PurgeTable) -> Change:
    """PurgeTable (GC): delete the `__removed-` keys and the table's label rules."""
    info = image.head.dropped_table(command.table_id)
    if info is None:
        if image.head.table(command.table_id) is not None:
            raise NotDropped(
                f"table id {command.table_id} is live, not dropped: drop it before purging"
            )
        raise TableNotFound(
            f"table id {command.table_id} is not a dropped table: it was purged already "
            "or never existed; re-read the dropped tables"
        )
    check_version(info, command.expected_version)
    info_key, route_key = table_info_key(info.table_id), table_route_key(info.table_id)
    return Change(
        intent=TablePurged(table_id=info.table_id),
        requirements=(
            at_version(info, dropped=True),
            KeyPresent(key=removed(route_key)),
        ),
        mutations=mutations(
            [delete(removed(info_key)), delete(removed(route_key))],
            follow_rules(image.head, info, None),
        ),
        tables=touched(image, info.table_id),
    )


def rename(image: Image, command: RenameTable) -> Change:
    """RenameTable: DELETE old name, PUT new name and info; label rules follow the name."""
    info = live_table(image, command.schema_name, command.table_name)
    check_version(info, command.expected_version)
    name = name_free(image, info.schema_name, command.new_table_name)
    renamed = replaced(
        info,
        table_name=command.new_table_name,
        version=version_taking_name(image, info.table_id, info.schema_name, command.new_table_name),
    )
    return Change(
        intent=TableRenamed(
            table_id=info.table_id,
            schema_name=info.schema_name,
            old_table_name=info.table_name,
            new_table_name=command.new_table_name,
        ),
        requirements=(at_version(info), name),
        mutations=mutations(
            [
                delete(table_name_key(image.catalog, info.schema_name, info.table_name)),
                put(name.key, TableNameValue(table_id=info.table_id)),
                put(table_info_key(info.table_id), renamed),
            ],
            follow_rules(image.head, info, renamed),
        ),
        tables=touched(image, info.table_id, named=renamed),
    )


def alter(image: Image, command: AlterTable) -> Change:
    """AlterTable: add/drop columns, set/unset options; PUT info."""
    info = live_table(image, command.schema_name, command.table_name)
    check_version(info, command.expected_version)
    table = qualified(info.schema_name, info.table_name)
    present = {c.name for c in info.columns}
    for column in command.add_columns:
        if column.name in present:
            raise ColumnExists(f"table `{table}` already has column `{column.name}`: rename it")
        present.add(column.name)
    missing = [c for c in command.drop_columns if c not in present]
    if missing:
        raise ColumnNotFound(f"table `{table}` has no column `{missing[0]}`: re-read it")
    options = {k: v for k, v in info.options.items() if k not in command.unset_options}
    columns = info.columns  # the same tuple when they do not change: written once (seal)
    if command.add_columns or command.drop_columns:
        kept = columns + command.add_columns
        columns = tuple(c for c in kept if c.name not in command.drop_columns)
    altered = bumped(info, columns=columns, options={**options, **command.set_options})
    return Change(
        intent=TableAltered(
            table_id=info.table_id,
            add_columns=command.add_columns,
            drop_columns=command.drop_columns,
            set_options=command.set_options,
            unset_options=command.unset_options,
        ),
        requirements=(at_version(info),),
        mutations=(put(table_info_key(info.table_id), altered),),
        tables=touched(image, info.table_id),
    )


def live_route(image: Image, table_id: int) -> TableRouteValue:
    """The route of a live table."""
    route = image.head.route(table_id)
    assert route is not None, "a live table always has a route"
    return route


def _dropped(image: Image, command: RecoverTable) -> TableInfoValue:
    """The dropped table to recover: by id, else the newest (highest id) of that name."""
    if command.table_id is not None:
        info = image.head.dropped_table(command.table_id)
    else:
        wanted = (command.schema_name, command.table_name)
        matches = [
            value
            for value in image.head.dropped_tables()
            if (value.schema_name, value.table_name) == wanted
        ]
        info = max(matches, key=lambda v: v.table_id, default=None)
    if info is None or (info.schema_name, info.table_name) != (
        command.schema_name,
        command.table_name,
    ):
        raise TableNotFound(
            f"no dropped table `{qualified(command.schema_name, command.table_name)}`"
            + (f" with id {command.table_id}" if command.table_id is not None else "")
            + ": it was purged or never dropped; re-read the dropped tables"
        )
    return info
