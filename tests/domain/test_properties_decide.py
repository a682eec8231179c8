"""Properties of `decide` over random and hostile command sequences (issue 15, item 6).

Each test drives the pure core (`decide`, then `apply`) through valid and
hostile steps (`tests.domain.steps`), in both publish modes, and checks one
property after every step: `decide` never raises; every accepted event fits
the events topic's record limit, decodes back equal and seals as the reference
path does (same event, same bytes); no accepted command
breaks a rule of DESIGN.md's "Names, values and sizes"; every accepted event
leaves keys and values inside the key layout and those rules; a command
changes the table it names (a `/` in a name must not let `a`.`b/c` and
`a/b`.`c` share a key).
"""

import re
import unicodedata
from collections.abc import Iterable

from hypothesis import given
from hypothesis import strategies as st

from events.chain import seal_record, seal_record_reference
from events.codec import decode_event, encode_event
from events.commands import (
    AddPartition,
    AlterTable,
    Command,
    CreateTable,
    DropPartition,
    ExchangePartition,
    FailoverRegion,
    RenameTable,
    ResetAttributes,
    SetAttributes,
    TableCommand,
    TruncatePartition,
)
from events.event import Event
from events.keys import DATANODE_TABLE, LABEL_RULE, REMOVED, TABLE_INFO, TABLE_NAME, TABLE_ROUTE
from events.values import DatanodeTableValue, TableInfoValue, TableNameValue, TableRouteValue
from producers.decide.core import Rejection
from producers.decide.sizes import DEFAULT_RECORD_LIMIT
from tests.domain.runs import PROPERTIES, Run, describe
from tests.domain.steps import MIXED, MODES, Step, hostile_steps, plans, valid_steps


@PROPERTIES
@given(mode=MODES, steps=MIXED)
def test_decide_returns_an_event_or_a_rejection_and_never_raises(
    mode: str, steps: list[Step]
) -> None:
    run = Run(mode)
    for step, _, outcome in run.play(steps):
        if isinstance(outcome, Exception):
            raise AssertionError(f"decide raised on {step!r}: {describe(outcome)}") from outcome
        assert isinstance(outcome, Event | Rejection)


@PROPERTIES
@given(mode=MODES, steps=plans(st.one_of(valid_steps, hostile_steps(many_regions=True))))
def test_every_accepted_event_fits_the_record_limit_and_decodes_back_equal(
    mode: str, steps: list[Step]
) -> None:
    run = Run(mode)
    for step, _, outcome in run.play(steps):
        if isinstance(outcome, Event):
            # The fast seal (straight from the models) and the reference (Avro dicts) agree.
            assert seal_record_reference(outcome) == seal_record(outcome)
            data = encode_event(outcome)
            size = len(data) + len(outcome.catalog.encode())  # the record's value and key
            assert size <= DEFAULT_RECORD_LIMIT, (
                f"{step!r} was accepted but its event takes {size:,} bytes, over the "
                f"limit of {DEFAULT_RECORD_LIMIT:,}: decide must refuse it (TooLarge)"
            )
            assert decode_event(data) == outcome


@PROPERTIES
@given(mode=MODES, steps=MIXED)
def test_decide_refuses_every_command_that_breaks_a_naming_or_value_rule(
    mode: str, steps: list[Step]
) -> None:
    run = Run(mode)
    for step, command, outcome in run.play(steps):
        broken = broken_rule(command)
        if broken is not None:
            assert not isinstance(outcome, Event), f"{step!r} was accepted, but {broken}"
        elif isinstance(outcome, Rejection) and all(map(plain, names(command))):
            assert outcome.error.code != "InvalidName", f"{step!r}: {describe(outcome)}"


@PROPERTIES
@given(mode=MODES, steps=MIXED)
def test_every_accepted_event_keeps_keys_in_the_layout_and_tables_within_the_rules(
    mode: str, steps: list[Step]
) -> None:
    run = Run(mode)
    for step, _, outcome in run.play(steps):
        if isinstance(outcome, Event):
            for mutation in outcome.mutations:
                problem = outside_the_rules(mutation.key, mutation.value)
                assert problem is None, f"{step!r} wrote {mutation.key[:80]!r}: {problem}"


@PROPERTIES
@given(mode=MODES, steps=plans(st.one_of(valid_steps, hostile_steps(addressed=24))))
def test_an_accepted_command_changes_the_table_it_names_and_no_other(
    mode: str, steps: list[Step]
) -> None:
    run = Run(mode)
    before = run.image
    for step, command, outcome in run.play(steps):
        named = isinstance(command, TableCommand) and not isinstance(command, CreateTable)
        if isinstance(outcome, Event) and named:
            assert isinstance(command, TableCommand)
            table_id = outcome.tables[0].table_id
            info = before.head.table(table_id) or before.head.dropped_table(table_id)
            assert info is not None
            changed = (info.schema_name, info.table_name)
            wanted = (command.schema_name, command.table_name)
            assert changed == wanted, f"{step!r} names {wanted} but changed {changed}"
        before = run.image


