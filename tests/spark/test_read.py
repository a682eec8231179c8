"""`streaming.read`: the JVM-free reader (no Spark needed; deltalake writes the fixture)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from streaming.read import TABLES, read_current, read_rows, read_table, table_uri

NAME = pa.struct([("schema_name", pa.string()), ("table_name", pa.string()),
                  ("table_id", pa.int64())])
COMPACTED = pa.schema([("catalog", pa.string()), ("key", pa.string()),
                       ("schema_name", pa.string()), ("table_name", pa.string()),
                       ("table_id", pa.int64()), ("schema_epoch", pa.int64()),
                       ("resource_version", pa.int64())])
CHANGES = pa.schema([("catalog", pa.string()), ("key", pa.string()), ("kind", pa.string()),
                     ("op", pa.string()), ("schema_epoch", pa.int64()),
                     ("resource_version", pa.int64()), ("pos", pa.int64()),
                     ("batch_id", pa.int64()), ("table_name", NAME)])
COMPACTION = pa.schema([("batch_id", pa.int64()), ("changes_version", pa.int64()),
                        ("compacted_at", pa.timestamp("us", tz="UTC"))])


def test_reads_a_table_and_its_versions(tmp_path: Path) -> None:
    uri = table_uri(str(tmp_path), "catalog_state")
    write_deltalake(uri, pa.table({"catalog": ["a"], "resource_version": [1]}))
    write_deltalake(uri, pa.table({"catalog": ["b"], "resource_version": [2]}), mode="append")

    assert read_table(str(tmp_path), "catalog_state", version=0).num_rows == 1
    assert sorted(r["catalog"] for r in read_rows(str(tmp_path), "catalog_state")) == ["a", "b"]


def test_names_outside_the_projection_are_refused(tmp_path: Path) -> None:
    assert "region_label" in TABLES and "changes" in TABLES
    with pytest.raises(ValueError, match="not a projection table"):
        table_uri("/data", "tables")
    with pytest.raises(ValueError, match="not a per-kind table"):
        read_current(str(tmp_path), "metadata_log")


def _name(key: str, rv: int, table_id: int) -> dict[str, Any]:
    return {"catalog": "c", "key": key, "schema_name": "db", "table_name": key[-1],
            "table_id": table_id, "schema_epoch": rv, "resource_version": rv}


def _change(key: str, op: str, rv: int, batch: int, table_id: int = 0,
            catalog: str = "c") -> dict[str, Any]:
    value = {"schema_name": "db", "table_name": key[-1], "table_id": table_id}
    return {"catalog": catalog, "key": key, "kind": "table_name", "op": op, "schema_epoch": rv,
            "resource_version": rv, "pos": 0, "batch_id": batch,
            "table_name": value if op == "PUT" else None}


def test_the_merged_read_is_the_newest_row_per_key_without_deletes(tmp_path: Path) -> None:
    root = str(tmp_path)
    compacted = [_name("n/1", 5, 1), _name("n/2", 5, 2), _name("n/3", 4, 3),
                 # compacted past the `compaction` record (a compaction that wrote
                 # its tables but not yet its record): its older tail row must lose
                 _name("n/6", 12, 6)]
    write_deltalake(table_uri(root, "table_name"), pa.Table.from_pylist(compacted, COMPACTED))
    changes = [
        _change("n/1", "PUT", 3, batch=0, table_id=1),  # folded into the table already
        _change("n/1", "PUT", 7, batch=1, table_id=10),  # newer value
        _change("n/2", "DELETE", 8, batch=1),
        _change("n/4", "PUT", 9, batch=1, table_id=4),  # put then deleted in the tail
        _change("n/4", "DELETE", 10, batch=2),
        _change("n/5", "DELETE", 3, batch=1),  # deleted then put in the tail
        _change("n/5", "PUT", 11, batch=2, table_id=5),
        _change("n/6", "PUT", 6, batch=1, table_id=60),
        _change("n/1", "PUT", 2, batch=2, table_id=99, catalog="other"),
        {**_change("x/1", "PUT", 13, batch=2), "kind": "table_info", "table_name": None},
    ]
    write_deltalake(table_uri(root, "changes"), pa.Table.from_pylist(changes, CHANGES))
    write_deltalake(table_uri(root, "compaction"), pa.Table.from_pylist(
        [{"batch_id": 0, "changes_version": 0, "compacted_at": datetime(2026, 1, 1, tzinfo=UTC)}],
        COMPACTION))

    result = read_current(root, "table_name")

    assert result.schema == COMPACTED
    rows = {(r["catalog"], r["key"]): (r["table_id"], r["resource_version"])
            for r in result.to_pylist()}
    assert rows == {("c", "n/1"): (10, 7), ("c", "n/3"): (3, 4), ("c", "n/5"): (5, 11),
                    ("c", "n/6"): (6, 12), ("other", "n/1"): (99, 2)}
