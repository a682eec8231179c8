"""A schema-compiled Avro binary writer: the bytes fastavro writes, in about half the time.

fastavro looks at the schema again for every value it writes (a nullable
field costs it several microseconds). `compile_writer` turns a parsed schema
into Python source once (`exec`): one function per record, every primitive
written inline, appending to a `bytearray`. The leader writes every event and
reply through it, and clients every command.

It covers what the contract uses: null, boolean, long (and
`timestamp-micros`), string, bytes, enum, array, map, record, named
references, and unions given in fastavro's tuple notation
(`(full_name, record)`), as `None`, or as a value of the union's only other
branch. A schema with anything else is refused when compiling, so a new
schema feature fails in the tests rather than writing different bytes.
Bad values raise (`TypeError`, `ValueError`, `KeyError`, `OverflowError`,
`AttributeError`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from events.base import LONG_MAX, LONG_MIN
from events.compiled.source import EPOCH, SourceGenerator

_SMALL = tuple(bytes([(n << 1) ^ (n >> 63)]) for n in range(-64, 64))
"""The one-byte zigzag varints of -64..63 (most lengths, versions and indexes)."""


def compile_writer(parsed: dict[str, Any]) -> Callable[[Any], bytes]:
    """A function writing a datum of the fastavro-parsed record schema `parsed` to bytes.

    Raises:
        ValueError: The schema uses a type or union this writer does not cover.
    """
    namespace = {"_SMALL": _SMALL, "_long": write_long, "_bytes": _bytes,
                 "_timestamp": _timestamp_micros}  # fmt: skip
    write = _Writer().build(parsed, namespace)

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


def _bytes(out: bytearray, value: bytes) -> None:
    if not isinstance(value, (bytes, bytearray)):
        raise TypeError(f"{type(value).__name__} where Avro bytes are expected")
    write_long(out, len(value))
    out += value


def _timestamp_micros(out: bytearray, value: datetime | int) -> None:
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            delta = value - EPOCH
            value = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
        else:  # naive: local time, as fastavro reads it
            value = int(time.mktime(value.timetuple())) * 1_000_000 + value.microsecond
    write_long(out, value)


class _Writer(SourceGenerator):
    """Emits `def f(out, value)` per record: append the record dict `value` to `out`."""

    purpose = "compiled Avro writer"

    def record_source(self, function: str, schema: dict[str, Any]) -> list[str]:
        body = ["    get = value.get"]
        for field in schema["fields"]:
            var, name, default = self.name("v"), field["name"], field.get("default")
            fetch = f"get({name!r})" if default is None else (
                f"get({name!r}, {self.constant('_default', default)})"
            )
            body.append(f"    {var} = {fetch}")
            self.value(field["type"], var, body, "    ")
        return [f"def {function}(out, value):", *body]

    def named_value(self, schema: dict[str, Any], var: str, out: list[str], pad: str) -> None:
        if schema["type"] == "record":
            out.append(f"{pad}{self.record(schema)}(out, {var})")
            return
        symbols = schema["symbols"]
        if len(symbols) > 64:
            raise ValueError(f"enum {schema['name']} has more than 64 symbols")
        index = self.constant("_enum", {s: _SMALL[i + 64] for i, s in enumerate(symbols)})
        # An Enum member hashes by its name: look its value up.
        out.append(f"{pad}out += {index}[getattr({var}, 'value', {var})]")

    def timestamp(self, var: str, out: list[str], pad: str) -> None:
        out.append(f"{pad}_timestamp(out, {var})")

    def primitive(self, kind: str, var: str, out: list[str], pad: str) -> None:
        if kind == "boolean":
            out.append(f"{pad}out.append(1 if {var} else 0)")
        elif kind == "long":
            small = f"type({var}) is int and -64 <= {var} < 64"
            out.append(f"{pad}if {small}: out += _SMALL[{var} + 64]")
            out.append(f"{pad}else: _long(out, {var})")
        elif kind == "string":
            data = self.name("s")
            out += [
                f"{pad}{data} = {var}.encode()",
                f"{pad}if len({data}) < 64: out += _SMALL[len({data}) + 64]",
                f"{pad}else: _long(out, len({data}))",
                f"{pad}out += {data}",
            ]
        elif kind == "bytes":
            out.append(f"{pad}_bytes(out, {var})")
        # null: written as nothing (as fastavro does, whatever the value)

    def blocks(self, schema: dict[str, Any], var: str, out: list[str], pad: str) -> None:
        keyed = schema["type"] == "map"
        item, key = self.name("x"), self.name("k")
        out += [f"{pad}if len({var}):", f"{pad}    _long(out, len({var}))"]
        loop = f"for {key}, {item} in {var}.items():" if keyed else f"for {item} in {var}:"
        out.append(f"{pad}    {loop}")
        if keyed:
            self.primitive("string", key, out, pad + "        ")
        self.value(schema["values" if keyed else "items"], item, out, pad + "        ")
        out.append(f"{pad}out.append(0)")

    def union(self, branches: list[Any], var: str, out: list[str], pad: str) -> None:
        if len(branches) > 64:
            raise ValueError("unions of more than 64 branches are not covered")
        by_name: dict[str, tuple[int, Any]] = {}
        null_at: int | None = None
        for i, branch in enumerate(branches):
            name = branch if isinstance(branch, str) else branch.get("name", branch["type"])
            if name == "null":
                null_at = i
            by_name[name] = (i, branch)
        others = [entry for name, entry in by_name.items() if name != "null"]
        tag = self.name("t")
        first = "if"
        if null_at is not None:
            out += [f"{pad}if {var} is None:", f"{pad}    out += {_SMALL[null_at + 64]!r}"]
            first = "elif"
        out += [f"{pad}{first} type({var}) is tuple:", f"{pad}    {tag}, {var} = {var}"]
        for n, (name, (at, branch)) in enumerate(by_name.items()):
            out.append(f"{pad}    {'if' if n == 0 else 'elif'} {tag} == {name!r}:")
            out.append(f"{pad}        out += {_SMALL[at + 64]!r}")
            self.value(branch, var, out, pad + "        ")
        out.append(f"{pad}    else: raise ValueError(f'{{{tag}}} is not a branch of the union')")
        out.append(f"{pad}else:")
        if len(others) == 1:
            at, branch = others[0]
            out.append(f"{pad}    out += {_SMALL[at + 64]!r}")
            self.value(branch, var, out, pad + "    ")
            return
        message = f"a value for a union of {len(branches)} branches must be a (name, value) tuple"
        out.append(f"{pad}    raise ValueError(f'{message}, not {{type({var}).__name__}}')")


def compile_model_writer(
    parsed: dict[str, Any], mark: str | None = None, memo: frozenset[str] = frozenset()
) -> Callable[[bytearray, Any], int | None]:
    """A function appending a model of the record schema `parsed` to a `bytearray`.

    It writes the bytes `compile_writer` writes for the model's Avro shape
    (`events.compiled.shape`), but reads the models themselves: a record's
    fields from the model's `__dict__`, a union's branch from the model's
    `type` (its Avro record name), so no dict of the Avro shape is built.

    Args:
        parsed: The fastavro-parsed record schema.
        mark: A field of the top-level record: the function returns the length
            of `out` just before that field's bytes (else it returns None).
        memo: Records (short names, of primitive fields only) whose bytes the
            writer keeps by their fields' values and copies when it meets them
            again: the columns every table info repeats. Past `MEMO_LIMIT`
            entries a record's memo starts over. A tuple of them (an info's
            columns, which a table's versions share) is kept whole too, by the
            tuple itself (`ARRAY_MEMO_LIMIT`).

    Raises:
        ValueError: The schema uses a type or union this writer does not cover.
    """
    namespace = {"_SMALL": _SMALL, "_long": write_long, "_bytes": _bytes,
                 "_timestamp": _timestamp_micros}  # fmt: skip
    writer = _ModelWriter(parsed["name"], mark, memo)
    write: Callable[[bytearray, Any], int | None] = writer.build(parsed, namespace)
    return write


MEMO_LIMIT = 100_000
"""Entries a model writer keeps per memoized record; past it that memo starts over."""

ARRAY_MEMO_LIMIT = 10_000
"""Tuples of memoized records a model writer keeps; past it that memo starts over."""


class _ModelWriter(_Writer):
    """Emits `def f(out, value)` per record: append the model `value` to `out`.

    Args:
        top: The top-level record's name.
        mark: The top-level field whose offset in `out` its function returns.
    """

    purpose = "compiled Avro model writer"

    def __init__(self, top: str, mark: str | None, memo: frozenset[str]) -> None:
        super().__init__()
        self._top, self._mark, self._memo = top, mark, memo

    def record_source(self, function: str, schema: dict[str, Any]) -> list[str]:
        if schema["name"].rpartition(".")[2] in self._memo:
            return self._memo_source(function, schema)
        body = ["    fields = value.__dict__", "    mark = None"]
        marked = schema["name"] == self._top
        for field in schema["fields"]:
            var = self.name("v")
            if marked and field["name"] == self._mark:
                body.append("    mark = len(out)")
            body.append(f"    {var} = fields[{field['name']!r}]")
            self.value(field["type"], var, body, "    ")
        return [f"def {function}(out, value):", *body, "    return mark"]

    def blocks(self, schema: dict[str, Any], var: str, out: list[str], pad: str) -> None:
        items = schema.get("items")
        name = items.get("name") if isinstance(items, dict) else items
        if not isinstance(name, str) or name.rpartition(".")[2] not in self._memo:
            super().blocks(schema, var, out, pad)
            return
        # Kept under the tuple's id with the tuple itself, which keeps the id from being
        # reused; a tuple of frozen models never changes (a list might: not kept).
        memo, hit, start = self.constant("_arrays", {}), self.name("m"), self.name("a")
        out += [f"{pad}{hit} = {memo}.get(id({var})) if type({var}) is tuple else None",
                f"{pad}if {hit} is not None and {hit}[0] is {var}:",
                f"{pad}    out += {hit}[1]",
                f"{pad}else:",
                f"{pad}    {start} = len(out)"]  # fmt: skip
        super().blocks(schema, var, out, pad + "    ")
        out += [f"{pad}    if type({var}) is tuple:",
                f"{pad}        if len({memo}) >= {ARRAY_MEMO_LIMIT}: {memo}.clear()",
                f"{pad}        {memo}[id({var})] = ({var}, bytes(out[{start}:]))"]  # fmt: skip

    def _memo_source(self, function: str, schema: dict[str, Any]) -> list[str]:
        """A record written once per distinct value: its bytes kept under its fields'
        values (the type of each is in the key: `True` and `1` must not meet)."""
        names = [field["name"] for field in schema["fields"]]
        if any(not isinstance(f["type"], (str, list)) or f["type"] not in (
            "string", "long", "boolean", "bytes", ["null", "string"], ["null", "long"]
        ) for f in schema["fields"]):  # fmt: skip
            raise ValueError(f"record {schema['name']} holds more than primitives: no memo")
        memo = self.constant("_memo", {})
        values = ", ".join(f"v[{n!r}], type(v[{n!r}])" for n in names)
        body = ["    v = value.__dict__", f"    k = ({values},)", f"    b = {memo}.get(k)",
                "    if b is not None:", "        out += b", "        return None",
                "    start = len(out)"]  # fmt: skip
        for name, field in zip(names, schema["fields"], strict=True):
            var = self.name("v")
            body.append(f"    {var} = v[{name!r}]")
            self.value(field["type"], var, body, "    ")
        body += [f"    if len({memo}) >= {MEMO_LIMIT}: {memo}.clear()",
                 f"    {memo}[k] = bytes(out[start:])", "    return None"]  # fmt: skip
        return [f"def {function}(out, value):", *body]

    def union(self, branches: list[Any], var: str, out: list[str], pad: str) -> None:
        if len(branches) > 64:
            raise ValueError("unions of more than 64 branches are not covered")
        null_at: int | None = None
        records: list[tuple[int, str]] = []
        others: list[tuple[int, Any]] = []
        for at, branch in enumerate(branches):
            name = branch if isinstance(branch, str) else branch.get("name", branch["type"])
            if name == "null":
                null_at = at
            elif name in self.named and self.named[name]["type"] == "record":
                records.append((at, name))
            elif isinstance(branch, dict) and branch["type"] == "record":
                self.record(branch)
                records.append((at, name))
            else:
                others.append((at, branch))
        if (records and others) or len(others) > 1:
            raise ValueError("a union of several non-null types must hold records only")
        if null_at is not None:
            out += [f"{pad}if {var} is None:", f"{pad}    out += {_SMALL[null_at + 64]!r}"]
        out.append(f"{pad}{'else' if null_at is not None else 'if True'}:")
        if others:
            at, branch = others[0]
            out.append(f"{pad}    out += {_SMALL[at + 64]!r}")
            self.value(branch, var, out, pad + "    ")
            return
        # A model in a union of records carries its Avro record name as `type`.
        tag = self.name("t")
        out.append(f"{pad}    {tag} = {var}.type")
        for n, (at, full) in enumerate(records):
            short = full.rpartition(".")[2]
            out.append(f"{pad}    {'if' if n == 0 else 'elif'} {tag} == {short!r}:")
            out.append(f"{pad}        out += {_SMALL[at + 64]!r}")
            self.value(full, var, out, pad + "        ")
        out.append(f"{pad}    else: raise ValueError(f'{{{tag}}} is not a branch of the union')")
