"""Hasura's resource version: optimistic concurrency across consoles, reload, export."""

import pytest

from events.commands import AlterTable, DropTable, Reload
from events.intents import Reloaded
from producers.decide.core import Rejection, decide
from producers.errors import TableNotFound, VersionConflict
from projector.fold.export import export
from tests.domain.builders import CATALOG, command, create, last, local, stamps


def test_drop_vs_drop_the_second_console_gets_a_version_conflict_then_table_not_found() -> None:
    catalog = local()
    catalog.submit(create())
    seen = catalog.image.resource_version  # both consoles read v
    catalog.submit(command(DropTable, table_name="orders", expected_resource_version=seen))
    with pytest.raises(VersionConflict) as caught:
        catalog.submit(command(DropTable, table_name="orders", expected_resource_version=seen))
    assert caught.value.current_resource_version == 2
    assert "catalog `c` is at resource_version 2, not 1: re-read" in str(caught.value)
    reread = export(catalog.image)["resource_version"]
    with pytest.raises(TableNotFound):
        catalog.submit(command(DropTable, table_name="orders", expected_resource_version=reread))
    assert catalog.image.resource_version == 2


def test_drop_vs_alter_a_stale_drop_is_refused_and_the_retry_after_re_reading_succeeds() -> None:
    catalog = local()
    catalog.submit(create())
    seen = catalog.image.resource_version
    catalog.submit(
        command(
            AlterTable,
            table_name="orders",
            set_options={"fk": "x"},
            expected_resource_version=seen,
        )
    )
    with pytest.raises(VersionConflict) as caught:
        catalog.submit(command(DropTable, table_name="orders", expected_resource_version=seen))
    current = caught.value.current_resource_version
    assert current == 2
    committed = catalog.submit(
        command(DropTable, table_name="orders", expected_resource_version=current)
    )
    assert committed.resource_version == 3


def test_a_rejection_produces_the_rejected_reply_with_the_current_value_and_no_event() -> None:
    catalog = local()
    catalog.submit(create())
    stale = command(DropTable, table_name="orders", expected_version=6)
    outcome = decide(catalog.image, stale, stamps()())
    assert isinstance(outcome, Rejection)
    reply = outcome.reply(stale)
    assert (reply.code, reply.current_version, reply.command_id) == (
        "VersionConflict",
        1,
        stale.command_id,
    )


def test_reload_bumps_the_resource_version_only() -> None:
    catalog = local()
    catalog.submit(create())
    before = catalog.image
    committed = catalog.submit(command(Reload))
    assert isinstance(last(catalog).intent, Reloaded) and committed.resource_version == 2
    assert catalog.image.head is before.head and catalog.image.stable_epoch == before.stable_epoch


def test_export_returns_resource_version_and_metadata_and_bumps_nothing() -> None:
    catalog = local()
    catalog.submit(create())
    image = catalog.image
    exported = export(image)
    assert exported["resource_version"] == 1
    assert exported["metadata"][f"__table_name/{CATALOG}/public/orders"] == {
        "type": "TableNameValue",
        "table_id": 1,
    }
    assert set(exported["metadata"]) == {k for k, _ in image.head.items()}
    assert catalog.image is image
