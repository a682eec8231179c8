"""A schema-compiled Avro binary reader: what fastavro reads, in about half the time.

fastavro's reader looks at the schema again for every value (about 0.7 µs a
field on an event). `compile_reader` turns a parsed schema into Python
source once, one function per record with every primitive read inline, and
returns a function from `(bytes, offset)` to `(datum, end offset)`. The datum
is what `fastavro.schemaless_reader(..., return_record_name=True)` returns
without a reader schema: unions of records (or of named references) give
`(full_name, value)` tuples, `timestamp-micros` gives an aware UTC datetime.
With `tagged=True` it is the models' shape instead (`events.compiled.shape`): a
record read from a union is its dict with a `type` key holding its short name.
Given the `mirrors` of the schema (`events.compiled.models`) it reads straight
into the models: each record is built as its model (as `events.base.built`
does: the dict read becomes the model's fields, an array a tuple, an enum the `Enum`
member) and the model's `after` validators run on it. What pydantic's pass
would check besides holds by construction: every value has its Avro type,
which is its field's; a union member's `type` is its record's name; and a long
that does not fit 64 bits raises (the `Long` bounds). A schema whose models do
not mirror it, or validate otherwise, is refused when compiling.

It covers what the contract uses, the same set as `events.compiled.write`: null,
boolean, long (and `timestamp-micros`), string, bytes, enum, array, map,
record, named references and unions; a schema with anything else is refused
when compiling. Bytes that do not hold a value raise (`IndexError`,
`ValueError`, `UnicodeDecodeError`); the codec turns those into `DecodeError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from events.base import LONG_MAX, LONG_MIN
from events.compiled.models import CheckedModel, Mirrors, checked_model
from events.compiled.source import EPOCH, PRIMITIVES, SourceGenerator
from events.pool import default_pool, pooled_fields_set

Read = Callable[[bytes, int], tuple[Any, int]]

ZIGZAG = tuple((b >> 1) ^ -(b & 1) for b in range(128))
"""A one-byte long's value by its byte: one lookup where the zigzag takes four operations
(most longs of an event fit one byte; a reader of millions of records saves ~6 %)."""


def _varint(data: bytes, pos: int, first: int) -> tuple[int, int]:
    """The rest of a zigzag varint whose first byte (`first` >= 0x80) is read."""
    n, shift = first & 0x7F, 7
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return (n >> 1) ^ -(n & 1), pos


def _not_primitive(schema: Any) -> bool:
    """Whether a field's type is (or may be) anything but a primitive."""
    if isinstance(schema, list):
        return any(map(_not_primitive, schema))
    kind = schema["type"] if isinstance(schema, dict) else schema
    return kind not in PRIMITIVES


def _not_long(n: int, pos: int) -> ValueError:
    return ValueError(f"{n} before byte {pos} does not fit a long")


def _too_long(size: int, pos: int, available: int) -> ValueError:
    return ValueError(f"a length of {size} at byte {pos} runs past the {available} bytes there")


def compile_reader(
    parsed: dict[str, Any],
    tagged: bool = False,
    models: Mirrors | None = None,
    pooled: frozenset[str] = frozenset(),
    shared: Mapping[str, tuple[str, ...]] = {},
    tuples: Mapping[str, type[tuple[Any, ...]]] = {},
) -> Read:
    """A function reading a datum of the fastavro-parsed record schema `parsed`.

    Args:
        parsed: The schema.
        tagged: Read a record in a union as its dict with a `type` key (the
            models' shape), not as fastavro's `(full_name, dict)` tuple.
        models: Read every record as the model mirroring it (`tagged` is then moot).
        pooled: With `models`, the records (short names, of primitive fields only) built
            once per distinct value: the one in `events.pool` under its fields' values.
        shared: With `models`, records (short names) whose listed fields (strings, or
            arrays of them) are read as the equal value in `events.pool`; such a model
            carries `events.pool.pooled_fields_set`, the mark of a value built pooled.
        tuples: With `models`, records (short names) read as a tuple of their fields'
            values in field order, of the class given (`tuple`, or a named tuple of as
            many fields): for a reader that keeps such values in a compact form of its
            own. Wherever such a record occurs, its value is that tuple, not a model.

    Raises:
        ValueError: The schema uses a type this reader does not cover, or a
            model does not mirror its record (`events.compiled.models.checked_model`).
    """
    pool = default_pool()
    namespace = {"_varint": _varint, "_too_long": _too_long, "_not_long": _not_long, "_zz": ZIGZAG,
                 "EPOCH": EPOCH, "_timedelta": timedelta, "_new": object.__new__,
                 "_set": object.__setattr__, "_pool": pool.values, "_remember": pool.remember,
                 "_shared": pool.shared, "_tuple_new": tuple.__new__}  # fmt: skip
    read: Read = _Reader(tagged, models, pooled, shared, tuples).build(parsed, namespace)
    return read


