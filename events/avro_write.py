"""A schema-compiled Avro binary writer: the bytes fastavro writes, several times faster.

fastavro looks at the schema again for every value it writes (a nullable
field costs it several microseconds); `compile_writer` walks a parsed schema
once and returns closures that append to a `bytearray`. The leader writes
every event and reply through it, and clients every command.

It covers what the contract uses: null, boolean, long (and
`timestamp-micros`), string, bytes, enum, array, map, record, named
references, and unions given in fastavro's tuple notation
(`(full_name, record)`), as `None`, or as a value of the union's only other
branch. A schema with anything else is refused when compiling, so a new
schema feature fails in the tests rather than writing different bytes.
Bad values raise (`TypeError`, `ValueError`, `KeyError`, `OverflowError`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from events.base import LONG_MAX, LONG_MIN

Write = Callable[[bytearray, Any], None]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SMALL = [bytes([(n << 1) ^ (n >> 63)]) for n in range(-64, 64)]
"""The one-byte zigzag varints of -64..63 (most lengths, versions and indexes)."""


def compile_writer(parsed: dict[str, Any]) -> Callable[[Any], bytes]:
    """A function writing a datum of the fastavro-parsed record schema `parsed` to bytes.

    Raises:
        ValueError: The schema uses a type or union this writer does not cover.
    """
    write = _Compiler().compile(parsed)

    def to_bytes(datum: Any) -> bytes:
        out = bytearray()
        write(out, datum)
        return bytes(out)

    return to_bytes


def write_long(out: bytearray, n: int) -> None:
    """Append `n` as a zigzag varint (Avro `long`)."""
    if -64 <= n < 64:
        out += _SMALL[n + 64]
        return
    if not LONG_MIN <= n <= LONG_MAX:
        raise OverflowError(f"{n} does not fit an Avro long")
    n = (n << 1) ^ (n >> 63)
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _null(out: bytearray, value: Any) -> None:
    """Null is written as nothing (as fastavro does, whatever the value)."""


def _boolean(out: bytearray, value: Any) -> None:
    out.append(1 if value else 0)


def _string(out: bytearray, value: str) -> None:
    data = value.encode()
    write_long(out, len(data))
    out += data


def _bytes(out: bytearray, value: bytes) -> None:
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{type(value).__name__} where Avro bytes are expected")
    write_long(out, len(value))
    out += value


def _timestamp_micros(out: bytearray, value: datetime | int) -> None:
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            delta = value - _EPOCH
            value = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        else:  # naive: local time, as fastavro reads it
            value = int(time.mktime(value.timetuple())) * 1_000_000 + value.microsecond
    write_long(out, value)


_PRIMITIVES: dict[str, Write] = {
    "null": _null,
    "boolean": _boolean,
    "long": write_long,
    "string": _string,
    "bytes": _bytes,
}


class _Compiler:
    def __init__(self) -> None:
        self._named: dict[str, Write] = {}

    def compile(self, schema: Any) -> Write:
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return _PRIMITIVES[schema]
            if schema not in self._named:
                raise ValueError(f"unknown Avro type {schema!r}")
            return self._named[schema]
        if isinstance(schema, list):
            return self._union(schema)
        kind = schema["type"]
        if kind == "long" and schema.get("logicalType") == "timestamp-micros":
            return _timestamp_micros
        if isinstance(kind, str) and kind in _PRIMITIVES:
            return _PRIMITIVES[kind]
        if kind == "record":
            return self._record(schema)
        if kind == "enum":
            return self._enum(schema)
        if kind == "array":
            return _array(self.compile(schema["items"]))
        if kind == "map":
            return _map(self.compile(schema["values"]))
        raise ValueError(f"Avro type {kind!r} is not covered by events.avro_write")

    def _record(self, schema: dict[str, Any]) -> Write:
        fields: list[tuple[str, Any, Write]] = []
        self._named[schema["name"]] = lambda out, value: write(out, value)  # recursion
        for field in schema["fields"]:
            fields.append((field["name"], field.get("default"), self.compile(field["type"])))

        def write(out: bytearray, value: dict[str, Any]) -> None:
            get = value.get
            for name, default, write_field in fields:
                write_field(out, get(name, default))

        self._named[schema["name"]] = write
        return write

    def _enum(self, schema: dict[str, Any]) -> Write:
        symbols = schema["symbols"]
        if len(symbols) > 64:
            raise ValueError(f"enum {schema['name']} has more than 64 symbols")
        index = {symbol: _SMALL[i + 64] for i, symbol in enumerate(symbols)}

        def write(out: bytearray, value: str) -> None:
            # An Enum member hashes by its name: look its value up.
            out += index[getattr(value, "value", value)]

        self._named[schema["name"]] = write
        return write

    def _union(self, branches: list[Any]) -> Write:
        by_name: dict[str, tuple[int, Write]] = {}
        null_at: int | None = None
        for i, branch in enumerate(branches):
            name = branch if isinstance(branch, str) else branch.get("name", branch["type"])
            if name == "null":
                null_at = i
            by_name[name] = (i, self.compile(branch))
        others = [entry for name, entry in by_name.items() if name != "null"]
        only = others[0] if len(others) == 1 else None
        if len(branches) > 64:
            raise ValueError("unions of more than 64 branches are not covered")

        def write(out: bytearray, value: Any) -> None:
            if value is None and null_at is not None:
                out += _SMALL[null_at + 64]
                return
            if type(value) is tuple:
                name, value = value
                if name not in by_name:
                    raise ValueError(f"{name} is not a branch of the union")
                at, write_branch = by_name[name]
            elif only is not None:
                at, write_branch = only
            else:
                raise ValueError(
                    f"a value for a union of {len(branches)} branches must be a "
                    f"(name, value) tuple, not {type(value).__name__}"
                )
            out += _SMALL[at + 64]
            write_branch(out, value)

        return write


def _array(item: Write) -> Write:
    def write(out: bytearray, values: Any) -> None:
        if len(values):
            write_long(out, len(values))
            for value in values:
                item(out, value)
        out.append(0)

    return write


def _map(item: Write) -> Write:
    def write(out: bytearray, values: dict[str, Any]) -> None:
        if len(values):
            write_long(out, len(values))
            for key, value in values.items():
                _string(out, key)
                item(out, value)
        out.append(0)

    return write
