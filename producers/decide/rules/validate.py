"""Validation at the edge: what no rule may ever see, refused before any work.

`check(command)` runs where a command is built (the client) and again in
`decide` (a command from the topic may come from any producer). It looks at
the command alone: names, counts and ranges (`producers.decide.rules.limits`).
`room(image, decision)` refuses a change that would take a number past its
range (an exhausted range is a rejection, never an overflow).
`build(kind, **fields)` makes a command from a caller's values and turns a
pydantic error into the same typed errors.

Every message names the field, the rule broken, the value (cut when long)
and what is allowed.
"""

import re
from collections.abc import Callable, Collection, Iterable
from typing import Any, TypeVar

from pydantic import ValidationError

from events.commands import (
    AddPartition,
    AdvanceStableEpoch,
    AlterTable,
    CommandBase,
    CreateTable,
    DropPartition,
    ExchangePartition,
    FailoverRegion,
    Publish,
    PurgeTable,
    RecoverTable,
    RenameTable,
    ResetAttributes,
    SetAttributes,
    SetPublishMode,
    TableCommand,
    TruncatePartition,
)
from producers.decide.rules.common import Change, Decision
from producers.decide.rules.limits import (
    ATTRIBUTES_MAX_CHARS,
    COLUMNS_MAX,
    DATANODE_ID_MAX,
    DATANODES_MAX,
    EPOCH_MAX,
    NAME_FORBIDDEN,
    NAME_MAX_CHARS,
    PARTITIONS_MAX,
    REGION_ID_MAX,
    REGIONS_MAX,
    TABLE_ID_MAX,
    TEXT_MAX_CHARS,
    VERSION_MAX,
)
from producers.errors import InvalidCommand, InvalidName, OutOfRange
from projector.fold.image import Image

C = TypeVar("C", bound=CommandBase)

_SHOWN_CHARS = 40
"""A longer value is cut to this many characters in a message."""

_NAME_RULE = (
    f"a name is 1 to {NAME_MAX_CHARS} characters, without `{NAME_FORBIDDEN}` "
    "(it separates key segments) or control characters"
)
_PUBLISH_MODES = ("auto", "explicit")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""Control characters (C0, DEL, C1) and surrogate halves (not text; UTF-8 cannot encode them)."""


def check(command: CommandBase) -> None:
    """Refuse a command that breaks a rule of names, counts or ranges.

    Raises:
        InvalidName: A name is empty, too long, or holds `/` or a control character.
        OutOfRange: A number (id, epoch, version, count) is outside its range.
        InvalidCommand: Anything else malformed (no column, a repeated name…).
    """
    kind = type(command).__name__
    name(kind, "catalog", command.catalog)
    text(kind, "command_id", command.command_id)
    text(kind, "actor", command.actor)
    if command.reply_to is not None:
        text(kind, "reply_to", command.reply_to)
    _optional(kind, "expected_version", command.expected_version, 1, VERSION_MAX)
    _optional(kind, "expected_resource_version", command.expected_resource_version, 0,
              VERSION_MAX)  # fmt: skip
    if isinstance(command, TableCommand):
        name(kind, "schema_name", command.schema_name)
        name(kind, "table_name", command.table_name)
    own = _BY_KIND.get(type(command))
    if own is not None:
        own(kind, command)


def room(image: Image, decision: Decision) -> None:
    """Refuse a change whose epoch would pass the top of the epoch range.

    In auto mode a change gets `stable_epoch + 1`; once the stable epoch is at
    `EPOCH_MAX` (or past it, in a log written before the range existed) the
    catalog's epochs are used up.

    Raises:
        OutOfRange: The catalog's epochs are used up.
    """
    if (
        isinstance(decision, Change)
        and image.publish_mode == "auto"
        and image.stable_epoch >= EPOCH_MAX
    ):
        raise OutOfRange(
            f"catalog `{image.catalog}` is at stable epoch {image.stable_epoch:,}, the top of "
            f"the epoch range 1 to {EPOCH_MAX:,}: a change would need epoch "
            f"{image.stable_epoch + 1:,}; the catalog's epochs are used up, so write new "
            "changes to a new catalog"
        )


def build(kind: type[C], **fields: Any) -> C:
    """The command `kind(**fields)`, checked; typed errors instead of pydantic's.

    Raises:
        OutOfRange: An integer is outside an Avro `long`.
        InvalidCommand: A field has the wrong type, a value not allowed, or is missing.
        InvalidName: As `check`.
    """
    try:
        command = kind(**fields)
    except ValidationError as exc:
        raise _typed(kind.__name__, exc) from None
    check(command)
    return command


# -- the rules of one field ----------------------------------------------------


def name(kind: str, field: str, value: object) -> None:
    """Refuse a value that is not a valid name (catalog, schema, table, partition, column).

    Raises:
        InvalidName: It is not text, empty, longer than 64, or holds `/` or a control character.
    """
    problem = _text_problem(value, NAME_MAX_CHARS)
    if problem is None and NAME_FORBIDDEN in str(value):
        problem = f"it contains `{NAME_FORBIDDEN}`"
    if problem is not None:
        raise InvalidName(f"{kind}: {field} {_shown(value)} is not a valid name: {problem}; "
                          f"{_NAME_RULE}")  # fmt: skip


def text(kind: str, field: str, value: object, most: int = TEXT_MAX_CHARS) -> None:
    """Refuse a value that is not 1 to `most` characters of text without control characters.

    Raises:
        InvalidCommand: It is not such text.
    """
    problem = _text_problem(value, most)
    if problem is not None:
        raise InvalidCommand(
            f"{kind}: {field} {_shown(value)} is not allowed: {problem}; it is 1 to {most:,} "
            "characters, without control characters"
        )


def number(kind: str, field: str, value: object, least: int, most: int, why: str = "") -> None:
    """Refuse an integer outside `least..most` (`why` says where the range comes from).

    Raises:
        OutOfRange: It is not an integer, or not in the range.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise OutOfRange(f"{kind}: {field} {_shown(value)} is not an integer: "
                         f"it is one from {least:,} to {most:,}")  # fmt: skip
    if not least <= value <= most:
        raise OutOfRange(
            f"{kind}: {field} {_shown(value)} is out of range: allowed {least:,} to {most:,}"
            + (f" ({why})" if why else "")
        )


