"""`projector.fold.gate`, the Spark fold's rules, against the Python fold's published view."""

from __future__ import annotations

import random

import pytest

from bench.workload import Workload
from events.commands import AdvanceStableEpoch, Publish, RenameTable
from events.event import Event
from events.intents import EpochAssigned, Intent, StableEpochAdvanced
from events.values import KeyValue
from projector.errors import EpochOutOfOrder
from projector.fold.gate import Envelope, Gate
from tests.domain.builders import CATALOG, command, create, local
from tests.follower.workload import reseal


def _published(events: list[Event], seed: int, batch: int = 7) -> tuple[Gate, dict[str, KeyValue]]:
    """Feed `events` shuffled within batches, with duplicates, and apply what is released."""
    rng = random.Random(seed)
    delivered = [*events, *rng.sample(events, len(events) // 4)]
    rng.shuffle(delivered)
    gate, view = Gate(), dict[str, KeyValue]()
    for start in range(0, len(delivered), batch):
        for event in delivered[start:start + batch]:
            gate.admit(Envelope.of(event, payload=event))
        released, stale = gate.advance()
        assert stale == []
        for change in released:
            for mutation in change.payload.mutations:
                if mutation.value is None:
                    view.pop(mutation.key, None)
                else:
                    view[mutation.key] = mutation.value
    return gate, view


@pytest.mark.parametrize("seed", range(6))
def test_released_changes_rebuild_the_published_view_in_both_modes(seed: int) -> None:
    rng = random.Random(seed)
    work = Workload(["auto", "explicit"], seed=seed)
    work.set_mode("explicit", "explicit")
    for _ in range(60):
        work.random_command("auto")
        work.random_command("explicit")
        if rng.random() < 0.3:
            work.publish_some("explicit")
    for name, catalog in work.catalogs.items():
        gate, view = _published(list(catalog.events), seed)
        image = catalog.image
        assert view == dict(image.published.items()), name
        state = gate.state
        assert (state.resource_version, state.stable_epoch, state.leader_epoch,
                state.publish_mode) == (image.resource_version, image.stable_epoch,
                                        image.leader_epoch, image.publish_mode)
        assert sorted(c.resource_version for c in gate.pending()) == sorted(image.pending)
    explicit = work.catalogs["explicit"].image
    assert explicit.pending and explicit.stable_epoch, "the workload published nothing or all"


def test_a_gap_holds_everything_after_it_until_it_is_filled() -> None:
    work = Workload(["c"], seed=1)
    work.run(20)
    events = list(work.catalogs["c"].events)
    gate = Gate()
    for event in events[:5] + events[6:]:
        gate.admit(Envelope.of(event))
    released, _ = gate.advance()
    assert gate.state.resource_version == 5
    assert [e.resource_version for e in released] == [
        e.resource_version for e in events[:5] if e.mutations]
    gate.admit(Envelope.of(events[5]))
    gate.advance()
    assert gate.state.resource_version == events[-1].resource_version and not gate.waiting


def _crafted(after: Event, intent: Intent) -> Event:
    """A control event right after `after` in its chain, as another producer could write it."""
    return reseal(after, resource_version=after.resource_version + 1, prev_hash=after.hash,
                  event_id=f"crafted-{after.resource_version + 1}", command_id=None, tables=(),
                  requirements=(), mutations=(), intent=intent)


def test_an_epoch_that_breaks_the_publication_order_stops_the_gate() -> None:
    """`a` renamed to `b`, a new `a`; the new `a` given an epoch before the rename."""
    catalog = local("explicit")
    catalog.submit(create("a"))
    catalog.submit(command(Publish, table_id=1, epoch=1))
    catalog.submit(command(AdvanceStableEpoch, epoch=1))
    catalog.submit(command(RenameTable, table_name="a", new_table_name="b"))
    catalog.submit(create("a"))
    created = catalog.events[-1]
    assigned = _crafted(created, EpochAssigned(table_id=2, epoch=2,
                                               resource_versions=(created.resource_version,)))
    released = _crafted(assigned, StableEpochAdvanced(epoch=2))
    gate = Gate()
    for event in [*catalog.events, assigned, released]:
        gate.admit(Envelope.of(event))

    with pytest.raises(EpochOutOfOrder, match=(
            f"resource_version {assigned.resource_version}: gives epoch 2 to the change at "
            f"resource_version {created.resource_version} while the earlier change at "
            f"{created.resource_version - 1} \\(same key `__table_name/{CATALOG}/public/a`\\) "
            "has no epoch")):
        gate.advance()
