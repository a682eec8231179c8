"""The publication-order rule (DESIGN.md, "Publication order") and (table_id, version) pairs.

A change may take epoch E only if every earlier change sharing a table id or
a key with it already has an epoch in (0, E]. `Publish` refuses the later
change first; the fold refuses an `EpochAssigned` that breaks the rule.
"""

import pytest

from bench.workload import Workload
from events.commands import (
    AdvanceStableEpoch,
    AlterTable,
    DropTable,
    ExchangePartition,
    Publish,
    PurgeTable,
    RenameTable,
    SetAttributes,
    TruncatePartition,
    TruncateTable,
)
from events.event import Event
from events.intents import EpochAssigned
from producers.errors import EpochRegression, PublishOutOfOrder
from producers.leader.local import LocalCatalog
from projector.errors import DivergedAt, EpochOutOfOrder
from projector.fold.apply import apply, replay
from projector.fold.image import Image
from projector.follower.feed import CatalogFeed
from projector.follower.watch import History
from tests.domain.builders import CATALOG, SCHEMA, command, create, last, local
from tests.follower.workload import reseal


def _publish(catalog: LocalCatalog, table_id: int, epoch: int) -> EpochAssigned:
    catalog.submit(command(Publish, table_id=table_id, epoch=epoch))
    intent = last(catalog).intent
    assert isinstance(intent, EpochAssigned)
    return intent


def _release_all(catalog: LocalCatalog) -> None:
    """Publish whatever is left in resource_version order, release it, and check the oracle."""
    image = catalog.image
    epoch = max([image.stable_epoch + 1, *(c.schema_epoch for c in image.pending.values())])
    while waiting := sorted(rv for rv, c in catalog.image.pending.items() if c.schema_epoch == 0):
        _publish(catalog, catalog.image.pending[waiting[0]].table_ids[0], epoch)
    catalog.submit(command(AdvanceStableEpoch, epoch=epoch))
    assert not catalog.image.pending
    assert catalog.image.published == catalog.image.head
    assert replay(Image.empty(CATALOG), catalog.events) == catalog.image


def _id(catalog: LocalCatalog, name: str) -> int:
    table_id = catalog.image.head.table_id(SCHEMA, name)
    assert table_id is not None
    return table_id


def _refused_first(catalog: LocalCatalog, later: int, earlier_rv: int, tables: str) -> None:
    """Publishing `later` before the change at `earlier_rv` is refused, naming that change."""
    with pytest.raises(PublishOutOfOrder) as refused:
        catalog.submit(command(Publish, table_id=later, epoch=5))
    assert f"earlier change at resource_version {earlier_rv} (table ids {tables})" in str(
        refused.value
    )


def test_a_truncate_waits_for_the_earlier_change_of_the_old_id() -> None:
    catalog = local("explicit")
    catalog.submit(create())
    created = last(catalog).resource_version
    catalog.submit(command(TruncateTable, table_name="orders"))
    new_id = _id(catalog, "orders")
    catalog.submit(command(AlterTable, table_name="orders", set_options={"ttl": "1d"}))
    _refused_first(catalog, new_id, created, "1")
    assert _publish(catalog, 1, 6).resource_versions == (created, created + 1)
    with pytest.raises(EpochRegression, match="already has epoch 6"):
        catalog.submit(command(Publish, table_id=new_id, epoch=5))
    _release_all(catalog)


def test_an_exchange_waits_for_the_earlier_changes_of_both_tables() -> None:
    catalog = local("explicit")
    catalog.submit(create("parts", partitions=("p0",)))
    parts_created = last(catalog).resource_version
    catalog.submit(create("plain"))
    plain_created = last(catalog).resource_version
    catalog.submit(
        command(
            ExchangePartition,
            table_name="parts",
            partition_name="p0",
            other_schema_name=SCHEMA,
            other_table_name="plain",
        )
    )
    # `parts`' create takes 5; its exchange waits for `plain`'s create.
    assert _publish(catalog, 1, 5).resource_versions == (parts_created,)
    moved = _id(catalog, "plain")
    assert moved == 2  # p0's id
    _refused_first(catalog, moved, plain_created, "3")
    _release_all(catalog)


