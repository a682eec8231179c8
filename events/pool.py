"""One pool of equal immutable values, shared by whoever builds or stores them.

Tables repeat column definitions, catalog and schema names. The image keeps
one object per distinct value (`projector.fold.packing`), and `decode_event`'s
reader builds a column only the first time it meets its definition and keeps
an info's names as the ones met before (`events.compiled.read`): both look
equal values up here, so an info read is already as the image stores it, and
carries the mark that says so (`pooled_fields_set`). A cache, never a
semantic: the values are frozen, and past `POOL_LIMIT` entries the pool
starts over (only sharing is lost).
"""

from operator import attrgetter
from typing import TypeVar

from pydantic import BaseModel

from events.values import Column

POOL_LIMIT = 200_000
"""Entries kept for sharing; past it the pool starts over."""

pool: dict[object, object] = {}
"""A value (or a column's `COLUMN_KEY`) → the equal value seen first."""

COLUMN_KEY = attrgetter(*Column.model_fields)
"""A column's key in the pool: its fields' values in field order (hashed in C, unlike
the model); what the reader has in hand before it builds the column."""

_T = TypeVar("_T")

_POOLED_FIELDS_SETS: dict[type[BaseModel], set[str]] = {}


def pooled_fields_set(model: type[BaseModel]) -> set[str]:
    """The fields-set object that marks a `model` instance built with its parts pooled.

    Whoever builds a model whose repeated parts (columns, names) are the pool's
    gives it this set (`__pydantic_fields_set__`: every field), and whoever
    stores values compares it by identity to know the value needs no sharing
    (`projector.fold.packing`). pydantic never writes a frozen model's set, and
    `model_copy` copies it, so a changed copy loses the mark.
    """
    found = _POOLED_FIELDS_SETS.get(model)
    if found is None:
        found = _POOLED_FIELDS_SETS[model] = set(model.model_fields)
    return found


def remember(key: object, value: _T) -> _T:
    """Keep `value` under `key` (starting over past the limit); `value`."""
    if len(pool) >= POOL_LIMIT:
        pool.clear()
    pool[key] = value
    return value


def shared(value: _T) -> _T:
    """An equal object seen before, or `value` itself."""
    found = pool.get(value)
    return remember(value, value) if found is None else found  # type: ignore[return-value]


def shared_column(column: Column) -> Column:
    """The pooled column equal to `column`, or `column` itself, now pooled."""
    key = COLUMN_KEY(column)
    found = pool.get(key)
    return remember(key, column) if found is None else found  # type: ignore[return-value]
