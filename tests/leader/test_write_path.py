"""The write path on a real broker: client → commands → leader → one transaction."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from events.commands import AlterTable, Reload
from events.intents import EpochAssigned, StableEpochAdvanced, TableCreated
from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import NotLeader, VersionConflict
from producers.leader.leader import Leader
from projector.fold.apply import replay
from projector.fold.image import Image
from tests.fixtures.kafka import TopicSet
from tests.leader.conftest import log_of
from tests.leader.history import check_history

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"), Column(name="amount", data_type="float64"))


def test_table_lifecycle_through_the_client_lands_in_the_log_in_order(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    created = client.create_table("public", "orders", COLUMNS, partitions=("p0", "p1"))
    table_id = created.tables[0].table_id
    client.rename_table("public", "orders", "sales", expected_version=1)
    client.alter_table("public", "sales", add_columns=(Column(name="note", data_type="string"),))
    client.set_attributes("public", "sales", "merge_option=allow", partition_name="p0")
    client.drop_table("public", "sales")
    recovered = client.recover_table("public", "sales")

    log = log_of(wire)
    intents = [type(e.intent).__name__ for e in log]
    assert intents == [
        "LeaderElected", "TableCreated", "TableRenamed", "TableAltered",
        "AttributesSet", "TableDropped", "TableRecovered",
    ]  # fmt: skip
    assert recovered.resource_version == log[-1].resource_version
    check_history(log)
    image = replay(Image.empty("greptime"), log)
    assert image.head.table_by_name("public", "sales").table_id == table_id


@pytest.mark.parametrize("kind", ["client", "embedded_client"])
def test_racing_clients_get_exactly_one_success_per_version(
    wire: TopicSet, leader: Leader, kind: str, request: pytest.FixtureRequest
) -> None:
    client: MetadataClient = request.getfixturevalue(kind)
    client.create_table("public", "hot", COLUMNS)
    versions = range(1, 9)
    wins: Counter[int] = Counter()
    conflicts: list[tuple[int, int | None]] = []
    lock = threading.Lock()

    def race(worker: int) -> None:
        for version in versions:
            try:
                client.alter_table("public", "hot", set_options={"worker": str(worker)},
                                   expected_version=version)  # fmt: skip
            except VersionConflict as conflict:
                with lock:
                    conflicts.append((version, conflict.current_version))
            else:
                with lock:
                    wins[version] += 1

    threads = [threading.Thread(target=race, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert wins == Counter({version: 1 for version in versions})
    assert len(conflicts) == 6 * len(versions) - len(versions)
    assert all(current is not None and current > tried for tried, current in conflicts)
    log = log_of(wire)
    check_history(log)
    hot = [t.version for e in log for t in e.tables]
    assert hot == list(range(1, len(versions) + 2))


def test_explicit_publish_mode_end_to_end(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    client.set_publish_mode("explicit")
    created = client.create_table("public", "staged", COLUMNS)
    assert created.schema_epoch == 0
    table_id = created.tables[0].table_id

    pending = replay(Image.empty("greptime"), log_of(wire))
    assert pending.published.table_by_name("public", "staged") is None
    assert pending.head.table_by_name("public", "staged") is not None

    client.publish(table_id, 1)
    client.advance_stable_epoch(1)
    log = log_of(wire)
    assert isinstance(log[-2].intent, EpochAssigned)
    assert isinstance(log[-1].intent, StableEpochAdvanced)
    assert any(isinstance(e.intent, TableCreated) and e.schema_epoch == 0 for e in log)
    visible = replay(Image.empty("greptime"), log)
    assert visible.published.table_by_name("public", "staged") is not None
    check_history(log)


def test_a_retried_command_id_is_applied_once_and_answers_the_first_outcome(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    first = client.create_table("public", "once", COLUMNS, command_id="create-once")
    again = client.create_table("public", "once", COLUMNS, command_id="create-once")
    assert again == first
    assert [e.command_id for e in log_of(wire)].count("create-once") == 1


def test_export_returns_the_resource_version_and_metadata_and_bumps_nothing(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    client.create_table("public", "orders", COLUMNS)
    before = log_of(wire)
    first = client.export()
    second = client.export()
    assert first == second
    assert first["resource_version"] == before[-1].resource_version
    assert "__table_name/greptime/public/orders" in first["metadata"]
    assert log_of(wire) == before


def test_an_embedded_submit_and_a_client_command_share_one_log(
    wire: TopicSet, leader: Leader, client: MetadataClient
) -> None:
    client.create_table("public", "orders", COLUMNS)
    command = AlterTable(
        command_id="in-process-1",
        catalog="greptime",
        actor="service",
        schema_name="public",
        table_name="orders",
        set_options={"ttl": "7d"},
        expected_version=1,
    )
    embedded = leader.submit(command)
    after = client.alter_table("public", "orders", set_options={"ttl": "1d"}, expected_version=2)

    log = log_of(wire)
    assert [e.command_id for e in log[-2:]] == ["in-process-1", after.command_id]
    assert embedded.tables[0].version == 2 and after.tables[0].version == 3
    check_history(log)


def test_an_embedded_submit_before_owning_the_catalog_is_refused(wire: TopicSet) -> None:
    # Joining the group takes several broker round trips; submit() runs at once.
    with Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-late") as joining:
        command = Reload(command_id="r-1", catalog="greptime", actor="service")
        with pytest.raises(NotLeader):
            joining.submit(command)
