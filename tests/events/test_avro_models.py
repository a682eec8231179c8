"""The compiled reader that builds the models directly (`decode_event`) gives the models
pydantic validates from the model-shaped dict, type for type, and refuses what that refuses."""

import typing
from typing import Any, NamedTuple

import event_golden as golden
import pytest
from event_strategies import for_model
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, field_validator, model_validator

from events.base import Record
from events.codec import (
    codec,
    decode_event,
    decode_event_dict,
    encode_event,
    encode_event_dict,
)
from events.compiled.models import mirrors
from events.compiled.read import compile_reader
from events.errors import DecodeError
from events.event import Event
from events.intents import Intent
from events.pool import pooled_fields_set, shared, shared_column
from events.schema_store import HEADER_LENGTH, default_store
from events.values import Column, TableInfoValue, TableRouteValue

CURRENT = default_store().current("event")
READ_MODELS = compile_reader(CURRENT.parsed, models=mirrors(Event))
EVENT = bytes.fromhex(golden.EVENTS["TableCreated"])


def through_dict(data: bytes) -> Event:
    """An event decoded the other way: the model-shaped dict, validated by pydantic."""
    kind_codec = codec("event")
    event: Event = kind_codec.validate(kind_codec.decode_dict(data))
    return event


def same_models(got: Any, expected: Any, where: str = "event") -> None:
    """Equal and of the same class all the way down (a str is not a `MutationOp`, a list
    is not a tuple), with pydantic's bookkeeping slots alike."""
    assert type(got) is type(expected), where
    if isinstance(expected, BaseModel):
        assert list(vars(got)) == list(vars(expected)), where  # the fields, in field order
        assert got.__pydantic_fields_set__ == expected.__pydantic_fields_set__, where
        assert got.__pydantic_extra__ == expected.__pydantic_extra__, where
        assert got.__pydantic_private__ == expected.__pydantic_private__, where
        for name, value in vars(expected).items():
            same_models(vars(got)[name], value, f"{where}.{name}")
    elif isinstance(expected, tuple | list):
        assert len(got) == len(expected), where
        for at, (mine, theirs) in enumerate(zip(got, expected, strict=True)):
            same_models(mine, theirs, f"{where}[{at}]")
    elif isinstance(expected, dict):
        assert list(got.items()) == list(expected.items()), where
    else:
        assert got == expected, where


def read_directly(data: bytes) -> Any:
    """The compiled reader's own model, never `decode_event`'s fallback."""
    model, end = READ_MODELS(data, HEADER_LENGTH)
    assert end == len(data)
    return model


@pytest.mark.parametrize("name", sorted(golden.EVENTS))
def test_every_golden_event_is_read_into_the_models_pydantic_builds(name: str) -> None:
    data = bytes.fromhex(golden.EVENTS[name])
    assert data.startswith(CURRENT.header)
    same_models(read_directly(data), through_dict(data))
    same_models(decode_event(data), through_dict(data))


@pytest.mark.parametrize(
    "intent", list(typing.get_args(typing.get_args(Intent)[0])), ids=lambda m: m.__name__
)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_random_events_of_every_intent_are_read_into_the_same_models(
    intent: type, data: st.DataObject
) -> None:
    record = encode_event(data.draw(for_model(Event, intent=for_model(intent))))
    same_models(read_directly(record), through_dict(record))


def test_an_older_schemas_record_decodes_as_the_dict_path_does() -> None:
    older = [bytes.fromhex(h) for h in (*golden.EVENTS_V1.values(), *golden.EVENTS_V2.values())]
    assert older and not any(data.startswith(CURRENT.header) for data in older)
    for data in older:
        same_models(decode_event(data), through_dict(data))


def _refusal(decode: Any, data: bytes) -> str:
    with pytest.raises(DecodeError) as caught:
        decode(data)
    return str(caught.value)


def test_a_put_without_a_value_fits_the_schema_but_is_refused_as_the_dict_path_refuses_it() -> None:
    shaped = decode_event_dict(EVENT)
    shaped["mutations"] = [{"key": "k", "op": "PUT", "value": None}]
    data = encode_event_dict(shaped)
    with pytest.raises(ValueError, match="PUT needs a value"):  # the model's own validator
        READ_MODELS(data, HEADER_LENGTH)
    assert _refusal(decode_event, data) == _refusal(through_dict, data)
    assert "does not validate" in _refusal(decode_event, data)


def test_a_long_past_64_bits_is_refused_as_the_dict_path_refuses_it() -> None:
    # resource_version (the third field, after two strings) as an 11-byte varint: 2**70.
    shaped = decode_event_dict(EVENT)
    start = HEADER_LENGTH + 1 + len(shaped["event_id"]) + 1 + len(shaped["catalog"])
    end = start + 1  # the golden record's resource_version is one byte
    huge = b"\x80" * 10 + b"\x02"
    data = EVENT[:start] + huge + EVENT[end:]
    assert decode_event_dict(data)["resource_version"] == 2**70  # the dict path keeps it
    with pytest.raises(ValueError, match="does not fit a long"):
        READ_MODELS(data, HEADER_LENGTH)
    assert _refusal(decode_event, data) == _refusal(through_dict, data)


