"""Snapshots: an image and its log position as one Parquet file, so a follower starts fast.

Layout: `{directory}/{catalog}/{resource_version:020d}.parquet` plus a
`.sha256` file next to it (`sha256sum -c` format). The rows are the typed
columnar layout of `projector.snapshot.columns` (format 4; read back by
`projector.snapshot.load`): one row per key, one Arrow column per value
field, column definitions stored once; `published` is left out when it is
the same view as `head` (auto mode); pending changes are Avro-encoded
events. The image's scalar fields, the format number and the log position
live in the Parquet schema metadata.

Writes are atomic: a temporary file is written and fsynced, then renamed;
the checksum file is written last, so a snapshot without one is incomplete
and ignored. A snapshot whose checksum, format or contents do not verify is
skipped with a warning and the next older one is tried (format 1 snapshots,
rows of JSON values, and format 2, without the retired table versions, are
refused as such).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
from immutables import Map

from events.errors import DecodeError
from projector.errors import SnapshotError
from projector.fold.image import Image
from projector.fold.view import View
from projector.heap import collector_paused
from projector.snapshot.arrow import system_allocator
from projector.snapshot.columns import image_batches
from projector.snapshot.layout import FORMAT, READABLE, SCHEMA
from projector.snapshot.load import load_views

log = logging.getLogger(__name__)

_META_KEY = b"metalog.snapshot"
_ERRORS = (OSError, KeyError, ValueError, TypeError, IndexError, pa.ArrowException, DecodeError)


@dataclass(frozen=True, slots=True)
class Position:
    """Where the log continues after a snapshot's image.

    Attributes:
        topic: The events topic.
        partition: The catalog's partition.
        next_offset: The first offset not covered by the image.
    """

    topic: str
    partition: int
    next_offset: int


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """What `list_snapshots` and `verify_snapshot` report about one file."""

    path: Path
    catalog: str
    resource_version: int
    keys: int
    size: int
    position: Position


def catalog_dir(directory: Path, catalog: str) -> Path:
    """The folder holding a catalog's snapshots."""
    return Path(directory) / quote(catalog, safe="")


def write_snapshot(directory: Path, image: Image, position: Position, keep: int = 3) -> Path:
    """Write `image` and `position` atomically; keep the newest `keep` snapshots of the catalog.

    Returns:
        The snapshot's path.
    """
    folder = catalog_dir(directory, image.catalog)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{image.resource_version:020d}.parquet"
    tmp = path.with_suffix(f".parquet.tmp{os.getpid()}")
    schema = SCHEMA.with_metadata({_META_KEY: json.dumps(_meta(image, position)).encode()})
    with collector_paused(), pq.ParquetWriter(tmp, schema, compression="zstd") as out:
        for batch in image_batches(image):
            out.write_batch(batch)
    digest = _sha256(tmp)
    _fsync(tmp)
    tmp.replace(path)
    _write_atomic(_checksum_path(path), f"{digest}  {path.name}\n".encode())
    _fsync(folder)
    for old in _complete(folder)[keep:]:
        old.unlink(missing_ok=True)
        _checksum_path(old).unlink(missing_ok=True)
    return path


def read_snapshot(path: Path) -> tuple[Image, Position]:
    """Load and verify one snapshot.

    Raises:
        SnapshotError: The file is incomplete, corrupt, or not a metalog snapshot.
    """
    path = Path(path)
    _verify_checksum(path)
    with system_allocator():  # a Parquet reader keeps the pool it was opened with
        return _read(path)


def _read(path: Path) -> tuple[Image, Position]:
    try:
        parquet = pq.ParquetFile(path)
        meta = json.loads((parquet.schema_arrow.metadata or {})[_META_KEY])
    except _ERRORS as exc:
        raise SnapshotError(
            f"{path}: not a metalog snapshot ({type(exc).__name__}: {exc})"
        ) from exc
    if meta.get("format") not in READABLE:
        raise SnapshotError(
            f"{path}: snapshot format {meta.get('format')} is not {FORMAT} (written by another "
            "metalog version): skipped; delete it once a newer snapshot exists"
        )
    try:
        with collector_paused():
            return _load(parquet, meta)
    except SnapshotError as exc:
        raise SnapshotError(f"{path}: does not load ({exc})") from exc
    except _ERRORS as exc:
        raise SnapshotError(f"{path}: does not load ({type(exc).__name__}: {exc})") from exc


def verify_snapshot(path: Path) -> SnapshotInfo:
    """Check a snapshot's checksum and that it loads; describe it.

    Raises:
        SnapshotError: It does not verify.
    """
    image, position = read_snapshot(path)
    return SnapshotInfo(
        Path(path), image.catalog, image.resource_version, len(image.head),
        Path(path).stat().st_size, position,
    )  # fmt: skip


def list_snapshots(directory: Path, catalog: str) -> list[Path]:
    """A catalog's complete snapshots (with a checksum file), newest first."""
    folder = catalog_dir(directory, catalog)
    return _complete(folder) if folder.is_dir() else []


def has_snapshot(directory: Path, catalog: str, resource_version: int) -> bool:
    """Whether a complete snapshot of the catalog at `resource_version` exists already."""
    path = catalog_dir(directory, catalog) / f"{resource_version:020d}.parquet"
    return path.exists() and _checksum_path(path).exists()


def load_newest(directory: Path, catalog: str) -> tuple[Image, Position] | None:
    """The newest snapshot that verifies; corrupt ones are skipped with a warning."""
    for path in list_snapshots(directory, catalog):
        try:
            return read_snapshot(path)
        except SnapshotError as exc:
            log.warning("skipping snapshot: %s", exc)
    return None


