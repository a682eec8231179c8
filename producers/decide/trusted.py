"""Models the leader builds from parts that are valid already: no second validation.

Everything from outside (the command bytes, a client's arguments) is validated
by pydantic where it enters. The rules then build events and mutations from
those validated parts. pydantic-core validates a small flat model about as fast
as Python can set its fields, so small models stay validated; but an `Event`
(nested unions to check) and a `Mutation` (a Python model validator) cost
about twice as much validated, `model_copy` is Python-level, and pydantic's own
`model_construct` is no cheaper than validation. `trusted` and `replaced` set
the fields directly, as `model_construct` and `model_copy` would, and still
refuse a missing or unknown field (a programming error).

Use them only for values whose every field is already of its model's type
(tuples, not lists; models, not dicts): the property tests
(`tests/domain/test_properties_trusted.py`) check that every event `decide`
accepts over random command sequences, and every model in it, equals what full
validation gives, and that no command fails to encode for a value of the wrong type.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

M = TypeVar("M", bound=BaseModel)

_set = object.__setattr__
_MISSING: Any = object()


class _Shape:
    """What `trusted` needs of one model class, computed once."""

    __slots__ = ("allowed", "factories", "required", "template")

    def __init__(self, model: type[BaseModel]) -> None:
        self.template: dict[str, Any] = {}
        self.factories: list[tuple[str, Callable[[], Any]]] = []
        required: set[str] = set()
        for name, info in model.model_fields.items():
            if info.default_factory is not None:
                self.factories.append((name, info.default_factory))  # type: ignore[arg-type]
                self.template[name] = _MISSING
            elif info.default is PydanticUndefined:
                required.add(name)
                self.template[name] = _MISSING
            else:
                self.template[name] = info.default
        self.required = frozenset(required)
        self.allowed = frozenset(self.template)


_SHAPES: dict[type[BaseModel], _Shape] = {}


def trusted(model: type[M], /, **values: Any) -> M:
    """`model(**values)` without validation, for values that are valid already.

    Fields left out take their defaults; the instance is what validation would
    give for such values (same fields, in declaration order, same `model_fields_set`).

    Raises:
        TypeError: a required field is missing or a field is unknown.
    """
    shape = _SHAPES.get(model)
    if shape is None:
        shape = _SHAPES[model] = _Shape(model)
    given = values.keys()
    if not shape.required <= given <= shape.allowed:
        missing = sorted(shape.required - given)
        unknown = sorted(given - shape.allowed)
        raise TypeError(f"{model.__name__}: missing fields {missing}, unknown fields {unknown}")
    fields = {**shape.template, **values}
    for name, factory in shape.factories:
        if name not in values:
            fields[name] = factory()
    made = model.__new__(model)
    _set(made, "__dict__", fields)
    _set(made, "__pydantic_fields_set__", set(values))
    _set(made, "__pydantic_extra__", None)
    _set(made, "__pydantic_private__", None)
    return made


def replaced(model: M, /, **update: Any) -> M:
    """`model.model_copy(update=update)` for valid `update` values (a shallow copy)."""
    made = model.__new__(type(model))
    _set(made, "__dict__", {**model.__dict__, **update})
    _set(made, "__pydantic_fields_set__", model.__pydantic_fields_set__ | update.keys())
    _set(made, "__pydantic_extra__", None)
    _set(made, "__pydantic_private__", None)
    return made
