"""One micro-batch's appends without Kafka: retried batches; REGION_LABEL formatting; each
record decoded once."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from bench.workload import Workload, encoded
from events.event import Event
from events.labels import region_label_rows, table_rule_ranges
from events.spark_schemas import spark_decoders
from events.values import KeyRange, Label, LabelRuleValue, PartitionDef, TableInfoValue
from streaming.errors import OldCheckpoint
from streaming.readers.read import read_rows, table_uri
from streaming.spark import sink
from streaming.spark.changes import log_rows
from streaming.spark.decode import KAFKA_SCHEMA, decode
from streaming.spark.fold import FOLD_OUTPUT
from streaming.spark.projection import BatchWriter, LogWriter, ProjectionConfig, ensure_tables
from streaming.spark.tables import region_label_columns
from tests.spark.expect import assert_projection_equals

pytestmark = [pytest.mark.spark, pytest.mark.integration]


class Crash(Exception):
    """The driver dies between two appends of a batch."""


def _folded(spark: SparkSession, events: list[Event], stale: bool = True) -> DataFrame:
    """What the fold emits for an auto-mode log read in one batch: change and state rows,
    and (with `stale`) a record of a fenced leader."""
    rows: list[Row] = []
    for event, (_, value) in zip(events, encoded(events), strict=True):
        if event.mutations:
            rows.append(Row(row_type="change", catalog=event.catalog,
                            resource_version=event.resource_version,
                            schema_epoch=event.schema_epoch, intent=event.intent.type,
                            keys=[m.key for m in event.mutations], value=value))
    last = events[-1]
    rows.append(Row(row_type="state", catalog=last.catalog,
                    resource_version=last.resource_version, stable_epoch=last.schema_epoch,
                    leader_epoch=last.leader_epoch, publish_mode="auto"))
    if stale:
        rows.append(Row(row_type="quarantine", catalog=last.catalog,
                        resource_version=last.resource_version, value=encoded([last])[0][1],
                        reason="stale leader_epoch 0"))
    names = spark.createDataFrame([], FOLD_OUTPUT).columns
    return spark.createDataFrame([tuple(r.asDict().get(n) for n in names) for r in rows],
                                 FOLD_OUTPUT)


def _config(tmp_path: Path) -> ProjectionConfig:
    """A projection whose two checkpoints hold their query ids, as after a first start."""
    config = ProjectionConfig("unused:9092", "events", str(tmp_path / "tables"),
                              str(tmp_path / "cp"))
    for at, query_id in ((config.checkpoint, "fold-1"), (config.log_checkpoint, "log-1")):
        Path(at).mkdir(parents=True)
        (Path(at) / "metadata").write_text(json.dumps({"id": query_id}))
    return config


def test_a_batch_retried_after_a_crash_between_appends_appends_once(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = Workload(["auto"], seed=3)
    work.run(25)
    events = work.events()
    config = _config(tmp_path)
    ensure_tables(spark, config)
    writer = BatchWriter(config)
    real_append = sink.append

    def crash_on_quarantine(frame: DataFrame, path: str) -> None:
        if path.endswith("quarantine"):
            raise Crash
        real_append(frame, path)

    monkeypatch.setattr(sink, "append", crash_on_quarantine)
    with pytest.raises(Crash):
        writer(_folded(spark, events), 0)  # `changes` is appended, `quarantine` is not
    monkeypatch.setattr(sink, "append", real_append)

    writer(_folded(spark, events), 0)  # the retry: the same batch id, the same rows

    assert_projection_equals(config.delta_dir, [work.catalogs["auto"].image])
    assert len(read_rows(config.delta_dir, "quarantine")) == 1
    assert len(read_rows(config.delta_dir, "changes")) == 1 + sum(
        1 for e in events if e.mutations)  # one row per released change, one per position


def test_a_batch_with_nothing_quarantined_commits_nothing_to_quarantine(
        spark: SparkSession, tmp_path: Path) -> None:
    work = Workload(["auto"], seed=3)
    work.run(10)
    config = _config(tmp_path)
    ensure_tables(spark, config)
    quarantine = table_uri(config.delta_dir, "quarantine")
    created = DeltaTable(quarantine).version()

    BatchWriter(config)(_folded(spark, work.events(), stale=False), 0)
    BatchWriter(config)(_folded(spark, work.events()), 1)  # one record of a fenced leader

    assert [c.get("userMetadata") for c in DeltaTable(quarantine).history()
            if c["version"] > created] == ["fold-1:1"]
    assert len(read_rows(config.delta_dir, "quarantine")) == 1


def test_a_log_batch_replayed_after_a_restart_is_logged_once(
        spark: SparkSession, tmp_path: Path) -> None:
    work = Workload(["auto"], seed=3)
    work.run(10)
    records = encoded(work.events())
    config = _config(tmp_path)
    ensure_tables(spark, config)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    raw = spark.createDataFrame([(key.encode(), value, "events", 0, offset, at, 0)
                                 for offset, (key, value) in enumerate(records)], KAFKA_SCHEMA)
    batch = log_rows(raw)

    LogWriter(config)(batch, 0)  # appended; the driver dies before the checkpoint's commit
    LogWriter(config)(batch, 0)  # the restarted query runs the batch again

    logged = read_rows(config.delta_dir, "metadata_log")
    assert sorted(r["offset"] for r in logged) == list(range(len(records)))


def test_a_filter_on_decoded_records_leaves_each_record_decoded_once(
        spark: SparkSession) -> None:
    raw = spark.createDataFrame([], KAFKA_SCHEMA)
    writers = len(spark_decoders("event"))  # one `from_avro` per writer schema decodes a record
    for filtered in (log_rows(raw),  # the log query keeps the records that decode
                     decode(raw).where(F.col("reason").isNull())):  # `split`, the replay
        plan = filtered._jdf.queryExecution().optimizedPlan().toString()
        assert plan.count("from_avro(") == writers


def test_region_label_columns_format_like_the_python_rows(spark: SparkSession) -> None:
    table = TableInfoValue(table_id=57, catalog="c", schema_name="test", table_name="t1",
                           columns=(), partitions=(PartitionDef(partition_id=58, name="p0"),),
                           version=1)
    rules = [
        LabelRuleValue(rule_id="schema/test/t1", labels=(
            Label(key="db", value="test"), Label(key="merge_option", value="deny"),
            Label(key="a", value="b")), ranges=table_rule_ranges(table)),
        LabelRuleValue(rule_id="schema/test/t1/p0", labels=(
            Label(key="partition", value="p0"),), ranges=(KeyRange(start_key="aa",
                                                                   end_key="bb"),)),
    ]
    frame = spark.createDataFrame([r.model_dump(exclude={"type"}) for r in rules],
                                  "rule_id string, rule_type string, "
                                  "labels array<struct<key:string,value:string>>, "
                                  "ranges array<struct<start_key:string,end_key:string>>")
    label, ranges = region_label_columns(F.col("labels"), F.col("ranges"))
    rows = frame.select("rule_id", "rule_type", label.alias("l"), ranges.alias("r")).collect()
    spark_rows = sorted(((r[0], r[1], r[2], r[3]) for r in rows), reverse=True)
    python_rows = [(r.rule_id, r.rule_type, r.region_label, r.ranges)
                   for r in region_label_rows(rules)]
    assert spark_rows == python_rows


def test_tables_of_an_older_projection_are_refused_with_the_fix(
        spark: SparkSession, tmp_path: Path) -> None:
    config = _config(tmp_path)
    spark.createDataFrame([("c", "__table_name/c/db/t", "table_name", "PUT", 1, 1, 0, 0)],
                          "catalog string, key string, kind string, op string, "
                          "schema_epoch long, resource_version long, pos long, batch_id long"
                          ).write.format("delta").save(config.path("changes"))

    with pytest.raises(OldCheckpoint, match="new --delta-dir"):
        ensure_tables(spark, config)
