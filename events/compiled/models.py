"""The classes that mirror a schema's named types, for a reader that builds models directly.

Every Avro record of the contract is mirrored by a pydantic model of the same
short name, and an Avro enum by a Python `Enum` of the same name or by a
`Literal` of its symbols (`tests/events/test_events_agreement.py` proves they
agree). `mirrors` finds those classes from a root model; `checked_model` says
what a reader that skips pydantic's validation pass must know of a model, and
refuses a model whose validation it could not reproduce.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

Mirrors = dict[str, type]
"""A named type's short name → the model (a record) or the `Enum` (an enum) mirroring it."""


def mirrors(root: Any) -> Mirrors:
    """Every model and `Enum` reachable from `root` (a model or an annotation), by name."""
    found: Mirrors = {}

    def visit(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
            found.setdefault(annotation.__name__, annotation)
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation.__name__ in found:
                return
            found[annotation.__name__] = annotation
            for field in annotation.model_fields.values():
                visit(field.annotation)
        for arg in typing.get_args(annotation):
            visit(arg)

    visit(root)
    return found


@dataclass(frozen=True, slots=True)
class CheckedModel:
    """What a reader needs to build a model of one record without pydantic's pass.

    Attributes:
        model: The model class.
        fields: Its fields in order, the record's fields plus `type` for a union member.
        tag: The value of its `type` field (the record's short name), or None.
        checks: Its `after` model validators, run on each instance built.
    """

    model: type[BaseModel]
    fields: tuple[str, ...]
    tag: str | None
    checks: tuple[Callable[[Any], Any], ...]


def checked_model(model: type[BaseModel], record: dict[str, Any]) -> CheckedModel:
    """`model`'s shape, checked against the parsed Avro `record` it mirrors.

    Raises:
        ValueError: The model's fields are not the record's, or it validates in a
            way only pydantic's pass runs (a field validator, a `before`/`wrap`
            model validator, a post-init hook, private attributes).
    """
    name = model.__name__
    fields = tuple(model.model_fields)
    tagged = "type" in model.model_fields and "type" not in (f["name"] for f in record["fields"])
    if [f for f in fields if not (tagged and f == "type")] != [f["name"] for f in record["fields"]]:
        raise ValueError(f"model {name}'s fields {fields} are not its Avro record's")
    decorators = model.__pydantic_decorators__
    befores = [d for d in decorators.model_validators.values() if d.info.mode != "after"]
    if (
        decorators.field_validators
        or decorators.validators
        or decorators.root_validators
        or befores
        or model.__pydantic_post_init__ is not None
        or model.__private_attributes__
    ):
        raise ValueError(
            f"model {name} validates beyond its fields' types and `after` model validators: "
            "a reader building it directly would skip that; read it through pydantic"
        )
    tag = model.model_fields["type"].default if tagged else None
    checks = tuple(d.func for d in decorators.model_validators.values())
    return CheckedModel(model, fields, tag, checks)
