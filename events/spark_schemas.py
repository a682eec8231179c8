"""What a Spark job needs to decode the log with `from_avro`, without a Python UDF.

For each writer schema of a kind: its fingerprint (to route rows by
`substring(value, 3, 8)`), the writer schema JSON, the current reader schema
JSON, and the header length to strip before `from_avro(body, writer_json,
{"avroSchema": reader_json})`.
"""

from dataclasses import dataclass

from events.schema_store import HEADER_LENGTH, SchemaKind, default_store


@dataclass(frozen=True, slots=True)
class SparkDecoder:
    """How Spark decodes the records of one writer schema.

    Attributes:
        fingerprint: The 8 fingerprint bytes of the header (bytes 3..10, 1-based).
        fingerprint_hex: The same as hex, for SQL literals (`X'...'`).
        writer_schema_json: The writer schema, as shipped.
        reader_schema_json: The current schema of the kind (`avroSchema` option).
        header_length: Bytes to strip before the Avro body (10).
        version: The writer schema's version number.
    """

    fingerprint: bytes
    fingerprint_hex: str
    writer_schema_json: str
    reader_schema_json: str
    header_length: int
    version: int


def spark_decoders(kind: SchemaKind = "event") -> list[SparkDecoder]:
    """One decoder per shipped writer schema of `kind`, oldest first."""
    store = default_store()
    reader = store.current(kind).schema_json
    return [
        SparkDecoder(
            fingerprint=v.fingerprint,
            fingerprint_hex=v.fingerprint_hex,
            writer_schema_json=v.schema_json,
            reader_schema_json=reader,
            header_length=HEADER_LENGTH,
            version=v.version,
        )
        for v in store.versions(kind)
    ]
