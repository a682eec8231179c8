"""Snapshots: an image and its log position as one Parquet file, so a follower starts fast.

Layout: `{directory}/{catalog}/{resource_version:020d}.parquet` plus a
`.sha256` file next to it (`sha256sum -c` format). Rows are
`(section, key, value, epoch)`: section `head` / `published` holds a view's
keys with the value record as JSON; `published` is left out when it is the
same view as `head` (auto mode); section `pending` holds each pending change
as its Avro-encoded event (`events.codec`) and its assigned epoch. The image's
scalar fields and the log position live in the Parquet schema metadata.

Writes are atomic: a temporary file is written and fsynced, then renamed;
the checksum file is written last, so a snapshot without one is incomplete
and ignored. A snapshot whose checksum or contents do not verify is skipped
with a warning and the next older one is tried.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
from immutables import Map
from pydantic import TypeAdapter, ValidationError

from events.codec import decode_event, encode_event
from events.errors import DecodeError
from events.keys import DATANODE_TABLE, LABEL_RULE
from events.values import KeyValue, LabelRuleValue
from projector.errors import SnapshotError
from projector.image import Image, PendingChange
from projector.packing import Packed, pack, unpack
from projector.view import View

log = logging.getLogger(__name__)

FORMAT = 1
_META_KEY = b"metalog.snapshot"
_SCHEMA = pa.schema(
    [
        ("section", pa.dictionary(pa.int8(), pa.string())),
        ("key", pa.string()),
        ("value", pa.binary()),
        ("epoch", pa.int64()),
    ]
)
_VALUES: TypeAdapter[KeyValue] = TypeAdapter(KeyValue)
_DN_PREFIX = DATANODE_TABLE + "/"
_RULE_PREFIX = LABEL_RULE + "/"


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
    table = _to_table(image, position)
    tmp = path.with_suffix(f".parquet.tmp{os.getpid()}")
    pq.write_table(table, tmp, compression="zstd")
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
    try:
        table = pq.read_table(path)
        meta = json.loads(table.schema.metadata[_META_KEY])
        if meta.get("format") != FORMAT:
            raise SnapshotError(f"{path}: snapshot format {meta.get('format')} is not {FORMAT}")
        return _from_table(table, meta)
    except (OSError, KeyError, ValueError, TypeError, ValidationError, DecodeError) as exc:
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


def load_newest(directory: Path, catalog: str) -> tuple[Image, Position] | None:
    """The newest snapshot that verifies; corrupt ones are skipped with a warning."""
    for path in list_snapshots(directory, catalog):
        try:
            return read_snapshot(path)
        except SnapshotError as exc:
            log.warning("skipping snapshot: %s", exc)
    return None


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


def _view_rows(section: str, view: View) -> Iterator[tuple[str, str, bytes, int | None]]:
    for key, packed in view.values.items():
        yield section, key, unpack(packed).model_dump_json().encode(), None


def _to_table(image: Image, position: Position) -> pa.Table:
    rows: list[tuple[str, str, bytes, int | None]] = list(_view_rows("head", image.head))
    shared = image.published is image.head
    if not shared:
        rows.extend(_view_rows("published", image.published))
    for rv, change in sorted(image.pending.items()):
        rows.append(("pending", str(rv), encode_event(change.event), change.epoch))
    columns = list(zip(*rows, strict=True)) if rows else [(), (), (), ()]
    meta = {
        "format": FORMAT,
        "catalog": image.catalog,
        "resource_version": image.resource_version,
        "stable_epoch": image.stable_epoch,
        "publish_mode": image.publish_mode,
        "table_epochs": sorted(image.table_epochs.items()),
        "leader_epoch": image.leader_epoch,
        "last_hash": image.last_hash.hex(),
        "max_id": image.max_id,
        "published_is_head": shared,
        "position": [position.topic, position.partition, position.next_offset],
    }
    arrays = [
        pa.array(list(col), type=field.type) for col, field in zip(columns, _SCHEMA, strict=True)
    ]
    schema = _SCHEMA.with_metadata({_META_KEY: json.dumps(meta).encode()})
    return pa.Table.from_arrays(arrays, schema=schema)


def _from_table(table: pa.Table, meta: dict[str, Any]) -> tuple[Image, Position]:
    catalog: str = meta["catalog"]
    sections = table.column("section").to_pylist()
    keys = table.column("key").to_pylist()
    values = table.column("value").to_pylist()
    epochs = table.column("epoch").to_pylist()
    by_section: dict[str, dict[str, Packed]] = {"head": {}, "published": {}}
    pending: dict[int, PendingChange] = {}
    for section, key, value, epoch in zip(sections, keys, values, epochs, strict=True):
        if section == "pending":
            pending[int(key)] = PendingChange(decode_event(value), epoch)
        else:
            by_section[section][key] = pack(_VALUES.validate_json(value))
    head = _view(catalog, by_section["head"])
    published = head if meta["published_is_head"] else _view(catalog, by_section["published"])
    by_table: dict[int, tuple[int, ...]] = {}
    for rv in sorted(pending):
        for table_id in dict.fromkeys(pending[rv].table_ids):
            by_table[table_id] = (*by_table.get(table_id, ()), rv)
    image = Image(
        catalog=catalog,
        head=head,
        published=published,
        resource_version=meta["resource_version"],
        stable_epoch=meta["stable_epoch"],
        publish_mode=meta["publish_mode"],
        table_epochs=Map({int(k): int(v) for k, v in meta["table_epochs"]}),
        pending=Map(pending),
        pending_by_table=Map(by_table),
        leader_epoch=meta["leader_epoch"],
        last_hash=bytes.fromhex(meta["last_hash"]),
        max_id=meta["max_id"],
    )
    topic, partition, next_offset = meta["position"]
    return image, Position(topic, int(partition), int(next_offset))


def _view(catalog: str, values: dict[str, Packed]) -> View:
    """A view with its indexes rebuilt from the keys (what `View.mutated` maintains)."""
    datanodes: dict[int, dict[int, None]] = {}
    rules: dict[str, LabelRuleValue] = {}
    for key, packed in values.items():
        if key.startswith(_DN_PREFIX):
            datanode, table = key[len(_DN_PREFIX) :].split("/")
            datanodes.setdefault(int(datanode), {})[int(table)] = None
        elif key.startswith(_RULE_PREFIX) and isinstance(packed, LabelRuleValue):
            rules[key[len(_RULE_PREFIX) :]] = packed
    return View(
        catalog,
        Map(values),
        Map({dn: Map(tables) for dn, tables in datanodes.items()}),
        Map(rules),
    )
