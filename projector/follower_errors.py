"""Errors of the read side: followers, watches and snapshots."""

from events.errors import MetalogError
from projector.errors import ApplyError, Divergence


class FollowerError(MetalogError):
    """Root of the follower's own errors."""


class ResourceVersionTooOld(FollowerError):
    """A watch asked for changes older than the follower still holds (Kubernetes' 410 Gone).

    Attributes:
        requested: The resource_version the caller asked to watch from.
        oldest: The oldest resource_version a watch may start from now.
    """

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(
            f"resource_version {requested} is too old: this follower keeps changes after "
            f"{oldest} only; re-list (read `current()`) and watch from its resource_version"
        )
        self.requested = requested
        self.oldest = oldest


class WaitTimeout(FollowerError, TimeoutError):
    """`wait_for` gave up before the follower reached the resource_version."""

    def __init__(self, catalog: str, wanted: int, reached: int, timeout: float) -> None:
        super().__init__(
            f"catalog `{catalog}` reached resource_version {reached}, not {wanted}, within "
            f"{timeout:g} s: check the follower's lag and gaps (`stats()`)"
        )
        self.catalog = catalog
        self.wanted = wanted
        self.reached = reached


class FollowerStopped(FollowerError):
    """The follower stopped on an error (see `__cause__`) and holds its last good image."""


class SnapshotError(FollowerError):
    """A snapshot file is missing, incomplete, or does not match its checksum."""


class DivergedAt(Divergence):
    """`Divergence` at a known place in the log: the follower stops there.

    Attributes:
        partition: The events partition.
        offset: The offset of the event that does not fit.
    """

    def __init__(self, cause: Divergence, partition: int, offset: int) -> None:
        ApplyError.__init__(
            self,
            cause.resource_version,
            f"partition {partition} offset {offset}: {cause}; the follower stopped and "
            "holds its last good image",
        )
        self.partition = partition
        self.offset = offset
