"""Each model and its Avro record accept the same records, and every type round-trips."""

import enum
import types
import typing
from typing import Any

import event_samples as samples
import pytest
from event_strategies import for_model
from fastavro.validation import validate
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import AwareDatetime, BaseModel, TypeAdapter, ValidationError

from events.codec import (
    decode_command,
    decode_command_dict,
    decode_event,
    decode_event_dict,
    decode_reply,
    decode_reply_dict,
    encode_command,
    encode_command_dict,
    encode_event,
    encode_event_dict,
    encode_reply,
    encode_reply_dict,
    from_avro_dict,
    to_avro_dict,
)
from events.commands import Command
from events.compiled.shape import _named_types
from events.event import Event
from events.intents import Intent
from events.replies import Reply
from events.schema_store import default_store
from events.values import KeyValue

NS = "metalog.events"
ROOTS = {"event": Event, "command": Command, "reply": Reply}


def _models() -> dict[str, type[BaseModel]]:
    """Every model reachable from the roots, by class name."""
    found: dict[str, type[BaseModel]] = {}

    def visit(annotation: Any) -> None:
        is_model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
        if is_model and annotation.__name__ not in found:
            found[annotation.__name__] = annotation
            for field in annotation.model_fields.values():
                visit(field.annotation)
        for arg in typing.get_args(annotation):
            visit(arg)

    for root in ROOTS.values():
        visit(root)
    return found


