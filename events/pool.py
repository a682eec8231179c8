"""One pool of equal immutable values, shared by whoever builds or stores them.

Tables repeat column definitions, catalog and schema names. The image keeps
one object per distinct value (`projector.fold.packing`), and `decode_event`'s
reader builds a column only the first time it meets its definition and keeps
an info's names as the ones met before (`events.compiled.read`): both look
equal values up in the process's pool (`default_pool`, made on first use), so
an info read is already as the image stores it, and carries the mark that says
so (`pooled_fields_set`). A cache, never a semantic: the values are frozen,
and past `POOL_LIMIT` entries a pool starts over (only sharing is lost).
"""

import functools
from operator import attrgetter
from typing import TypeVar

from pydantic import BaseModel

from events.values import Column

POOL_LIMIT = 200_000
"""Entries kept for sharing; past it the pool starts over."""

COLUMN_KEY = attrgetter(*Column.model_fields)
"""A column's key in the pool: its fields' values in field order (hashed in C, unlike
the model); what the reader has in hand before it builds the column."""

_T = TypeVar("_T")


class Pool:
    """Equal values, each kept once: a value (or a column's `COLUMN_KEY`) → the one seen first.

    Args:
        limit: Entries kept; past it the pool starts over.
    """

    def __init__(self, limit: int = POOL_LIMIT) -> None:
        self.values: dict[object, object] = {}
        """The entries; readers look keys up here directly (`get`, in C)."""
        self.limit = limit

    def remember(self, key: object, value: _T) -> _T:
        """Keep `value` under `key` (starting over past the limit); `value`."""
        if len(self.values) >= self.limit:
            self.values.clear()
        self.values[key] = value
        return value

    def shared(self, value: _T) -> _T:
        """An equal object seen before, or `value` itself."""
        found = self.values.get(value)
        return self.remember(value, value) if found is None else found  # type: ignore[return-value]

    def shared_column(self, column: Column) -> Column:
        """The pooled column equal to `column`, or `column` itself, now pooled."""
        key = COLUMN_KEY(column)
        found = self.values.get(key)
        return self.remember(key, column) if found is None else found  # type: ignore[return-value]


@functools.cache
def default_pool() -> Pool:
    """The process's pool, made on first use: the one the event reader and the fold share."""
    return Pool()


@functools.cache
def pooled_fields_set(model: type[BaseModel]) -> set[str]:
    """The fields-set object that marks a `model` instance built with its parts pooled.

    Whoever builds a model whose repeated parts (columns, names) are the pool's
    gives it this set (`__pydantic_fields_set__`: every field), and whoever
    stores values compares it by identity to know the value needs no sharing
    (`projector.fold.packing`). pydantic never writes a frozen model's set, and
    `model_copy` copies it, so a changed copy loses the mark.
    """
    return set(model.model_fields)


def shared(value: _T) -> _T:
    """`default_pool().shared(value)`."""
    return default_pool().shared(value)


def shared_column(column: Column) -> Column:
    """`default_pool().shared_column(column)`."""
    return default_pool().shared_column(column)
