"""Why the fold refused an event: the log and the image disagree.

None of these is ever skipped: a follower that raises one stops applying,
holds its last good image and alerts (DESIGN.md, "Read paths").
"""

from events.errors import MetalogError


class ApplyError(MetalogError):
    """An event cannot be applied to the image; `resource_version` names the event."""

    def __init__(self, resource_version: int, message: str) -> None:
        super().__init__(f"event at resource_version {resource_version}: {message}")
        self.resource_version = resource_version


class Divergence(ApplyError):
    """The event does not fit the image: a requirement fails or a version jumps.

    The leader checked the same requirement on the same state, so a failure
    means this image or the log is wrong. Stop, alert, and rebuild the image
    from a snapshot you trust plus the log.
    """


class SequenceGap(ApplyError):
    """An event skipped resource versions: some events were not delivered."""

    def __init__(self, expected: int, got: int) -> None:
        super().__init__(
            got,
            f"expected resource_version {expected}: events {expected}..{got - 1} are "
            "missing; hold the image and re-read the log from resource_version "
            f"{expected}",
        )
        self.expected = expected
        self.got = got


class StaleLeader(ApplyError):
    """The event was written by a leader older than one the image already saw."""

    def __init__(self, resource_version: int, event_epoch: int, image_epoch: int) -> None:
        super().__init__(
            resource_version,
            f"leader_epoch {event_epoch} is below the current leader_epoch {image_epoch}: "
            "a fenced leader wrote it; send it to the DLQ and keep applying",
        )
        self.event_epoch = event_epoch
        self.image_epoch = image_epoch
