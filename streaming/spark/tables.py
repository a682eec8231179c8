"""The current-state tables: which keys each holds and its typed columns.

Every table is keyed by (`catalog`, `key`) and carries `schema_epoch` and
`resource_version` of the change that wrote the row. By the publication-order
rule the changes of one key become visible in resource_version order, so the
newest row of a key is the one with the highest (resource_version, position
in its event).

`region_label` is derived from `label_rule` with Spark SQL functions,
formatted exactly as `events.labels.region_label_rows` does.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

from events.keys import (
    DATANODE_TABLE,
    LABEL_RULE,
    REMOVED,
    TABLE_INFO,
    TABLE_NAME,
    TABLE_ROUTE,
)
from events.labels import HIDDEN_LABEL_KEYS
from streaming.layout import CURRENT_TABLES, KINDS

VALUE = "value.member_"


def _prefix() -> Column:
    return F.substring_index("key", "/", 1)


def _is(prefix: str) -> Column:
    return ~F.col("key").startswith(REMOVED) & (_prefix() == F.lit(prefix))


def _part(index: int) -> Column:
    return F.element_at(F.split("key", "/"), index)


TABLE_FILTERS: dict[str, Callable[[], Column]] = {
    "table_info": lambda: _is(TABLE_INFO),
    "table_name": lambda: _is(TABLE_NAME),
    "table_route": lambda: _is(TABLE_ROUTE),
    "datanode_table": lambda: _is(DATANODE_TABLE),
    "label_rule": lambda: _is(LABEL_RULE),
    "region_label": lambda: _is(LABEL_RULE),
    "dropped_tables": lambda: F.col("key").startswith(REMOVED),
}


def table_filter(table: str) -> Column:
    """Which winning mutations (by `key`) the current-state table `table` takes."""
    return TABLE_FILTERS[table]()


def _fields(member: str, names: tuple[str, ...]) -> list[Column]:
    return [F.col(f"{VALUE}{member}.{name}").alias(name) for name in names]


def _table_info() -> list[Column]:
    return [*_fields("TableInfoValue", ("table_id", "schema_name", "table_name", "columns",
                                        "primary_key", "options", "partitions", "version")),
            F.col(f"{VALUE}TableInfoValue.catalog").alias("info_catalog")]


def _table_name() -> list[Column]:
    return [_part(3).alias("schema_name"), _part(4).alias("table_name"),
            *_fields("TableNameValue", ("table_id",))]


def _table_route() -> list[Column]:
    return _fields("TableRouteValue", ("table_id", "region_routes"))


def _datanode_table() -> list[Column]:
    return _fields("DatanodeTableValue", ("datanode_id", "table_id", "regions", "version"))


def _label_rule() -> list[Column]:
    return _fields("LabelRuleValue", ("rule_id", "rule_type", "labels", "ranges"))


def region_label_columns(labels: Column, ranges: Column) -> tuple[Column, Column]:
    """REGION_LABEL and RANGES as `events.labels.region_label_rows` formats them.

    Args:
        labels: An `array<struct<key, value>>` column.
        ranges: An `array<struct<start_key, end_key>>` column.

    Returns:
        `"k=v","k1=v1"` (hidden keys left out) and `[start, end], [start, end]`.
    """
    hidden = F.array(*[F.lit(k) for k in sorted(HIDDEN_LABEL_KEYS)])
    shown = F.filter(labels, lambda label: ~F.array_contains(hidden, label["key"]))
    region_label = F.array_join(F.transform(shown, lambda label: F.concat(
        F.lit('"'), label["key"], F.lit("="), label["value"], F.lit('"'))), ",")
    ranges_text = F.array_join(F.transform(ranges, lambda r: F.concat(
        F.lit("["), r["start_key"], F.lit(", "), r["end_key"], F.lit("]"))), ", ")
    return region_label, ranges_text


def _region_label() -> list[Column]:
    region_label, ranges = region_label_columns(F.col(f"{VALUE}LabelRuleValue.labels"),
                                                F.col(f"{VALUE}LabelRuleValue.ranges"))
    return [F.col(f"{VALUE}LabelRuleValue.rule_id").alias("rule_id"),
            F.col(f"{VALUE}LabelRuleValue.rule_type").alias("rule_type"),
            region_label.alias("region_label"), ranges.alias("ranges")]


def _dropped_tables() -> list[Column]:
    body = F.substring_index(F.expr(f"substring(key, {len(REMOVED) + 1})"), "/", 1)
    return [
        F.when(body == TABLE_INFO, F.lit("table_info")).otherwise(F.lit("table_route")).alias(
            "kind"),
        F.coalesce(f"{VALUE}TableInfoValue.table_id", f"{VALUE}TableRouteValue.table_id",
                   F.element_at(F.split("key", "/"), 2).cast("long")).alias("table_id"),
        F.col(f"{VALUE}TableInfoValue").alias("table_info"),
        F.col(f"{VALUE}TableRouteValue").alias("table_route"),
    ]


VALUE_COLUMNS: dict[str, Callable[[], list[Column]]] = {
    "table_info": _table_info,
    "table_name": _table_name,
    "table_route": _table_route,
    "datanode_table": _datanode_table,
    "label_rule": _label_rule,
    "region_label": _region_label,
    "dropped_tables": _dropped_tables,
}
"""Per-kind table → its value columns, computed from a mutation row (`key`, `value`).

A table's rows are `catalog`, `key`, these columns, `schema_epoch`, `resource_version`.
"""


def kind_of() -> Column:
    """The `kind` of a mutation row by its key (null for a key no table shows)."""
    kind = F.lit(None).cast("string")
    for name in reversed(CURRENT_TABLES):
        if KINDS[name] == name:
            kind = F.when(table_filter(name), F.lit(name)).otherwise(kind)
    return kind