@pytest.mark.parametrize("cut", [11, 40, len(EVENT) - 1])
def test_truncated_and_padded_records_are_refused_as_the_dict_path_refuses_them(cut: int) -> None:
    for data in (EVENT[:cut], EVENT + b"\x00"):
        assert _refusal(decode_event, data) == _refusal(through_dict, data)


class _Named(Record):
    name: str


class _Checked(Record):
    name: str

    @field_validator("name")
    @classmethod
    def _short(cls, value: str) -> str:
        return value[:3]


class _Before(Record):
    name: str

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        return data


RECORD = {"type": "record", "name": "_Named", "fields": [{"name": "name", "type": "string"}]}


@pytest.mark.parametrize("model", [_Checked, _Before])
def test_a_model_that_validates_beyond_its_types_is_refused_when_compiled(model: type) -> None:
    schema = {**RECORD, "name": model.__name__}
    with pytest.raises(ValueError, match="validates beyond"):
        compile_reader(schema, models=mirrors(model))


def test_a_model_whose_fields_are_not_its_records_is_refused_when_compiled() -> None:
    schema = {**RECORD, "fields": [{"name": "label", "type": "string"}]}
    with pytest.raises(ValueError, match="are not its Avro record's"):
        compile_reader(schema, models=mirrors(_Named))
    with pytest.raises(ValueError, match="no model mirrors"):
        compile_reader({**RECORD, "name": "Other"}, models=mirrors(_Named))


@given(st.integers(HEADER_LENGTH, len(EVENT) - 1), st.integers(1, 255))
def test_a_flipped_byte_gives_the_same_event_or_the_same_refusal(position: int, mask: int) -> None:
    data = bytearray(EVENT)
    data[position] ^= mask
    outcomes = []
    for decode in (decode_event, through_dict):
        try:
            outcomes.append(decode(bytes(data)))
        except DecodeError as exc:
            outcomes.append(str(exc))
    if isinstance(outcomes[1], str):
        assert outcomes[0] == outcomes[1]
    else:
        same_models(outcomes[0], outcomes[1])


def _columns(event: Event) -> tuple[Column, ...]:
    return next(m.value.columns for m in event.mutations if isinstance(m.value, TableInfoValue))


def test_a_column_met_before_is_the_pooled_one_the_image_stores() -> None:
    first, second = decode_event(EVENT), decode_event(EVENT)
    assert first is not second and _columns(first) == _columns(through_dict(EVENT))
    assert _columns(first)
    for mine, again in zip(_columns(first), _columns(second), strict=True):
        assert mine is again is shared_column(again)


def _info(event: Event) -> TableInfoValue:
    return next(m.value for m in event.mutations if isinstance(m.value, TableInfoValue))


def test_an_info_read_holds_the_pooled_names_and_carries_the_pools_mark() -> None:
    first, second = _info(decode_event(EVENT)), _info(decode_event(EVENT))
    assert first is not second and first == _info(through_dict(EVENT))
    for name in ("catalog", "schema_name", "primary_key"):
        mine, again = getattr(first, name), getattr(second, name)
        assert mine == again and mine is again is shared(again), name
    mark = pooled_fields_set(TableInfoValue)
    assert first.__pydantic_fields_set__ is mark
    # pydantic's own model, and a changed copy of the one read, carry no mark.
    assert _info(through_dict(EVENT)).__pydantic_fields_set__ is not mark
    assert first.model_copy(update={"version": 9}).__pydantic_fields_set__ is not mark


class RouteRow(NamedTuple):
    """A stand-in for a compact form of `TableRouteValue` (two fields, as the record)."""

    table_id: int
    routes: tuple[tuple[int, int, tuple[int, ...]], ...]


def test_records_named_in_tuples_are_read_as_tuples_of_their_fields_in_order() -> None:
    read = compile_reader(CURRENT.parsed, models=mirrors(Event),
                          tuples={"TableRouteValue": RouteRow, "RegionRoute": tuple})  # fmt: skip
    event, end = read(EVENT, HEADER_LENGTH)
    assert end == len(EVENT)
    logged = through_dict(EVENT)
    routes = 0
    for got, want in zip(event.mutations, logged.mutations, strict=True):
        if isinstance(want.value, TableRouteValue):
            routes += 1
            assert type(got.value) is RouteRow
            assert got.value == (want.value.table_id, tuple(
                (r.region_id, r.leader_datanode, r.follower_datanodes)
                for r in want.value.region_routes))  # fmt: skip
        else:
            same_models(got, want)
    assert routes == 1
    same_models(event.intent, logged.intent)


@pytest.mark.parametrize(
    ("tuples", "refusal"),
    [
        ({"Mutation": tuple}, "validators would not run"),  # its op/value check would be skipped
        ({"TableNameValue": RouteRow}, "has 1 field"),  # two fields for a record of one
    ],
)
def test_a_record_is_not_read_as_a_tuple_that_would_skip_a_check_or_misplace_a_field(
    tuples: dict[str, type[tuple[Any, ...]]], refusal: str
) -> None:
    with pytest.raises(ValueError, match=refusal):
        compile_reader(CURRENT.parsed, models=mirrors(Event), tuples=tuples)
