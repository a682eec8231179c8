"""Whether the log holds everything it should: what a bundle's manifest says, and every
kept checkpoint note.

Checked once every record was read (`Verifier.finish`), in this order: each catalog
the manifest names (in the manifest's order) must be there up to its last
resource_version; each kept note (a bundle's own `checkpoints/*.note`, and
`--against`) must be in its catalog's log; each partition the manifest counts must
hold its records; an older manifest's total count must match. Each shortfall is a
`truncated` fault (the records end too early) or a `deleted` one (they start too
late), named where the missing records belong: the catalog's partition and the
first offset they could be at (docs/audit.md, "Offline bundle").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from events.checkpoint import Checkpoint
from events.topics import partition_for
from projector.audit.faults import Fault, FaultKind
from projector.audit.manifest import Contents, Extent

UNKNOWN = "?"
"""The catalog of a fault about records that name none (they do not decode)."""


@dataclass(frozen=True, slots=True)
class Reached:
    """How far the log of one catalog went.

    Attributes:
        partition: The partition of its last record.
        next_offset: The offset after its last record.
        resource_version: Its last resource_version.
        kept_found: The resource_versions of kept notes found with their chain hash.
    """

    partition: int
    next_offset: int
    resource_version: int
    kept_found: frozenset[int]


@dataclass(frozen=True, slots=True)
class Expected:
    """What the log must hold besides being a good chain.

    Attributes:
        contents: What a bundle's manifest says its records hold (None: not a bundle).
        kept: Kept checkpoint notes by where they came from (a file).
        ends: Each partition's end offset (its count places a catalog by its name).
        only: Only this catalog is verified (None: all).
    """

    contents: Contents | None = None
    kept: Mapping[str, Checkpoint] | None = None
    ends: Mapping[int, int] | None = None
    only: str | None = None


def shortfall(expected: Expected, catalogs: Mapping[str, Reached],
              partitions: Mapping[int, Extent], records: int) -> Fault | None:  # fmt: skip
    """The first thing the log lacks, or None.

    Args:
        expected: What it must hold.
        catalogs: How far each catalog's log went.
        partitions: The records read of each partition.
        records: The records read in all.
    """
    contents = expected.contents or Contents()
    for catalog, extent in contents.catalogs.items():
        if expected.only in (None, catalog):
            fault = _catalog_short(expected, catalog, extent, catalogs.get(catalog), partitions)
            if fault is not None:
                return fault
    for source, note in (expected.kept or {}).items():
        if expected.only in (None, note.catalog):
            reached = catalogs.get(note.catalog)
            if reached is None or note.resource_version not in reached.kept_found:
                where = _next(expected, note.catalog, reached, partitions)
                last = 0 if reached is None else reached.resource_version
                return Fault("truncated", note.catalog, *where, last + 1,
                             f"the log ends at resource_version {last}, before the kept "
                             f"checkpoint at {note.resource_version} ({source})")  # fmt: skip
    if expected.only is None:
        return _partition_short(contents, partitions, records)
    return None


def _catalog_short(
    expected: Expected, catalog: str, extent: Extent | None, reached: Reached | None,
    partitions: Mapping[int, Extent],
) -> Fault | None:
    last = 0 if reached is None else reached.resource_version
    said = "its manifest names it" if extent is None else (
        f"its manifest says {extent.records} record(s) in partition {extent.partition}, "
        f"offsets {extent.first_offset}..{extent.last_offset}, through resource_version "
        f"{extent.resource_version}")  # fmt: skip
    if reached is None:
        partition, offset = _next(expected, catalog, None, partitions)
        return Fault("truncated", catalog, partition, offset, 1,
                     f"the bundle holds no record of catalog `{catalog}`; {said}")  # fmt: skip
    if extent is not None and extent.resource_version is not None \
            and last < extent.resource_version:  # fmt: skip
        return Fault("truncated", catalog, reached.partition, reached.next_offset, last + 1,
                     f"the bundle's records of catalog `{catalog}` end at resource_version "
                     f"{last}; {said}")  # fmt: skip
    return None


def _next(expected: Expected, catalog: str, reached: Reached | None,
          partitions: Mapping[int, Extent]) -> tuple[int, int]:  # fmt: skip
    """Where a catalog's missing records belong: after its last record; for a catalog with
    none, where the manifest says it starts, else the partition its name maps to from its
    first record read (offset -1 when none was read; (-1, -1) when the partitions are not
    known)."""
    if reached is not None:
        return reached.partition, reached.next_offset
    extent = (expected.contents or Contents()).catalogs.get(catalog)
    if extent is not None:
        return extent.partition, extent.first_offset
    if not expected.ends:
        return -1, -1
    partition = partition_for(catalog, len(expected.ends))
    read = partitions.get(partition)
    return partition, -1 if read is None else read.first_offset


def _partition_short(contents: Contents, partitions: Mapping[int, Extent],
                     records: int) -> Fault | None:  # fmt: skip
    for partition, extent in contents.partitions.items():
        read = partitions.get(partition)
        said = (f"its manifest says {extent.records} record(s) at offsets "
                f"{extent.first_offset}..{extent.last_offset}")  # fmt: skip
        if read is None or read.last_offset < extent.last_offset:
            at = extent.first_offset if read is None else read.last_offset + 1
            held = "no record" if read is None else f"records up to offset {read.last_offset}"
            return Fault("truncated", UNKNOWN, partition, at, -1,
                         f"the bundle holds {held} of partition {partition}; {said}")
        if read.first_offset > extent.first_offset:
            return Fault("deleted", UNKNOWN, partition, extent.first_offset, -1,
                         f"the bundle's partition {partition} starts at offset "
                         f"{read.first_offset}; {said}")  # fmt: skip
        if read.records < extent.records:
            return Fault("deleted", UNKNOWN, partition, -1, -1,
                         f"the bundle holds {read.records} record(s) of partition {partition}; "
                         f"{said}")  # fmt: skip
    if not contents.partitions and contents.records is not None and records != contents.records:
        kind: FaultKind = "deleted" if records < contents.records else "inserted"
        return Fault(kind, UNKNOWN, -1, -1, -1, f"the bundle holds {records} record(s); its "
                     f"manifest says {contents.records}")  # fmt: skip
    return None
