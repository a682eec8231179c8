"""Decode raw `metalog.events` records with `from_avro`, without a Python UDF.

Every record is single-object encoded: `C3 01`, the 8-byte fingerprint of its
writer schema, then the Avro body. Rows are routed by fingerprint to one
`from_avro` per shipped writer schema, each resolving to the current reader
schema, and the results are coalesced. A record that is not single-object
encoded, names an unknown writer schema, or whose body does not decode goes to
quarantine with the reason instead.

Decoded events are normalized to the few columns the projection needs
(`EVENT_COLUMNS`), so the pending table does not follow every schema change.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.avro.functions import from_avro

from events.intents import CHANGE_INTENTS, CONTROL_INTENTS
from events.schema_store import MAGIC
from events.spark_schemas import SparkDecoder, spark_decoders

AVRO_OPTIONS = {"mode": "PERMISSIVE", "enableStableIdentifiersForUnionType": "true"}
"""`from_avro` options besides the reader schema: null on bad bodies, union members by name."""

CHANGE_TYPES: tuple[str, ...] = tuple(
    str(kind.model_fields["type"].default) for kind in CHANGE_INTENTS
)
CONTROL_TYPES: tuple[str, ...] = tuple(
    str(kind.model_fields["type"].default) for kind in CONTROL_INTENTS
)

EVENT_COLUMNS: tuple[str, ...] = (
    "catalog", "resource_version", "leader_epoch", "logged_schema_epoch", "intent", "is_change",
    "assign_epoch", "assign_resource_versions", "stable_epoch_to", "publish_mode", "mutations",
    "partition", "offset",
)
"""The normalized event: envelope, the control facts the fold needs, and the mutations.

`logged_schema_epoch` is the event's own `schema_epoch`, as logged (0 for a
change waiting for `Publish`): the fold's `schema_epoch` column is the epoch a
change is published at, assigned later in explicit mode.
"""


def _fingerprint() -> Column:
    return F.substring("value", 3, 8)


def _decoded(decoders: list[SparkDecoder]) -> Column:
    """The reader-schema struct: one `from_avro` per writer fingerprint, coalesced."""
    header = decoders[0].header_length
    body = F.expr(f"substring(value, {header + 1}, length(value) - {header})")
    branches = [
        F.when(
            _fingerprint() == F.lit(d.fingerprint),
            from_avro(body, d.writer_schema_json, {"avroSchema": d.reader_schema_json,
                                                   **AVRO_OPTIONS}),
        )
        for d in decoders
    ]
    return F.coalesce(*branches) if len(branches) > 1 else branches[0]


def _reason(decoders: list[SparkDecoder]) -> Column:
    """Why a record cannot be projected, or null when it decoded."""
    known = F.lit(False)
    for d in decoders:
        known = known | (_fingerprint() == F.lit(d.fingerprint))
    header = decoders[0].header_length
    return (
        F.when(F.col("value").isNull(), F.lit("empty record (null value)"))
        .when((F.length("value") < header) | (F.substring("value", 1, 2) != F.lit(MAGIC)),
              F.lit("bad magic: not a single-object encoded Avro record"))
        .when(~known, F.concat(F.lit("unknown writer schema fingerprint "),
                               F.lower(F.hex(_fingerprint()))))
        # PERMISSIVE yields all-null fields for a body that fails to decode.
        .when(F.col("event.catalog").isNull() | F.col("event.resource_version").isNull(),
              F.concat(F.lit("undecodable Avro body for writer schema "),
                       F.lower(F.hex(_fingerprint()))))
    )


def _intent() -> Column:
    """The intent's record name: the one non-null member of the `intent` union."""
    result = F.lit(None).cast("string")
    for name in (*CHANGE_TYPES, *CONTROL_TYPES):
        result = F.when(F.col(f"event.intent.member_{name}").isNotNull(), F.lit(name)).otherwise(
            result)
    return result


def decode(raw: DataFrame) -> DataFrame:
    """Decode Kafka rows (`value`, `partition`, `offset`, ...) into `event` and `reason`.

    Args:
        raw: Rows of the Kafka source (or the same columns from anywhere).

    Returns:
        The input columns plus `event` (the reader-schema struct) and `reason`
        (null when the row decoded).
    """
    decoders = spark_decoders("event")
    with_event = raw.withColumn("event", _decoded(decoders))
    return with_event.withColumn("reason", _reason(decoders))


def normalize(decoded: DataFrame) -> DataFrame:
    """The decoded rows (reason null) as normalized events, `EVENT_COLUMNS` in order."""
    intent = "event.intent"
    intent_name = _intent()
    return decoded.where(F.col("reason").isNull()).select(
        F.col("event.catalog").alias("catalog"),
        F.col("event.resource_version").alias("resource_version"),
        F.col("event.leader_epoch").alias("leader_epoch"),
        F.col("event.schema_epoch").alias("logged_schema_epoch"),
        intent_name.alias("intent"),
        intent_name.isin(*CHANGE_TYPES).alias("is_change"),
        F.col(f"{intent}.member_EpochAssigned.epoch").alias("assign_epoch"),
        F.col(f"{intent}.member_EpochAssigned.resource_versions").alias(
            "assign_resource_versions"),
        F.col(f"{intent}.member_StableEpochAdvanced.epoch").alias("stable_epoch_to"),
        F.col(f"{intent}.member_PublishModeSet.mode").alias("publish_mode"),
        F.col("event.mutations").alias("mutations"),
        F.col("partition"),
        F.col("offset"),
    )


def log_rows(decoded: DataFrame) -> DataFrame:
    """Rows of `metadata_log`: every decoded event with its position and raw bytes."""
    return decoded.where(F.col("reason").isNull()).select(
        F.col("event.catalog").alias("catalog"),
        F.col("event.resource_version").alias("resource_version"),
        _intent().alias("intent"),
        F.col("event.event_id").alias("event_id"),
        F.col("event.leader_epoch").alias("leader_epoch"),
        F.col("event.schema_epoch").alias("schema_epoch"),
        F.col("event.occurred_at").alias("occurred_at"),
        F.col("topic"),
        F.col("partition"),
        F.col("offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("value"),
    )


def quarantine_rows(decoded: DataFrame) -> DataFrame:
    """Rows of `quarantine`: the undecodable records, raw, with where and why."""
    return decoded.where(F.col("reason").isNotNull()).select(
        F.col("topic"),
        F.col("partition"),
        F.col("offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key"),
        F.col("value"),
        F.col("reason"),
    )
