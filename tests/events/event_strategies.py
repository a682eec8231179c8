"""Hypothesis strategies for every contract model, derived from the model annotations."""

import enum
import types
import typing
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st
from pydantic import AwareDatetime, BaseModel

from events.base import LONG_MAX, LONG_MIN
from events.changes import Mutation, MutationOp
from events.values import KeyValue

LONGS = st.one_of(st.integers(LONG_MIN, LONG_MAX), st.sampled_from((LONG_MIN, LONG_MAX, 0, -1)))
TEXT = st.text(max_size=12)
AWARE = st.datetimes(
    min_value=datetime(1, 1, 2),  # noqa: DTZ001 - hypothesis bounds are naive by design
    max_value=datetime(9999, 12, 30),  # noqa: DTZ001
    timezones=st.sampled_from((UTC, timezone(timedelta(hours=5, minutes=30)))),
)


def for_annotation(annotation: Any) -> st.SearchStrategy[Any]:
    """A strategy for values of a model field's annotation."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return for_annotation(args[0])
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(for_annotation(a) for a in args))
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is tuple:
        return st.lists(for_annotation(args[0]), max_size=3).map(tuple)
    if origin is dict:
        return st.dictionaries(TEXT, TEXT, max_size=3)
    if annotation is type(None):
        return st.none()
    simple: dict[Any, st.SearchStrategy[Any]] = {
        int: LONGS,
        str: TEXT,
        bytes: st.binary(max_size=40),
        bool: st.booleans(),
        AwareDatetime: AWARE,
    }
    if annotation in simple:
        return simple[annotation]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return st.sampled_from(list(annotation))
    if annotation is Mutation:
        return MUTATIONS
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return for_model(annotation)
    raise TypeError(f"no strategy for {annotation!r}")


def for_model(model: type[BaseModel], **fixed: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`st.builds(model)` with every field (defaults included) drawn from its annotation."""
    kwargs = {
        name: fixed[name] if name in fixed else for_annotation(field.annotation)
        for name, field in model.model_fields.items()
        if name != "type"
    }
    return st.builds(model, **kwargs)


MUTATIONS: st.SearchStrategy[Mutation] = st.one_of(
    st.builds(Mutation, key=TEXT, op=st.just(MutationOp.PUT), value=for_annotation(KeyValue)),
    st.builds(Mutation, key=TEXT, op=st.just(MutationOp.DELETE), value=st.none()),
)