def _optional(kind: str, field: str, value: int | None, least: int, most: int) -> None:
    if value is not None:
        number(kind, field, value, least, most)


def _text_problem(value: object, most: int) -> str | None:
    if not isinstance(value, str):
        return f"it is not text but {type(value).__name__}"
    if not value:
        return "it is empty"
    if len(value) > most:
        return f"it is {len(value):,} characters long"
    found = _CONTROL.search(value)
    if found is None:
        return None
    code = ord(found.group())
    if code >= 0xD800:
        return f"it contains U+{code:04X}, half of a surrogate pair (not valid text)"
    return f"it contains the control character U+{code:04X}"


def _shown(value: object) -> str:
    """The value as a message shows it: quoted, escaped, cut when long."""
    if isinstance(value, str) and len(value) > _SHOWN_CHARS:
        return f"{value[:_SHOWN_CHARS]!r}… ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    shown = repr(value)
    return shown if len(shown) <= _SHOWN_CHARS else f"{shown[:_SHOWN_CHARS]}…"


def _count(kind: str, field: str, items: Collection[object], least: int, most: int) -> None:
    size = len(items)
    if not least <= size <= most:
        raise (InvalidCommand if size < least else OutOfRange)(
            f"{kind}: {field} has {size:,} entries: allowed {least:,} to {most:,}"
        )


def _distinct(kind: str, field: str, values: Iterable[object], what: str) -> None:
    seen: set[object] = set()
    for value in values:
        if value in seen:
            raise InvalidCommand(f"{kind}: {field} names {_shown(value)} twice: {what}")
        seen.add(value)


def _names(kind: str, field: str, values: Iterable[object]) -> None:
    for at, value in enumerate(values):
        name(kind, f"{field}[{at}]", value)


def _table_id(kind: str, field: str, value: object) -> None:
    number(kind, field, value, 0, TABLE_ID_MAX, "a table id has 31 bits: it is the top of a "
           "64-bit region id")  # fmt: skip


def _datanode(kind: str, field: str, value: object) -> None:
    number(kind, field, value, 0, DATANODE_ID_MAX, "a datanode id is a u32")


def _options(kind: str, field: str, keys: Iterable[object]) -> None:
    for key in keys:
        text(kind, f"{field} key", key)


# -- the rules of each command -------------------------------------------------


def _create(kind: str, command: CreateTable) -> None:
    # Counts first: a huge count is refused before any per-entry work.
    number(kind, "regions", command.regions, 1, REGIONS_MAX, "regions of one table")
    _count(kind, "columns", command.columns, 1, COLUMNS_MAX)
    _count(kind, "partitions", command.partitions, 0, PARTITIONS_MAX)
    _count(kind, "datanodes", command.datanodes, 1, DATANODES_MAX)
    columns = [getattr(column, "name", column) for column in command.columns]
    _names(kind, "columns", columns)
    _distinct(kind, "columns", columns, "column names are unique within a table")
    _names(kind, "primary_key", command.primary_key)
    _distinct(kind, "primary_key", command.primary_key, "a primary key names a column once")
    for key in command.primary_key:
        if key not in columns:
            raise InvalidCommand(
                f"{kind}: primary_key names {_shown(key)}, which is not one of the columns: "
                "a primary key names existing columns"
            )
    _options(kind, "options", command.options)
    _names(kind, "partitions", command.partitions)
    _distinct(kind, "partitions", command.partitions, "partition names are unique in a table")
    for at, datanode in enumerate(command.datanodes):
        _datanode(kind, f"datanodes[{at}]", datanode)
    _distinct(kind, "datanodes", command.datanodes, "list each datanode once")


