"""The projection's tables by name, without Spark: what the JVM-free reader shares with the jobs.

Every per-kind table is keyed by (`catalog`, `key`) — `catalog_state` by
`catalog` alone — and ends with the `schema_epoch` and `resource_version` of
the change that wrote the row (`catalog_state`: the catalog's last
resource_version).
"""

from __future__ import annotations

CURRENT_TABLES: tuple[str, ...] = (
    "table_info", "table_name", "table_route", "datanode_table", "label_rule", "region_label",
    "dropped_tables",
)
"""The per-kind tables built from mutations, in `streaming.spark.tables.VALUE_COLUMNS` order."""

STATE_TABLE = "catalog_state"
STATE_COLUMNS: tuple[str, ...] = ("stable_epoch", "leader_epoch", "publish_mode")
"""`catalog_state`: `catalog`, `resource_version`, then these; one row per catalog."""

KIND_TABLES: tuple[str, ...] = (*CURRENT_TABLES, STATE_TABLE)
"""Every per-kind table: what `read_current` and the compaction serve."""

KINDS: dict[str, str] = {**{name: name for name in CURRENT_TABLES},
                         "region_label": "label_rule", STATE_TABLE: STATE_TABLE}
"""Per-kind table → the `kind` of the `changes` rows it is built from (its struct column
in `changes` has the table's own name)."""

KEY_COLUMNS: tuple[str, ...] = ("catalog", "key")
TRAILER: tuple[str, ...] = ("schema_epoch", "resource_version")

CHANGES = "changes"
"""The append-only change feed: every released mutation and catalog state, per micro-batch."""

COMPACTION = "compaction"
"""Append-only: the `changes` batch and version each compaction of the per-kind tables reached."""

LOG_TABLES: tuple[str, ...] = ("metadata_log", "quarantine")
"""Append-only tables of the raw log and of the records that did not decode."""

TABLES: tuple[str, ...] = (*KIND_TABLES, CHANGES, COMPACTION, *LOG_TABLES)
"""Every table the projection writes."""


def key_columns(table: str) -> tuple[str, ...]:
    """What identifies a row of a per-kind table."""
    return ("catalog",) if table == STATE_TABLE else KEY_COLUMNS
