"""Read the projection's Delta tables without a JVM (`deltalake` + DuckDB over Arrow).

    >>> from streaming.readers.read import read_current, read_table, read_rows
    >>> read_current("/data/metalog/tables", "table_info")   # current state, a pyarrow.Table
    >>> read_rows("/data/metalog/tables", "metadata_log")    # one table as stored, as dicts

`read_current` is the documented read path of current state: the compacted
per-kind table merged with the newer tail of `changes` (rendered by
`streaming.readers.render`), exactly as `streaming.spark.current.current` does it in Spark
(see there). `read_table` reads
one table as stored; a per-kind table read that way lags by the compaction
period.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import duckdb
import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from events.codec import decode_event_dict
from streaming.layout import (
    CHANGES,
    COMPACTION,
    KIND_TABLES,
    KINDS,
    STATE_TABLE,
    TABLES,
    key_columns,
)
from streaming.readers.render import kind_of, kind_rows


def table_uri(root: str, name: str) -> str:
    """The location of table `name` under the tables root.

    Raises:
        ValueError: `name` is not one of the projection's tables.
    """
    if name not in TABLES:
        raise ValueError(f"`{name}` is not a projection table: use one of {', '.join(TABLES)}")
    return f"{root.rstrip('/')}/{name}"


def query(table: DeltaTable, sql: str) -> pa.Table:
    # delta-rs' own scan, not `to_pyarrow_table()`: that one reads through pyarrow's
    # dataset threads and a Python filesystem handler, and the process then aborted at
    # exit 7 times in 8 ("terminate called without an active exception",
    # delta-io/delta-rs#2184). The scan gives view types: callers cast back.
    return pa.table(QueryBuilder().register("t", table).execute(sql))


def read_table(root: str, name: str, version: int | None = None) -> pa.Table:
    """One table as stored, as Arrow.

    Args:
        root: The tables root (`metalog project --delta-dir`).
        name: The table's name, e.g. `metadata_log`.
        version: A Delta version to time-travel to; the latest if None.

    Returns:
        Every row of that version.
    """
    table = DeltaTable(table_uri(root, name), version=version)
    return query(table, "SELECT * FROM t").cast(pa.schema(table.schema().to_arrow()))


def read_rows(root: str, name: str) -> list[dict[str, Any]]:
    """One table's latest rows as Python dicts (maps become lists of pairs)."""
    return read_table(root, name).to_pylist()


def read_current(root: str, kind: str) -> pa.Table:
    """The current state of one per-kind table: its latest visible row per key.

    Args:
        root: The tables root (`metalog project --delta-dir`).
        kind: A per-kind table: `table_info`, `table_name`, `table_route`,
            `datanode_table`, `label_rule`, `region_label`, `dropped_tables`
            or `catalog_state`.

    Returns:
        The rows, with the per-kind table's columns (those of `read_table`).

    Raises:
        ValueError: `kind` is not a per-kind table.
    """
    if kind not in KIND_TABLES:
        raise ValueError(f"`{kind}` is not a per-kind table: use one of "
                         f"{', '.join(KIND_TABLES)}")
    # The compaction record first, the compacted table next, `changes` last:
    # every read sees at least what the one before it promised.
    # (A DeltaTable reads its version when it is opened.)
    after = compacted_batch(root)
    compacted = DeltaTable(table_uri(root, kind))
    return merged(compacted, kind, tails(DeltaTable(table_uri(root, CHANGES)), [kind], after)[kind])


def compacted_batch(root: str) -> int:
    """The last `changes` batch the per-kind tables hold (-1 before the first compaction)."""
    marks = query(DeltaTable(table_uri(root, COMPACTION)), "SELECT max(batch_id) AS b FROM t")
    after = marks.column("b")[0].as_py()
    return -1 if after is None else int(after)


Rows = list[dict[str, Any]]
"""Rendered rows of one per-kind table, with `op` and `pos`."""


def merged(compacted_table: DeltaTable, kind: str, tail: Rows) -> pa.Table:
    """A per-kind table as stored, merged with its rows from the newer `changes`.

    Args:
        compacted_table: The per-kind table `kind`, open at the version to read.
        kind: The per-kind table.
        tail: Its rows from the `changes` rows after the batch it holds (`tails`).
    """
    schema = pa.schema(compacted_table.schema().to_arrow())
    compacted = query(compacted_table, "SELECT * FROM t")
    rows = pa.Table.from_pylist(tail, schema=schema.append(pa.field("op", pa.string())).append(
        pa.field("pos", pa.int64())))
    return _merge(compacted, rows, kind, list(schema.names)).cast(schema)


def tails(changes: DeltaTable, kinds: Collection[str], after: int) -> dict[str, Rows]:
    """Each per-kind table's rows of the `changes` rows after batch `after`, rendered
    (`streaming.readers.render`), with `op` and `pos`.

    The tail is read once and each released record decoded once, whatever number of
    kinds it shows in (a table's create shows in most).
    """
    out: dict[str, Rows] = {kind: [] for kind in kinds}
    if STATE_TABLE in out:
        states = query(changes, (
            f"SELECT catalog, resource_version, {STATE_TABLE} AS s FROM t "
            f"WHERE {STATE_TABLE} IS NOT NULL AND batch_id > {after}"))
        out[STATE_TABLE] = [{"catalog": row["catalog"], "resource_version": row["resource_version"],
                             "op": "PUT", "pos": 0, **row["s"]} for row in states.to_pylist()]
    shown = [kind for kind in out if kind != STATE_TABLE]
    if not shown:
        return out
    released = query(changes, (
        "SELECT catalog, resource_version, schema_epoch, keys, record FROM t "
        f"WHERE record IS NOT NULL AND batch_id > {after}"))
    for change in released.to_pylist():
        touched = {kind_of(key) for key in change["keys"]}
        showing = [kind for kind in shown if KINDS[kind] in touched]
        if not showing:
            continue
        mutations = decode_event_dict(change["record"])["mutations"]
        for kind in showing:
            out[kind] += kind_rows(kind, change["catalog"], change["resource_version"],
                                   change["schema_epoch"], mutations)
    return out


def _merge(compacted: pa.Table, tail: pa.Table, kind: str, columns: list[str]) -> pa.Table:
    """`streaming.spark.current.merge` in DuckDB over the two Arrow tables.

    Args:
        compacted: The per-kind table as stored.
        tail: Its rows from `changes` after the last compaction: the table's
            columns plus `op` and `pos`.
        kind: The per-kind table.
        columns: The table's columns, in order.
    """
    keys = key_columns(kind)
    on = " AND ".join(f"c.{k} = l.{k}" for k in keys)
    picked = ", ".join(f'l."{c}"' for c in columns)
    kept = ", ".join(f'c."{c}"' for c in columns)
    sql = f"""
        WITH latest AS (
            SELECT * FROM tail
            QUALIFY row_number() OVER (PARTITION BY {', '.join(keys)}
                                       ORDER BY resource_version DESC, pos DESC) = 1)
        SELECT {kept} FROM compacted c LEFT JOIN latest l ON {on}
        WHERE l.resource_version IS NULL OR c.resource_version > l.resource_version
        UNION ALL
        SELECT {picked} FROM latest l LEFT JOIN compacted c ON {on}
        WHERE l.op = 'PUT' AND (c.resource_version IS NULL
                                OR l.resource_version >= c.resource_version)
    """
    with duckdb.connect() as con:
        con.register("compacted", compacted)
        con.register("tail", tail)
        result = con.sql(sql).to_arrow_table()
    return result
