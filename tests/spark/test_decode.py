"""The reader schemas the projection decodes with after its fold (no Spark needed)."""

import io
import json

import fastavro

from bench.workload import Workload, encoded
from events.spark_schemas import spark_decoders
from streaming.decode import mutations_reader_schema


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
