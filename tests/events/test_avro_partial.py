"""Compiled prefix readers, trailers and patterns read what fastavro reads (the audit's bytes)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from io import BytesIO
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from events.chain import seal_record
from events.compiled.partial import (
    NoBranch,
    PastTheEnd,
    compile_prefix,
    encode_long,
    named_types,
)
from events.compiled.pattern import prefix_pattern
from events.compiled.trailer import compile_trailer
from events.schema_store import HEADER_LENGTH, default_store
from projector.audit.readers import HEAD, INTENT_FIELDS
from tests.events import event_golden as golden
from tests.events import event_samples as samples

RECORDS = [
    bytes.fromhex(data)
    for version in (golden.EVENTS_V1, golden.EVENTS_V2, golden.EVENTS)
    for data in version.values()
]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _fastavro(data: bytes) -> dict[str, Any]:
    """The record as fastavro reads it with its own writer schema."""
    writer = default_store().by_fingerprint[data[2:HEADER_LENGTH]]
    datum: dict[str, Any] = schemaless_reader(BytesIO(data[HEADER_LENGTH:]), writer.parsed, None,
                                              return_record_name=True)  # fmt: skip
    return datum


@pytest.mark.parametrize("data", RECORDS, ids=lambda d: d[2:HEADER_LENGTH].hex())
def test_the_envelope_and_the_intent_fields_are_what_fastavro_reads(data: bytes) -> None:
    writer = default_store().by_fingerprint[data[2:HEADER_LENGTH]]
    read = compile_prefix(writer.parsed, HEAD, named_types(writer.parsed))
    (catalog, rv_start, rv, rv_end, epoch, occurred, tables_start, tables, tables_end, intent,
     at) = read(data, HEADER_LENGTH)  # fmt: skip
    datum = _fastavro(data)
    full_name, fields = datum["intent"]
    assert catalog == datum["catalog"].encode() and rv == datum["resource_version"]
    assert data[rv_start:rv_end] == encode_long(rv)
    assert epoch == datum["leader_epoch"]
    assert EPOCH + timedelta(microseconds=occurred) == datum["occurred_at"]
    assert tables == [(t["table_id"], t["version"]) for t in datum["tables"]]
    assert intent == full_name.rpartition(".")[2]
    assert data[tables_start:tables_end].endswith(encode_long(0))
    assert at == tables_end + 1  # the intent's branch: one byte
    for branch in next(f["type"] for f in writer.parsed["fields"] if f["name"] == "intent"):
        if branch["name"] == full_name and intent in INTENT_FIELDS:
            names = INTENT_FIELDS[intent]
            items = [(name, "value") for name in names]
            got = compile_prefix(branch, items, named_types(writer.parsed))(data, at)
            assert list(got) == [fields[name] for name in names]


SCHEMA = parse_schema({
    "type": "record", "name": "R", "fields": [
        {"name": "n", "type": "null"}, {"name": "b", "type": "boolean"},
        {"name": "l", "type": "long"}, {"name": "s", "type": "string"},
        {"name": "y", "type": "bytes"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}},
        {"name": "a", "type": {"type": "array", "items": {
            "type": "record", "name": "P", "fields": [{"name": "x", "type": "long"},
                                                      {"name": "t", "type": "string"}]}}},
        {"name": "m", "type": {"type": "map", "values": ["null", "P"]}},
        {"name": "u", "type": ["null", "string", "P"]}, {"name": "r", "type": "P"},
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "last", "type": "string"},
    ],
})  # fmt: skip
DATUM = {
    "n": None, "b": True, "l": -(2**62), "s": "é" * 70, "y": b"\x00\xff" * 40, "e": "C",
    "a": [{"x": n * 1000, "t": "t" * n} for n in range(70)],
    "m": {"k1": None, "k2": {"x": -1, "t": ""}}, "u": ("P", {"x": 3, "t": "u"}),
    "r": {"x": 2**40, "t": "r"}, "t": datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
    "last": "the end",
}  # fmt: skip


def _written(datum: dict[str, Any]) -> bytes:
    out = BytesIO()
    schemaless_writer(out, SCHEMA, datum)
    return out.getvalue()


def test_every_type_is_skipped_or_read_as_fastavro_wrote_it() -> None:
    data = _written(DATUM)
    named = named_types(SCHEMA)
    last = compile_prefix(SCHEMA, [("last", "value"), ("last", "start"), ("last", "end")], named)
    assert last(data, 0) == ("the end", len(data) - 8, len(data))
    names = [f["name"] for f in SCHEMA["fields"] if f["name"] not in ("m", "u")]
    values = compile_prefix(SCHEMA, [(n, "value") for n in names], named)(data, 0)
    expected = {**DATUM, "a": [(p["x"], p["t"]) for p in DATUM["a"]], "r": (2**40, "r"),
                "t": (DATUM["t"] - EPOCH) // timedelta(microseconds=1)}  # fmt: skip
    assert list(values) == [expected[n] for n in names]
    content = compile_prefix(SCHEMA, [("s", "content"), ("u", "branch"), ("u", "end")], named)
    raw, branch, end = content(data, 0)
    assert raw == DATUM["s"].encode() and branch == "P"
    branch_value = compile_prefix(named["P"], [("x", "value"), ("t", "value")], named)
    assert branch_value(data, end) == (3, "u")


@pytest.mark.parametrize(
    ("cut", "problem"), [(0, IndexError), (3, IndexError), (20, PastTheEnd), (-1, PastTheEnd)]
)
def test_bytes_that_do_not_hold_the_fields_raise(cut: int, problem: type[Exception]) -> None:
    data = _written(DATUM)  # cut at 3: inside the long; at 20, -1: inside a string
    read = compile_prefix(SCHEMA, [("last", "value")], named_types(SCHEMA))
    with pytest.raises(problem):
        read(data[:cut], 0)


def test_a_branch_the_union_lacks_names_its_first_byte() -> None:
    data = bytearray(_written({**DATUM, "u": None, "n": None}))
    skip = compile_prefix(SCHEMA, [("m", "end")], named_types(SCHEMA))
    (at,) = skip(bytes(data), 0)
    data[at] = 0x06  # branch 3 of 3
    read = compile_prefix(SCHEMA, [("u", "branch")], named_types(SCHEMA))
    with pytest.raises(NoBranch, match="u branch 6 does not exist"):
        read(bytes(data), 0)


def test_a_reader_refuses_what_it_cannot_read() -> None:
    with pytest.raises(ValueError, match="no field 'nope'"):
        compile_prefix(SCHEMA, [("nope", "value")], {})
    with pytest.raises(ValueError, match="last field read"):
        compile_prefix(SCHEMA, [("u", "branch"), ("last", "value")], named_types(SCHEMA))
    with pytest.raises(ValueError, match="no content"):
        compile_prefix(SCHEMA, [("l", "content")], {})


@pytest.mark.parametrize("trace_id", [None, "0af7651916cd43dd8448eb211c80319c", "", "x" * 300])
def test_the_trailer_finds_the_chain_fields_from_the_end(trace_id: str | None) -> None:
    event = samples.EVENTS["TableAltered"].model_copy(update={"trace_id": trace_id})
    sealed = seal_record(event)
    data = sealed.record
    current = default_store().current("event").parsed
    trailer = compile_trailer(current, "prev_hash", {"prev_hash": 32, "hash": 32}, 32)
    tail = len(data) - data.rindex(sealed.event.hash) - 32
    assert tail in list(trailer.readings(data))
    prev_at, hash_at = trailer.starts(data, tail, HEADER_LENGTH) or (0, 0)
    assert trailer.content(data, 0, prev_at) == event.prev_hash
    assert trailer.content(data, 1, hash_at) == sealed.event.hash
    plain = trace_id is None or len(trace_id) == 32
    assert (trailer.likely(data) == tail) == plain  # the readings a leader leaves
    with pytest.raises(ValueError, match="cannot be read from the end"):
        compile_trailer(current, "mutations", {}, 32)


def test_the_pattern_captures_the_tables_of_every_version() -> None:
    for data in RECORDS:
        writer = default_store().by_fingerprint[data[2:HEADER_LENGTH]]
        fields, branches = prefix_pattern(writer.parsed, "intent", "tables",
                                          named_types(writer.parsed))  # fmt: skip
        found = re.match(fields + b"[" + b"".join(map(re.escape, branches)) + b"]",
                         data[HEADER_LENGTH:], re.DOTALL)  # fmt: skip
        assert found is not None
        start, end, _, _ = compile_prefix(
            writer.parsed, [("tables", "start"), ("tables", "end"), ("intent", "branch"),
                            ("intent", "end")], named_types(writer.parsed),
        )(data, HEADER_LENGTH)  # fmt: skip
        assert found.group(1) == data[start:end]
    with pytest.raises(ValueError, match="not covered"):
        prefix_pattern(SCHEMA, "u", "s", named_types(SCHEMA))
