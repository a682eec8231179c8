"""Validation of names (`producers.decide.rules.validate`): DESIGN.md's naming rule, field by field.

A name is 1 to 64 characters of any script, without `/` (the key separator)
or a control character; each refusal is checked by `validate.check` and by
`decide` after an Avro round trip (`tests.domain.refusals`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from events.commands import (
    AddPartition,
    AlterTable,
    CommandBase,
    DropPartition,
    DropTable,
    ExchangePartition,
    RenameTable,
    ResetAttributes,
    SetAttributes,
    TruncatePartition,
)
from events.values import Column
from producers.decide.core import Rejection, decide
from producers.decide.rules import validate
from producers.decide.rules.limits import NAME_MAX_CHARS
from producers.errors import InvalidName
from projector.fold.image import Image
from tests.domain.builders import CATALOG, COLUMNS, command, create, local, stamps
from tests.domain.refusals import refused

BAD_NAMES: list[tuple[str, str]] = [
    ("", "it is empty"),
    ("x" * (NAME_MAX_CHARS + 1), f"it is {NAME_MAX_CHARS + 1} characters long"),
    ("b/c", "it contains `/`"),
    ("a\x00b", "control character U+0000"),
    ("tab\there", "control character U+0009"),
    ("del\x7f", "control character U+007F"),
    ("c1\x85", "control character U+0085"),
    ("half\ud800", "U+D800, half of a surrogate pair"),
]
GOOD_NAMES = ["x" * NAME_MAX_CHARS, "订单", "naïve_Ωmega", "with space", "a.b-c", "😀"]


def _with_name(field: str, value: str) -> CommandBase:
    """A command whose `field` (a name) is `value`, all else valid."""
    builders: dict[str, Callable[[str], CommandBase]] = {
        "catalog": lambda v: command(DropTable, table_name="t", catalog=v),
        "schema_name": lambda v: command(DropTable, schema_name=v, table_name="t"),
        "table_name": lambda v: create(v),
        "new_table_name": lambda v: command(RenameTable, table_name="t", new_table_name=v),
        "partition_name": lambda v: command(AddPartition, table_name="t", partition_name=v),
        "drop partition_name": lambda v: command(DropPartition, table_name="t", partition_name=v),
        "truncate partition_name": lambda v: command(
            TruncatePartition, table_name="t", partition_name=v
        ),
        "attributes partition_name": lambda v: command(
            SetAttributes, table_name="t", partition_name=v, attributes="a=b"
        ),
        "reset partition_name": lambda v: command(
            ResetAttributes, table_name="t", partition_name=v
        ),
        "other_schema_name": lambda v: _exchange(other_schema_name=v),
        "other_table_name": lambda v: _exchange(other_table_name=v),
        "partitions": lambda v: create(partitions=("p0", v)),
        "columns": lambda v: create(columns=(*COLUMNS, Column(name=v, data_type="int"))),
        "primary_key": lambda v: create(primary_key=(v,)),
        "add_columns": lambda v: command(
            AlterTable, table_name="t", add_columns=(Column(name=v, data_type="int"),)
        ),
        "drop_columns": lambda v: command(AlterTable, table_name="t", drop_columns=(v,)),
    }
    return builders[field](value)


def _exchange(**fields: Any) -> CommandBase:
    fields = {"other_schema_name": "s", "other_table_name": "u", **fields}
    return command(ExchangePartition, table_name="t", partition_name="p", **fields)


NAME_FIELDS = [
    "catalog",
    "schema_name",
    "table_name",
    "new_table_name",
    "partition_name",
    "drop partition_name",
    "truncate partition_name",
    "attributes partition_name",
    "reset partition_name",
    "other_schema_name",
    "other_table_name",
    "partitions",
    "columns",
    "primary_key",
    "add_columns",
    "drop_columns",
]


@pytest.mark.parametrize("field", NAME_FIELDS)
@pytest.mark.parametrize(("value", "problem"), BAD_NAMES)
def test_every_name_breaking_the_naming_rule_is_refused(
    field: str, value: str, problem: str
) -> None:
    message = refused(InvalidName, _with_name(field, value), problem, "1 to 64 characters")
    assert field.split()[-1] in message


@pytest.mark.parametrize("field", NAME_FIELDS)
@pytest.mark.parametrize("value", GOOD_NAMES)
def test_names_up_to_64_characters_of_any_script_are_accepted(field: str, value: str) -> None:
    if field == "primary_key":  # a key names one of the columns
        column = Column(name=value, data_type="int")
        validate.check(create(columns=(*COLUMNS, column), primary_key=(value,)))
    else:
        validate.check(_with_name(field, value))


def test_a_slash_in_a_name_can_no_longer_make_two_tables_share_a_key() -> None:
    """`a`.`b/c` and `a/b`.`c` would both be `__table_name/{catalog}/a/b/c`."""
    catalog = local()
    for cmd in (
        create("b/c", schema_name="a"),
        create("c", schema_name="a/b"),
        command(AlterTable, schema_name="a/b", table_name="c"),
        command(DropTable, schema_name="a/b", table_name="c"),
    ):
        with pytest.raises(InvalidName, match="contains `/`"):
            catalog.submit(cmd)
    assert catalog.events == ()


def test_a_long_value_is_cut_in_the_message() -> None:
    message = refused(InvalidName, create("t" * 250_000), "250,000 characters")
    assert len(message) < 400


def test_a_value_that_is_not_text_is_refused_by_type() -> None:
    cmd = DropTable.model_construct(
        command_id="c",
        catalog=CATALOG,
        actor="a",
        schema_name="public",
        table_name=7,  # type: ignore[arg-type]
    )
    with pytest.raises(InvalidName, match="not text but int"):
        validate.check(cmd)
    outcome = decide(Image.empty(CATALOG), cmd, stamps()())
    assert isinstance(outcome, Rejection) and isinstance(outcome.error, InvalidName)
