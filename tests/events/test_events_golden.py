"""Golden bytes: the exact single-object encoding of every event, command and reply."""

import json
import typing
from importlib import resources
from typing import Any

import event_golden as golden
import event_samples as samples
import pytest
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

from events.codec import (
    decode_command,
    decode_event,
    decode_reply,
    encode_command,
    encode_event,
    encode_reply,
)
from events.commands import Command
from events.intents import Intent
from events.replies import Reply

_EMPTY = 0xC15D213AA4D7A795


def _crc64_avro(data: bytes) -> int:
    """The Avro spec's reference CRC-64-AVRO (Rabin) fingerprint."""
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (_EMPTY & -(fp & 1))
        table.append(fp)
    fp = _EMPTY
    for byte in data:
        fp = (fp >> 8) ^ table[(fp ^ byte) & 0xFF]
    return fp


def _names(union: Any) -> set[str]:
    return {m.__name__ for m in typing.get_args(typing.get_args(union)[0])}


def _newest_header(kind: str) -> bytes:
    root = resources.files("events") / "schemas"
    newest = max(
        (d for d in root.iterdir() if (d / f"{kind}.avsc").is_file()), key=lambda d: int(d.name[1:])
    )
    canonical = to_parsing_canonical_form(
        parse_schema(json.loads((newest / f"{kind}.avsc").read_text()))
    )
    by_fastavro = bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))
    assert by_fastavro == _crc64_avro(canonical.encode()).to_bytes(8, "little")
    return b"\xc3\x01" + by_fastavro


def _hex(parts: str) -> bytes:
    return bytes.fromhex(parts)


def test_reference_crc_matches_the_spec_vector() -> None:
    # The Avro spec's test vector: the fingerprint of "int".
    assert _crc64_avro(b'"int"') == 0x7275D51A3F395C8F


def test_every_type_has_golden_bytes() -> None:
    assert set(golden.EVENTS) == set(samples.EVENTS) == _names(Intent)
    assert set(golden.COMMANDS) == set(samples.COMMANDS) == _names(Command)
    assert set(golden.REPLIES) == set(samples.REPLIES) == _names(Reply)


@pytest.mark.parametrize(
    ("kind", "table"),
    [("event", golden.EVENTS), ("command", golden.COMMANDS), ("reply", golden.REPLIES)],
)
def test_golden_header_is_magic_and_independent_fingerprint(
    kind: str, table: dict[str, str]
) -> None:
    header = _newest_header(kind)
    for name, hex_text in table.items():
        assert _hex(hex_text)[:10] == header, name


@pytest.mark.parametrize("name", sorted(samples.EVENTS))
def test_event_golden_bytes(name: str) -> None:
    assert encode_event(samples.EVENTS[name]) == _hex(golden.EVENTS[name])
    assert decode_event(_hex(golden.EVENTS[name])) == samples.EVENTS[name]


@pytest.mark.parametrize("name", sorted(samples.COMMANDS))
def test_command_golden_bytes(name: str) -> None:
    assert encode_command(samples.COMMANDS[name]) == _hex(golden.COMMANDS[name])
    assert decode_command(_hex(golden.COMMANDS[name])) == samples.COMMANDS[name]


@pytest.mark.parametrize("name", sorted(samples.REPLIES))
def test_reply_golden_bytes(name: str) -> None:
    assert encode_reply(samples.REPLIES[name]) == _hex(golden.REPLIES[name])
    assert decode_reply(_hex(golden.REPLIES[name])) == samples.REPLIES[name]
