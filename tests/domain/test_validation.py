"""Validation at the edge (`producers.decide.rules.validate`): a table's shape, text fields, build.

Columns, primary key, partitions, datanodes and regions; command ids, actors,
reply addresses, attribute strings and the publish mode; and `build`, which
turns pydantic's errors into typed ones. Names are `test_validation_names`,
ids, epochs and versions `test_validation_ranges`. Each refusal is checked by
`validate.check` and by `decide` after an Avro round trip (`tests.domain.refusals`).
"""

from __future__ import annotations

from typing import Any

import pytest

from events.codec import encode_event
from events.commands import (
    AlterTable,
    CreateTable,
    DropTable,
    Publish,
    Reload,
    SetAttributes,
    SetPublishMode,
)
from events.values import Column
from producers.decide.core import Rejection, decide
from producers.decide.rules import validate
from producers.decide.rules.limits import (
    ATTRIBUTES_MAX_CHARS,
    COLUMNS_MAX,
    DATANODE_ID_MAX,
    NAME_MAX_CHARS,
    PARTITIONS_MAX,
    REGIONS_MAX,
    TEXT_MAX_CHARS,
)
from producers.errors import InvalidCommand, InvalidName, OutOfRange
from projector.fold.image import Image
from tests.domain.builders import CATALOG, COLUMNS, command, create, local, stamps
from tests.domain.refusals import refused

# -- columns, primary key, partitions, datanodes -------------------------------


@pytest.mark.parametrize(
    ("fields", "kind", "part"),
    [
        ({"columns": ()}, InvalidCommand, "columns has 0 entries: allowed 1 to 4,096"),
        ({"columns": (*COLUMNS, COLUMNS[0])}, InvalidCommand, "names 'id' twice"),
        ({"primary_key": ("nope",)}, InvalidCommand, "not one of the columns"),
        ({"primary_key": ("id", "id")}, InvalidCommand, "names 'id' twice"),
        ({"partitions": ("p", "p")}, InvalidCommand, "names 'p' twice"),
        (
            {"partitions": tuple(f"p{n}" for n in range(PARTITIONS_MAX + 1))},
            OutOfRange,
            "partitions has 8,193 entries",
        ),
        (
            {
                "columns": tuple(
                    Column(name=f"c{n}", data_type="int") for n in range(COLUMNS_MAX + 1)
                )
            },
            OutOfRange,
            "columns has 4,097 entries",
        ),
        ({"datanodes": ()}, InvalidCommand, "datanodes has 0 entries"),
        ({"datanodes": (1, 1)}, InvalidCommand, "names 1 twice"),
        ({"datanodes": (-1,)}, OutOfRange, "datanodes[0] -1 is out of range"),
        ({"datanodes": (DATANODE_ID_MAX + 1,)}, OutOfRange, "allowed 0 to 4,294,967,295"),
        ({"regions": 0}, OutOfRange, "regions 0 is out of range: allowed 1 to 1,024"),
        ({"regions": -5}, OutOfRange, "regions -5"),
        ({"regions": REGIONS_MAX + 1}, OutOfRange, "regions 1,025"),
        ({"regions": 1_000_000}, OutOfRange, "regions 1,000,000"),
        ({"options": {"": "v"}}, InvalidCommand, "options key '' is not allowed: it is empty"),
    ],
)
def test_create_table_rules(fields: dict[str, Any], kind: type[Exception], part: str) -> None:
    refused(kind, create(**fields), part)


def test_create_table_edge_values_are_accepted_and_their_event_encodes() -> None:
    catalog = local()
    columns = tuple(Column(name=f"c{n}", data_type="int") for n in range(COLUMNS_MAX))
    catalog.submit(
        create(
            "é" * NAME_MAX_CHARS,
            columns=columns,
            primary_key=("c0", "c1"),
            regions=REGIONS_MAX,
            datanodes=(0, DATANODE_ID_MAX),
            partitions=("p0",),
        )
    )
    encode_event(catalog.events[-1])


def test_alter_table_rules() -> None:
    column = Column(name="x", data_type="int")
    refused(
        InvalidCommand,
        command(AlterTable, table_name="t", add_columns=(column, column)),
        "names 'x' twice",
    )
    refused(
        InvalidCommand,
        command(AlterTable, table_name="t", set_options={"": "v"}),
        "set_options key",
    )
    refused(
        InvalidCommand,
        command(AlterTable, table_name="t", unset_options=("a\x01",)),
        "unset_options key",
        "U+0001",
    )


# -- text fields, attributes, publish mode -------------------------------------


@pytest.mark.parametrize(
    ("fields", "part"),
    [
        ({"command_id": ""}, "command_id '' is not allowed: it is empty"),
        ({"actor": "x" * (TEXT_MAX_CHARS + 1)}, "actor"),
        ({"actor": "bad\nactor"}, "U+000A"),
        ({"reply_to": ""}, "reply_to"),
    ],
)
def test_command_ids_actors_and_reply_addresses_are_sane_text(
    fields: dict[str, Any], part: str
) -> None:
    refused(InvalidCommand, command(Reload, **fields), part)


def test_attribute_strings_are_bounded_and_free_of_control_characters() -> None:
    longest = "k=" + "v" * (ATTRIBUTES_MAX_CHARS - 2)
    validate.check(command(SetAttributes, table_name="t", attributes=longest))
    refused(
        InvalidCommand,
        command(SetAttributes, table_name="t", attributes=longest + "v"),
        "attributes",
        "4,097 characters",
    )
    refused(InvalidCommand, command(SetAttributes, table_name="t", attributes="a=b\x00"), "U+0000")


def test_a_publish_mode_that_is_neither_auto_nor_explicit_is_refused() -> None:
    cmd = SetPublishMode.model_construct(
        command_id="c",
        catalog=CATALOG,
        actor="a",
        mode="sideways",  # type: ignore[arg-type]
    )
    with pytest.raises(InvalidCommand, match="use `auto` or `explicit`"):
        validate.check(cmd)
    outcome = decide(Image.empty(CATALOG), cmd, stamps()())
    assert isinstance(outcome, Rejection) and type(outcome.error) is InvalidCommand


# -- build: pydantic's errors, typed -------------------------------------------


def test_build_turns_an_out_of_long_int_into_out_of_range_without_pydantic_text() -> None:
    with pytest.raises(OutOfRange) as caught:
        validate.build(Publish, command_id="c", catalog=CATALOG, actor="a", table_id=1, epoch=2**70)
    message = str(caught.value)
    assert "Publish: epoch 1,180,591,620,717,411,303,424 is out of range" in message
    assert "pydantic" not in message and "http" not in message
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_build_turns_a_wrong_value_into_invalid_command() -> None:
    with pytest.raises(InvalidCommand) as caught:
        validate.build(SetPublishMode, command_id="c", catalog=CATALOG, actor="a", mode="sideways")
    assert type(caught.value) is InvalidCommand
    assert "SetPublishMode: mode 'sideways': input should be 'auto' or 'explicit'" in str(
        caught.value
    )
    with pytest.raises(InvalidCommand, match=r"columns\.0"):
        validate.build(
            CreateTable,
            command_id="c",
            catalog=CATALOG,
            actor="a",
            schema_name="s",
            table_name="t",
            columns=("id",),
        )


def test_build_runs_the_rules_too() -> None:
    with pytest.raises(InvalidName):
        validate.build(
            DropTable, command_id="c", catalog=CATALOG, actor="a", schema_name="s", table_name=""
        )
