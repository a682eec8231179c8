"""The offline bundle: a log's records, readable and verifiable with no broker.

A bundle is a directory:

- `records/partition-{p}.bin`: the records of events partition p as they
  were in the topic, each framed as its offset (8 bytes, big-endian), its
  length (4 bytes, big-endian), then its bytes (single-object encoded Avro);
- `events.jsonl`: one JSON object per record, `{partition, offset, event}`
  (the event's fields; bytes as hex) or `{partition, offset, error}` for a
  record that does not decode: for reading, not for verifying;
- `schemas/v{N}/event.avsc`: every event schema the records may name;
- `checkpoints/{catalog}.note`: each catalog's latest checkpoint note;
- `public_key.pem`: the checkpoints' public key, when the exporter gave one;
- `manifest.json`: topic, partition end offsets, and what the records hold
  (`projector.audit.manifest`): per catalog and per partition, how many records
  from which offset to which (and a catalog's last resource_version).

A bundle that contradicts its manifest or its notes does not verify; a missing or
unreadable manifest, record file or note is `BundleDamaged`.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from events.checkpoint import Checkpoint, CheckpointNoteError, parse_note
from events.codec import decode_event_dict
from events.errors import DecodeError
from events.schema_store import default_store
from projector.audit.manifest import Contents, Tally, contents_document, read_contents
from projector.errors import BundleDamaged, BundleError

__all__ = ["FORMAT", "Bundle", "BundleDamaged", "BundleError", "write_bundle"]

FORMAT = 1
"""The bundle layout's version (`manifest.json`'s `format`)."""

_FRAME = struct.Struct(">QI")

_PARTS = ("records", "checkpoints", "events.jsonl", "schemas", "public_key.pem")
"""What a bundle holds besides its manifest: a directory with one of them is a bundle."""


def _json_default(value: object) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def write_bundle(
    directory: Path,
    topic: str,
    records: Iterable[tuple[int, int, bytes]],
    ends: dict[int, int],
    checkpoints: dict[str, Checkpoint],
    public_key_pem: bytes | None,
) -> dict[str, Any]:
    """Write a bundle of `records` into `directory` (created; it must not hold a bundle).

    `ends` and `checkpoints` are read once `records` is exhausted, so a caller
    may fill them while the records stream.

    Returns:
        The manifest written.

    Raises:
        BundleError: The directory already holds a bundle, or cannot be written.
    """
    if (directory / "manifest.json").exists():
        raise BundleError(f"{directory} already holds a bundle: export to a new directory")
    try:
        (directory / "records").mkdir(parents=True, exist_ok=True)
        files: dict[int, BinaryIO] = {}
        tally = Tally()
        with (directory / "events.jsonl").open("w", encoding="utf-8") as rendering:
            try:
                for partition, offset, value in records:
                    out = files.get(partition)
                    if out is None:
                        path = directory / "records" / f"partition-{partition}.bin"
                        out = files[partition] = path.open("wb")
                    out.write(_FRAME.pack(offset, len(value)) + value)
                    line, catalog, resource_version = _rendered(partition, offset, value)
                    rendering.write(line + "\n")
                    tally.add(partition, offset, catalog, resource_version)
            finally:
                for out in files.values():
                    out.close()
        for version in default_store().versions("event"):
            target = directory / "schemas" / f"v{version.version}" / "event.avsc"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(version.schema_json, encoding="utf-8")
        (directory / "checkpoints").mkdir(exist_ok=True)
        for catalog, checkpoint in checkpoints.items():
            (directory / "checkpoints" / f"{catalog}.note").write_text(checkpoint.note(), "utf-8")
        if public_key_pem is not None:
            (directory / "public_key.pem").write_bytes(public_key_pem)
        manifest = {
            "format": FORMAT, "topic": topic, **contents_document(tally.contents()),
            "ends": {str(p): end for p, end in sorted(ends.items())},
            "public_key": public_key_pem is not None,
        }  # fmt: skip
        (directory / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    except OSError as exc:
        raise BundleError(f"cannot write the bundle in {directory}: {exc}") from exc
    return manifest


def _rendered(partition: int, offset: int, value: bytes) -> tuple[str, str | None, int]:
    """The record's `events.jsonl` line, its catalog (None: it does not decode) and its
    resource_version (-1 then)."""
    line: dict[str, Any] = {"partition": partition, "offset": offset}
    catalog, resource_version = None, -1
    try:
        event = line["event"] = decode_event_dict(value)
        catalog, resource_version = str(event["catalog"]), int(event["resource_version"])
    except DecodeError as exc:
        line["error"] = exc.reason
    return json.dumps(line, default=_json_default, sort_keys=True), catalog, resource_version


class Bundle:
    """A bundle read back.

    Args:
        directory: The bundle's directory.

    Attributes:
        contents: What its manifest says the records hold.
        ends: Each partition's end offset when it was exported.

    Raises:
        BundleError: The directory holds no bundle, or one of another format.
        BundleDamaged: It holds a bundle's parts but its `manifest.json` is missing,
            unreadable or not of the documented shape.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        path = directory / "manifest.json"
        try:
            self.manifest: dict[str, Any] = json.loads(path.read_text("utf-8"))
            if not isinstance(self.manifest, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            if not any((directory / part).exists() for part in _PARTS):
                raise BundleError(f"{directory} is not a bundle (manifest.json: {exc}): make "
                                  "one with `metalog audit export --to DIR`") from exc  # fmt: skip
            raise BundleDamaged(f"{path} is missing or unreadable ({exc}), so nothing says which "
                                "records the bundle should hold: it does not verify; export it "
                                "again") from exc  # fmt: skip
        if self.manifest.get("format") != FORMAT:
            raise BundleError(f"{directory}: bundle format {self.manifest.get('format')!r} is "
                              f"not {FORMAT}: read it with the metalog that wrote it")  # fmt: skip
        self.contents: Contents = read_contents(self.manifest, str(path))
        try:
            self.ends = {int(p): int(end) for p, end in self.manifest.get("ends", {}).items()}
        except (AttributeError, TypeError, ValueError) as exc:
            raise BundleDamaged(f"{path}: `ends` is not a mapping of partition to end offset "
                                f"({exc}): the bundle is damaged; export it again") from exc

    def records(self) -> Iterator[tuple[int, int, bytes]]:
        """Every record as (partition, offset, value), partition by partition.

        Raises:
            BundleDamaged: A record file is cut short.
        """
        for partition in sorted(self.ends.keys() | self.contents.partitions.keys()):
            path = self.directory / "records" / f"partition-{partition}.bin"
            if not path.exists():
                continue
            data = path.read_bytes()
            at = 0
            while at < len(data):
                if at + _FRAME.size > len(data):
                    raise BundleDamaged(f"{path} is cut short at byte {at}")
                offset, size = _FRAME.unpack_from(data, at)
                at += _FRAME.size
                if at + size > len(data):
                    raise BundleDamaged(f"{path} is cut short at byte {at}")
                yield partition, offset, data[at : at + size]
                at += size

    def notes(self) -> dict[str, Checkpoint]:
        """The checkpoint notes it carries, by file: what each catalog's log must still hold.

        Raises:
            BundleDamaged: A note cannot be read.
        """
        notes = {}
        for path in sorted((self.directory / "checkpoints").glob("*.note")):
            try:
                notes[str(path)] = parse_note(path.read_text("utf-8"))
            except (OSError, UnicodeDecodeError, CheckpointNoteError) as exc:
                raise BundleDamaged(f"{path} is not a readable checkpoint note ({exc}): the "
                                    "bundle is damaged; export it again") from exc  # fmt: skip
        return notes

    def public_key_pem(self) -> bytes | None:
        """The public key the exporter put in, if any."""
        path = self.directory / "public_key.pem"
        return path.read_bytes() if path.exists() else None
