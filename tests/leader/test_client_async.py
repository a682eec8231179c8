"""`MetadataClient.send_async` on a real broker: the same outcomes as the blocking calls."""

from __future__ import annotations

import asyncio

import pytest

from events.commands import AlterTable, CreateTable
from events.intents import TableAltered
from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import CommandOutcomeUnknown, VersionConflict
from producers.leader.leader import Leader
from tests.fixtures.kafka import TopicSet
from tests.leader.conftest import log_of

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)


@pytest.mark.parametrize("kind", ["client", "embedded_client"])
def test_awaited_commands_commit_reject_and_land_in_the_log_as_blocking_ones_do(
    wire: TopicSet, leader: Leader, kind: str, request: pytest.FixtureRequest
) -> None:
    client: MetadataClient = request.getfixturevalue(kind)

    async def calls() -> list[int]:
        created = await client.send_async(client.command(
            CreateTable, schema_name="public", table_name="t", columns=COLUMNS))  # fmt: skip
        alters = [client.command(AlterTable, schema_name="public", table_name="t",
                                 set_options={"n": str(n)}, expected_version=1)
                  for n in range(4)]  # fmt: skip
        outcomes = await asyncio.gather(*(client.send_async(a) for a in alters),
                                        return_exceptions=True)  # fmt: skip
        wins = [o for o in outcomes if not isinstance(o, BaseException)]
        losses = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(wins) == 1 and len(losses) == 3  # one version, one winner
        assert all(isinstance(o, VersionConflict) and o.current_version == 2 for o in losses)
        return [created.tables[0].version, wins[0].tables[0].version]

    assert asyncio.run(calls()) == [1, 2]
    altered = [e for e in log_of(wire) if isinstance(e.intent, TableAltered)]
    assert len(altered) == 1


def test_an_awaited_command_without_an_answer_is_of_unknown_outcome(wire: TopicSet) -> None:
    with MetadataClient(wire.bootstrap, catalog="greptime", actor="alice", topics=wire.topics,
                        timeout=1.5) as client:  # no leader runs: nobody answers  # fmt: skip
        command = client.command(CreateTable, schema_name="public", table_name="t",
                                 columns=COLUMNS)  # fmt: skip
        with pytest.raises(CommandOutcomeUnknown) as raised:
            asyncio.run(client.send_async(command))
    assert raised.value.command_id == command.command_id
