"""Validation at the edge (`producers.decide.rules.validate`): each rule refused with its type.

Every refused command is also decided after an Avro round trip, as a leader
gets it from the commands topic: `decide` refuses it with the same type.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from events.base import LONG_MAX
from events.codec import decode_command, encode_command, encode_event
from events.commands import (
    AddPartition,
    AdvanceStableEpoch,
    AlterTable,
    CommandBase,
    CreateTable,
    DropPartition,
    DropTable,
    ExchangePartition,
    FailoverRegion,
    Publish,
    PurgeTable,
    RecoverTable,
    Reload,
    RenameTable,
    ResetAttributes,
    SetAttributes,
    SetPublishMode,
    TruncatePartition,
)
from events.errors import EncodeError
from events.event import Event
from events.values import Column, TableRouteValue
from producers.decide.core import Rejection, decide
from producers.decide.rules import validate
from producers.decide.rules.limits import (
    ATTRIBUTES_MAX_CHARS,
    COLUMNS_MAX,
    DATANODE_ID_MAX,
    EPOCH_MAX,
    NAME_MAX_CHARS,
    PARTITIONS_MAX,
    REGIONS_MAX,
    TABLE_ID_MAX,
    TEXT_MAX_CHARS,
)
from producers.errors import InvalidCommand, InvalidName, OutOfRange
from projector.fold.image import Image
from tests.domain.builders import CATALOG, COLUMNS, command, create, local, stamps

ROUTE = TableRouteValue(table_id=1, region_routes=())

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


def refused(kind: type[Exception], cmd: CommandBase, *parts: str) -> str:
    """Check that `validate.check` and `decide` (after an Avro round trip) refuse `cmd`."""
    with pytest.raises(kind) as caught:
        validate.check(cmd)
    message = str(caught.value)
    for part in parts:
        assert part in message
    assert decided(cmd, kind) == message
    return message


def decided(cmd: CommandBase, kind: type[Exception], image: Image | None = None) -> str:
    """Decide `cmd` as a leader gets it from the topic; it must be refused with `kind`."""
    try:
        from_topic: Any = decode_command(encode_command(cmd))  # type: ignore[arg-type]
    except EncodeError:  # a surrogate half cannot be sent at all: decide it as built
        from_topic = cmd
    outcome = decide(image or Image.empty(cmd.catalog), from_topic, stamps()())
    assert isinstance(outcome, Rejection) and type(outcome.error) is kind
    return outcome.error.message


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
        command_id="c", catalog=CATALOG, actor="a", schema_name="public", table_name=7  # type: ignore[arg-type]
    )
    with pytest.raises(InvalidName, match="not text but int"):
        validate.check(cmd)
    outcome = decide(Image.empty(CATALOG), cmd, stamps()())
    assert isinstance(outcome, Rejection) and isinstance(outcome.error, InvalidName)


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


# -- ids, epochs, versions -----------------------------------------------------

TABLE_ID_COMMANDS: list[Callable[[int], CommandBase]] = [
    lambda t: command(PurgeTable, table_id=t),
    lambda t: command(Publish, table_id=t, epoch=1),
    lambda t: command(RecoverTable, table_name="t", table_id=t),
    lambda t: command(FailoverRegion, table_id=t, region_id=0, to_datanode=1, expected_route=ROUTE),
]


@pytest.mark.parametrize("build", TABLE_ID_COMMANDS)
@pytest.mark.parametrize("table_id", [-1, TABLE_ID_MAX + 1, LONG_MAX])
def test_table_ids_outside_31_bits_are_refused(
    build: Callable[[int], CommandBase], table_id: int
) -> None:
    refused(OutOfRange, build(table_id), "table_id", "allowed 0 to 2,147,483,647")


@pytest.mark.parametrize("build", TABLE_ID_COMMANDS)
@pytest.mark.parametrize("table_id", [0, TABLE_ID_MAX])
def test_table_ids_at_the_ends_of_the_range_are_accepted(
    build: Callable[[int], CommandBase], table_id: int
) -> None:
    validate.check(build(table_id))


@pytest.mark.parametrize(
    ("cmd", "part"),
    [
        (
            command(FailoverRegion, table_id=1, region_id=-1, to_datanode=1, expected_route=ROUTE),
            "region_id -1",
        ),
        (
            command(FailoverRegion, table_id=1, region_id=1, to_datanode=-1, expected_route=ROUTE),
            "to_datanode -1",
        ),
        (command(DropTable, table_name="t", expected_version=0), "expected_version 0"),
        (command(DropTable, table_name="t", expected_version=-3), "expected_version -3"),
        (command(Reload, expected_resource_version=-1), "expected_resource_version -1"),
        (
            command(
                ExchangePartition,
                table_name="t",
                partition_name="p",
                other_schema_name="s",
                other_table_name="u",
                other_expected_version=0,
            ),
            "other_expected_version 0",
        ),
    ],
)
def test_negative_ids_and_versions_are_refused(cmd: CommandBase, part: str) -> None:
    refused(OutOfRange, cmd, part)


@pytest.mark.parametrize("kind", [AdvanceStableEpoch, Publish])
@pytest.mark.parametrize("epoch", [0, -1, EPOCH_MAX + 1, LONG_MAX])
def test_epochs_outside_1_to_2_pow_62_are_refused(kind: type[CommandBase], epoch: int) -> None:
    fields = {"table_id": 1} if kind is Publish else {}
    refused(OutOfRange, command(kind, epoch=epoch, **fields), "epoch", "allowed 1 to")


def test_advancing_to_the_top_of_long_is_refused_and_a_change_still_encodes() -> None:
    """The issue's crash loop: AdvanceStableEpoch(2**63 - 1), then a change at 2**63."""
    catalog = local()
    with pytest.raises(OutOfRange):
        catalog.submit(command(AdvanceStableEpoch, epoch=LONG_MAX))
    catalog.submit(command(AdvanceStableEpoch, epoch=EPOCH_MAX))
    with pytest.raises(OutOfRange, match="epochs are used up"):
        catalog.submit(create())


def test_a_change_one_below_the_top_epoch_gets_the_top_epoch_and_encodes() -> None:
    catalog = local()
    catalog.submit(command(AdvanceStableEpoch, epoch=EPOCH_MAX - 1))
    committed = catalog.submit(create())
    assert committed.schema_epoch == EPOCH_MAX
    encode_event(catalog.events[-1])


def test_a_stable_epoch_past_the_range_from_an_old_log_refuses_changes() -> None:
    image = dataclasses.replace(Image.empty(CATALOG), stable_epoch=LONG_MAX)
    decided(create(), OutOfRange, image)
    outcome = decide(image, command(Reload), stamps()())
    assert isinstance(outcome, Event)  # a control event takes no epoch: it still encodes
    encode_event(outcome)


def test_used_up_table_ids_are_refused() -> None:
    full = dataclasses.replace(Image.empty(CATALOG), max_id=TABLE_ID_MAX)
    assert "ids are never reused" in decided(create(), OutOfRange, full)
    almost = dataclasses.replace(Image.empty(CATALOG), max_id=TABLE_ID_MAX - 1)
    decided(create(partitions=("p0",)), OutOfRange, almost)
    event = decide(almost, create(regions=2), stamps()())
    assert isinstance(event, Event) and event.tables[0].table_id == TABLE_ID_MAX
    encode_event(event)  # its region ids, (TABLE_ID_MAX << 32) | n, fit a long


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
        command_id="c", catalog=CATALOG, actor="a", mode="sideways"  # type: ignore[arg-type]
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
