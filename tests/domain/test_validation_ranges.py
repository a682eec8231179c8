"""Validation of ids, epochs and versions (`producers.decide.rules.validate`): each range's ends.

Table ids fit 31 bits, epochs 1 to 2**62, versions and other ids are not
negative; each refusal is checked by `validate.check` and by `decide` after
an Avro round trip (`tests.domain.refusals`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from events.base import LONG_MAX
from events.codec import encode_event
from events.commands import (
    AdvanceStableEpoch,
    CommandBase,
    DropTable,
    ExchangePartition,
    FailoverRegion,
    Publish,
    PurgeTable,
    RecoverTable,
    Reload,
)
from events.event import Event
from events.values import TableRouteValue
from producers.decide.core import decide
from producers.decide.rules import validate
from producers.decide.rules.limits import EPOCH_MAX, TABLE_ID_MAX
from producers.errors import OutOfRange
from projector.fold.image import Image
from tests.domain.builders import CATALOG, command, create, local, stamps
from tests.domain.refusals import decided, refused

ROUTE = TableRouteValue(table_id=1, region_routes=())

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
