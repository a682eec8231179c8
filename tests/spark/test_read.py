"""`streaming.readers.read`: the JVM-free reader (no Spark needed; deltalake writes the fixture)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from events.changes import Mutation, MutationOp
from events.codec import encode_event
from events.keys import table_info_key, table_name_key
from events.values import TableNameValue
from streaming.readers.read import TABLES, read_current, read_rows, read_table, table_uri
from tests.events.event_samples import EVENTS, INFO

COMPACTED = pa.schema([("catalog", pa.string()), ("key", pa.string()),
                       ("schema_name", pa.string()), ("table_name", pa.string()),
                       ("table_id", pa.int64()), ("schema_epoch", pa.int64()),
                       ("resource_version", pa.int64())])
STATE = pa.struct([("stable_epoch", pa.int64()), ("leader_epoch", pa.int64()),
                   ("publish_mode", pa.string())])
CHANGES = pa.schema([("catalog", pa.string()), ("resource_version", pa.int64()),
                     ("schema_epoch", pa.int64()), ("batch_id", pa.int64()),
                     ("intent", pa.string()), ("keys", pa.list_(pa.string())),
                     ("record", pa.binary()), ("catalog_state", STATE)])
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


def _name(name: str, rv: int, table_id: int) -> dict[str, Any]:
    return {"catalog": "c", "key": table_name_key("c", "db", name), "schema_name": "db",
            "table_name": name, "table_id": table_id, "schema_epoch": rv, "resource_version": rv}


def _change(mutations: list[Mutation], rv: int, batch: int, catalog: str = "c") -> dict[str, Any]:
    """A `changes` row of one released change: its event's record, as the projection keeps it."""
    event = EVENTS["TableCreated"].model_copy(update={"mutations": tuple(mutations)})
    return {"catalog": catalog, "resource_version": rv, "schema_epoch": rv, "batch_id": batch,
            "intent": "TableCreated", "keys": [m.key for m in mutations],
            "record": encode_event(event), "catalog_state": None}


def _put(name: str, table_id: int, catalog: str = "c") -> Mutation:
    return Mutation(key=table_name_key(catalog, "db", name), op=MutationOp.PUT,
                    value=TableNameValue(table_id=table_id))


def _delete(name: str) -> Mutation:
    return Mutation(key=table_name_key("c", "db", name), op=MutationOp.DELETE)


def test_the_merged_read_is_the_newest_row_per_key_without_deletes(tmp_path: Path) -> None:
    root = str(tmp_path)
    compacted = [_name("t1", 5, 1), _name("t2", 5, 2), _name("t3", 4, 3),
                 # compacted past the `compaction` record (a compaction that wrote
                 # its tables but not yet its record): its older tail row must lose
                 _name("t6", 12, 6)]
    write_deltalake(table_uri(root, "table_name"), pa.Table.from_pylist(compacted, COMPACTED))
    info = Mutation(key=table_info_key(7), op=MutationOp.PUT, value=INFO)
    changes = [
        _change([_put("t1", 1)], 3, batch=0),  # folded into the table already
        _change([_put("t1", 10)], 7, batch=1),  # newer value
        _change([_delete("t2")], 8, batch=1),
        _change([_put("t4", 4)], 9, batch=1),  # put then deleted in the tail
        _change([_delete("t4")], 10, batch=2),
        _change([_delete("t5")], 3, batch=1),  # deleted then put in the tail
        _change([_put("t5", 50), info, _put("t5", 5)], 11, batch=2),  # the last of a change wins
        _change([_put("t6", 60)], 6, batch=1),
        _change([_put("t1", 99, catalog="other")], 2, batch=2, catalog="other"),
        _change([info], 13, batch=2),  # another kind's key
        {"catalog": "c", "resource_version": 13, "schema_epoch": 13, "batch_id": 2,
         "intent": None, "keys": None, "record": None,
         "catalog_state": {"stable_epoch": 13, "leader_epoch": 1, "publish_mode": "auto"}},
    ]
    write_deltalake(table_uri(root, "changes"), pa.Table.from_pylist(changes, CHANGES))
    write_deltalake(table_uri(root, "compaction"), pa.Table.from_pylist(
        [{"batch_id": 0, "changes_version": 0, "compacted_at": datetime(2026, 1, 1, tzinfo=UTC)}],
        COMPACTION))

    result = read_current(root, "table_name")

    assert result.schema == COMPACTED
    rows = {(r["catalog"], r["table_name"]): (r["table_id"], r["resource_version"])
            for r in result.to_pylist()}
    assert rows == {("c", "t1"): (10, 7), ("c", "t3"): (3, 4), ("c", "t5"): (5, 11),
                    ("c", "t6"): (6, 12), ("other", "t1"): (99, 2)}