def _alter(kind: str, command: AlterTable) -> None:
    _count(kind, "add_columns", command.add_columns, 0, COLUMNS_MAX)
    added = [getattr(column, "name", column) for column in command.add_columns]
    _names(kind, "add_columns", added)
    _distinct(kind, "add_columns", added, "column names are unique within a table")
    _names(kind, "drop_columns", command.drop_columns)
    _options(kind, "set_options", command.set_options)
    _options(kind, "unset_options", command.unset_options)


def _exchange(kind: str, command: ExchangePartition) -> None:
    name(kind, "partition_name", command.partition_name)
    name(kind, "other_schema_name", command.other_schema_name)
    name(kind, "other_table_name", command.other_table_name)
    _optional(kind, "other_expected_version", command.other_expected_version, 1, VERSION_MAX)


def _failover(kind: str, command: FailoverRegion) -> None:
    _table_id(kind, "table_id", command.table_id)
    number(kind, "region_id", command.region_id, 0, REGION_ID_MAX)
    _datanode(kind, "to_datanode", command.to_datanode)
    route = command.expected_route
    _count(kind, "expected_route.region_routes", route.region_routes, 0, REGIONS_MAX)


def _attributes(kind: str, command: SetAttributes) -> None:
    if command.partition_name is not None:
        name(kind, "partition_name", command.partition_name)
    text(kind, "attributes", command.attributes, ATTRIBUTES_MAX_CHARS)


def _partition(kind: str, command: AddPartition | DropPartition | TruncatePartition) -> None:
    name(kind, "partition_name", command.partition_name)


def _reset(kind: str, command: ResetAttributes) -> None:
    if command.partition_name is not None:
        name(kind, "partition_name", command.partition_name)


def _epoch(kind: str, value: object) -> None:
    number(kind, "epoch", value, 1, EPOCH_MAX, "room is kept for the leader's epoch + 1")


def _mode(kind: str, command: SetPublishMode) -> None:
    if command.mode not in _PUBLISH_MODES:
        raise InvalidCommand(
            f"{kind}: mode {_shown(command.mode)} is not a publish mode: use `auto` or `explicit`"
        )


def _publish(kind: str, command: Publish) -> None:
    _table_id(kind, "table_id", command.table_id)
    _epoch(kind, command.epoch)


def _recover(kind: str, command: RecoverTable) -> None:
    if command.table_id is not None:
        _table_id(kind, "table_id", command.table_id)


_BY_KIND: dict[type[Any], Callable[[str, Any], None]] = {
    CreateTable: _create,
    AlterTable: _alter,
    RenameTable: lambda kind, c: name(kind, "new_table_name", c.new_table_name),
    RecoverTable: _recover,
    PurgeTable: lambda kind, c: _table_id(kind, "table_id", c.table_id),
    AddPartition: _partition,
    DropPartition: _partition,
    TruncatePartition: _partition,
    ExchangePartition: _exchange,
    FailoverRegion: _failover,
    SetAttributes: _attributes,
    ResetAttributes: _reset,
    Publish: _publish,
    AdvanceStableEpoch: lambda kind, c: _epoch(kind, c.epoch),
    SetPublishMode: _mode,
}
"""The rules of each command's own fields (the common ones are in `check`)."""


# -- pydantic's errors, typed ----------------------------------------------------

_RANGE_ERRORS = frozenset({"greater_than_equal", "less_than_equal", "greater_than", "less_than"})


def _typed(kind: str, exc: ValidationError) -> InvalidCommand:
    """The first of pydantic's errors as ours: the field, the problem, the value."""
    error = exc.errors(include_url=False)[0]
    field = ".".join(str(part) for part in error["loc"]) or "the command"
    problem = error["msg"][0].lower() + error["msg"][1:]
    shown = "" if error["type"] == "missing" else f" {_shown(error.get('input'))}"
    more = len(exc.errors()) - 1
    rest = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    if error["type"] in _RANGE_ERRORS:
        return OutOfRange(
            f"{kind}: {field}{shown} is out of range: it does not fit a 64-bit integer, and "
            f"each field allows less (docs/limits.md){rest}"
        )
    return InvalidCommand(f"{kind}: {field}{shown}: {problem}{rest}")