class _Reader(SourceGenerator):
    """Emits `def f(d, p)` per record: read from `d` at `p`, return `(value, end)`."""

    purpose = "compiled Avro reader"

    def __init__(
        self,
        tagged: bool,
        models: Mirrors | None = None,
        pooled: frozenset[str] = frozenset(),
        shared: Mapping[str, tuple[str, ...]] = {},
        tuples: Mapping[str, type[tuple[Any, ...]]] = {},
    ) -> None:
        super().__init__()
        self.tagged = tagged
        self.models = models
        self.pooled = pooled
        self.shared = shared
        self.tuples = tuples

    def record_source(self, function: str, schema: dict[str, Any]) -> list[str]:
        body: list[str] = []
        values = {}
        for field in schema["fields"]:
            var = self.name("v")
            self.value(field["type"], var, body, "    ")
            values[field["name"]] = var
        head = [f"def {function}(d, p):", "    size = len(d)", *body]
        if self.models is None:
            pairs = ", ".join(f"{name!r}: {var}" for name, var in values.items())
            return [*head, f"    return {{{pairs}}}, p"]
        return head + self._model_source(schema, values)

    def _model_source(self, schema: dict[str, Any], values: dict[str, str]) -> list[str]:
        """The lines that build the record's model from its read `values` and return it."""
        assert self.models is not None
        short = schema["name"].rpartition(".")[2]
        model = self.models.get(short)
        if model is None:
            raise ValueError(f"no model mirrors the Avro record {short}")
        checked = checked_model(model, schema)
        if short in self.tuples:
            return self._tuple_source(short, checked, values)
        if checked.tag is not None:
            values["type"] = repr(checked.tag)
        pairs = ", ".join(f"{name!r}: {values[name]}" for name in checked.fields)
        out = []
        fields_set = set(checked.fields)
        if short in self.shared:
            fields_set = pooled_fields_set(model)
            for name in self.shared[short]:
                if name not in values:
                    raise ValueError(f"record {short} has no field {name} to share")
                out.append(f"    {values[name]} = _shared({values[name]})")
        fields_set_name = self.constant("_fields", fields_set)
        pooled = short in self.pooled
        if pooled:  # the key `events.pool.COLUMN_KEY` gives: the fields' values in order
            if any(_not_primitive(f["type"]) for f in schema["fields"]):
                raise ValueError(f"record {short} holds more than primitives: it cannot be pooled")
            out += [f"    k = ({''.join(values[name] + ', ' for name in checked.fields)})",
                    "    m = _pool.get(k)",
                    "    if m is not None: return m, p"]  # fmt: skip
        # `events.base.built`, inline: one Python call less per model (about 20 an event).
        out += [f"    m = _new({self.constant('_model', model)})",
               f"    _set(m, '__dict__', {{{pairs}}})",
               f"    _set(m, '__pydantic_fields_set__', {fields_set_name})",
               "    _set(m, '__pydantic_extra__', None)",
               "    _set(m, '__pydantic_private__', None)"]  # fmt: skip
        out += [f"    {self.constant('_check', check)}(m)" for check in checked.checks]
        return [*out, "    return _remember(k, m), p" if pooled else "    return m, p"]

    def _tuple_source(self, short: str, checked: CheckedModel, values: dict[str, str]) -> list[str]:
        """The line returning the record as the tuple `tuples` names for it."""
        kind = self.tuples[short]
        items = "".join(f"{values[name]}, " for name in checked.fields if name in values)
        width = len(getattr(kind, "_fields", values))
        if checked.checks or width != len(values):
            why = (
                "its model validators would not run"
                if checked.checks
                else f"it has {len(values)} field(s), {kind.__name__} {width}"
            )
            raise ValueError(f"record {short} cannot be read as {kind.__name__}: {why}")
        if kind is tuple:
            return [f"    return ({items}), p"]
        return [f"    return _tuple_new({self.constant('_tuple', kind)}, ({items})), p"]

    def named_value(self, schema: dict[str, Any], var: str, out: list[str], pad: str) -> None:
        if schema["type"] == "record":
            out.append(f"{pad}{var}, p = {self.record(schema)}(d, p)")
            return
        enum = (self.models or {}).get(schema["name"].rpartition(".")[2])
        # An `Enum` field holds the member; a `Literal` one, the symbol itself.
        members = tuple(map(enum, schema["symbols"]) if enum is not None else schema["symbols"])
        symbols = self.constant("_symbols", members)
        self._long(var, out, pad)
        out.append(f"{pad}if {var} < 0: raise IndexError(f'enum index {{{var}}}')")
        out.append(f"{pad}{var} = {symbols}[{var}]")

    def timestamp(self, var: str, out: list[str], pad: str) -> None:
        self._long(var, out, pad)
        out.append(f"{pad}{var} = EPOCH + _timedelta(microseconds={var})")

    def primitive(self, kind: str, var: str, out: list[str], pad: str) -> None:
        if kind == "null":
            out.append(f"{pad}{var} = None")
        elif kind == "boolean":
            out += [f"{pad}{var} = d[p] != 0", f"{pad}p += 1"]
        elif kind == "long":
            self._long(var, out, pad)
        else:
            self._long(var, out, pad)
            end = self.name("e")
            out += [
                f"{pad}{end} = p + {var}",
                f"{pad}if {var} < 0 or {end} > size: raise _too_long({var}, p, size - p)",
                f"{pad}{var} = d[p:{end}]" + (".decode()" if kind == "string" else ""),
                f"{pad}p = {end}",
            ]

    inline_varints = False
    """Read a long's later bytes inline, not by calling `_varint` (shorter code here; a
    reader of a few fields of many records, `events.compiled.partial`, saves the call)."""

    def _long(self, var: str, out: list[str], pad: str) -> None:
        out += [
            f"{pad}b = d[p]",
            f"{pad}p += 1",
            f"{pad}if b < 128: {var} = _zz[b]",
            f"{pad}else:",
        ]
        if self.inline_varints:  # `_varint`, inline (`b` stays the first byte)
            out += [f"{pad}    {var}, s = b & 127, 7", f"{pad}    while True:",
                    f"{pad}        c = d[p]", f"{pad}        p += 1",
                    f"{pad}        {var} |= (c & 127) << s",
                    f"{pad}        if c < 128: break", f"{pad}        s += 7",
                    f"{pad}    {var} = ({var} >> 1) ^ -({var} & 1)"]  # fmt: skip
        else:
            out.append(f"{pad}    {var}, p = _varint(d, p, b)")
        if self.models is not None:  # the models' `Long` bounds (one byte always fits)
            out.append(f"{pad}    if not {LONG_MIN} <= {var} <= {LONG_MAX}: "
                       f"raise _not_long({var}, p)")  # fmt: skip

    def blocks(self, schema: dict[str, Any], var: str, out: list[str], pad: str) -> None:
        keyed = schema["type"] == "map"
        n, key, item = self.name("n"), self.name("k"), self.name("x")
        out.append(f"{pad}{var} = {{}}" if keyed else f"{pad}{var} = []")
        out.append(f"{pad}while True:")
        inner = pad + "    "
        self._long(n, out, inner)
        out += [f"{inner}if {n} == 0: break", f"{inner}if {n} < 0:", f"{inner}    {n} = -{n}"]
        self._long(self.name("skip"), out, inner + "    ")  # the block's size in bytes
        out.append(f"{inner}for _ in range({n}):")
        body = inner + "    "
        if keyed:
            self.primitive("string", key, out, body)
        self.value(schema["values" if keyed else "items"], item, out, body)
        out.append(f"{body}{var}[{key}] = {item}" if keyed else f"{body}{var}.append({item})")
        if self.models is not None and not keyed:
            out.append(f"{pad}{var} = tuple({var})")  # the models hold arrays as tuples

    def union(self, branches: list[Any], var: str, out: list[str], pad: str) -> None:
        index = self.name("i")
        self._long(index, out, pad)
        for at, branch in enumerate(branches):
            out.append(f"{pad}{'if' if at == 0 else 'elif'} {index} == {at}:")
            inner = pad + "    "
            self.value(branch, var, out, inner)
            name = self._record_name(branch)
            if name is None or self.models is not None:
                continue  # a model is its own tag
            if self.tagged:
                out.append(f"{inner}{var}['type'] = {name.rpartition('.')[2]!r}")
            else:
                out.append(f"{inner}{var} = ({name!r}, {var})")
        out.append(f"{pad}else: raise IndexError(f'union index {{{index}}}')")

    def _record_name(self, branch: Any) -> str | None:
        """The name fastavro (`return_record_name=True`) pairs a branch's value with, if any."""
        if isinstance(branch, dict):
            return str(branch["name"]) if branch["type"] == "record" else None
        if isinstance(branch, str) and branch not in PRIMITIVES:
            return str(self.named[branch]["name"])
        return None
