"""Readers of a record's leading fields, compiled from its schema: what the audit reads of a record.

The audit reads millions of event records and needs little of each: the
envelope as far as the intent's branch, a few leading fields of some intents.
`compile_prefix` turns a record schema and the items wanted of its fields into
one straight-line function (as `events.compiled.read` does for whole records,
with the same inline varints): the fields before the last one wanted are
walked, those not wanted skipped without building a value, and the function
returns the items as one flat tuple. An item is a field and what of it:

- `value`: its value, as `events.compiled.read` reads it, but a record as the
  tuple of its fields' values and a `timestamp-micros` as the long (microseconds);
- `content`: a string's or a bytes' content, not decoded;
- `start`, `end`: where the field's bytes start, and where the next field starts;
- `branch`: a union's branch (the record's short name or the type's name), its
  value not read: the union must be the last field read, and its `end` is where
  the branch's value starts.

Bytes that do not hold the fields raise: `IndexError` (cut short), `PastTheEnd`
(a length runs past the end), `NoBranch` (a union index out of range),
`UnicodeDecodeError` (a string value that is not UTF-8).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

from events.compiled.read import ZIGZAG, _Reader, _varint
from events.compiled.write import write_long

How = Literal["value", "content", "start", "end", "branch"]
Item = tuple[str, How]
"""A field's name, and what of it a prefix reader returns."""
Prefix = Callable[[bytes, int], tuple[Any, ...]]
"""A compiled prefix reader: `(record bytes, where the record starts)` → the items wanted."""


class Source(NamedTuple):
    """Statements a prefix reader runs after its items, in the same function (`then`).

    Attributes:
        lines: The statements (indented one level; they may use `d`, `size` (its length),
            and `after`, where the items end; they may `return None`).
        values: The expressions they give, each followed by `, `.
        constants: The names they use besides those.
        bound: None: the function returns the items, then `values`. Names, one per item:
            the items are bound to them for the lines, and the function returns `values`
            alone (a hot path's own result: no tuple built to be taken apart again).
        arguments: The function's parameters after `d, p` (each preceded by `, `), for
            the lines to use.
    """

    lines: tuple[str, ...]
    values: str
    constants: Mapping[str, Any]
    bound: tuple[str, ...] | None = None
    arguments: str = ""


class PastTheEnd(ValueError):
    """A length in the bytes runs past their end."""


class NoBranch(ValueError):
    """A union's index names no branch of it.

    Attributes:
        field: The union's field.
        first_byte: The index's first byte, as found.
    """

    def __init__(self, field: str, first_byte: int) -> None:
        super().__init__(f"{field} branch {first_byte} does not exist")
        self.field = field
        self.first_byte = first_byte


def encode_long(n: int) -> bytes:
    """`n` as Avro writes a long (a zigzag varint), by the compiled writer's one encoder."""
    out = bytearray()
    write_long(out, n)
    return bytes(out)


