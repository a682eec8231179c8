"""A bundle's manifest: what the exporter wrote, so a verifier can tell what is missing.

Besides the topic and the partitions' end offsets, the manifest says what the
records hold (`Contents`): per catalog its partition, first and last offset,
record count and last resource_version, and per partition its record count
and first and last offset (`Extent`). `Tally` counts them as the records are
written; `read_contents` reads them back, and reads the manifests written
before (`catalogs` a list of names, no `partitions`): then only the names and
the total count are known, and a verifier checks what it can.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from projector.errors import BundleDamaged


@dataclass(frozen=True, slots=True)
class Extent:
    """Where a run of records lies in a partition.

    Attributes:
        partition: The events partition.
        records: How many records.
        first_offset: The first one's offset.
        last_offset: The last one's offset.
        resource_version: For a catalog, its last resource_version (None for a partition).
    """

    partition: int
    records: int
    first_offset: int
    last_offset: int
    resource_version: int | None = None

    def document(self) -> dict[str, int]:
        """The manifest's JSON object (a partition's has no `partition` nor `resource_version`)."""
        fields = {"records": self.records, "first_offset": self.first_offset,
                  "last_offset": self.last_offset}  # fmt: skip
        if self.resource_version is None:
            return fields
        return {"partition": self.partition, **fields, "resource_version": self.resource_version}


@dataclass(frozen=True, slots=True)
class Contents:
    """What a manifest says the bundle's records hold.

    Attributes:
        records: Records in all (None: the manifest does not say).
        catalogs: Per catalog named, its extent (None: an older manifest names it only),
            in log order (partition, first offset).
        partitions: Per partition, its extent (empty: an older manifest).
        detailed: The manifest states every catalog's and partition's extent (False: an
            older manifest, which names only the catalogs with a checkpoint).
    """

    records: int | None = None
    catalogs: dict[str, Extent | None] = field(default_factory=dict)
    partitions: dict[int, Extent] = field(default_factory=dict)
    detailed: bool = False


@dataclass(slots=True)
class Tally:
    """Counts records as a bundle is written (`add`), for its manifest (`contents`)."""

    _partitions: dict[int, list[int]] = field(default_factory=dict)
    _catalogs: dict[str, list[int]] = field(default_factory=dict)

    def add(self, partition: int, offset: int, catalog: str | None, resource_version: int) -> None:
        """Count one record (`catalog` None: it does not decode)."""
        count = self._partitions.get(partition)
        if count is None:
            self._partitions[partition] = [1, offset, offset]
        else:
            count[0] += 1
            count[2] = offset
        if catalog is None:
            return
        seen = self._catalogs.get(catalog)
        if seen is None:
            self._catalogs[catalog] = [partition, 1, offset, offset, resource_version]
        else:
            seen[1] += 1
            seen[3], seen[4] = offset, resource_version

    def contents(self) -> Contents:
        """What was counted."""
        return Contents(
            sum(count for count, _, _ in self._partitions.values()),
            {name: Extent(*seen) for name, seen in
             sorted(self._catalogs.items(), key=lambda item: (item[1][0], item[1][2]))},
            {p: Extent(p, *count) for p, count in sorted(self._partitions.items())},
            detailed=True,
        )


def contents_document(contents: Contents) -> dict[str, Any]:
    """The manifest's `records`, `partitions` and `catalogs`."""
    return {
        "records": contents.records,
        "partitions": {str(p): extent.document() for p, extent in contents.partitions.items()},
        "catalogs": {name: extent.document() if extent else None
                     for name, extent in contents.catalogs.items()},
    }  # fmt: skip


def read_contents(manifest: dict[str, Any], where: str) -> Contents:
    """The contents a manifest states (see the module's docstring for older manifests).

    Raises:
        BundleDamaged: A field is not of its documented shape.
    """
    try:
        records = manifest.get("records")
        catalogs: dict[str, Extent | None]
        named = manifest.get("catalogs", [])
        if isinstance(named, list):
            catalogs = {str(name): None for name in named}
        else:
            catalogs = {str(name): Extent(int(e["partition"]), int(e["records"]),
                                          int(e["first_offset"]), int(e["last_offset"]),
                                          int(e["resource_version"]))
                        for name, e in named.items()}  # fmt: skip
        partitions = {int(p): Extent(int(p), int(e["records"]), int(e["first_offset"]),
                                     int(e["last_offset"]))
                      for p, e in manifest.get("partitions", {}).items()}  # fmt: skip
        return Contents(None if records is None else int(records), catalogs, partitions,
                        detailed="partitions" in manifest)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise BundleDamaged(f"{where}: the manifest's records, catalogs or partitions are not "
                            f"as docs/audit.md says ({type(exc).__name__}: {exc}): the bundle "
                            "is damaged; export it again") from exc  # fmt: skip
