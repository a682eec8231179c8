"""Decode raw `metalog.events` records with `from_avro`, without a Python UDF.

Every record is single-object encoded: `C3 01`, the 8-byte fingerprint of its
writer schema, then the Avro body. Rows are routed by fingerprint to one
`from_avro` per shipped writer schema, each resolving to the current reader
schema, and the results are coalesced. A record that is not single-object
encoded, names an unknown writer schema, or whose body does not decode goes to
quarantine with the reason instead.

The projection decodes twice: before its fold only the envelope (`envelope`: a
reader schema of the envelope's fields, the intent's name, the tables' ids and the
mutations' keys; Avro skips the rest without building it), after it only the
mutations of each released change (`mutations_column`). The raw bytes ride through
the fold in between. Its log query decodes the envelope without the lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache, partial

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

KAFKA_SCHEMA = ("key binary, value binary, topic string, partition int, offset long, "
                "timestamp timestamp, timestampType int")
"""The Kafka source's columns (without headers)."""

def _fingerprint() -> Column:
    return F.substring("value", 3, 8)


GATE_INTENTS = frozenset({"EpochAssigned", "StableEpochAdvanced", "PublishModeSet"})
"""The intents whose fields the fold reads; of the others it reads only which one it is."""

_ENVELOPE_FIELDS = frozenset({"event_id", "catalog", "resource_version", "leader_epoch",
                              "schema_epoch", "occurred_at", "intent"})
_LIST_FIELDS = {"tables": "table_id", "mutations": "key"}
"""The lists `envelope` shows, and the one field of their items it reads."""


@cache
def envelope_reader_schema(reader_schema_json: str, lists: bool = True) -> str:
    """The event reader schema narrowed to what `envelope` shows.

    Avro schema resolution skips writer fields the reader lacks, so nothing else
    is built: the envelope's fields; of the intent, which union member it is, and
    the fields of `GATE_INTENTS` only (the other members are records without
    fields); with `lists`, the tables' ids and the mutations' keys (no requirement,
    no mutation value). Named types defined in what is dropped are used nowhere
    else it keeps.
    """
    schema = json.loads(reader_schema_json)
    fields = []
    for field in schema["fields"]:
        name = field["name"]
        if name == "intent":
            field = {**field, "type": [
                member if not isinstance(member, dict) or member["name"] in GATE_INTENTS
                else {**member, "fields": []} for member in field["type"]]}
        elif lists and name in _LIST_FIELDS:
            array = field["type"]
            items = array["items"]
            kept = [f for f in items["fields"] if f["name"] == _LIST_FIELDS[name]]
            field = {**field, "type": {**array, "items": {**items, "fields": kept}}}
        elif name not in _ENVELOPE_FIELDS:
            continue
        fields.append(field)
    return json.dumps({**schema, "fields": fields})


_log_reader_schema = partial(envelope_reader_schema, lists=False)


@cache
def mutations_reader_schema(reader_schema_json: str) -> str:
    """The event reader schema with `mutations` as its only field.

    Avro skips every other writer field, so a released change decodes
    nothing but what `changes` shows. Named types the mutations' values use
    but an earlier field defines (Avro defines a name where it first occurs)
    are defined where the mutations first use them.
    """
    schema = json.loads(reader_schema_json)
    named: dict[str, object] = {}

    def collect(node: object, namespace: str) -> None:
        if isinstance(node, list):
            for item in node:
                collect(item, namespace)
        elif isinstance(node, dict):
            space = str(node.get("namespace", namespace))
            if node.get("type") in ("record", "enum", "fixed") and "name" in node:
                named.setdefault(_full_name(str(node["name"]), space), node)
            for field in node.get("fields", ()):
                collect(field["type"], space)
            for key in ("items", "values"):
                if key in node:
                    collect(node[key], space)
            if isinstance(node.get("type"), (dict, list)):
                collect(node["type"], space)

    def inline(node: object, namespace: str, defined: set[str]) -> object:
        if isinstance(node, str):
            name = _full_name(node, namespace)
            if name in named and name not in defined:
                return inline(named[name], namespace, defined)
            return node
        if isinstance(node, list):
            return [inline(item, namespace, defined) for item in node]
        if not isinstance(node, dict):
            return node
        space = str(node.get("namespace", namespace))
        out = dict(node)
        if node.get("type") in ("record", "enum", "fixed") and "name" in node:
            defined.add(_full_name(str(node["name"]), space))
        if "fields" in node:
            out["fields"] = [{**f, "type": inline(f["type"], space, defined)}
                             for f in node["fields"]]
        for key in ("items", "values"):
            if key in node:
                out[key] = inline(node[key], space, defined)
        if isinstance(node.get("type"), (dict, list, str)) and node.get("type") not in (
                "record", "enum", "fixed", "array", "map"):
            out["type"] = inline(node["type"], space, defined)
        return out

    namespace = str(schema.get("namespace", ""))
    collect(schema, namespace)
    mutations = next(f for f in schema["fields"] if f["name"] == "mutations")
    field = {**mutations, "type": inline(mutations["type"], namespace,
                                         {_full_name(str(schema["name"]), namespace)})}
    return json.dumps({**schema, "fields": [field]})


