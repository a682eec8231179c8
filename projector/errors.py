"""Errors of the read side: the fold, followers, watches and snapshots.

When the fold refuses an event, the log and the image disagree. None of these
is ever skipped: a follower that raises one stops applying, holds its last
good image and alerts (DESIGN.md, "Read paths").
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


class EpochOutOfOrder(Divergence):
    """An `EpochAssigned` breaks the publication-order rule (DESIGN.md, "Publication order").

    It gives a change an epoch while an earlier change sharing a table id or
    a key has none, or a higher one: applied, followers would see the two in
    the wrong order. The leader's `Publish` refuses that, so the log was
    written by another producer or is corrupt.
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


# -- the follower, watches and snapshots --------------------------------------


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


# -- Kafka plumbing (projector.kafka) -----------------------------------------


class ClusterUnavailable(MetalogError):
    """The Kafka cluster or a metalog topic cannot be reached: retrying later is safe.

    `projector.kafka.errors.kafka_error` raises it (or the caller's kind of it) for
    librdkafka's errors.
    """


class TopicError(MetalogError):
    """A topic could not be created, described or deleted."""


class AccessDenied(MetalogError):
    """The cluster refused a principal an operation: its credentials or its ACLs.

    Attributes:
        kind: what Kafka said, e.g. ``TopicAuthorizationFailed`` or ``AuthenticationFailed``.
        principal: the user name the client signed in as (``ANONYMOUS`` without SASL).
        operation: what was refused, e.g. ``WRITE metalog.events``.
    """

    def __init__(self, kind: str, principal: str, operation: str, fix: str) -> None:
        self.kind = kind
        self.principal = principal
        self.operation = operation
        super().__init__(f"{kind}: principal {principal} may not {operation}: {fix}")


class CredentialsError(MetalogError):
    """A credentials file is missing, unreadable or holds no principal for the role asked."""


# -- Replay and audit (projector.replay, projector.audit) ----------------------


class ReplayError(MetalogError):
    """A replay point or a table to follow is malformed or outside the catalog's log."""


class BundleError(MetalogError):
    """A directory that is not a readable bundle, or one that cannot be written."""


class BundleDamaged(BundleError):
    """A bundle whose own parts are missing or unreadable: its manifest, a record file,
    a checkpoint note. It does not verify (the command exits 65, as for a fault)."""


# -- operations: metrics, health, traces --------------------------------------


class TelemetryError(MetalogError):
    """The metrics endpoint cannot be served (a port in use, a bad address)."""
