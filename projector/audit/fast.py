"""The raw reader's fast path: a record in the shape the leader writes, read in one walk.

`projector.audit.raw.parse` reads any record and says what is wrong with a
bad one; a pass over a million records needs less. `checked` reads only the
envelope values the audit's checks use (`readers.ENVELOPE`) and checks the
record's hash with the likeliest `trace_id` reading, in one function compiled
from the record's writer schema (`readers.EventReader.checked`). Anything else
(bytes the reader refuses, an odd trace id, a hash that does not match) gives
None: the caller reads that record with `parse`, which is exact. So the fast
path never decides a fault; it only confirms the common case. The hash can be
checked apart (`matches`), in the process that consumes the records.
"""

from __future__ import annotations

from events.schema_store import FINGERPRINT, HEADER_LENGTH, MAGIC
from projector.audit.readers import READERS

Checked = tuple[bytes, int, int, list[tuple[int, int]], str, bytes, bytes]
"""`(catalog bytes, resource_version, leader_epoch, tables, intent, prev_hash, hash)`."""


def matches(data: bytes) -> bool:
    """Whether the record's bytes match its hash in the likeliest reading of its end (the
    part of `checked` that can be done apart: `checked(data, hashed=True)` skips it)."""
    reader = READERS.get(data[FINGERPRINT])
    return reader is not None and reader.matches(data, HEADER_LENGTH) is True  # None: no fit


def checked(data: bytes, hashed: bool = False) -> Checked | None:
    """A well-formed record whose bytes match its hash, read fast; None: read it with `parse`.

    Args:
        data: The record.
        hashed: The caller found `matches(data)` true: the hash is not checked again.

    Returns:
        The catalog's name as bytes, the resource_version, the leader_epoch, the
        envelope's `(table_id, version)` pairs, the intent's record name, the
        recorded `prev_hash` and `hash` (the hash already equals the one recomputed).
    """
    reader = READERS.get(data[FINGERPRINT])
    if reader is None or not data.startswith(MAGIC):
        return None
    try:  # one call: the reader reads, finds the chain fields and checks the hash
        return reader.checked(data, HEADER_LENGTH, hashed)
    except (IndexError, ValueError):  # cut short or malformed: `parse` says where
        return None
