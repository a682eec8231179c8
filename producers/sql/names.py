"""An unknown table, partition or database, named against what a follower's image holds.

`unknown_name(view, command)` is what `metalog sql` checks before it sends a command
(and what it tells after the leader rejected one for a name): the same
`TableNotFound` / `PartitionNotFound` the leader would reply, with a message that
names what does exist — the close matches first, then the rest up to a few.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from events import commands as c
from events.keys import TABLE_NAME
from producers.errors import CommandRejected, PartitionNotFound, TableNotFound
from projector.fold.view import View

SHOWN = 8
"""How many existing names a message lists at most."""

_NEW_TABLE = (c.CreateTable, c.RecoverTable, c.PurgeTable)
"""Commands whose table need not be live."""


def unknown_name(view: View, command: c.CommandBase) -> CommandRejected | None:
    """The error for a table, partition or database `command` names that `view` lacks.

    Returns:
        None when every name it uses is there (or it creates the table).
    """
    if not isinstance(command, c.TableCommand) or isinstance(command, _NEW_TABLE):
        return None
    missing = _table(view, command.schema_name, command.table_name)
    if missing is not None:
        return missing
    partition = getattr(command, "partition_name", None)
    if partition is not None and not isinstance(command, c.AddPartition):
        info = view.table_by_name(command.schema_name, command.table_name)
        names = [p.name for p in info.partitions] if info is not None else []
        if partition not in names:
            where = f"{command.schema_name}.{command.table_name}"
            known = f"its partitions are {_listed(partition, names)}" if names else (
                "it is not partitioned")
            return PartitionNotFound(f"table `{where}` has no partition `{partition}`; {known}")
    if isinstance(command, c.ExchangePartition):
        return _table(view, command.other_schema_name, command.other_table_name)
    return None


def _table(view: View, schema: str, table: str) -> TableNotFound | None:
    if view.table_by_name(schema, table) is not None:
        return None
    tables = _tables(view, schema)
    if tables:
        return TableNotFound(
            f"table `{schema}.{table}` does not exist; the tables of `{schema}` are "
            f"{_listed(table, tables)}"
        )
    schemas = sorted(_schemas(view))
    known = f"the databases are {_listed(schema, schemas)}" if schemas else (
        f"catalog `{view.catalog}` has no tables yet")
    return TableNotFound(f"database `{schema}` does not exist (no table is in it); {known}")


def _names(view: View) -> Iterable[tuple[str, str]]:
    """(schema, table) of every live name; a scan of the keys, done only for an error."""
    prefix = f"{TABLE_NAME}/{view.catalog}/"
    for key in view.values:
        if key.startswith(prefix):
            schema, _, table = key[len(prefix):].partition("/")
            yield schema, table


def _tables(view: View, schema: str) -> list[str]:
    return sorted(t for s, t in _names(view) if s == schema)


def _schemas(view: View) -> set[str]:
    return {s for s, _ in _names(view)}


def _listed(wanted: str, names: list[str]) -> str:
    """`a`, `b` …: the close matches to `wanted` first, at most `SHOWN` names."""
    close = difflib.get_close_matches(wanted, names, n=3)
    ordered = [*close, *(n for n in names if n not in close)]
    shown = ", ".join(f"`{n}`" for n in ordered[:SHOWN])
    more = len(names) - SHOWN
    return shown + (f" and {more:,} more (SHOW TABLES / SHOW DATABASES list them)"
                    if more > 0 else "")  # fmt: skip
