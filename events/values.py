"""Typed values stored under the metadata keys (GreptimeDB's key layout).

Each value kind is the Avro record that a `Mutation` PUTs under its key:

| key                                   | value                |
|---------------------------------------|----------------------|
| `__table_info/{table_id}`             | `TableInfoValue`     |
| `__table_name/{catalog}/{schema}/{t}` | `TableNameValue`     |
| `__table_route/{table_id}`            | `TableRouteValue`    |
| `__dn_table/{datanode_id}/{table_id}` | `DatanodeTableValue` |
| `__label_rule/{rule_id}`              | `LabelRuleValue`     |

A dropped table's info and route keep their values under the `__removed-`
prefixed keys.
"""

from typing import Annotated, Literal

from pydantic import Field

from events.base import Long, Record


class Column(Record):
    """One column of a table."""

    name: str
    data_type: str
    nullable: bool = True
    default_value: str | None = None


class PartitionDef(Record):
    """One partition of a partitioned table; its id is a physical table id (TiDB)."""

    partition_id: Long
    name: str


class TableInfoValue(Record):
    """`__table_info/{table_id}`: the table's definition and its version (epoch)."""

    type: Literal["TableInfoValue"] = "TableInfoValue"
    table_id: Long
    catalog: str
    schema_name: str
    table_name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    options: dict[str, str] = Field(default_factory=dict)
    partitions: tuple[PartitionDef, ...] = ()
    version: Long


class TableNameValue(Record):
    """`__table_name/{catalog}/{schema}/{table}`: the id a name points to."""

    type: Literal["TableNameValue"] = "TableNameValue"
    table_id: Long


class RegionRoute(Record):
    """Where one region of a table is served."""

    region_id: Long
    leader_datanode: Long
    follower_datanodes: tuple[Long, ...] = ()


class TableRouteValue(Record):
    """`__table_route/{table_id}`: the routes of all the table's regions."""

    type: Literal["TableRouteValue"] = "TableRouteValue"
    table_id: Long
    region_routes: tuple[RegionRoute, ...]


class DatanodeTableValue(Record):
    """`__dn_table/{datanode_id}/{table_id}`: the regions a datanode serves for a table."""

    type: Literal["DatanodeTableValue"] = "DatanodeTableValue"
    datanode_id: Long
    table_id: Long
    regions: tuple[Long, ...]
    version: Long


class Label(Record):
    """One `key=value` attribute of a label rule."""

    key: str
    value: str


class KeyRange(Record):
    """A TiKV key range, both ends as hex of the memcomparable-encoded record key."""

    start_key: str
    end_key: str


class LabelRuleValue(Record):
    """`__label_rule/{rule_id}`: TiDB region labels for a table or a partition."""

    type: Literal["LabelRuleValue"] = "LabelRuleValue"
    rule_id: str
    rule_type: str = "key-range"
    labels: tuple[Label, ...]
    ranges: tuple[KeyRange, ...]


KeyValue = Annotated[
    TableInfoValue | TableNameValue | TableRouteValue | DatanodeTableValue | LabelRuleValue,
    Field(discriminator="type"),
]
"""Any value a key can hold."""


class TableVersion(Record):
    """A table touched by an event and the version the event leaves it at."""

    table_id: Long
    version: Long
