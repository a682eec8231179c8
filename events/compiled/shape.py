"""Conversion between the models' dict shape and fastavro's, compiled from a schema.

The two shapes differ only at unions of records. A model dump holds a branch
as a dict with a `type` key (the Avro record name); fastavro writes and, with
`return_record_name=True`, reads a branch as a `(full_name, record)` tuple.
Converters are compiled once per schema and touch only the paths that lead
to a union, copying those containers and sharing everything else, so an
input dict is never modified. A third converter goes straight from a model to
the Avro shape by copying each model's `__dict__` (cheaper than `model_dump`).
"""

from collections.abc import Callable
from typing import Any, Literal

Direction = Literal["to_avro", "from_avro", "from_model"]

Convert = Callable[[Any], Any]
"""A compiled conversion of one value."""

_PRIMITIVES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes", "string"))


def _named_types(schema: Any, found: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Collect every named type defined in a fastavro-parsed schema by full name."""
    if isinstance(schema, list):
        for branch in schema:
            _named_types(branch, found)
    elif isinstance(schema, dict):
        kind = schema["type"]
        if kind in ("record", "error"):
            found[schema["name"]] = schema
            for field in schema["fields"]:
                _named_types(field["type"], found)
        elif kind in ("enum", "fixed"):
            found[schema["name"]] = schema
        elif kind == "array":
            _named_types(schema["items"], found)
        elif kind == "map":
            _named_types(schema["values"], found)
    return found


class _Compiler:
    """Builds converters for one parsed schema, in one direction."""

    def __init__(self, schema: Any, direction: Direction) -> None:
        self._named = _named_types(schema, {})
        self._direction = direction
        self._done: dict[str, Convert | None] = {}

    def compile(self, schema: Any) -> Convert | None:
        """A converter for values of `schema`, or None when values need none."""
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return None
            if schema not in self._done:
                self._done[schema] = self.compile(self._named[schema])
            return self._done[schema]
        if isinstance(schema, list):
            return self._union(schema)
        kind = schema["type"]
        if kind in ("record", "error"):
            return self._record(schema)
        if kind == "array":
            item = self.compile(schema["items"])
            return None if item is None else lambda value: [item(x) for x in value]
        if kind == "map":
            val = self.compile(schema["values"])
            return None if val is None else lambda value: {k: val(v) for k, v in value.items()}
        return None

    def _record(self, schema: dict[str, Any]) -> Convert | None:
        converts: list[tuple[str, Convert]] = []
        self._done[schema["name"]] = None  # a cycle sees "no conversion" until done
        for field in schema["fields"]:
            convert = self.compile(field["type"])
            if convert is not None:
                converts.append((field["name"], convert))
        if self._direction == "from_model":

            def from_model(value: Any) -> dict[str, Any]:
                out = dict(value.__dict__)
                for name, convert in converts:
                    item = out[name]
                    if item is not None:
                        out[name] = convert(item)
                return out

            self._done[schema["name"]] = from_model
            return from_model
        if not converts:
            return None

        def record(value: dict[str, Any]) -> dict[str, Any]:
            out = dict(value)
            for name, convert in converts:
                item = value.get(name)
                if item is not None:
                    out[name] = convert(item)
            return out

        self._done[schema["name"]] = record
        return record

    def _union(self, branches: list[Any]) -> Convert | None:
        records: dict[str, tuple[str, Convert | None]] = {}
        for branch in branches:
            name = branch if isinstance(branch, str) else branch.get("name")
            if name in self._named and self._named[name]["type"] == "record":
                records[name] = (name.rpartition(".")[2], self.compile(name))
        if not records:
            return None
        by_short = {short: (full, inner) for full, (short, inner) in records.items()}
        if self._direction == "from_model":

            def from_model(value: Any) -> Any:
                full, inner = by_short[value.type]
                return (full, inner(value) if inner is not None else dict(value.__dict__))

            return from_model
        if self._direction == "to_avro":

            def to_avro(value: Any) -> Any:
                full, inner = by_short[value["type"]]
                return (full, value if inner is None else inner(value))

            return to_avro

        def from_avro(value: Any) -> Any:
            full, record = value
            short, inner = records[full]
            out = dict(record) if inner is None else inner(record)
            out["type"] = short
            return out

        return from_avro


def compile_converters(schema: Any) -> tuple[Convert, Convert, Convert]:
    """Compile `(to_avro, from_avro, from_model)` converters for a parsed record schema.

    Args:
        schema: The fastavro-parsed top-level record schema.

    Returns:
        `to_avro` turns a model-shaped dict into fastavro's shape; `from_avro`
        turns what fastavro reads (with `return_record_name=True`) back (either
        is the identity when the schema holds no union of records);
        `from_model` turns a model of the top-level record into fastavro's shape.
    """
    to_avro = _Compiler(schema, "to_avro").compile(schema)
    from_avro = _Compiler(schema, "from_avro").compile(schema)
    from_model = _Compiler(schema, "from_model").compile(schema)
    assert from_model is not None  # a record always converts from a model
    return (to_avro or _identity), (from_avro or _identity), from_model


def _identity(value: Any) -> Any:
    return value
