"""A corpus of bad inputs: each gives `DecodeError` or `UnknownSchema`, never anything else."""

import contextlib
from collections.abc import Callable
from typing import Any

import event_golden as golden
import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.codec import (
    decode_command,
    decode_command_dict,
    decode_event,
    decode_event_dict,
    decode_reply,
    decode_reply_dict,
    encode_event_dict,
    from_avro_dict,
)
from events.errors import DecodeError, EncodeError, UnknownSchema

DECODERS: list[Callable[[bytes], Any]] = [
    decode_event,
    decode_event_dict,
    decode_command,
    decode_command_dict,
    decode_reply,
    decode_reply_dict,
]
EVENT = bytes.fromhex(golden.EVENTS["TableCreated"])
COMMAND = bytes.fromhex(golden.COMMANDS["CreateTable"])
REPLY = bytes.fromhex(golden.REPLIES["Rejected"])


@pytest.mark.parametrize("decode", DECODERS)
@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"\xc3", "shorter"),
        (b"\xc3\x01\x00", "shorter"),
        (b"\x00\x01" + EVENT[2:], "c301"),
        (b'{"json": true}', "single-object"),
    ],
)
def test_malformed_header(decode: Callable[[bytes], Any], data: bytes, words: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode(data)
    assert type(caught.value) is DecodeError
    assert words in str(caught.value)


@pytest.mark.parametrize("decode", DECODERS)
def test_unknown_fingerprint(decode: Callable[[bytes], Any]) -> None:
    with pytest.raises(UnknownSchema):
        decode(b"\xc3\x01" + b"\xff" * 8 + EVENT[10:])


@pytest.mark.parametrize(
    ("decode", "data"), [(decode_event, COMMAND), (decode_command, REPLY), (decode_reply, EVENT)]
)
def test_record_of_another_kind(decode: Callable[[bytes], Any], data: bytes) -> None:
    with pytest.raises(DecodeError, match="not a"):
        decode(data)


@pytest.mark.parametrize(
    ("decode", "data"),
    [
        (decode_event, EVENT),
        (decode_event_dict, EVENT),
        (decode_command, COMMAND),
        (decode_reply, REPLY),
    ],
)
def test_truncated_at_every_position(decode: Callable[[bytes], Any], data: bytes) -> None:
    for end in range(len(data)):
        with pytest.raises(DecodeError):
            decode(data[:end])


@pytest.mark.parametrize(
    ("decode", "data"),
    list(zip(DECODERS, [EVENT, EVENT, COMMAND, COMMAND, REPLY, REPLY], strict=True)),
)
def test_trailing_bytes(decode: Callable[[bytes], Any], data: bytes) -> None:
    with pytest.raises(DecodeError, match="trailing"):
        decode(data + b"\x00")


def test_body_that_does_not_validate() -> None:
    # A PUT mutation without a value fits the schema but not the model.
    shaped = decode_event_dict(EVENT)
    shaped["mutations"] = [{"key": "k", "op": "PUT", "value": None}]
    data = encode_event_dict(shaped)
    assert decode_event_dict(data)["mutations"][0]["value"] is None
    with pytest.raises(DecodeError, match="does not validate"):
        decode_event(data)


def test_bad_dicts_are_typed_errors() -> None:
    with pytest.raises(DecodeError):
        from_avro_dict("event", {"intent": "nope"})
    with pytest.raises(EncodeError):
        encode_event_dict({"intent": {"no": "type"}})
    with pytest.raises(EncodeError):
        encode_event_dict({**decode_event_dict(EVENT), "resource_version": 2**64})


@given(st.binary(max_size=200))
def test_random_bytes(data: bytes) -> None:
    for decode in DECODERS:
        with contextlib.suppress(DecodeError):
            decode(data)


@given(st.binary(max_size=120))
def test_random_bodies_behind_a_valid_header(body: bytes) -> None:
    for header, decoders in (
        (EVENT[:10], DECODERS[:2]),
        (COMMAND[:10], DECODERS[2:4]),
        (REPLY[:10], DECODERS[4:]),
    ):
        for decode in decoders:
            with contextlib.suppress(DecodeError):
                decode(header + body)


@given(st.integers(10, len(EVENT) - 1), st.integers(1, 255))
def test_flipped_bytes(position: int, mask: int) -> None:
    data = bytearray(EVENT)
    data[position] ^= mask
    with contextlib.suppress(DecodeError):
        decode_event(bytes(data))
