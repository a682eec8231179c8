"""What a Spark job needs to decode the log with `from_avro`."""

import json

from events.schema_store import HEADER_LENGTH, default_store
from events.spark_schemas import spark_decoders


def test_one_decoder_per_writer_schema_with_the_current_reader() -> None:
    decoders = spark_decoders("event")
    store = default_store()
    assert [d.fingerprint for d in decoders] == [v.fingerprint for v in store.versions("event")]
    for decoder in decoders:
        assert decoder.header_length == HEADER_LENGTH == 10
        assert decoder.fingerprint_hex == decoder.fingerprint.hex()
        assert json.loads(decoder.reader_schema_json) == json.loads(
            store.current("event").schema_json
        )
        assert json.loads(decoder.writer_schema_json)["name"] == "Event"
