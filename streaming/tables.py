"""The current-state tables: which keys each holds and its typed columns.

Every table is keyed by (`catalog`, `key`) and carries `schema_epoch` and
`resource_version`: the (schema_epoch, resource_version) of the change that wrote
the row, which is also the fold's order, so a MERGE updates a row only when
the source is newer. `op` is kept on the merge source only (PUT writes the
row, DELETE removes it) and dropped from the tables.

`region_label` is derived from `label_rule` with Spark SQL functions,
formatted exactly as `events.labels.region_label_rows` does.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
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

VALUE = "value.member_"
KEY_COLUMNS = ("catalog", "key")
TRAILER = ("schema_epoch", "resource_version")


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


def _table_info(m: DataFrame) -> DataFrame:
    return m.where(table_filter("table_info")).select(
        *KEY_COLUMNS, "op",
        *_fields("TableInfoValue", ("table_id", "schema_name", "table_name", "columns",
                                    "primary_key", "options", "partitions", "version")),
        F.col(f"{VALUE}TableInfoValue.catalog").alias("info_catalog"), *TRAILER)


def _table_name(m: DataFrame) -> DataFrame:
    return m.where(table_filter("table_name")).select(
        *KEY_COLUMNS, "op", _part(3).alias("schema_name"), _part(4).alias("table_name"),
        *_fields("TableNameValue", ("table_id",)), *TRAILER)


def _table_route(m: DataFrame) -> DataFrame:
    return m.where(table_filter("table_route")).select(
        *KEY_COLUMNS, "op", *_fields("TableRouteValue", ("table_id", "region_routes")), *TRAILER)


def _datanode_table(m: DataFrame) -> DataFrame:
    return m.where(table_filter("datanode_table")).select(
        *KEY_COLUMNS, "op",
        *_fields("DatanodeTableValue", ("datanode_id", "table_id", "regions", "version")),
        *TRAILER)


def _label_rule(m: DataFrame) -> DataFrame:
    return m.where(table_filter("label_rule")).select(
        *KEY_COLUMNS, "op",
        *_fields("LabelRuleValue", ("rule_id", "rule_type", "labels", "ranges")), *TRAILER)


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


def _region_label(m: DataFrame) -> DataFrame:
    rules = _label_rule(m)
    region_label, ranges = region_label_columns(F.col("labels"), F.col("ranges"))
    return rules.select(*KEY_COLUMNS, "op", "rule_id", "rule_type",
                        region_label.alias("region_label"), ranges.alias("ranges"), *TRAILER)


def _dropped_tables(m: DataFrame) -> DataFrame:
    body = F.substring_index(F.expr(f"substring(key, {len(REMOVED) + 1})"), "/", 1)
    return m.where(table_filter("dropped_tables")).select(
        *KEY_COLUMNS, "op",
        F.when(body == TABLE_INFO, F.lit("table_info")).otherwise(F.lit("table_route")).alias(
            "kind"),
        F.coalesce(f"{VALUE}TableInfoValue.table_id", f"{VALUE}TableRouteValue.table_id",
                   F.element_at(F.split("key", "/"), 2).cast("long")).alias("table_id"),
        F.col(f"{VALUE}TableInfoValue").alias("table_info"),
        F.col(f"{VALUE}TableRouteValue").alias("table_route"),
        *TRAILER)


CURRENT_TABLES: dict[str, Callable[[DataFrame], DataFrame]] = {
    "table_info": _table_info,
    "table_name": _table_name,
    "table_route": _table_route,
    "datanode_table": _datanode_table,
    "label_rule": _label_rule,
    "region_label": _region_label,
    "dropped_tables": _dropped_tables,
}
"""Table name → the merge source (with `op`) built from the winning mutations."""

LOG_TABLES = ("metadata_log", "quarantine")
"""Append-only tables."""

STATE_TABLES = ("catalog_state", "pending_changes")
"""The fold's state between batches (`catalog_state` is also a current-state table)."""
