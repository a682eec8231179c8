"""WiredTiger's publish API: pending changes, epochs, the stable epoch, publish modes."""

import pytest

from events.commands import AdvanceStableEpoch, DropTable, Publish, SetPublishMode
from events.intents import EpochAssigned, StableEpochAdvanced
from producers.errors import (
    ChangesPending,
    EpochNotAboveStable,
    EpochRegression,
    NothingToPublish,
    WrongPublishMode,
)
from projector.fold.apply import replay
from projector.fold.image import Image
from tests.domain.builders import CATALOG, command, create, last, local


def _publish(table_id: int, epoch: int) -> Publish:
    return command(Publish, table_id=table_id, epoch=epoch)


def _advance(epoch: int) -> AdvanceStableEpoch:
    return command(AdvanceStableEpoch, epoch=epoch)


def test_a_change_in_explicit_mode_stays_pending_until_published_and_stable() -> None:
    catalog = local("explicit")
    committed = catalog.submit(create())
    assert committed.schema_epoch == 0
    image = catalog.image
    assert image.head.table(1) is not None and image.published.table(1) is None
    assert [c.resource_version for c in image.pending_changes(1)] == [2]
    catalog.submit(_publish(1, 5))
    assert last(catalog).intent == EpochAssigned(table_id=1, epoch=5, resource_versions=(2,))
    assert catalog.image.pending_changes(1)[0].schema_epoch == 5
    assert catalog.image.published.table(1) is None
    catalog.submit(_advance(5))
    assert last(catalog).intent == StableEpochAdvanced(epoch=5)
    image = catalog.image
    assert image.published.table(1) is not None and not image.pending
    assert image.published == image.head and image.stable_epoch == 5


def test_publish_with_nothing_pending_is_nothing_to_publish() -> None:
    catalog = local("explicit")
    with pytest.raises(NothingToPublish, match="table id 1 has no pending change"):
        catalog.submit(_publish(1, 1))
    catalog.submit(create())
    catalog.submit(_publish(1, 2))
    with pytest.raises(NothingToPublish, match="all already have one"):
        catalog.submit(_publish(1, 3))


def test_publish_below_an_epoch_a_pending_change_already_has_is_epoch_regression() -> None:
    catalog = local("explicit")
    catalog.submit(create())
    catalog.submit(_publish(1, 5))
    catalog.submit(command(DropTable, table_name="orders"))
    with pytest.raises(EpochRegression, match="already has epoch 5: publish at 5 or later"):
        catalog.submit(_publish(1, 4))
    catalog.submit(_publish(1, 5))
    assert [c.schema_epoch for c in catalog.image.pending_changes(1)] == [5, 5]


def test_publish_below_the_tables_last_published_epoch_is_refused() -> None:
    catalog = local("explicit")
    catalog.submit(create())
    catalog.submit(_publish(1, 5))
    catalog.submit(create("other"))
    catalog.submit(_publish(2, 6))
    catalog.submit(_advance(5))
    catalog.submit(command(DropTable, table_name="orders"))
    # Once released, the table's last epoch is at or below stable, so an epoch
    # below it fails the stable check first (EpochRegression covers it while pending).
    image = catalog.image
    assert image.table_schema_epochs[1] == 5
    with pytest.raises(EpochNotAboveStable):
        catalog.submit(_publish(1, 5))
    catalog.submit(_publish(1, 7))
    catalog.submit(command(AdvanceStableEpoch, epoch=7))
    assert catalog.image.published.table(1) is None


def test_publish_at_or_below_the_stable_epoch_is_epoch_not_above_stable() -> None:
    catalog = local("explicit")
    catalog.submit(_advance(3))
    catalog.submit(create())
    with pytest.raises(EpochNotAboveStable, match="not above the stable epoch 3: publish at 4"):
        catalog.submit(_publish(1, 3))


def test_publish_in_auto_mode_is_wrong_publish_mode() -> None:
    catalog = local()
    catalog.submit(create())
    with pytest.raises(WrongPublishMode, match="publishes automatically"):
        catalog.submit(_publish(1, 9))


def test_advance_stable_epoch_must_go_up() -> None:
    catalog = local("explicit")
    catalog.submit(_advance(2))
    with pytest.raises(EpochNotAboveStable):
        catalog.submit(_advance(2))


def test_switching_to_auto_with_changes_pending_is_refused_and_after_release_shares_head() -> None:
    catalog = local("explicit")
    catalog.submit(create())
    with pytest.raises(ChangesPending):
        catalog.submit(command(SetPublishMode, mode="auto"))
    with pytest.raises(WrongPublishMode, match="already in explicit"):
        catalog.submit(command(SetPublishMode, mode="explicit"))
    catalog.submit(_publish(1, 1))
    catalog.submit(_advance(1))
    catalog.submit(command(SetPublishMode, mode="auto"))
    assert catalog.image.published is catalog.image.head
    committed = catalog.submit(create("next"))
    assert committed.schema_epoch == 2 and catalog.image.stable_epoch == 2


def test_create_and_drop_published_at_one_epoch_cancel_out_for_followers() -> None:
    catalog = local("explicit")
    catalog.submit(create())
    catalog.submit(command(DropTable, table_name="orders"))
    catalog.submit(_publish(1, 1))
    seen = []
    before = catalog.image
    catalog.submit(_advance(1))
    after = catalog.image
    for image in (before, after):
        seen.append(image.published.table_by_name("public", "orders"))
    assert seen == [None, None]
    assert after.published.dropped_table(1) is not None


def test_create_and_drop_published_at_different_epochs_appear_in_order() -> None:
    catalog = local("explicit")
    catalog.submit(create())
    catalog.submit(_publish(1, 1))
    catalog.submit(command(DropTable, table_name="orders"))
    catalog.submit(_publish(1, 2))
    catalog.submit(_advance(1))
    assert catalog.image.published.table_by_name("public", "orders") is not None
    catalog.submit(_advance(2))
    assert catalog.image.published.table_by_name("public", "orders") is None


def test_changes_of_one_epoch_are_applied_in_epoch_then_resource_version_order() -> None:
    catalog = local("explicit")
    catalog.submit(create("a"))
    catalog.submit(create("b"))
    catalog.submit(_publish(2, 3))
    catalog.submit(_publish(1, 4))
    catalog.submit(_advance(3))
    published = catalog.image.published
    assert published.table_id("public", "b") == 2 and published.table_id("public", "a") is None
    catalog.submit(_advance(4))
    assert catalog.image.published == catalog.image.head
    assert replay(Image.empty(CATALOG), catalog.events) == catalog.image
