"""The compiled writer writes exactly fastavro's bytes and the compiled reader reads them back
exactly as fastavro does (tagged: as fastavro's read turned into the models' shape by
`events.compiled.shape`); the writer refuses what fastavro refuses."""

import typing
from collections.abc import Callable
from datetime import UTC, datetime
from io import BytesIO
from typing import Any, NamedTuple

import pytest
from event_samples import sample_event
from event_strategies import for_model
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from events.chain import seal_record, seal_record_reference
from events.codec import to_avro_dict
from events.commands import Command
from events.compiled.read import compile_reader
from events.compiled.shape import compile_converters
from events.compiled.write import compile_model_writer, compile_writer, write_long
from events.event import Event
from events.intents import Intent, TableAltered
from events.replies import Reply
from events.schema_store import default_store
from events.values import Column


def fastavro_bytes(parsed: Any, datum: Any) -> bytes:
    out = BytesIO()
    schemaless_writer(out, parsed, datum)
    return out.getvalue()


def read_back(parsed: Any, data: bytes) -> tuple[Any, int]:
    """What fastavro reads from `data` (return_record_name=True, as the codec), and the end."""
    return schemaless_reader(BytesIO(data), parsed, None, return_record_name=True), len(data)


class Compiled(NamedTuple):
    """What the tests run of one schema: writer, both readers, the reshaping of fastavro's read."""

    schema: Any
    write: Callable[[Any], bytes]
    read: Callable[[bytes, int], tuple[Any, int]]
    read_tagged: Callable[[bytes, int], tuple[Any, int]]
    from_avro: Callable[[Any], Any]


_compiled: dict[int, Compiled] = {}


def compiled(parsed: Any) -> Compiled:
    """The schema's compiled functions, built once per schema (not once per hypothesis example)."""
    found = _compiled.get(id(parsed))
    if found is None or found.schema is not parsed:
        found = _compiled[id(parsed)] = Compiled(
            parsed, compile_writer(parsed), compile_reader(parsed),
            compile_reader(parsed, tagged=True), compile_converters(parsed)[1],
        )  # fmt: skip
    return found


def assert_read_as_fastavro(parsed: Any, data: bytes) -> None:
    """Both shapes of the compiled reader agree with fastavro's read of `data`."""
    expected, end = read_back(parsed, data)
    schema = compiled(parsed)
    assert schema.read(data, 0) == (expected, end)
    assert schema.read_tagged(data, 0) == (schema.from_avro(expected), end)


def _members(union: Any) -> list[type]:
    return list(typing.get_args(typing.get_args(union)[0]))


@pytest.mark.parametrize("intent", _members(Intent), ids=lambda m: m.__name__)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_events_are_written_and_read_as_fastavro_does_under_every_version(
    intent: type, data: st.DataObject
) -> None:
    avro = to_avro_dict(data.draw(for_model(Event, intent=for_model(intent))))
    for version in default_store().versions("event"):
        write = compiled(version.parsed).write
        try:
            expected = fastavro_bytes(version.parsed, avro)
        except ValueError:  # an intent the older version lacks: refused by both
            with pytest.raises(ValueError, match="not a branch"):
                write(avro)
            continue
        assert write(avro) == expected
        assert_read_as_fastavro(version.parsed, expected)


@pytest.mark.parametrize("intent", _members(Intent), ids=lambda m: m.__name__)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_the_model_writer_writes_what_fastavro_writes_and_seals_as_the_reference(
    intent: type, data: st.DataObject
) -> None:
    event = data.draw(for_model(Event, intent=for_model(intent)))
    parsed = default_store().current("event").parsed
    out = bytearray()
    at = compile_model_writer(parsed, "hash")(out, event)
    assert bytes(out) == fastavro_bytes(parsed, to_avro_dict(event))
    assert at is not None and out[at:].startswith(_length(len(event.hash)) + event.hash)
    assert seal_record(event) == seal_record_reference(event)


def _length(n: int) -> bytes:
    out = bytearray()
    write_long(out, n)
    return bytes(out)


@pytest.mark.parametrize("model", _members(Command) + _members(Reply), ids=lambda m: m.__name__)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_commands_and_replies_are_written_and_read_as_fastavro_does(
    model: type, data: st.DataObject
) -> None:
    kind = "command" if model in _members(Command) else "reply"
    avro = to_avro_dict(data.draw(for_model(model)))
    parsed = default_store().current(kind).parsed
    data = fastavro_bytes(parsed, avro)
    assert compiled(parsed).write(avro) == data
    assert_read_as_fastavro(parsed, data)


EDGES = parse_schema(
    {
        "type": "record",
        "name": "Edges",
        "fields": [
            {"name": "n", "type": "long"},
            {"name": "maybe", "type": ["null", "long"], "default": None},
            {"name": "text", "type": "string"},
            {"name": "raw", "type": "bytes"},
            {"name": "flag", "type": "boolean"},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}},
            {"name": "op", "type": {"type": "enum", "name": "Op", "symbols": ["PUT", "DELETE"]}},
            {"name": "tags", "type": {"type": "map", "values": "string"}},
            {"name": "items", "type": {"type": "array", "items": "long"}, "default": []},
        ],
    }
)


