"""The reader schemas the projection decodes with, before and after its fold (no Spark needed)."""

import io
import json
from typing import Any

import fastavro
import pytest

from bench.workload import Workload, encoded
from events.spark_schemas import SparkDecoder, spark_decoders
from streaming.spark.decode import GATE_INTENTS, envelope_reader_schema, mutations_reader_schema
from tests.events import event_golden as golden

ENVELOPE = ("event_id", "catalog", "resource_version", "leader_epoch", "schema_epoch",
            "occurred_at")


def test_the_mutations_reader_schema_reads_exactly_the_mutations_of_every_writer() -> None:
    work = Workload(["alpha", "beta"], seed=3)
    work.run(120)
    decoders = {d.fingerprint: d for d in spark_decoders("event")}
    for decoder in decoders.values():  # every shipped writer resolves against it
        reader = json.loads(mutations_reader_schema(decoder.reader_schema_json))
        assert [f["name"] for f in reader["fields"]] == ["mutations"]
        fastavro.parse_schema(reader)
    mutations = 0
    for _, record in encoded(work.events()):
        decoder = decoders[record[2:10]]
        writer = fastavro.parse_schema(json.loads(decoder.writer_schema_json))
        body = record[decoder.header_length:]
        full = fastavro.schemaless_reader(io.BytesIO(body), writer, fastavro.parse_schema(
            json.loads(decoder.reader_schema_json)))
        slim = fastavro.schemaless_reader(io.BytesIO(body), writer, fastavro.parse_schema(
            json.loads(mutations_reader_schema(decoder.reader_schema_json))))
        assert slim == {"mutations": full["mutations"]}
        mutations += len(full["mutations"])
    assert mutations > 100  # values of every kind the workload writes were compared


def _read(decoder: SparkDecoder, body: bytes, reader_schema_json: str) -> Any:
    writer = fastavro.parse_schema(json.loads(decoder.writer_schema_json))
    return fastavro.schemaless_reader(io.BytesIO(body), writer, fastavro.parse_schema(
        json.loads(reader_schema_json)), return_record_name=True)


@pytest.mark.parametrize("lists", [True, False], ids=["fold", "log"])
def test_the_envelope_reader_schema_reads_the_envelope_of_every_writer_and_no_more(
        lists: bool) -> None:
    work = Workload(["alpha", "beta"], seed=3)
    work.run(60)
    work.set_mode("beta", "explicit")  # the intents the fold reads: mode, epochs
    for _ in range(20):
        work.random_command("beta")
        work.publish_some("beta")
    work.publish_all("beta")
    decoders = {d.fingerprint: d for d in spark_decoders("event")}
    kept = [*golden.EVENTS_V1.values(), *golden.EVENTS_V2.values(), *golden.EVENTS.values()]
    records = [*(record for _, record in encoded(work.events())),
               *(bytes.fromhex(data) for data in kept)]  # every intent under every writer
    intents: set[str] = set()
    writers: set[bytes] = set()
    for record in records:
        decoder = decoders[record[2:10]]
        writers.add(record[2:10])
        body = record[decoder.header_length:]
        full = _read(decoder, body, decoder.reader_schema_json)
        slim = _read(decoder, body, envelope_reader_schema(decoder.reader_schema_json, lists))
        name, fields = full["intent"]
        intent = name.rsplit(".", 1)[-1]
        expected = {field: full[field] for field in ENVELOPE}
        expected["intent"] = (name, fields if intent in GATE_INTENTS else {})
        if lists:
            expected["tables"] = [{"table_id": t["table_id"]} for t in full["tables"]]
            expected["mutations"] = [{"key": m["key"]} for m in full["mutations"]]
        assert slim == expected
        intents.add(intent)
    assert {"TableCreated", "TableAltered", *GATE_INTENTS} <= intents
    assert writers == set(decoders)