def _expected(annotation: Any) -> Any:
    """The Avro type (names for named types) a model annotation must map to."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _expected(args[0])
    if origin in (typing.Union, types.UnionType):
        flat = [_expected(a) for a in args]
        out = [b for t in flat for b in (t if isinstance(t, list) else [t])]
        return sorted(out, key=lambda t: t != "null")
    if origin is tuple:
        return {"type": "array", "items": _expected(args[0])}
    if origin is dict:
        return {"type": "map", "values": _expected(args[1])}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return {"enum": [m.value for m in annotation]}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"{NS}.{annotation.__name__}"
    simple = {type(None): "null", int: "long", str: "string", bool: "boolean", bytes: "bytes"}
    if annotation is AwareDatetime:
        return {"type": "long", "logicalType": "timestamp-micros"}
    return simple[annotation]


def _actual(schema: Any, named: dict[str, Any]) -> Any:
    """The Avro type in the same comparable form as `_expected`."""
    if isinstance(schema, list):
        return [_actual(b, named) for b in schema]
    if isinstance(schema, str):
        if schema in named and named[schema]["type"] == "enum":
            return {"enum": named[schema]["symbols"]}
        return schema
    kind = schema["type"]
    if kind == "record":
        return schema["name"]
    if kind == "enum":
        return {"enum": schema["symbols"]}
    if kind == "array":
        return {"type": "array", "items": _actual(schema["items"], named)}
    if kind == "map":
        return {"type": "map", "values": _actual(schema["values"], named)}
    return {k: v for k, v in schema.items() if k in ("type", "logicalType")}


def _records() -> dict[str, dict[str, Any]]:
    named: dict[str, Any] = {}
    for kind in ROOTS:
        named.update(_named_types(default_store().current(kind).parsed, {}))
    return named


def test_every_model_is_an_avro_record_with_the_same_fields() -> None:
    records = _records()
    models = _models()
    assert set(models) <= {n.rpartition(".")[2] for n in records}
    for name, model in models.items():
        record = records[f"{NS}.{name}"]
        fields = {n: f for n, f in model.model_fields.items() if n != "type"}
        assert [f["name"] for f in record["fields"]] == list(fields), name
        for avro_field in record["fields"]:
            field = fields[avro_field["name"]]
            where = f"{name}.{avro_field['name']}"
            assert _actual(avro_field["type"], records) == _expected(field.annotation), where
            if field.is_required():
                assert "default" not in avro_field, where
            else:
                default = field.get_default(call_default_factory=True)
                default = list(default) if isinstance(default, tuple) else default
                assert avro_field["default"] == default, where


def test_union_members_carry_their_record_name_as_type() -> None:
    for union in (Intent, Command, Reply, KeyValue):
        for member in typing.get_args(typing.get_args(union)[0]):
            assert member.model_fields["type"].default == member.__name__


def _wrong(annotation: Any) -> Any:
    """A value of the wrong type for the annotation, for both model and schema."""
    expected = _expected(annotation)
    if isinstance(expected, list):
        return {"not": "a valid branch"}
    if isinstance(expected, dict):
        return "not a time" if "logicalType" in expected else 7
    return {"long": "abc", "string": 12345, "bytes": 3.5, "boolean": [1, 2]}.get(expected, 7)


def _rejections(shaped: dict[str, Any], model: type[BaseModel]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for name, field in model.model_fields.items():
        if name == "type":
            continue
        if field.is_required():
            out.append((f"{name} missing", {k: v for k, v in shaped.items() if k != name}))
        if _expected(field.annotation) != "boolean":  # fastavro writes any truthy value
            out.append((f"{name} wrong type", {**shaped, name: _wrong(field.annotation)}))
    return out


def _cases() -> list[tuple[str, str, dict[str, Any], Any]]:
    cases: list[tuple[str, str, dict[str, Any], Any]] = []
    for name, event in samples.EVENTS.items():
        shaped = event.model_dump()
        cases += [("event", f"Event: {d}", v, None) for d, v in _rejections(shaped, Event)]
        intent = type(event.intent)
        for d, v in _rejections(shaped["intent"], intent):
            cases.append(("event", f"{name}: {d}", {**shaped, "intent": v}, None))
    for name, command in samples.COMMANDS.items():
        cases += [
            ("command", f"{name}: {d}", v, None)
            for d, v in _rejections(command.model_dump(), type(command))
        ]
    for name, reply in samples.REPLIES.items():
        cases += [
            ("reply", f"{name}: {d}", v, None)
            for d, v in _rejections(reply.model_dump(), type(reply))
        ]
    mutation = samples.EVENTS["TableCreated"].model_dump()
    for value in mutation["mutations"][:-1]:
        model = {m.__name__: m for m in typing.get_args(typing.get_args(KeyValue)[0])}[
            value["value"]["type"]
        ]
        for d, v in _rejections(value["value"], model):
            bad = {**mutation, "mutations": [{**value, "value": v}]}
            cases.append(("event", f"{model.__name__}: {d}", bad, None))
    return cases


@pytest.mark.parametrize(
    ("kind", "what", "shaped", "_"), _cases(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_schema_and_model_reject_the_same_records(
    kind: str, what: str, shaped: dict[str, Any], _: Any
) -> None:
    from events.codec import codec

    kind_codec = codec(kind)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        TypeAdapter(ROOTS[kind]).validate_python(shaped)
    try:
        avro = kind_codec.to_avro(shaped)
    except Exception:
        return  # the union has no branch of that shape: the schema rejects it too
    assert not validate(avro, kind_codec.current.parsed, raise_errors=False), what


@pytest.mark.parametrize(
    "intent", [m for m in typing.get_args(typing.get_args(Intent)[0])], ids=lambda m: m.__name__
)
@settings(max_examples=40)
@given(data=st.data())
def test_events_round_trip(intent: type[BaseModel], data: st.DataObject) -> None:
    event = data.draw(for_model(Event, intent=for_model(intent)))
    encoded = encode_event(event)
    assert decode_event(encoded) == event
    assert from_avro_dict("event", to_avro_dict(event)) == event
    assert encode_event_dict(decode_event_dict(encoded)) == encoded


@pytest.mark.parametrize(
    "model", [m for m in typing.get_args(typing.get_args(Command)[0])], ids=lambda m: m.__name__
)
@settings(max_examples=40)
@given(data=st.data())
def test_commands_round_trip(model: type[BaseModel], data: st.DataObject) -> None:
    command = data.draw(for_model(model))
    encoded = encode_command(command)
    assert decode_command(encoded) == command
    assert from_avro_dict("command", to_avro_dict(command)) == command
    assert encode_command_dict(decode_command_dict(encoded)) == encoded


@pytest.mark.parametrize(
    "model", [m for m in typing.get_args(typing.get_args(Reply)[0])], ids=lambda m: m.__name__
)
@settings(max_examples=40)
@given(data=st.data())
def test_replies_round_trip(model: type[BaseModel], data: st.DataObject) -> None:
    reply = data.draw(for_model(model))
    encoded = encode_reply(reply)
    assert decode_reply(encoded) == reply
    assert from_avro_dict("reply", to_avro_dict(reply)) == reply
    assert encode_reply_dict(decode_reply_dict(encoded)) == encoded
