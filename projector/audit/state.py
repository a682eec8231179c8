"""The verifier's state of one catalog: where its log stands, what it must still find."""

from __future__ import annotations

from dataclasses import dataclass, field

from events.checkpoint import Checkpoint
from events.event import GENESIS_HASH
from projector.audit.faults import CatalogSummary
from projector.audit.inserted import Seen
from projector.fold.apply import Folding


@dataclass(slots=True)
class CatalogState:
    """What the verifier holds of one catalog between its records (`projector.audit.verify`).

    Attributes:
        summary: What the report says of the catalog so far.
    """

    summary: CatalogSummary
    folding: Folding
    """The fold over the catalog's events so far (with `fold` on)."""
    partition: int = -1
    next_offset: int = 0
    last_hash: bytes = GENESIS_HASH
    versions: dict[int, int] = field(default_factory=dict)
    unsigned_election: Seen | None = None
    base: tuple[int, bytes] = (0, GENESIS_HASH)
    """The last good checkpoint (its resource_version and hash): the window starts after it."""
    window: list[tuple[int, int, bytes]] = field(default_factory=list)
    """The records since `base` (partition, offset, bytes): read again only if a checkpoint
    disagrees with the chain."""
    kept: dict[int, list[Checkpoint]] = field(default_factory=dict)
    """The kept notes of the catalog, by the resource_version each covers."""
    kept_found: set[int] = field(default_factory=set)
    end: int | None = None
    """The last resource_version a bundle's manifest says the catalog has (None: unknown)."""
    stops: frozenset[int] = frozenset()
    """The resource_versions the fast path leaves to `_check`: kept notes', and `end + 1`."""
    latest: Checkpoint | None = None
