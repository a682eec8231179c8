"""`bench.projection`'s merged read phase: `read_current` of one kind at scale, then a compaction.

A synthetic compacted `table_name` of `keys` rows and a `changes` tail of
`tail` released changes, each of one mutation (one in ten a DELETE), are
written with `deltalake`, so the phase needs no broker and no running
projection.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import SparkSession

from bench.apply import grown_log
from events.codec import decode_event_dict, encode_event, encode_event_dict
from streaming.readers.read import read_current, table_uri
from streaming.spark.compact import compact
from streaming.spark.projection import ProjectionConfig, ensure_tables


@dataclass
class MergedRead:
    """The merged read of one kind at scale, and one compaction of it."""

    keys: int
    tail: int
    read_s: float
    rows: int
    compact_s: float


def merged_read(spark: SparkSession, root: Path, keys: int, tail: int) -> MergedRead:
    """Time `read_current` over `keys` compacted rows + `tail` newer rows, then `compact`."""
    config = ProjectionConfig("unused:9092", "unused", str(root / "tables"), str(root / "cp"))
    ensure_tables(spark, config)  # empty tables with the projection's schemas
    schemas = {name: pa.schema(DeltaTable(table_uri(config.delta_dir, name)).schema().to_arrow())
               for name in ("table_name", "changes")}
    ids = pa.array(range(keys), pa.int64())
    keys_text = pc.binary_join_element_wise("__table_name/c/db/t", pc.cast(ids, pa.string()), "")
    compacted = pa.table({
        "catalog": pa.array(["c"] * keys), "key": keys_text,
        "schema_name": pa.array(["db"] * keys), "table_name": pc.cast(ids, pa.string()),
        "table_id": ids, "schema_epoch": ids, "resource_version": ids}).cast(
        schemas["table_name"])
    write_deltalake(table_uri(config.delta_dir, "table_name"), compacted, mode="overwrite")
    change = next(event for event in grown_log(1, 5) if event.mutations)
    base = decode_event_dict(encode_event(change))
    rows_of_tail = []
    for i in range(tail):  # the tail rewrites `tail` keys, one in ten of them a DELETE
        key, version = f"__table_name/c/db/t{i}", keys + i
        mutation = ({"key": key, "op": "DELETE", "value": None} if i % 10 == 0 else
                    {"key": key, "op": "PUT", "value": {"type": "TableNameValue",
                                                         "table_id": version}})
        rows_of_tail.append({
            "catalog": "c", "resource_version": version, "schema_epoch": version, "batch_id": 0,
            "intent": base["intent"]["type"], "keys": [key],
            "record": encode_event_dict({**base, "mutations": [mutation]})})
    write_deltalake(table_uri(config.delta_dir, "changes"),
                    pa.Table.from_pylist(rows_of_tail, schemas["changes"]), mode="append")
    best, rows = float("inf"), 0
    for _ in range(3):
        began = time.perf_counter()
        rows = read_current(config.delta_dir, "table_name").num_rows
        best = min(best, time.perf_counter() - began)
    began = time.perf_counter()
    compact(config.delta_dir)
    return MergedRead(keys, tail, best, rows, time.perf_counter() - began)
