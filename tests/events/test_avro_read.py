"""The compiled reader reads exactly what fastavro reads, and refuses what does not hold a value."""

import typing
from io import BytesIO
from typing import Any

import pytest
from event_strategies import for_model
from fastavro import schemaless_reader
from hypothesis import given, settings
from hypothesis import strategies as st

from events import default_store, to_avro_dict
from events.avro_read import compile_reader
from events.avro_write import compile_writer
from events.commands import Command
from events.event import Event
from events.intents import Intent
from events.replies import Reply


def _members(union: Any) -> list[type]:
    return list(typing.get_args(typing.get_args(union)[0]))


def _both_read(parsed: Any, datum: Any) -> None:
    data = b"\x00\x01" + compile_writer(parsed)(datum)  # read from an offset, as the codec does
    expected = schemaless_reader(BytesIO(data[2:]), parsed, None, return_record_name=True)
    assert compile_reader(parsed)(data, 2) == (expected, len(data))


@pytest.mark.parametrize("intent", _members(Intent), ids=lambda m: m.__name__)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_events_are_read_as_fastavro_reads_them(intent: type, data: st.DataObject) -> None:
    avro = to_avro_dict(data.draw(for_model(Event, intent=for_model(intent))))
    _both_read(default_store().current("event").parsed, avro)


@pytest.mark.parametrize("model", _members(Command) + _members(Reply), ids=lambda m: m.__name__)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_commands_and_replies_are_read_as_fastavro_reads_them(
    model: type, data: st.DataObject
) -> None:
    kind = "command" if model in _members(Command) else "reply"
    _both_read(default_store().current(kind).parsed, to_avro_dict(data.draw(for_model(model))))


SCHEMA = {
    "type": "record", "name": "R",
    "fields": [{"name": "s", "type": "string"}, {"name": "n", "type": "long"},
               {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}},
               {"name": "u", "type": ["null", "long"]}],
}  # fmt: skip


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", IndexError),  # nothing at all
        (b"\x06ab", ValueError),  # a 3-byte string with 2 bytes left
        (b"\x01", ValueError),  # a negative length
        (b"\x02\xff\x00\x00\x00", UnicodeDecodeError),  # not UTF-8
        (b"\x00\x02\x04", IndexError),  # enum symbol 2 of 2
        (b"\x00\x02\x00\x04", IndexError),  # union branch 2 of 2
        (b"\x00\x80", IndexError),  # a varint that never ends
    ],
)
def test_bytes_that_hold_no_value_raise(data: bytes, problem: type[Exception]) -> None:
    with pytest.raises(problem):
        compile_reader(SCHEMA)(data, 0)


def test_a_type_outside_the_contract_is_refused_when_compiling() -> None:
    schema = {"type": "record", "name": "F", "fields": [{"name": "x", "type": "double"}]}
    with pytest.raises(ValueError, match="double"):
        compile_reader(schema)
