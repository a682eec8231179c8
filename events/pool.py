"""One pool of equal immutable values, shared by whoever builds or stores them.

Tables repeat column definitions, catalog and schema names. The image keeps
one object per distinct value (`projector.fold.packing`), and `decode_event`'s
reader builds a column only the first time it meets its definition
(`events.compiled.read`): both look equal values up here, so a column read
is already the one the image stores. A cache, never a semantic: the values
are frozen, and past `POOL_LIMIT` entries the pool starts over (only sharing
is lost).
"""

from operator import attrgetter
from typing import TypeVar

from events.values import Column

POOL_LIMIT = 200_000
"""Entries kept for sharing; past it the pool starts over."""

pool: dict[object, object] = {}
"""A value (or a column's `COLUMN_KEY`) → the equal value seen first."""

COLUMN_KEY = attrgetter(*Column.model_fields)
"""A column's key in the pool: its fields' values in field order (hashed in C, unlike
the model); what the reader has in hand before it builds the column."""

_T = TypeVar("_T")


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
