"""Avro single-object encoding of events, commands and replies.

A record is `C3 01` + the 8-byte CRC-64-AVRO fingerprint of the writer schema
+ the schemaless Avro body. Encoding always uses the current (newest) schema,
written by `events.compiled.write`. Decoding looks the writer schema up by
fingerprint, so every shipped version stays readable (`events.kind_codec`, which
also reads `METALOG_CODEC` when first used: the compiled reader and writer, or fastavro's).

Two dict shapes exist: the model shape (`model_dump()`, a union branch is a
dict with a `type` key) and the Avro shape (a union branch is a
`(full_name, record)` tuple, what fastavro writes and reads). The `*_dict`
functions take and give the model shape without pydantic: the fast path.
"""

from collections.abc import Callable, Mapping
from typing import Any, get_args

from pydantic import BaseModel

from events.commands import Command
from events.errors import DecodeError
from events.event import Event
from events.kind_codec import codec, codec_in_use
from events.replies import Reply
from events.schema_store import SchemaKind

__all__ = [
    "codec",
    "codec_in_use",
    "decode_command",
    "decode_command_dict",
    "decode_event",
    "decode_event_dict",
    "decode_reply",
    "decode_reply_dict",
    "encode_command",
    "encode_command_dict",
    "encode_event",
    "encode_event_dict",
    "encode_reply",
    "encode_reply_dict",
    "event_decoder",
    "from_avro_dict",
    "kind_of",
    "to_avro_dict",
]


_COMMAND_TYPES = frozenset(get_args(get_args(Command)[0]))
_REPLY_TYPES = frozenset(get_args(get_args(Reply)[0]))


def kind_of(model: BaseModel) -> SchemaKind:
    """The record kind a model encodes as.

    Raises:
        TypeError: The model is not an event, a command or a reply.
    """
    if isinstance(model, Event):
        return "event"
    if type(model) in _COMMAND_TYPES:
        return "command"
    if type(model) in _REPLY_TYPES:
        return "reply"
    raise TypeError(f"{type(model).__name__} is not an Event, a Command or a Reply")


def to_avro_dict(model: BaseModel) -> dict[str, Any]:
    """The Avro-shaped dict fastavro writes for an event, a command or a reply."""
    return codec(kind_of(model)).model_to_avro(model)


def from_avro_dict(kind: SchemaKind, avro: dict[str, Any]) -> Any:
    """The validated model of an Avro-shaped dict of `kind` (as fastavro reads it).

    Raises:
        DecodeError: The dict does not have the shape or does not validate.
    """
    kind_codec = codec(kind)
    try:
        shaped = kind_codec.from_avro(avro)
    except Exception as exc:
        raise DecodeError(f"the {kind} dict is not in the Avro shape: {exc!r}") from exc
    return kind_codec.validate(shaped)


def encode_event(event: Event) -> bytes:
    """Single-object encode an event with the current schema.

    The leader does not call this: `events.chain.seal_record` gives the record
    with the sealed event.
    """
    kind_codec = codec("event")
    return kind_codec.encode_avro(kind_codec.model_to_avro(event))


def encode_event_dict(event: dict[str, Any]) -> bytes:
    """Single-object encode a model-shaped event dict (no pydantic)."""
    kind_codec = codec("event")
    return kind_codec.encode_avro(kind_codec.to_avro(event))


def decode_event(data: bytes) -> Event:
    """Decode and validate an event; raises `DecodeError` or `UnknownSchema`.

    An event of the current schema is read straight into its models
    (`events.kind_codec.KindCodec.decode_model`: no model-shaped dict and no
    pydantic pass over it, about twice as fast); any other, and one that read
    refuses, is validated from its dict, so what is refused and why is the same.
    """
    event: Event = codec("event").decode_model(data)
    return event


def event_decoder(tuples: Mapping[str, type[tuple[Any, ...]]]) -> Callable[[bytes], Event]:
    """`decode_event`, but an event of the current schema holds the records named in
    `tuples` as tuples of their fields (`events.compiled.read.compile_reader`).

    For a reader that keeps those values in such a compact form and hands the events
    to nothing else (the replay's fold: `projector.fold.packed_events`). An event of an older
    schema, and one that the compiled read refuses, is decoded as `decode_event`
    decodes it, so a caller takes both forms. Compiled once per call: keep the result.
    """
    kind_codec = codec("event")
    read = kind_codec.reader_with_tuples(tuples)

    def decode(data: bytes) -> Event:
        event: Event = kind_codec.decode_model(data, read)
        return event

    return decode


def decode_event_dict(data: bytes) -> dict[str, Any]:
    """Decode an event to its model-shaped dict, unvalidated: the fast path."""
    return codec("event").decode_dict(data)


def encode_command(command: Command) -> bytes:
    """Single-object encode a command with the current schema."""
    kind_codec = codec("command")
    return kind_codec.encode_avro(kind_codec.model_to_avro(command))


def encode_command_dict(command: dict[str, Any]) -> bytes:
    """Single-object encode a model-shaped command dict (no pydantic)."""
    kind_codec = codec("command")
    return kind_codec.encode_avro(kind_codec.to_avro(command))


def decode_command(data: bytes) -> Command:
    """Decode and validate a command; raises `DecodeError` or `UnknownSchema`."""
    kind_codec = codec("command")
    command: Command = kind_codec.validate(kind_codec.decode_dict(data))
    return command


def decode_command_dict(data: bytes) -> dict[str, Any]:
    """Decode a command to its model-shaped dict, unvalidated."""
    return codec("command").decode_dict(data)


def encode_reply(reply: Reply) -> bytes:
    """Single-object encode a reply with the current schema."""
    kind_codec = codec("reply")
    return kind_codec.encode_avro(kind_codec.model_to_avro(reply))


def encode_reply_dict(reply: dict[str, Any]) -> bytes:
    """Single-object encode a model-shaped reply dict (no pydantic)."""
    kind_codec = codec("reply")
    return kind_codec.encode_avro(kind_codec.to_avro(reply))


def decode_reply(data: bytes) -> Reply:
    """Decode and validate a reply; raises `DecodeError` or `UnknownSchema`."""
    kind_codec = codec("reply")
    reply: Reply = kind_codec.validate(kind_codec.decode_dict(data))
    return reply


def decode_reply_dict(data: bytes) -> dict[str, Any]:
    """Decode a reply to its model-shaped dict, unvalidated."""
    return codec("reply").decode_dict(data)