def test_a_name_freed_by_a_rename_waits_for_the_rename() -> None:
    catalog = local("explicit")
    catalog.submit(create("a"))
    _publish(catalog, 1, 1)
    catalog.submit(command(RenameTable, table_name="a", new_table_name="b"))
    renamed = last(catalog).resource_version
    catalog.submit(create("a"))
    _refused_first(catalog, _id(catalog, "a"), renamed, "1")
    _release_all(catalog)
    assert catalog.image.published.table_id(SCHEMA, "a") == 2


def test_a_name_freed_by_a_drop_waits_for_the_drop() -> None:
    catalog = local("explicit")
    catalog.submit(create("a"))
    _publish(catalog, 1, 1)
    catalog.submit(command(AdvanceStableEpoch, epoch=1))
    catalog.submit(command(DropTable, table_name="a"))
    dropped = last(catalog).resource_version
    catalog.submit(create("a"))
    _refused_first(catalog, 2, dropped, "1")
    _release_all(catalog)
    assert catalog.image.published.table_id(SCHEMA, "a") == 2


def test_a_label_rule_of_a_reused_name_waits_for_the_purge_that_deletes_it() -> None:
    catalog = local("explicit")
    catalog.submit(create("a"))
    catalog.submit(command(SetAttributes, table_name="a", attributes="zone=z1"))
    catalog.submit(command(DropTable, table_name="a"))
    _publish(catalog, 1, 1)  # the dropped table's rule stays until its purge
    catalog.submit(create("a"))
    _publish(catalog, 2, 1)
    catalog.submit(command(PurgeTable, table_id=1))
    purged = last(catalog).resource_version
    catalog.submit(command(SetAttributes, table_name="a", attributes="zone=z2"))
    with pytest.raises(PublishOutOfOrder, match="key `__label_rule/schema/public/a`") as refused:
        catalog.submit(command(Publish, table_id=2, epoch=5))
    assert f"resource_version {purged} (table ids 1)" in str(refused.value)
    _release_all(catalog)
    assert catalog.image.published.attributes(SCHEMA, "a")


def test_a_swap_of_two_names_publishes_table_by_table_in_log_order() -> None:
    """`a` → `t`, `b` → `a`, `t` → `b`: each table waits for the other once.

    Had `Publish` refused a table whose later change waits, neither table
    could ever be published: it gives E to the changes before that one.
    """
    catalog = local("explicit")
    catalog.submit(create("a"))
    catalog.submit(create("b"))
    _publish(catalog, 1, 1)
    _publish(catalog, 2, 1)
    catalog.submit(command(AdvanceStableEpoch, epoch=1))
    for old, new in (("a", "t"), ("b", "a"), ("t", "b")):
        catalog.submit(command(RenameTable, table_name=old, new_table_name=new))
    first, second, third = (e.resource_version for e in catalog.events[-3:])
    with pytest.raises(PublishOutOfOrder, match=f"resource_version {first} "):
        catalog.submit(command(Publish, table_id=2, epoch=2))
    assert _publish(catalog, 1, 2).resource_versions == (first,)
    assert _publish(catalog, 2, 2).resource_versions == (second,)
    assert _publish(catalog, 1, 2).resource_versions == (third,)
    _release_all(catalog)
    assert catalog.image.published.table_id(SCHEMA, "a") == 2


def _renamed_then_reused(epoch: int | None) -> tuple[LocalCatalog, Event]:
    """`a` renamed to `b` (id 1), a new `a` (id 2); the rename given `epoch` if not None.

    Returns the catalog and a Publish of the rename at 7's event: a template
    to craft another `EpochAssigned` at the same place in the log.
    """
    catalog = local("explicit")
    catalog.submit(create("a"))
    _publish(catalog, 1, 1)
    catalog.submit(command(AdvanceStableEpoch, epoch=1))
    catalog.submit(command(RenameTable, table_name="a", new_table_name="b"))
    if epoch is not None:
        _publish(catalog, 1, epoch)
    catalog.submit(create("a"))
    return catalog, last(catalog)


