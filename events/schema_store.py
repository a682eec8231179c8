"""Every shipped Avro schema version of the contract, parsed once, by fingerprint.

Schemas live in `events/schemas/v{N}/{kind}.avsc`. A kind's newest version is
the reader schema; every version is a writer schema that the codec looks up by
the CRC-64-AVRO fingerprint of its Parsing Canonical Form (the single-object
encoding header carries it little-endian, which is the byte order fastavro's
hex digest already has).
"""

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, Literal, get_args

from fastavro.schema import fingerprint as avro_fingerprint
from fastavro.schema import parse_schema, to_parsing_canonical_form

from events.errors import MetalogError, UnknownSchema

SchemaKind = Literal["event", "command", "reply"]
"""The kinds of record the contract defines, one Avro schema per version each."""

KINDS: tuple[SchemaKind, ...] = get_args(SchemaKind)
MAGIC = b"\xc3\x01"
"""The two marker bytes that start every single-object-encoded record."""
HEADER_LENGTH = 10
"""Marker (2 bytes) + fingerprint (8 bytes) before the Avro body."""
FINGERPRINT = slice(len(MAGIC), HEADER_LENGTH)
"""Where a record's writer fingerprint sits: `record[FINGERPRINT]`."""

_VERSION_DIR = re.compile(r"v([1-9][0-9]*)")


class SchemaStoreError(MetalogError):
    """The shipped schema files are inconsistent (a packaging or authoring mistake)."""


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    """One shipped schema file, parsed.

    Attributes:
        kind: The record kind.
        version: The version number (`v{N}` directory).
        schema_json: The file's text, docs included.
        canonical_form: The Parsing Canonical Form (what the fingerprint hashes).
        fingerprint: The 8-byte CRC-64-AVRO fingerprint, little-endian.
        header: `MAGIC + fingerprint`, the first 10 bytes of every record.
        parsed: The fastavro-parsed schema (parse once, reuse on the hot path).
    """

    kind: SchemaKind
    version: int
    schema_json: str
    canonical_form: str
    fingerprint: bytes
    header: bytes
    parsed: Any = field(compare=False, repr=False)

    @property
    def fingerprint_hex(self) -> str:
        """The fingerprint as 16 hex digits, in header byte order."""
        return self.fingerprint.hex()


def load_version(kind: SchemaKind, version: int, schema_json: str) -> SchemaVersion:
    """Parse one schema text into a `SchemaVersion`.

    Args:
        kind: The record kind the schema defines.
        version: Its version number.
        schema_json: The Avro schema as JSON text.

    Returns:
        The parsed version with its canonical form and fingerprint.
    """
    parsed = parse_schema(json.loads(schema_json))
    canonical = to_parsing_canonical_form(parsed)
    digest = bytes.fromhex(avro_fingerprint(canonical, "CRC-64-AVRO"))
    return SchemaVersion(kind, version, schema_json, canonical, digest, MAGIC + digest, parsed)


class SchemaStore:
    """All schema versions of every kind, indexed by fingerprint.

    Args:
        versions: Every shipped version; each kind needs at least one.

    Raises:
        SchemaStoreError: Two files share a fingerprint or a kind has no schema.
    """

    def __init__(self, versions: Iterable[SchemaVersion]) -> None:
        by_kind: dict[SchemaKind, list[SchemaVersion]] = {kind: [] for kind in KINDS}
        self.by_fingerprint: dict[bytes, SchemaVersion] = {}
        for version in versions:
            clash = self.by_fingerprint.get(version.fingerprint)
            if clash is not None:
                raise SchemaStoreError(
                    f"{version.kind} v{version.version} and {clash.kind} v{clash.version} have "
                    "the same canonical form: a new version must change the schema"
                )
            self.by_fingerprint[version.fingerprint] = version
            by_kind[version.kind].append(version)
        for kind, found in by_kind.items():
            if not found:
                raise SchemaStoreError(f"no {kind}.avsc in any events/schemas/v*/ directory")
            found.sort(key=lambda v: v.version)
        self._by_kind = {kind: tuple(found) for kind, found in by_kind.items()}

    def versions(self, kind: SchemaKind) -> tuple[SchemaVersion, ...]:
        """Every version of `kind`, oldest first."""
        return self._by_kind[kind]

    def current(self, kind: SchemaKind) -> SchemaVersion:
        """The newest version of `kind`: the reader schema and the one new records use."""
        return self._by_kind[kind][-1]

    def writer(self, fingerprint: bytes) -> SchemaVersion:
        """The schema version with this fingerprint.

        Raises:
            UnknownSchema: No shipped schema has this fingerprint.
        """
        found = self.by_fingerprint.get(fingerprint)
        if found is None:
            raise UnknownSchema(fingerprint)
        return found


def load_directory(root: Traversable) -> SchemaStore:
    """Load every `v{N}/{kind}.avsc` under `root` into a store."""
    found: list[SchemaVersion] = []
    for child in root.iterdir():
        match = _VERSION_DIR.fullmatch(child.name)
        if match is None or not child.is_dir():
            continue
        for kind in KINDS:
            path = child / f"{kind}.avsc"
            if path.is_file():
                found.append(load_version(kind, int(match.group(1)), path.read_text("utf-8")))
    return SchemaStore(found)


@functools.cache
def default_store() -> SchemaStore:
    """The store of the schemas shipped in `events/schemas/` (loaded once)."""
    return load_directory(resources.files("events") / "schemas")
