"""A leader's rebuild folds the events it restores as runs (`projector.fold.running`).

The reference is `apply`, one event after the other (`tests.domain.runs.Run`). On
the same random workloads, in both publish modes, a `LocalCatalog` that restores
the log in chunks of random sizes (its image asked for between two) gives the same
images and dedupe outcomes, decides the next commands alike, and an event that fails
leaves it as it was before the event, as `apply` leaves an image.
"""

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from events.commands import AlterTable
from events.event import Event
from producers.leader.local import LocalCatalog
from projector.errors import Divergence
from projector.fold.apply import apply
from projector.fold.image import Image
from projector.fold.running import Running
from tests.domain.builders import CATALOG, stamps
from tests.domain.runs import PROPERTIES, Run
from tests.domain.steps import MIXED, MODES, Step, make


def _applied(events: list[Event]) -> Image:
    """The reference image: `apply`, one event after the other, from the empty image."""
    return functools.reduce(apply, events, Image.empty(CATALOG))


def _played(mode: str, steps: list[Step]) -> Run:
    reference = Run(mode)
    for _ in reference.play(steps):
        pass
    return reference


@PROPERTIES
@given(mode=MODES, steps=MIXED, sizes=st.lists(st.integers(1, 12), min_size=1, max_size=8))
def test_a_restored_log_gives_the_images_and_outcomes_apply_gives(
    mode: str, steps: list[Step], sizes: list[int]
) -> None:
    reference = _played(mode, steps)
    log, local = reference.log, LocalCatalog(CATALOG, stamps())
    at, turn = 0, 0
    while at < len(log):
        size = sizes[turn % len(sizes)]
        for event in log[at : at + size]:
            local.restore(event)
        at, turn = at + size, turn + 1
        assert local.image == _applied(log[:at])
    assert local.image == reference.image
    expected = [
        (e.command_id, (e.resource_version, tuple((t.table_id, t.version) for t in e.tables),
                        e.schema_epoch))
        for e in log if e.command_id is not None
    ]  # fmt: skip
    assert local.committed_outcomes() == expected


def test_a_catalog_decides_after_its_restored_run_as_on_the_applied_image() -> None:
    reference = _played("auto", [])  # the preset tables: three creates
    local = LocalCatalog(CATALOG, stamps())
    for event in reference.log:
        local.restore(event)
    other = make(AlterTable, table_name="a", set_options={"ttl": "1d"})
    local.submit(other)
    (event,) = local.take_new_events()
    assert event.resource_version == len(reference.log) + 1
    assert local.image == apply(reference.image, event)


def test_an_event_that_fails_in_a_run_leaves_the_fold_as_before_it() -> None:
    *first, last = _played("auto", []).log
    # The epoch is checked after the draft took the mutations: the run holds part of it.
    broken = last.model_copy(update={"schema_epoch": last.schema_epoch + 5})
    running, local = Running(Image.empty(CATALOG)), LocalCatalog(CATALOG, stamps())
    for event in first:
        running.apply(event)
        local.restore(event)
    with pytest.raises(Divergence):
        running.apply(broken)
    with pytest.raises(Divergence):
        local.restore(broken)
    assert running.image() == local.image == _applied(first)
    running.apply(last)  # and each goes on from there
    local.restore(last)
    assert running.image() == local.image == _applied([*first, last])


def test_a_run_past_the_limit_is_ended_and_gives_the_same_image(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("projector.fold.running.RUN_LIMIT", 2)
    reference = _played("auto", [])
    running = Running(Image.empty(CATALOG))
    for event in reference.log:
        running.apply(event)
        assert len(running._since) < 2  # what a failure would fold again stays bounded
    assert running.image() == reference.image