@pytest.mark.parametrize(("rename_epoch", "earlier"), [(None, "no epoch"), (6, "epoch 6")])
def test_an_epoch_assigned_out_of_order_stops_the_fold_and_the_follower(
    rename_epoch: int | None, earlier: str
) -> None:
    catalog, created = _renamed_then_reused(rename_epoch)
    image = catalog.image
    assert [c.schema_epoch for c in image.pending_changes(1)] == [rename_epoch or 0]
    crafted = reseal(
        created,
        resource_version=created.resource_version + 1,
        prev_hash=created.hash,
        event_id="crafted",
        command_id=None,
        tables=(),
        requirements=(),
        mutations=(),
        intent=EpochAssigned(table_id=2, epoch=5, resource_versions=(created.resource_version,)),
    )
    message = f"earlier change at {created.resource_version - 1 - bool(rename_epoch)} "
    with pytest.raises(EpochOutOfOrder, match=message + rf"\(same key .*\) has {earlier}"):
        apply(image, crafted)
    feed = CatalogFeed(image, 0, History(image.resource_version))
    with pytest.raises(DivergedAt, match="offset 3") as stopped:
        feed.offer(crafted, 3)
    assert isinstance(stopped.value.__cause__, EpochOutOfOrder)
    assert feed.image is image


def test_an_exchange_back_never_repeats_a_table_id_and_version() -> None:
    catalog = local()
    catalog.submit(create("parts", partitions=("p0",)))
    catalog.submit(create("plain"))
    catalog.submit(command(AlterTable, table_name="plain", set_options={"x": "1"}))
    exchange = dict(
        table_name="parts", partition_name="p0", other_schema_name=SCHEMA, other_table_name="plain"
    )
    versions = []
    for _ in range(3):  # `plain` takes id 2, 3 again, then 2 again
        catalog.submit(command(ExchangePartition, **exchange))
        plain = catalog.image.head.table_by_name(SCHEMA, "plain")
        assert plain is not None
        versions.append((plain.table_id, plain.version, dict(catalog.image.retired_versions)))
    catalog.submit(command(TruncatePartition, table_name="parts", partition_name="p0"))
    catalog.submit(command(TruncateTable, table_name="plain"))
    pairs = [(t.table_id, t.version) for e in catalog.events for t in e.tables]
    assert len(pairs) == len(set(pairs))
    # Id 3 was at 3 when it became a partition (create, alter, exchange); id 2 takes
    # the name `plain` above that, at 4, and leaves it at 5; id 3 takes it at 6 and
    # leaves it at 7 (issue 50: versions go on per name too).
    assert versions == [(2, 4, {3: 3}), (3, 6, {2: 5}), (2, 8, {3: 7})]
    assert replay(Image.empty(CATALOG), catalog.events) == catalog.image


@pytest.mark.parametrize("seed", range(6))
def test_random_explicit_workloads_with_truncate_and_exchange_end_with_published_equal_head(
    seed: int,
) -> None:
    work = Workload([CATALOG], seed=seed, partitions=True)
    work.set_mode(CATALOG, "explicit")
    refused = 0
    for _ in range(300):
        if work.rng.random() < 0.3:
            refused += not work.publish_some(CATALOG)
        else:
            work.random_command(CATALOG)
    catalog = work.catalogs[CATALOG]
    kinds = {type(e.intent).__name__ for e in catalog.events}
    assert {"TableTruncated", "PartitionExchanged", "EpochAssigned"} <= kinds
    assert refused, "no publish was refused: the workload does not reorder anything"
    work.publish_all(CATALOG)
    image = catalog.image
    assert not image.pending and image.published == image.head
    assert replay(Image.empty(CATALOG), catalog.events) == image
    pairs = [(t.table_id, t.version) for e in catalog.events for t in e.tables]
    assert len(pairs) == len(set(pairs))
