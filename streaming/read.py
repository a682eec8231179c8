"""Read the projection's Delta tables without a JVM (the `deltalake` package).

    >>> from streaming.read import read_table, read_rows
    >>> read_table("/data/metalog/tables", "table_info")   # a pyarrow.Table
    >>> read_rows("/data/metalog/tables", "region_label")  # a list of dicts

Every read is one consistent Delta version of one table; tables are written
one after another within a micro-batch, so two tables read back to back can be
one batch apart.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from streaming.tables import CURRENT_TABLES, LOG_TABLES, STATE_TABLES

TABLES: tuple[str, ...] = (*CURRENT_TABLES, *STATE_TABLES, *LOG_TABLES)
"""Every table the projection writes."""


def table_uri(root: str, name: str) -> str:
    """The location of table `name` under the tables root.

    Raises:
        ValueError: `name` is not one of the projection's tables.
    """
    if name not in TABLES:
        raise ValueError(f"`{name}` is not a projection table: use one of {', '.join(TABLES)}")
    return f"{root.rstrip('/')}/{name}"


def read_table(root: str, name: str, version: int | None = None) -> pa.Table:
    """One table as Arrow.

    Args:
        root: The tables root (`metalog project --delta-dir`).
        name: The table's name, e.g. `table_info`.
        version: A Delta version to time-travel to; the latest if None.

    Returns:
        Every row of that version.
    """
    table = DeltaTable(table_uri(root, name), version=version)
    # delta-rs' own scan, not `to_pyarrow_table()`: that one reads through pyarrow's
    # dataset threads and a Python filesystem handler, and the process then aborted at
    # exit 7 times in 8 ("terminate called without an active exception",
    # delta-io/delta-rs#2184). The scan gives view types; cast back to the table's schema.
    rows = pa.table(QueryBuilder().register("t", table).execute("SELECT * FROM t"))
    return rows.cast(pa.schema(table.schema().to_arrow()))


def read_rows(root: str, name: str) -> list[dict[str, Any]]:
    """One table's latest rows as Python dicts (maps become lists of pairs)."""
    return read_table(root, name).to_pylist()
