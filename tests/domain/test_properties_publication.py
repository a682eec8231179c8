"""The publication-order rule over random command sequences (issue 15, items 4 and 6).

DESIGN.md, "Publication order", gives the oracle: for every key and every
table id, changes become visible in resource_version order; once every change
is published and released, the published view equals the head. The steps
(`tests.domain.steps.valid_steps`) publish tables at random epochs, advance
the stable epoch, switch modes, and reuse names across creates, renames,
drops, truncates and exchanges; at the end every pending change is published
at one epoch above all and released.

Each test also counts, over all its examples, what the steps did, and fails
when too little was accepted, published or released to prove anything.
"""

from collections import Counter, defaultdict
from itertools import chain

from hypothesis import given, settings
from hypothesis import strategies as st

from events.event import Event
from projector.fold.draft import mutated
from projector.fold.image import Image
from projector.fold.view import View
from tests.domain.builders import CATALOG
from tests.domain.runs import PROPERTIES, Run, describe, difference
from tests.domain.steps import Step, plans, valid_steps

MODES = st.sampled_from(("explicit", "explicit", "auto"))  # the rule matters in explicit
Shared = tuple[str, str | int]
"""A key (`("key", key)`) or a table id (`("table", id)`) that changes can share."""


class VisibleOrder:
    """When each change becomes visible, checked against the rule at every step.

    A change is visible once it is no longer pending in the image. Two checks:
    a change never becomes visible while an earlier change that shares a key or
    a table id with it stays hidden, and the published view is the fold, in
    resource_version order, of exactly the visible changes.
    """

    def __init__(self) -> None:
        self._seen = 0
        self._hidden: dict[int, Event] = {}
        self._visible: dict[int, Event] = {}
        self._history: defaultdict[Shared, list[int]] = defaultdict(list)
        self._fold = View(CATALOG)
        self._folded_to = 0

    def check(self, image: Image, log: list[Event]) -> None:
        """Take the new events of `log` and check the rule on `image`."""
        for event in log[self._seen :]:
            if event.is_change:
                self._hidden[event.resource_version] = event
                for shared in _shares(event):
                    self._history[shared].append(event.resource_version)
        self._seen = len(log)
        newly = sorted(rv for rv in self._hidden if rv not in image.pending)
        if not newly:
            return
        at = log[-1].resource_version
        for rv in newly:
            for shared in _shares(self._hidden[rv]):
                for earlier in self._history[shared]:
                    if earlier >= rv:
                        break
                    shown = earlier in self._visible or earlier in newly
                    assert shown, (
                        f"change rv {rv} ({describe(self._hidden[rv])}) became visible at rv "
                        f"{at} while the earlier change rv {earlier} "
                        f"({describe(self._hidden[earlier])}) that shares {shared} is hidden"
                    )
        batch = [self._hidden.pop(rv) for rv in newly]
        self._visible.update((e.resource_version, e) for e in batch)
        if newly[0] < self._folded_to:
            # An earlier change became visible after a later one: fold everything again.
            batch = [self._visible[rv] for rv in sorted(self._visible)]
            self._fold = View(CATALOG)
        self._fold = mutated(self._fold, chain.from_iterable(e.mutations for e in batch))
        self._folded_to = max(self._visible)
        same = image.published == self._fold  # (a plain assert would print both views whole)
        assert same, (
            f"after rv {at} the published view is not the changes made visible, applied in "
            f"resource_version order: {difference(image.published, self._fold)}"
        )


def _shares(event: Event) -> set[Shared]:
    return {("key", m.key) for m in event.mutations} | {("table", t.table_id) for t in event.tables}


def test_changes_become_visible_in_resource_version_order_for_every_key_and_table_id() -> None:
    totals: Counter[str] = Counter()

    @settings(PROPERTIES, max_examples=150)
    @given(mode=MODES, steps=plans(valid_steps, min_size=12))
    def visible_in_order(mode: str, steps: list[Step]) -> None:
        run = Run(mode)
        order = VisibleOrder()
        for _ in chain(run.play(steps), run.publish_everything()):
            order.check(run.image, run.log)
        totals.update(run.stats)

    visible_in_order()
    _not_vacuous(totals)


def test_once_every_change_is_published_and_released_the_published_view_equals_head() -> None:
    totals: Counter[str] = Counter()

    @settings(PROPERTIES, max_examples=150)
    @given(mode=MODES, steps=plans(valid_steps, min_size=12))
    def published_equals_head(mode: str, steps: list[Step]) -> None:
        run = Run(mode)
        for _ in run.play(steps):
            pass
        refusals = [describe(o) for _, _, o in run.publish_everything() if not isinstance(o, Event)]
        image = run.image
        assert not image.pending, (
            f"{len(image.pending)} change(s) stay pending after publishing every table at one "
            f"epoch and releasing it; refusals: {refusals}"
        )
        same = image.published == image.head
        assert same, (
            f"everything is published and released (stable epoch {image.stable_epoch}), yet "
            f"the published view is not the head: {difference(image.published, image.head)}"
        )
        totals.update(run.stats)

    published_equals_head()
    _not_vacuous(totals)


def _not_vacuous(totals: Counter[str]) -> None:
    """The steps did enough: accepted, published and released changes, reused names, new ids."""
    decided = totals["accepted"] + totals["rejected"]
    assert totals["accepted"] >= decided * 0.3, totals
    assert totals["published"] >= 300 and totals["released"] >= 300, totals
    assert totals["name reused"] >= 50, totals
    for kind in ("create", "drop", "rename", "truncate", "truncate_partition", "exchange"):
        assert totals[f"accepted:{kind}"] >= 10, (kind, totals)
    assert totals["accepted:publish"] >= 10 and totals["accepted:advance"] >= 10, totals