_MARKS = "@partitions"
"""The folder of partition marks: `quote` encodes `@`, so no catalog's folder has this name."""


@dataclass(frozen=True, slots=True)
class PartitionMark:
    """Every catalog of one events partition that has events before `position.next_offset`.

    A leader writes its partition's catalogs' snapshots at one position, then
    this mark: a reader that loads those catalogs' snapshots may start the
    partition at that position, as no other catalog has an event before it.
    """

    position: Position
    catalogs: tuple[str, ...]


def write_partition_mark(directory: Path, mark: PartitionMark) -> Path:
    """Write a partition's mark atomically (after its catalogs' snapshots)."""
    folder = Path(directory) / _MARKS
    folder.mkdir(parents=True, exist_ok=True)
    position = mark.position
    path = folder / f"{quote(position.topic, safe='')}-{position.partition}.json"
    document = {"format": FORMAT, "position": [position.topic, position.partition,
                position.next_offset], "catalogs": list(mark.catalogs)}  # fmt: skip
    _write_atomic(path, json.dumps(document).encode())
    return path


def read_partition_mark(directory: Path, topic: str, partition: int) -> PartitionMark | None:
    """A partition's mark, or None when there is none or it does not read (with a warning)."""
    path = Path(directory) / _MARKS / f"{quote(topic, safe='')}-{partition}.json"
    if not path.exists():
        return None
    try:
        document = json.loads(path.read_bytes())
        stored_topic, stored_partition, next_offset = document["position"]
        catalogs = tuple(str(name) for name in document["catalogs"])
        if document["format"] not in READABLE or (stored_topic, stored_partition) != (
            topic,
            partition,
        ):
            raise ValueError(f"format {document['format']} of {stored_topic}/{stored_partition}")
    except _ERRORS as exc:
        log.warning("skipping partition mark %s: %s", path, exc)
        return None
    return PartitionMark(Position(topic, partition, int(next_offset)), catalogs)


def _complete(folder: Path) -> list[Path]:
    found = (p for p in folder.glob("*.parquet") if _checksum_path(p).exists())
    return sorted(found, reverse=True)


def _checksum_path(path: Path) -> Path:
    return path.with_suffix(".sha256")


def _verify_checksum(path: Path) -> None:
    try:
        expected = _checksum_path(path).read_text().split()[0]
    except (OSError, IndexError) as exc:
        raise SnapshotError(f"{path}: no checksum file: the snapshot is incomplete") from exc
    try:
        actual = _sha256(path)
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read it ({exc})") from exc
    if actual != expected:
        raise SnapshotError(f"{path}: sha256 {actual} is not {expected}: the file is corrupt")


def _name_versions(meta: dict[str, Any], head: View) -> Map[tuple[str, str], int]:
    """The image's `name_versions`; for a format-3 snapshot, what its dropped tables show.

    Format 3 predates them: each dropped (not purged) table left its name at its
    removed info's version, so that much is known; a name freed by a rename, a
    truncate, an exchange or a purged drop before the snapshot is not (write a new
    snapshot from a replay of the log to have them all).
    """
    if meta["format"] != 3:
        return Map({(str(s), str(t)): int(v) for s, t, v in meta["name_versions"]})
    names: dict[tuple[str, str], int] = {}
    for info in head.dropped_tables():
        name = (info.schema_name, info.table_name)
        names[name] = max(names.get(name, 0), info.version)
    return Map(names)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(f"{path.suffix}.tmp{os.getpid()}")
    with tmp.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    tmp.replace(path)


def _meta(image: Image, position: Position) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "catalog": image.catalog,
        "resource_version": image.resource_version,
        "stable_epoch": image.stable_epoch,
        "publish_mode": image.publish_mode,
        "table_schema_epochs": sorted(image.table_schema_epochs.items()),
        "leader_epoch": image.leader_epoch,
        "last_hash": image.last_hash.hex(),
        "max_id": image.max_id,
        "retired_versions": sorted(image.retired_versions.items()),
        "name_versions": sorted([*name, v] for name, v in image.name_versions.items()),
        "published_is_head": image.published is image.head,
        "position": [position.topic, position.partition, position.next_offset],
    }


def _load(parquet: pq.ParquetFile, meta: dict[str, Any]) -> tuple[Image, Position]:
    catalog: str = meta["catalog"]
    head, published, pending = load_views(parquet, catalog, bool(meta["published_is_head"]))
    by_table: dict[int, tuple[int, ...]] = {}
    by_key: dict[str, tuple[int, ...]] = {}
    for rv in sorted(pending):
        for table_id in dict.fromkeys(pending[rv].table_ids):
            by_table[table_id] = (*by_table.get(table_id, ()), rv)
        for key in pending[rv].keys:
            by_key[key] = (*by_key.get(key, ()), rv)
    image = Image(
        catalog=catalog,
        head=head,
        published=published,
        resource_version=meta["resource_version"],
        stable_epoch=meta["stable_epoch"],
        publish_mode=meta["publish_mode"],
        table_schema_epochs=Map({int(k): int(v) for k, v in meta["table_schema_epochs"]}),
        pending=Map(pending),
        pending_by_table=Map(by_table),
        pending_by_key=Map(by_key),
        leader_epoch=meta["leader_epoch"],
        last_hash=bytes.fromhex(meta["last_hash"]),
        max_id=meta["max_id"],
        retired_versions=Map({int(k): int(v) for k, v in meta["retired_versions"]}),
        name_versions=_name_versions(meta, head),
    )
    topic, partition, next_offset = meta["position"]
    return image, Position(topic, int(partition), int(next_offset))