def _full_name(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _decoded(decoders: list[SparkDecoder], reader: Callable[[str], str] | None = None) -> Column:
    """The reader-schema struct: one `from_avro` per writer fingerprint, coalesced.

    Args:
        decoders: The shipped writer schemas.
        reader: Derives the reader schema from the current one (None: the whole event).
    """
    header = decoders[0].header_length
    body = F.expr(f"substring(value, {header + 1}, length(value) - {header})")
    branches = [
        F.when(
            _fingerprint() == F.lit(d.fingerprint),
            from_avro(body, d.writer_schema_json, {
                "avroSchema": (reader(d.reader_schema_json) if reader
                               else d.reader_schema_json), **AVRO_OPTIONS}),
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


def intent_type() -> Column:
    """The intent's record name: the one non-null member of `event.intent`'s union."""
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
    return _with_event(raw, spark_decoders("event"))


def _with_event(raw: DataFrame, decoders: list[SparkDecoder],
                reader: Callable[[str], str] | None = None) -> DataFrame:
    """`raw` plus `event` (`_decoded`) and `reason`, every record decoded once.

    `event` comes out of a generator (a one-element array exploded): as a plain
    column, a filter on it (`where(catalog is not null)`) would be pushed below
    the projection with `from_avro` copied into it, and every record decoded twice.
    """
    event = F.inline(F.array(F.struct(_decoded(decoders, reader).alias("event"))))
    return raw.select("*", event).withColumn("reason", _reason(decoders))


def mutations_column() -> Column:
    """The `mutations` array of a record that decoded before (a fold's released change).

    Decodes the mutations alone (`mutations_reader_schema`), and no `reason`:
    a released change's record decoded once already, in `envelope`.
    """
    return _decoded(spark_decoders("event"), mutations_reader_schema)["mutations"]


def envelope(raw: DataFrame, lists: bool = True) -> DataFrame:
    """Kafka rows as what the fold reads of each event, where the record was, its raw bytes
    and `reason`; a row that does not decode has only its position, its bytes and
    `reason` (the rest null).

    `logged_schema_epoch` is the event's own `schema_epoch`, as logged (0 for a change
    waiting for `Publish`); the epoch a change is published at may be assigned later in
    explicit mode.

    Args:
        raw: Rows of the Kafka source.
        lists: Also `table_ids` and `keys` (the fold's); without them (the log's)
            the decode builds no list.
    """
    decoders = spark_decoders("event")
    decoded = _with_event(raw, decoders,
                          envelope_reader_schema if lists else _log_reader_schema)
    intent = "event.intent"
    lists_columns = [F.col("event.tables.table_id").alias("table_ids"),
                     F.col("event.mutations.key").alias("keys")] if lists else []
    return decoded.select(
        F.col("event.catalog").alias("catalog"),
        F.col("event.resource_version").alias("resource_version"),
        F.col("event.leader_epoch").alias("leader_epoch"),
        F.col("event.schema_epoch").alias("logged_schema_epoch"),
        intent_type().alias("intent"),
        F.col("event.event_id").alias("event_id"),
        F.col("event.occurred_at").alias("occurred_at"),
        *lists_columns,
        F.col(f"{intent}.member_EpochAssigned.epoch").alias("assign_epoch"),
        F.col(f"{intent}.member_EpochAssigned.resource_versions").alias(
            "assign_resource_versions"),
        F.col(f"{intent}.member_StableEpochAdvanced.epoch").alias("stable_epoch_to"),
        F.col(f"{intent}.member_PublishModeSet.mode").alias("publish_mode"),
        F.col("topic"),
        F.col("partition"),
        F.col("offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        F.col("key").alias("record_key"),
        F.col("value"),
        F.col("reason"),
    )


def split(raw: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Kafka rows as typed events and as quarantine rows, for a consumer of the raw log.

    Args:
        raw: Rows of the Kafka source (streaming or not).

    Returns:
        The events that decoded — every field of the current event schema as a
        column (`intent` and mutation values are unions: one `member_<Name>`
        struct each), plus `intent_type`, `partition`, `offset` and
        `kafka_timestamp` — and the records that did not, with `reason`.
    """
    decoded = decode(raw)
    events = decoded.where(F.col("reason").isNull()).select(
        "event.*", intent_type().alias("intent_type"), "partition", "offset",
        F.col("timestamp").alias("kafka_timestamp"))
    quarantine = decoded.where(F.col("reason").isNotNull()).select(
        "topic", "partition", "offset", F.col("timestamp").alias("kafka_timestamp"), "key",
        "value", "reason")
    return events, quarantine