@pytest.mark.parametrize(
    "datum",
    [
        {"n": 0, "text": "", "raw": b"", "flag": False, "at": 0, "op": "PUT", "tags": {}},
        {"n": -(2**63), "maybe": 2**63 - 1, "text": "héllo ✓", "raw": bytes(range(256)),
         "flag": True, "at": datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
         "op": "DELETE", "tags": {"k": "v", "ü": ""}, "items": [63, 64, -64, -65, 8191, 8192]},
        {"n": 123_456_789_012, "text": "x" * 300, "raw": b"\x00" * 200, "flag": 1,
         "at": datetime(2026, 11, 22, 5, 0, tzinfo=UTC), "op": "PUT", "tags": {}, "items": []},
    ],
)  # fmt: skip
def test_edge_values_are_written_and_read_as_fastavro_does(datum: dict[str, Any]) -> None:
    data = fastavro_bytes(EDGES, datum)
    assert compile_writer(EDGES)(datum) == data
    assert compile_reader(EDGES)(b"pad" + data, 3) == (read_back(EDGES, data)[0], 3 + len(data))


@pytest.mark.parametrize(
    ("field", "value"),
    [("n", 2**63), ("n", "1"), ("text", None), ("raw", "text"), ("op", "MOVE"), ("items", None)],
)
def test_values_that_do_not_fit_raise(field: str, value: Any) -> None:
    datum = {"n": 1, "text": "", "raw": b"", "flag": False, "at": 0, "op": "PUT", "tags": {}}
    with pytest.raises((TypeError, ValueError, KeyError, OverflowError, AttributeError)):
        compile_writer(EDGES)({**datum, field: value})


def test_an_untagged_record_in_a_union_of_records_raises() -> None:
    schema = parse_schema(
        {"type": "record", "name": "Holder", "fields": [{"name": "v", "type": [
            {"type": "record", "name": "A", "fields": [{"name": "a", "type": "long"}]},
            {"type": "record", "name": "B", "fields": [{"name": "b", "type": "long"}]},
        ]}]}
    )  # fmt: skip
    tagged = {"v": ("B", {"b": 5})}
    assert compile_writer(schema)(tagged) == fastavro_bytes(schema, tagged)
    with pytest.raises(ValueError, match="tuple"):
        compile_writer(schema)({"v": {"b": 5}})


def test_a_schema_with_an_uncovered_type_is_refused_when_compiled() -> None:
    schema = parse_schema(
        {"type": "record", "name": "F", "fields": [{"name": "x", "type": "double"}]}
    )
    with pytest.raises(ValueError, match="double"):
        compile_writer(schema)
    with pytest.raises(ValueError, match="double"):
        compile_reader(schema)


def test_the_model_writer_writes_a_column_met_before_from_its_memo_and_only_an_equal_one() -> None:
    parsed = default_store().current("event").parsed
    write = compile_model_writer(parsed, "hash", frozenset({"Column"}))
    plain = compile_model_writer(parsed, "hash")
    base = Column(name="id", data_type="bigint", nullable=False, default_value=None)
    variants = [
        base,
        base.model_copy(update={"nullable": True}),
        base.model_copy(update={"default_value": ""}),
        base.model_copy(update={"default_value": "0"}),
        base.model_copy(update={"name": "id2"}),
        base,
    ]
    for column in variants * 2:  # the second time round, every column is in the memo
        event = sample_event(TableAltered(table_id=1, add_columns=(column,)), resource_version=1)
        memoized, fresh = bytearray(), bytearray()
        assert write(memoized, event) == plain(fresh, event)
        assert memoized == fresh == fastavro_bytes(parsed, to_avro_dict(event))


def test_the_model_writer_writes_a_tuple_of_columns_met_before_from_its_memo_only() -> None:
    parsed = default_store().current("event").parsed
    write = compile_model_writer(parsed, "hash", frozenset({"Column"}))
    plain = compile_model_writer(parsed, "hash")
    columns = [Column(name=f"c{n}", data_type="bigint") for n in range(3)]
    shared = tuple(columns)
    listed = list(columns)  # a list may change between two writes: never kept
    for added in (shared, shared, tuple(columns), listed, shared[:2], listed):
        event = sample_event(TableAltered(table_id=1), resource_version=1)
        intent = event.intent.model_copy(update={"add_columns": added})
        event = event.model_copy(update={"intent": intent})
        memoized, fresh = bytearray(), bytearray()
        assert write(memoized, event) == plain(fresh, event)
        avro = to_avro_dict(event.model_copy(update={"intent": intent.model_copy(
            update={"add_columns": tuple(added)})}))  # fmt: skip
        assert memoized == fresh == fastavro_bytes(parsed, avro)
        listed.append(Column(name=f"c{len(listed)}", data_type="string"))
