"""A fold that an event's failure leaves as before it: `Folding` for a leader's rebuild.

A leader rebuilds its catalogs by restoring the events of its partition one by
one (`producers.leader.local.LocalCatalog.restore`), thousands of them before it
decides again. With `apply`, each costs a new draft, a new view (a HAMT path copied)
and a new image; `Folding` writes a run of auto-mode changes to one draft and
builds the view once, about 29 % fewer instructions for a run of alters
(docs/benchmarks/fast-path.md). A leader must go on after an event it cannot
apply, as `apply` lets it (the image stays as it was); `Folding` is spent by one.
`Running` is `Folding` that is not: a failed event leaves it as before the event.
"""

from __future__ import annotations

from events.event import Event
from projector.fold.apply import Folding
from projector.fold.image import Image

RUN_LIMIT = 4096
"""The most events a run holds open: past it the run ends (its view is built), so a fold
that is never asked for its image (a warm standby's) keeps no more of them for a failure."""


class Running(Folding):
    """`Folding` that a failed event leaves as it was before the event (as `apply` does).

    A run's draft may hold part of the failed event, so the run is folded again
    from the image it started on (only when an event fails).

    Args:
        image: The image to start from (never changed).
    """

    def __init__(self, image: Image) -> None:
        super().__init__(image)
        self._start = image
        """The image the open run started on (the image itself while none is open)."""
        self._since: list[Event] = []
        """The events applied since `_start`."""

    def apply(self, event: Event) -> None:
        """Apply the next event; raises as `apply` does, and leaves the fold as before it."""
        if self._draft is None:
            self._start, self._since = self._image, []
        try:
            super().apply(event)
        except BaseException:
            self._image, self._draft = self._start, None
            since, self._since = self._since, []
            for applied in since:  # they were applied once: they apply again
                self.apply(applied)
            raise
        self._since.append(event)
        if len(self._since) >= RUN_LIMIT:
            self.image()

    def image(self) -> Image:
        """The image after the events applied so far (it ends the open run, if any)."""
        image = super().image()
        self._start, self._since = image, []
        return image
