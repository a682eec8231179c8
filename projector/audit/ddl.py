"""An intent in DDL words: `RENAME TABLE a.t TO a.u`, `ALTER TABLE a.t ATTRIBUTES='k=v'`.

Pure. Table ids are shown by name through the caller's lookup (the names as
they were before the event), so the words read as the statement that was run.
"""

from __future__ import annotations

from collections.abc import Callable

from events.intents import (
    AttributesReset,
    AttributesSet,
    PartitionAdded,
    PartitionDropped,
    PartitionExchanged,
    PartitionTruncated,
    RegionFailedOver,
    TableAltered,
    TableCreated,
    TableDropped,
    TablePurged,
    TableRecovered,
    TableRenamed,
    TableTruncated,
)
from events.labels import format_attributes

NameOf = Callable[[int], str]
"""Table id → `schema.table` (or `table #id` when no name is known)."""


def ddl(intent: object, name_of: NameOf) -> str:
    """The statement that made a change (its intent), in TiDB's words."""
    if isinstance(intent, TableCreated):
        return f"CREATE TABLE {intent.schema_name}.{intent.table_name}"
    if isinstance(intent, TableDropped):
        return f"DROP TABLE {intent.schema_name}.{intent.table_name}"
    if isinstance(intent, TableRecovered):
        return f"RECOVER TABLE {intent.schema_name}.{intent.table_name}"
    if isinstance(intent, TablePurged):
        return f"PURGE TABLE {name_of(intent.table_id)}"
    if isinstance(intent, TableRenamed):
        schema = intent.schema_name
        return f"RENAME TABLE {schema}.{intent.old_table_name} TO {schema}.{intent.new_table_name}"
    if isinstance(intent, TableAltered):
        return f"ALTER TABLE {name_of(intent.table_id)} {_alterations(intent)}"
    if isinstance(intent, TableTruncated):
        return f"TRUNCATE TABLE {name_of(intent.table_id)}"
    if isinstance(intent, PartitionAdded):
        return f"ALTER TABLE {name_of(intent.table_id)} ADD PARTITION {intent.partition.name}"
    if isinstance(intent, PartitionDropped):
        return f"ALTER TABLE {name_of(intent.table_id)} DROP PARTITION {intent.partition.name}"
    if isinstance(intent, PartitionTruncated):
        return f"ALTER TABLE {name_of(intent.table_id)} TRUNCATE PARTITION {intent.partition_name}"
    if isinstance(intent, PartitionExchanged):
        return (
            f"ALTER TABLE {name_of(intent.table_id)} EXCHANGE PARTITION {intent.partition_name} "
            f"WITH TABLE {name_of(intent.other_table_id)}"
        )
    if isinstance(intent, RegionFailedOver):
        return (
            f"FAILOVER REGION {intent.region_id} OF {name_of(intent.table_id)} FROM DATANODE "
            f"{intent.from_datanode} TO {intent.to_datanode}"
        )
    if isinstance(intent, AttributesSet | AttributesReset):
        where = name_of(intent.table_id)
        if intent.partition_name is not None:
            where += f" PARTITION {intent.partition_name}"
        if isinstance(intent, AttributesReset):
            return f"ALTER TABLE {where} ATTRIBUTES=DEFAULT"
        return f"ALTER TABLE {where} ATTRIBUTES='{format_attributes(intent.labels)}'"
    return type(intent).__name__


def _alterations(intent: TableAltered) -> str:
    parts = [f"ADD COLUMN {c.name} {c.data_type}" for c in intent.add_columns]
    parts += [f"DROP COLUMN {name}" for name in intent.drop_columns]
    if intent.set_options:
        options = ",".join(f"{k}={v}" for k, v in sorted(intent.set_options.items()))
        parts.append(f"SET OPTIONS '{options}'")
    if intent.unset_options:
        parts.append(f"UNSET OPTIONS {','.join(intent.unset_options)}")
    return ", ".join(parts)
