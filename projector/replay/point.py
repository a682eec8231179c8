"""A point in a catalog's log: a resource_version or a time; where a replay stops.

Pure: no Kafka, no clock. Time maps to resource_version by each event's
`occurred_at`: the point at time T is the last event before the first event
stamped after T (a leader stamps its events in order, so that is every event
stamped at or before T).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from events.event import Event
from projector.errors import ReplayError
from projector.fold.apply import Folding
from projector.fold.image import Image
from projector.heap import collector_paused


@dataclass(frozen=True, slots=True)
class Point:
    """Where a replay stops: after `resource_version`, or after the last event at or before `time`.

    Exactly one of the two is set.
    """

    resource_version: int | None = None
    time: datetime | None = None

    def __str__(self) -> str:
        if self.resource_version is not None:
            return f"resource_version {self.resource_version}"
        assert self.time is not None
        return self.time.isoformat()

    def passed_by(self, event: Event) -> bool:
        """Whether `event` lies after the point (the replay stops before it)."""
        if self.resource_version is not None:
            return event.resource_version > self.resource_version
        assert self.time is not None
        return event.occurred_at > self.time


END = Point(resource_version=2**63 - 1)
"""The point after every event: the whole log."""


def parse_point(text: str) -> Point:
    """A point from the command line: a resource_version (`42`) or an ISO 8601 time.

    A time without an offset is read as UTC.

    Raises:
        ReplayError: It is neither.
    """
    text = text.strip()
    if text.isdigit():
        return Point(resource_version=int(text))
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ReplayError(
            f"`{text}` is neither a resource_version (an integer) nor an ISO 8601 time "
            "such as 2026-01-01T12:00:00Z"
        ) from None
    return Point(time=moment if moment.tzinfo else moment.replace(tzinfo=UTC))


@collector_paused()  # what it builds is acyclic (`projector.heap`)
def replay_until(
    image: Image,
    events: Iterable[Event],
    point: Point,
    seen: Callable[[Event], None] | None = None,
    past: list[Event] | None = None,
) -> Image:
    """Apply `events` (in log order) to `image` until the first one past `point`.

    Events at or below `image.resource_version` (a snapshot holds them) are
    skipped as the fold skips re-deliveries.

    Args:
        image: The image to start from (empty, or loaded from a snapshot).
        events: The catalog's events in log order; read only as far as needed.
        point: Where to stop.
        seen: Called with every event read, before it is applied (progress).
        past: Given the first event past the point, if one is read (where the rest begins).

    Returns:
        The image at the point (or at the end of `events`, if it comes first).

    Raises:
        ReplayError: A resource_version point lies below `image` (a snapshot past it).
        ApplyError: An event does not fit (the log is damaged: `metalog audit verify`).
    """
    wanted = point.resource_version
    if wanted is not None and wanted < image.resource_version:
        raise ReplayError(
            f"resource_version {wanted} lies below the starting image's "
            f"{image.resource_version}: start from an older snapshot or the empty log"
        )
    folding = Folding(image)
    for event in events:
        if seen is not None:
            seen(event)
        if point.passed_by(event):
            if event.resource_version <= folding.resource_version:
                continue  # held already (by a snapshot): it marks no point
            if past is not None:
                past.append(event)
            break
        folding.apply(event)  # skips what it holds already
    return folding.image()
