"""The raw reader's fast path: a record in the shape the leader writes, read in one walk.

`projector.audit.raw.parse` reads any record and says what is wrong with a
bad one; a pass over a million records needs less. `checked` reads only the
envelope values the audit's checks use, straight from the Avro bytes (one-byte
lengths inlined, varints decoded in place, the timestamp skipped), and checks
the record's hash with the likeliest `trace_id` reading. Anything else (a long
string, a sized block, an odd trace id, a hash that does not match) gives None:
the caller reads that record with `parse`, which is exact. So the fast path
never decides a fault; it only confirms the common case. The hash can be
checked apart (`matches`), in the process that consumes the records.
"""

from __future__ import annotations

import hashlib
import re

from events.schema_store import HEADER_LENGTH, MAGIC
from projector.audit.raw import WRITERS

_sha256 = hashlib.sha256
_skip_long = re.compile(rb"[\x80-\xff]*[\x00-\x7f]", re.DOTALL).match
"""One Avro long's bytes (a long ends at its first byte below 0x80)."""

Checked = tuple[bytes, int, int, list[tuple[int, int]], str, bytes, bytes]
"""`(catalog bytes, resource_version, leader_epoch, tables, intent, prev_hash, hash)`."""


def matches(data: bytes) -> bool:
    """Whether the record's bytes match its hash in the likeliest reading of its end (the
    part of `checked` that can be done apart: `checked(data, hashed=True)` skips it)."""
    writer = WRITERS.get(data[2:HEADER_LENGTH])
    if writer is None:
        return False
    end = len(data)
    tail = _tail(data, end) if writer[1] else 0
    hash_at = end - tail - 33
    prev_at = hash_at - 33
    if tail < 0 or prev_at < HEADER_LENGTH or data[hash_at] != 0x40 or data[prev_at] != 0x40:
        return False
    body = data[HEADER_LENGTH:hash_at] + b"\x00" + data[end - tail :]
    return _sha256(data[prev_at + 1 : hash_at] + body).digest() == data[hash_at + 1 : hash_at + 33]


def _tail(data: bytes, end: int) -> int:
    """The likeliest length of a v2+ record's `trace_id`: none (null), or a W3C one (0x02,
    0x40, 32 characters); -1 for any other (`parse` tries every reading)."""
    if data[end - 1] == 0:
        return 1
    if end > 34 and data[end - 34] == 2 and data[end - 33] == 0x40:
        return 34
    return -1


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
    writer = WRITERS.get(data[2:HEADER_LENGTH])
    if writer is None or data[:2] != MAGIC:
        return None
    # One body, no helper calls: a call per field would double the cost.
    try:
        size = data[HEADER_LENGTH]  # event_id
        if size & 0x80:
            return None
        at = HEADER_LENGTH + 1 + (size >> 1)
        size = data[at]  # catalog
        if size & 0x80:
            return None
        start = at + 1
        at = start + (size >> 1)
        catalog = data[start:at]
        byte = data[at]  # resource_version
        at += 1
        rv = byte & 0x7F
        shift = 7
        while byte & 0x80:
            byte = data[at]
            at += 1
            rv |= (byte & 0x7F) << shift
            shift += 7
        epoch = data[at]  # leader_epoch: one byte, not negative
        if epoch & 0x81 or rv & 1:
            return None
        at += 1
        while data[at] & 0x80:  # schema_epoch
            at += 1
        at += 1
        if data[at]:  # command_id: null, or a string
            size = data[at + 1]
            if size & 0x80:
                return None
            at += 2 + (size >> 1)
        else:
            at += 1
        size = data[at]  # actor
        if size & 0x80:
            return None
        at = _skip_long(data, at + 1 + (size >> 1)).end()  # type: ignore[union-attr]  # occurred_at
        count = data[at]  # tables: one block of up to 63 pairs
        at += 1
        tables = []
        if count:
            if count & 0x81:
                return None
            for _ in range(count >> 1):
                byte = data[at]
                at += 1
                table = byte & 0x7F
                shift = 7
                while byte & 0x80:
                    byte = data[at]
                    at += 1
                    table |= (byte & 0x7F) << shift
                    shift += 7
                byte = data[at]
                at += 1
                version = byte & 0x7F
                shift = 7
                while byte & 0x80:
                    byte = data[at]
                    at += 1
                    version |= (byte & 0x7F) << shift
                    shift += 7
                if (table | version) & 1:
                    return None
                tables.append((table >> 1, version >> 1))
            if data[at]:
                return None
            at += 1
        index = data[at]
        names, traced = writer
        if index & 0x81 or index >> 1 >= len(names):
            return None
        end = len(data)
        tail = _tail(data, end) if traced else 0
        hash_at = end - tail - 33
        prev_at = hash_at - 33
        if tail < 0 or prev_at <= at or data[hash_at] != 0x40 or data[prev_at] != 0x40:
            return None
        prev = data[prev_at + 1 : hash_at]
        recorded = data[hash_at + 1 : hash_at + 33]
        if not hashed:
            body = data[HEADER_LENGTH:hash_at] + b"\x00" + data[end - tail :]
            if _sha256(prev + body).digest() != recorded:
                return None
    except (IndexError, AttributeError):  # cut short: `parse` says where
        return None
    return catalog, rv >> 1, epoch >> 1, tables, names[index >> 1], prev, recorded
