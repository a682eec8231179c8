"""Publication rules (WiredTiger): publish modes, Publish, AdvanceStableEpoch; Reload.

In `explicit` mode a change stays pending (epoch 0) until `Publish(table, E)`
gives it epoch E, and followers see it once the stable epoch reaches E.

The publication-order rule (DESIGN.md, "Publication order"): a change may
take epoch E only if every earlier change that shares a table id or a key
with it (one of the event's `tables`, one of its mutations' keys) already has
an epoch in (0, E]; released changes pass. So for every key and table id,
changes become visible in resource_version order, and once everything is
published and released the published view equals the head.

`Publish(table, E)` gives E to the table's unassigned pending changes in
resource_version order, and stops before the first that the rule forbids:
that one waits for an earlier change of another table, to be published first
(the `EpochAssigned` lists what took E). Stopping there, rather than refusing
the whole table, keeps interleaved changes publishable: after a swap of two
names (`a` → `t`, `b` → `a`, `t` → `b`), each table has a change that needs
one of the other's, and neither table could ever be published whole.
`Publish` fails, in this order, when:

1. the catalog is in auto mode (`WrongPublishMode`: nothing is ever pending);
2. the table has no pending change without an epoch (`NothingToPublish`);
3. E is not above the stable epoch (`EpochNotAboveStable`: it would be
   visible at once, behind changes already released);
4. a pending change of the table already has an epoch above E, or E is
   below the table's last published epoch (`EpochRegression`: a table's
   epochs never go down, so its changes appear in order);
5. the rule forbids the table's first unassigned change (`PublishOutOfOrder`,
   naming the earlier change, its resource_version and tables, that must be
   published first, at E or below).
"""

from events.commands import AdvanceStableEpoch, Publish, Reload, SetPublishMode
from events.intents import EpochAssigned, PublishModeSet, Reloaded, StableEpochAdvanced
from producers.decide.rules.common import check_version, no_expected_version
from producers.errors import (
    ChangesPending,
    EpochNotAboveStable,
    EpochRegression,
    NothingToPublish,
    PublishOutOfOrder,
    WrongPublishMode,
)
from projector.fold.image import Image, PendingChange


def publish(image: Image, command: Publish) -> EpochAssigned:
    """Publish(table, E): the `EpochAssigned` for the table's unassigned pending changes.

    All of them, or those before the first that must wait for another
    table's change (see the module docstring).
    """
    if image.publish_mode != "explicit":
        raise WrongPublishMode(
            f"catalog `{image.catalog}` publishes automatically: nothing is pending; "
            "SetPublishMode explicit first to publish by hand"
        )
    table, epoch = command.table_id, command.epoch
    info = image.head.table(table) or image.head.dropped_table(table)
    if info is not None:
        check_version(info, command.expected_version)
    changes = image.pending_changes(table)
    unassigned = [c for c in changes if c.schema_epoch == 0]
    if not unassigned:
        raise NothingToPublish(
            f"table id {table} has no pending change without an epoch"
            + (" (all already have one)" if changes else "")
            + ": change it first, or advance the stable epoch to release what is assigned"
        )
    if epoch <= image.stable_epoch:
        raise EpochNotAboveStable(
            f"epoch {epoch} is not above the stable epoch {image.stable_epoch}: "
            f"publish at {image.stable_epoch + 1} or later"
        )
    highest = max(c.schema_epoch for c in changes)
    last = image.table_schema_epochs.get(table, 0)
    if highest > epoch or last > epoch:
        raise EpochRegression(
            f"table id {table} already has epoch {max(highest, last)}: publish at "
            f"{max(highest, last)} or later, so its changes stay in order"
        )
    assigning: dict[int, None] = {}
    for change in unassigned:
        found = image.blocker(change, epoch, assigning)
        if found is not None:
            if not assigning:
                raise _out_of_order(table, epoch, change, *found)
            break
        assigning[change.resource_version] = None
    return EpochAssigned(table_id=table, epoch=epoch, resource_versions=tuple(assigning))


def _out_of_order(
    table: int, epoch: int, change: PendingChange, earlier: PendingChange, shared: str
) -> PublishOutOfOrder:
    tables = ", ".join(str(t) for t in dict.fromkeys(earlier.table_ids))
    if earlier.schema_epoch == 0:
        first = earlier.table_ids[0]
        fix = f"publish table id {first} first, at {epoch} or below, then table id {table}"
    else:
        fix = f"publish table id {table} at {earlier.schema_epoch} or later"
    return PublishOutOfOrder(
        f"table id {table}'s change at resource_version {change.resource_version} shares "
        f"{shared} with the earlier change at resource_version {earlier.resource_version} "
        f"(table ids {tables}), which has "
        + (f"epoch {earlier.schema_epoch}" if earlier.schema_epoch else "no epoch yet")
        + f": {fix}, so followers see them in order"
    )


def advance_stable_epoch(image: Image, command: AdvanceStableEpoch) -> StableEpochAdvanced:
    """AdvanceStableEpoch(E): E must be above the stable epoch."""
    no_expected_version(command)
    if command.epoch <= image.stable_epoch:
        raise EpochNotAboveStable(
            f"epoch {command.epoch} is not above the stable epoch {image.stable_epoch}: "
            f"advance to {image.stable_epoch + 1} or later"
        )
    return StableEpochAdvanced(epoch=command.epoch)


def set_publish_mode(image: Image, command: SetPublishMode) -> PublishModeSet:
    """SetPublishMode: switch modes; to auto only with nothing pending."""
    no_expected_version(command)
    if command.mode == image.publish_mode:
        raise WrongPublishMode(
            f"catalog `{image.catalog}` is already in {command.mode} mode: nothing to do"
        )
    if command.mode == "auto" and image.pending:
        raise ChangesPending(
            f"catalog `{image.catalog}` has {len(image.pending)} pending changes: publish "
            "them and advance the stable epoch past them before switching to auto"
        )
    return PublishModeSet(mode=command.mode)


def reload(image: Image, command: Reload) -> Reloaded:
    """Reload (Hasura): bumps the resource version only."""
    no_expected_version(command)
    return Reloaded()