def named_types(schema: Any, found: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every named type a fastavro-parsed schema defines, by full name (references resolve)."""
    found = {} if found is None else found
    if isinstance(schema, list):
        for branch in schema:
            named_types(branch, found)
    elif isinstance(schema, dict):
        kind = schema["type"]
        if kind in ("record", "enum", "fixed"):
            found[schema["name"]] = schema
        for field in schema.get("fields", ()):
            named_types(field["type"], found)
        if kind == "array":
            named_types(schema["items"], found)
        elif kind == "map":
            named_types(schema["values"], found)
    return found


def branch_name(branch: Any) -> str:
    """A union branch's name: a named type's short name, or a primitive's type name."""
    name = branch.get("name", branch["type"]) if isinstance(branch, dict) else branch
    return str(name).rpartition(".")[2]


def compile_prefix(
    record: dict[str, Any], items: Sequence[Item], named: Mapping[str, Any] | None = None,
    then: Source | None = None,
) -> Prefix:  # fmt: skip
    """A function reading `items` of a record of the fastavro-parsed `record` schema.

    Args:
        record: The record schema (a top-level one, or one named inside it).
        items: What to return, in this order (see the module docstring).
        named: The named types `record` may refer to (`named_types` of its top schema).
        then: Statements to run after the items (one call less on a hot path): the
            function returns the items, then their values (only their values when
            `then.bound` names the items); or None if they return None.

    Raises:
        ValueError: An item names no field of the record, asks what its type does not
            have, or the schema uses a type the reader does not cover.
    """
    namespace = {"_varint": _varint, "_too_long": _too_long, "_no_branch": NoBranch, "_zz": ZIGZAG,
                 **(then.constants if then is not None else {})}  # fmt: skip
    prefix: Prefix = _Prefix(items, named or {}, then).build(record, namespace)
    return prefix


def _too_long(size: int, pos: int, available: int) -> PastTheEnd:
    return PastTheEnd(f"a length of {size} at byte {pos} runs past the {available} bytes there")


class _Prefix(_Reader):
    """Emits one `def f(d, p)` reading the wanted items of a record (no function per record)."""

    purpose = "compiled Avro prefix reader"
    inline_varints = True

    def __init__(
        self, items: Sequence[Item], named: Mapping[str, Any], then: Source | None
    ) -> None:
        super().__init__(tagged=False)
        self.named.update(named)
        self.items = tuple(items)
        self.then = then
        self._inlining: set[str] = set()

    def record_source(self, function: str, schema: dict[str, Any]) -> list[str]:
        fields = [f["name"] for f in schema["fields"]]
        wanted: dict[str, list[How]] = {}
        for name, how in self.items:
            if name not in fields:
                raise ValueError(f"record {schema['name']} has no field {name!r}")
            wanted.setdefault(name, []).append(how)
        last = max((fields.index(name) for name in wanted), default=-1)
        body: list[str] = []
        found: dict[Item, str] = {}
        for at, field in enumerate(schema["fields"][: last + 1]):
            name, kind, hows = field["name"], field["type"], wanted.get(field["name"], [])
            if "branch" in hows and at != last:
                raise ValueError(f"the union {name!r} must be the last field read")
            if "start" in hows:
                found[(name, "start")] = start = self.name("s")
                body.append(f"    {start} = p")
            if "value" in hows:
                found[(name, "value")] = var = self.name("v")
                self.value(kind, var, body, "    ")
            elif "content" in hows:
                found[(name, "content")] = var = self.name("c")
                self._content(name, kind, var, body)
            elif "branch" in hows:
                found[(name, "branch")] = var = self.name("u")
                self._branch(name, kind, var, body)
            else:
                self.skip(kind, body, "    ")
            if "end" in hows:
                found[(name, "end")] = end = self.name("e")
                body.append(f"    {end} = p")
        values = "".join(f"{found[item]}, " for item in self.items)
        then, arguments = self.then, ""
        if then is not None:
            if then.bound is not None:
                if len(then.bound) != len(self.items):
                    raise ValueError(f"{len(self.items)} items bound to {then.bound}")
                body += [f"    {name} = {found[item]}"
                         for name, item in zip(then.bound, self.items, strict=True)]  # fmt: skip
                values = ""
            body += ["    after = p", *then.lines]
            values += then.values
            arguments = then.arguments
        return [f"def {function}(d, p{arguments}):", "    size = len(d)", *body,
                f"    return ({values})"]  # fmt: skip

    def _content(self, name: str, kind: Any, var: str, out: list[str]) -> None:
        if kind not in ("string", "bytes"):
            raise ValueError(f"field {name!r} is not a string or bytes: it has no content")
        end = self.name("e")
        out += ["    b = d[p]", "    if b < 128 and not b & 1:",  # as `skip` does
                f"        {end} = p + 1 + (b >> 1)",
                f"        if {end} > size: raise _too_long(b >> 1, p, size - p)",
                f"        {var} = d[p + 1 : {end}]", f"        p = {end}", "    else:"]  # fmt: skip
        self.primitive("bytes", var, out, "        ")

    def _branch(self, name: str, kind: Any, var: str, out: list[str]) -> None:
        if not isinstance(kind, list):
            raise ValueError(f"field {name!r} is not a union: it has no branch")
        names = self.constant("_branches", tuple(branch_name(b) for b in kind))
        index = self.name("i")
        self._long(index, out, "    ")
        out += [f"    if not 0 <= {index} < {len(kind)}: raise _no_branch({name!r}, b)",
                f"    {var} = {names}[{index}]"]  # fmt: skip

    # -- values: as `events.compiled.read`, with records as tuples and times as longs --

    def timestamp(self, var: str, out: list[str], pad: str) -> None:
        self._long(var, out, pad)

    def named_value(self, schema: dict[str, Any], var: str, out: list[str], pad: str) -> None:
        if schema["type"] != "record":
            super().named_value(schema, var, out, pad)
            return
        name = schema["name"]
        if name in self._inlining:
            raise ValueError(f"record {name} holds itself: a prefix reader cannot inline it")
        self._inlining.add(name)
        parts = []
        for field in schema["fields"]:
            part = self.name("f")
            self.value(field["type"], part, out, pad)
            parts.append(part)
        self._inlining.discard(name)
        out.append(f"{pad}{var} = ({''.join(p + ', ' for p in parts)})")

    # -- skipping a value: walked, nothing built ---------------------------------

    def skip(self, schema: Any, out: list[str], pad: str) -> None:
        """Emit the statements that move `p` past a value of `schema`."""
        if isinstance(schema, str) and schema in self.named:
            schema = self.named[schema]
        if isinstance(schema, list):
            index = self.name("i")
            self._long(index, out, pad)
            for at, branch in enumerate(schema):
                out.append(f"{pad}{'if' if at == 0 else 'elif'} {index} == {at}:")
                self.skip(branch, out, pad + "    ")
                out.append(f"{pad}    pass")
            out.append(f"{pad}else: raise IndexError(f'union index {{{index}}}')")
            return
        kind = schema["type"] if isinstance(schema, dict) else schema
        if kind == "null":
            return
        if kind == "boolean":
            out.append(f"{pad}p += 1")
        elif kind in ("long", "enum"):  # a varint ends at its first byte below 128
            out += [f"{pad}while d[p] > 127: p += 1", f"{pad}p += 1"]
        elif kind in ("string", "bytes"):
            # A length below 64 (one even byte, most) is read without undoing the zigzag.
            out += [f"{pad}b = d[p]", f"{pad}if b < 128 and not b & 1:",
                    f"{pad}    p += 1 + (b >> 1)",
                    f"{pad}    if p > size: raise _too_long(b >> 1, p, size - p)",
                    f"{pad}else:"]  # fmt: skip
            size, end, inner = self.name("n"), self.name("e"), pad + "    "
            self._long(size, out, inner)
            out += [f"{inner}{end} = p + {size}",
                    f"{inner}if {size} < 0 or {end} > size: raise _too_long({size}, p, size - p)",
                    f"{inner}p = {end}"]  # fmt: skip
        elif kind == "record":
            for field in schema["fields"]:
                self.skip(field["type"], out, pad)
        elif kind in ("array", "map"):
            self._skip_blocks(schema, out, pad)
        else:
            raise ValueError(f"Avro type {kind!r} is not covered by the {self.purpose}")

    def _skip_blocks(self, schema: dict[str, Any], out: list[str], pad: str) -> None:
        count = self.name("n")
        inner, body = pad + "    ", pad + "        "
        out.append(f"{pad}while True:")
        self._long(count, out, inner)
        out += [f"{inner}if {count} == 0: break", f"{inner}if {count} < 0:",
                f"{inner}    {count} = -{count}"]  # fmt: skip
        self.skip("long", out, inner + "    ")  # the block's size in bytes: walked, not trusted
        out.append(f"{inner}for _ in range({count}):")
        if schema["type"] == "map":
            self.skip("string", out, body)
        self.skip(schema["values" if schema["type"] == "map" else "items"], out, body)
        out.append(f"{body}pass")
