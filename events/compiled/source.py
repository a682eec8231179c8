"""What the compiled Avro reader and writer share: a parsed schema walked into Python source.

`SourceGenerator` emits one function per record schema and dispatches each
field's type to its subclass (`events.compiled.read`, `events.compiled.write`),
which says how a value of that type is read or written inline. `build`
executes the source once and returns the top-level record's function.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import UTC, datetime
from itertools import count
from typing import Any

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""Where `timestamp-micros` counts from."""

PRIMITIVES = frozenset(("null", "boolean", "long", "string", "bytes"))
"""The primitive types the contract's schemas use (no int, float, double or fixed)."""


class SourceGenerator(ABC):
    """Collects the source (`lines`) and the `constants` it refers to; see the module docstring."""

    purpose = "compiled Avro code"

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: dict[str, Any] = {}
        self.named: dict[str, dict[str, Any]] = {}
        self._functions: dict[str, str] = {}
        self._ids = count()

    def build(self, parsed: dict[str, Any], namespace: dict[str, Any]) -> Any:
        """Emit the functions of `parsed` and what it refers to, run them; the top one."""
        entry = self.record(parsed)
        scope = {**namespace, **self.constants}
        exec(compile("\n".join(self.lines), f"<{self.purpose} {parsed['name']}>", "exec"), scope)
        return scope[entry]

    def name(self, stem: str) -> str:
        """A fresh name for a local or a constant."""
        return f"{stem}{next(self._ids)}"

    def constant(self, stem: str, value: Any) -> str:
        """The name under which the source can use `value`."""
        name = self.name(stem)
        self.constants[name] = value
        return name

    def record(self, schema: dict[str, Any]) -> str:
        """Emit the function of a record schema (once per name); its name.

        A record's function is complete before its caller's, and names resolve
        when called, so records may refer to themselves.
        """
        name = schema["name"]
        if name in self._functions:
            return self._functions[name]
        function = self._functions[name] = self.name("_record")
        self.named[name] = schema
        self.lines += self.record_source(function, schema)
        return function

    def value(self, schema: Any, var: str, out: list[str], pad: str) -> None:
        """Emit the statements that handle the local `var`, a value of `schema`."""
        if isinstance(schema, str):
            if schema in PRIMITIVES:
                self.primitive(schema, var, out, pad)
            elif schema in self.named:
                self.named_value(self.named[schema], var, out, pad)
            else:
                raise ValueError(f"unknown Avro type {schema!r}")
            return
        if isinstance(schema, list):
            self.union(schema, var, out, pad)
            return
        kind = schema["type"]
        if kind == "long" and schema.get("logicalType") == "timestamp-micros":
            self.timestamp(var, out, pad)
        elif isinstance(kind, str) and kind in PRIMITIVES:
            self.primitive(kind, var, out, pad)
        elif kind in ("record", "enum"):
            if kind == "enum":
                self.named[schema["name"]] = schema
            self.named_value(schema, var, out, pad)
        elif kind in ("array", "map"):
            self.blocks(schema, var, out, pad)
        else:
            raise ValueError(f"Avro type {kind!r} is not covered by the {self.purpose}")

    # -- what a reader or a writer says ----------------------------------------

    @abstractmethod
    def record_source(self, function: str, schema: dict[str, Any]) -> list[str]:
        """The lines of `function`, which handles a record of `schema`."""

    @abstractmethod
    def primitive(self, kind: str, var: str, out: list[str], pad: str) -> None:
        """A value of a primitive type."""

    @abstractmethod
    def timestamp(self, var: str, out: list[str], pad: str) -> None:
        """A `timestamp-micros` long."""

    @abstractmethod
    def named_value(self, schema: dict[str, Any], var: str, out: list[str], pad: str) -> None:
        """A record or an enum."""

    @abstractmethod
    def blocks(self, schema: dict[str, Any], var: str, out: list[str], pad: str) -> None:
        """An array or a map."""

    @abstractmethod
    def union(self, branches: list[Any], var: str, out: list[str], pad: str) -> None:
        """A union."""
