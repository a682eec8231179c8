"""The base of every wire model: frozen, strict, mirrored by an Avro record."""

import functools
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1

Long = Annotated[int, Field(ge=LONG_MIN, le=LONG_MAX)]
"""An integer within Avro `long` range: every integer field of the contract is one."""


class Record(BaseModel):
    """A frozen model mirroring one Avro record of `events/schemas/`.

    Records that sit in an Avro union carry a `type` literal equal to the Avro
    record name; the codec maps it to and from the union branch.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")


_M = TypeVar("_M", bound=BaseModel)
_set = object.__setattr__


@functools.cache
def _fields_set(model: type[BaseModel]) -> set[str]:
    """The one fields-set of `model` instances built with every field (never written)."""
    return set(model.model_fields)



def built(model: type[_M], fields: dict[str, Any], fields_set: set[str] | None = None) -> _M:
    """A frozen model holding `fields` (every field, in field order), without validation.

    What `model_construct` does minus its per-field loop: exactly the four
    slots pydantic sets. Only for fields known to be well-formed (a validated
    model's, a checked bulk load's, or what `events.compiled.read` read from a
    record of the model's schema). `fields_set` is shared, never written:
    the models are frozen.
    """
    if fields_set is None:
        fields_set = _fields_set(model)
    instance = model.__new__(model)
    _set(instance, "__dict__", fields)
    _set(instance, "__pydantic_fields_set__", fields_set)
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance
