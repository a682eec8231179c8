"""TRUNCATE TABLE (TiDB): the table and its partitions get new ids; every key follows."""

from events.changes import KeyAbsent
from events.commands import TruncateTable
from events.intents import IdChange, TableTruncated
from events.keys import table_info_key, table_name_key, table_route_key
from events.values import TableNameValue
from producers.decide.rules.common import (
    Change,
    at_version,
    check_version,
    delete,
    delete_datanode_tables,
    live_table,
    mutations,
    new_ids,
    put,
    put_datanode_tables,
    rekeyed_route,
    touched,
    version_taking_name,
)
from producers.decide.rules.labels import follow_rules
from producers.decide.rules.tables import live_route
from projector.fold.image import Image


def truncate(image: Image, command: TruncateTable) -> Change:
    """TruncateTable (TiDB): new table and partition ids; every key and label range follows."""
    info = live_table(image, command.schema_name, command.table_name)
    check_version(info, command.expected_version)
    new_id, *partition_ids = new_ids(image, 1 + len(info.partitions))
    route = live_route(image, info.table_id)
    new_route = rekeyed_route(route, new_id)
    partitions = tuple(
        p.model_copy(update={"partition_id": pid})
        for p, pid in zip(info.partitions, partition_ids, strict=True)
    )
    version = version_taking_name(image, new_id, info.schema_name, info.table_name)
    truncated = info.model_copy(
        update={"table_id": new_id, "partitions": partitions, "version": version}
    )
    return Change(
        intent=TableTruncated(
            table_id=info.table_id,
            new_table_id=new_id,
            partition_ids=tuple(
                IdChange(old_id=old.partition_id, new_id=new.partition_id)
                for old, new in zip(info.partitions, partitions, strict=True)
            ),
        ),
        requirements=(at_version(info), KeyAbsent(key=table_info_key(new_id))),
        mutations=mutations(
            [delete(table_info_key(info.table_id)), delete(table_route_key(info.table_id))],
            delete_datanode_tables(route),
            [
                put(table_info_key(new_id), truncated),
                put(table_route_key(new_id), new_route),
                put(
                    table_name_key(image.catalog, info.schema_name, info.table_name),
                    TableNameValue(table_id=new_id),
                ),
            ],
            put_datanode_tables(new_route, version),
            follow_rules(image.head, info, truncated),
        ),
        tables=touched(image, info.table_id, new_id, named=truncated),
    )