def name_problem(name: str) -> str | None:
    """Why a name breaks DESIGN.md's naming rule (1-64 characters, no `/`, no control), or None."""
    if not 1 <= len(name) <= 64:
        return f"the name {name[:20]!r} has {len(name)} characters (1-64 allowed)"
    if "/" in name:
        return f"the name {name!r} holds `/`, the key separator"
    if any(unicodedata.category(c) == "Cc" for c in name):
        return f"the name {name!r} holds a control character"
    return None


def plain(name: str) -> bool:
    """A name no reading of the rule refuses: an ASCII identifier, or `é` up to 64 times."""
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}|é{1,64}", name) is not None


def names(command: Command) -> Iterable[str]:
    """Every schema, table, partition and column name a command brings in or addresses."""
    if isinstance(command, TableCommand):
        yield command.schema_name
        yield command.table_name
    if isinstance(command, CreateTable):
        yield from command.partitions
        yield from (c.name for c in command.columns)
    if isinstance(command, RenameTable):
        yield command.new_table_name
    if isinstance(command, AlterTable):
        yield from (c.name for c in command.add_columns)
        yield from command.drop_columns
    if isinstance(command, AddPartition | DropPartition | TruncatePartition | ExchangePartition):
        yield command.partition_name
    if isinstance(command, ExchangePartition):
        yield command.other_schema_name
        yield command.other_table_name
    if isinstance(command, SetAttributes | ResetAttributes) and command.partition_name is not None:
        yield command.partition_name


def broken_rule(command: Command) -> str | None:
    """The rule of "Names, values and sizes" a command breaks on its own, or None."""
    for name in names(command):
        problem = name_problem(name)
        if problem is not None:
            return problem
    if isinstance(command, CreateTable):
        return table_problem(
            [c.name for c in command.columns], command.primary_key, command.partitions
        ) or (
            "it names a negative datanode"
            if any(d < 0 for d in command.datanodes)
            else ("it asks for fewer than one region" if command.regions < 1 else None)
        )
    if isinstance(command, FailoverRegion) and command.to_datanode < 0:
        return "it names a negative datanode"
    return None


def table_problem(
    columns: list[str], primary_key: Iterable[str], partitions: Iterable[str]
) -> str | None:
    """Why a table's columns, primary key or partitions break the rules, or None."""
    if not columns:
        return "the table has no column (at least one is required)"
    if len(set(columns)) != len(columns):
        return f"the columns {columns} repeat a name"
    missing = [k for k in primary_key if k not in columns]
    if missing:
        return f"the primary key names {missing}, which are not columns"
    parts = list(partitions)
    if len(set(parts)) != len(parts):
        return f"the partitions {parts} repeat a name"
    return None


def outside_the_rules(key: str, value: object) -> str | None:
    """Why a written key or value breaks the key layout or the rules, or None."""
    try:
        kind, parts = parse_key(key)
    except ValueError as error:
        return str(error)[:160]
    if kind == "table_name":
        problem = next(filter(None, map(name_problem, parts[1:])), None)
        if problem is not None or not isinstance(value, TableNameValue | None):
            return problem or "a name key holds no TableNameValue"
    if isinstance(value, TableInfoValue):
        part_names = [p.name for p in value.partitions]
        every = [value.schema_name, value.table_name, *part_names, *(c.name for c in value.columns)]
        problem = next(filter(None, map(name_problem, every)), None)
        columns = [c.name for c in value.columns]
        return problem or table_problem(columns, value.primary_key, part_names)
    if isinstance(value, DatanodeTableValue) and value.datanode_id < 0:
        return f"datanode id {value.datanode_id} is negative"
    if isinstance(value, TableRouteValue):
        leaders = [r.leader_datanode for r in value.region_routes]
        if any(d < 0 for d in leaders):
            return f"a region is led by a negative datanode id ({min(leaders)})"
    return None


LAYOUT = {
    TABLE_INFO: ("table_info", 1),
    TABLE_NAME: ("table_name", 3),
    TABLE_ROUTE: ("table_route", 1),
    DATANODE_TABLE: ("datanode_table", 2),
}
"""Each key prefix of the layout (DESIGN.md): its kind and how many `/`-separated parts follow."""


def parse_key(key: str) -> tuple[str, tuple[str, ...]]:
    """A key's kind and parts under the key layout; `ValueError` names a key outside it."""
    is_removed = key.startswith(REMOVED)
    body = key[len(REMOVED) :] if is_removed else key
    prefix, _, rest = body.partition("/")
    if prefix == LABEL_RULE and rest and not is_removed:
        return "label_rule", (rest,)
    kind = LAYOUT.get(prefix)
    parts = tuple(rest.split("/")) if rest else ()
    if kind is None or len(parts) != kind[1] or not all(parts):
        raise ValueError(f"key {key!r} is not in the metadata key layout")
    if is_removed and kind[0] not in ("table_info", "table_route"):
        raise ValueError(f"key {key!r}: only table info and routes move under {REMOVED}")
    return kind[0], parts
