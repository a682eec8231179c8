"""A regular expression of a record's leading fields, compiled from its schema: read by `re`.

A pass over a million records spends most of its time stepping through each
one in Python. `re` runs in C: `prefix_pattern` writes, from a record schema,
the expression that matches the record's fields before a union and captures
one of them, so one `findall` over many records joined reads them all. It
covers the usual shape, not every record: strings and bytes shorter than
`SHORT` (a one-byte length), arrays in one block of fewer than `SHORT` items,
and any long; a caller must read a record the expression does not match in
another way (`events.compiled.partial`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from events.compiled.partial import encode_long

SHORT = 64
"""Lengths and counts below this are written in one byte (the ones the expression covers)."""

VARINT = rb"[\x80-\xff]*[\x00-\x7f]"
"""An Avro long: it ends at its first byte below 0x80 (written out, not repeated with `{n}`:
`re` runs a repeated group slower)."""


def _literal(n: int) -> bytes:
    return re.escape(encode_long(n))


def _short() -> bytes:
    return b"(?:" + b"|".join(_literal(n) + b".{%d}" % n for n in range(SHORT)) + b")"


def prefix_pattern(
    record: dict[str, Any], until: str, capture: str, named: Mapping[str, Any]
) -> tuple[bytes, tuple[bytes, ...]]:
    """The expression of `record`'s fields before the union `until`, and that union's indexes.

    Args:
        record: The fastavro-parsed record schema.
        until: The union field the expression stops at.
        capture: The field (before `until`) whose bytes the expression's one group holds.
        named: The named types the schema refers to (`partial.named_types`).

    Returns:
        The expression's source (`re.DOTALL` expected), and each of `until`'s branch
        indexes as written (one byte each, as long as the union has fewer than `SHORT`).

    Raises:
        ValueError: A field before `until` has a type the expression does not cover, or
            the fields are not as named.
    """
    names = [f["name"] for f in record["fields"]]
    if until not in names or capture not in names[: names.index(until)]:
        raise ValueError(f"record {record['name']} has no union {until!r} after {capture!r}")
    out = b""
    for field in record["fields"][: names.index(until)]:
        part = _pattern(field["type"], named)
        out += b"(" + part + b")" if field["name"] == capture else part
    union = record["fields"][names.index(until)]["type"]
    if not isinstance(union, list) or len(union) >= SHORT:
        raise ValueError(f"field {until!r} is not a union of fewer than {SHORT} branches")
    return out, tuple(encode_long(i) for i in range(len(union)))


def _pattern(schema: Any, named: Mapping[str, Any]) -> bytes:
    if isinstance(schema, str) and schema in named:
        schema = named[schema]
    if isinstance(schema, list):
        branches = (_literal(i) + _pattern(b, named) for i, b in enumerate(schema))
        return b"(?:" + b"|".join(branches) + b")"
    kind = schema["type"] if isinstance(schema, dict) else schema
    if kind == "null":
        return b""
    if kind == "boolean":
        return b"[\x00\x01]"
    if kind in ("long", "enum"):
        return VARINT
    if kind in ("string", "bytes"):
        return _short()
    if kind == "record":
        return b"".join(_pattern(f["type"], named) for f in schema["fields"])
    if kind == "array":
        item = _pattern(schema["items"], named)
        blocks = [_literal(0)] + [_literal(n) + item * n + _literal(0) for n in range(1, SHORT)]
        return b"(?:" + b"|".join(blocks) + b")"
    raise ValueError(f"Avro type {kind!r} is not covered by the record pattern")
