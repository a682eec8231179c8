"""An event record read as bytes: the envelope's head, the chain fields, the hash recomputed.

The audit reads millions of records, so it builds no model: it reads the
envelope as far as the intent through the readers compiled from the record's
writer schema (`projector.audit.readers`), the chain fields (`prev_hash`,
`hash`, and from v2 on `trace_id`) from the end, and hashes the body with the
hash field emptied, the canonical body of `events.chain`. A record whose bytes
do not parse this way is not an event the leader wrote.
"""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

from events.checkpoint import Checkpoint
from events.compiled.partial import NoBranch, PastTheEnd, encode_long
from events.schema_store import FINGERPRINT, HEADER_LENGTH, MAGIC
from projector.audit.readers import (
    EMPTIED,
    INTENT_FIELDS,
    READERS,
    EventReader,
    body_hash,
    tables_bytes,
)

_CONTROL = ("LeaderElected", "CheckpointSigned")
"""The intents whose fields `parse` reads."""


class NotAnEvent(Exception):
    """The bytes are not a well-formed event record (the audit reports them as modified)."""


class RawEvent(NamedTuple):
    """What the audit reads from one record.

    Attributes:
        catalog: The catalog.
        resource_version: Its resource_version.
        leader_epoch: Its leader_epoch.
        occurred_micros: Its time (microseconds since the epoch, UTC).
        tables: `(table_id, version)` pairs of the envelope.
        intent: The intent's record name (`TableCreated`, `CheckpointSigned`, …).
        intent_fields: The fields of a `LeaderElected` (`leader_id`) or a
            `CheckpointSigned` (`resource_version`, `chain_hash`, `key_id`,
            `signature`); empty for other intents.
        prev_hash: The chain's previous hash, as recorded.
        hash: The event's hash, as recorded.
        computed: `sha256(prev_hash || canonical body)` of these bytes.
        rv_span: Where the resource_version's bytes sit in the record (start, end).
        tables_span: Where the `tables` array's bytes sit in the record (start, end).
        prev_at: Where `prev_hash`'s content starts in the record.
        tail: How many bytes follow the hash field (the `trace_id`, v2 on).
    """

    catalog: str
    resource_version: int
    leader_epoch: int
    occurred_micros: int
    tables: tuple[tuple[int, int], ...]
    intent: str
    intent_fields: dict[str, Any]
    prev_hash: bytes
    hash: bytes
    computed: bytes
    rv_span: tuple[int, int]
    tables_span: tuple[int, int]
    prev_at: int
    tail: int

    def checkpoint(self) -> Checkpoint:
        """The checkpoint a `CheckpointSigned` record holds (its envelope gives catalog,
        leader_epoch and time)."""
        f = self.intent_fields
        return Checkpoint(
            self.catalog, f["resource_version"], f["chain_hash"], self.leader_epoch,
            self.occurred_micros, f["key_id"], f["signature"],
        )  # fmt: skip


class Head(NamedTuple):
    """An event record's envelope up to its intent's branch (`parse` reads on from `at`).

    Attributes:
        catalog: The catalog's name, as bytes.
        resource_version: Its resource_version.
        rv_span: Where the resource_version's bytes sit in the record (start, end).
        leader_epoch: Its leader_epoch.
        occurred_micros: Its time (microseconds since the epoch, UTC).
        tables: `(table_id, version)` pairs of the envelope.
        tables_span: Where the `tables` array's bytes sit in the record (start, end).
        intent: The intent's record name (`TableCreated`, …).
        at: Where the intent's fields start.
    """

    catalog: bytes
    resource_version: int
    rv_span: tuple[int, int]
    leader_epoch: int
    occurred_micros: int
    tables: list[tuple[int, int]]
    tables_span: tuple[int, int]
    intent: str
    at: int


_CATALOGS: dict[bytes, str] = {}
"""Catalog names decoded once (a log holds few)."""


def reader_of(data: bytes) -> EventReader:
    """The readers of the record's writer schema.

    Raises:
        NotAnEvent: The bytes are not a single-object encoded event record.
    """
    if not data.startswith(MAGIC) or len(data) < _SHORTEST:
        raise NotAnEvent("not a single-object encoded record")
    reader = READERS.get(data[FINGERPRINT])
    if reader is None:
        raise NotAnEvent(f"writer schema {data[FINGERPRINT].hex()} is not an event schema")
    return reader


_SHORTEST = HEADER_LENGTH + min(reader.trailer.width for reader in READERS.values())
"""No event record is shorter: its header and its chain fields."""


def head(data: bytes) -> Head:
    """Read one record's envelope as far as its intent, with no model and no hash.

    Raises:
        NotAnEvent: The bytes are not a well-formed event record.
    """
    (catalog, rv_start, rv, rv_end, epoch, occurred, tables_start, tables, tables_end, intent,
     at) = _read(reader_of(data).head, data, HEADER_LENGTH)  # fmt: skip
    return Head(catalog, rv, (rv_start, rv_end), epoch, occurred, tables,
                (tables_start, tables_end), intent, at)  # fmt: skip


def skim(data: bytes) -> tuple[tuple[int, int], str, int]:
    """`head`'s walk without its values: where the `tables` array sits, the intent, where its
    fields start. Faster than `head`, for a pass over every record.

    Raises:
        NotAnEvent: The bytes are not a well-formed event record.
    """
    reader = READERS.get(data[FINGERPRINT])
    if reader is None or not data.startswith(MAGIC):
        raise NotAnEvent("not an event record")
    start, end, intent, at = _read(reader.skim, data, HEADER_LENGTH)
    return (start, end), intent, at


def intent_fields(data: bytes, intent: str, at: int) -> tuple[Any, ...]:
    """The fields `readers.INTENT_FIELDS` names of the record's intent, whose fields start at
    `at`; then where the last one ends.

    Raises:
        NotAnEvent: The bytes do not hold them.
    """
    return _read(reader_of(data).fields[intent], data, at, _PAST_THE_END)


_TRUNCATED = "the record is truncated"
_PAST_THE_END = "a length runs past the end of the record"


def _read(read: Any, data: bytes, at: int, past_the_end: str = _TRUNCATED) -> tuple[Any, ...]:
    """A compiled reader's items, its errors as `NotAnEvent` (a length past the end: an
    envelope's is read as the record cut short, an intent field's as itself)."""
    try:
        values: tuple[Any, ...] = read(data, at)
    except IndexError as exc:
        raise NotAnEvent(_TRUNCATED) from exc
    except NoBranch as exc:
        raise NotAnEvent(str(exc)) from exc
    except PastTheEnd as exc:
        raise NotAnEvent(past_the_end) from exc
    except UnicodeDecodeError as exc:
        raise NotAnEvent("a string is not UTF-8") from exc
    return values


def parse(data: bytes) -> RawEvent:
    """Read one record's envelope head and chain fields, and recompute its hash.

    Raises:
        NotAnEvent: The bytes are not a well-formed event record.
    """
    reader = reader_of(data)
    envelope = head(data)
    intent, at = envelope.intent, envelope.at
    fields: dict[str, Any] = {}
    if intent in _CONTROL:
        *values, at = _read(reader.fields[intent], data, at, _PAST_THE_END)
        fields = dict(zip(INTENT_FIELDS[intent], values, strict=True))
    trailer = reader.trailer
    # The likeliest reading first: no trace id (null), or a W3C one.
    chain = _chain(reader, data, trailer.guess(data), at)
    if trailer.optional and (chain is None or chain[2] != chain[3]):
        for tail in trailer.readings(data):
            found = _chain(reader, data, tail, at)
            if found is not None and (chain is None or found[2] == found[3]):
                chain = found
                if found[2] == found[3]:
                    break
    if chain is None:
        raise NotAnEvent("the record does not end with the chain fields")
    tail, prev_hash, recorded, computed, prev_at = chain
    catalog = _CATALOGS.get(envelope.catalog)
    if catalog is None:
        try:
            catalog = _CATALOGS[envelope.catalog] = envelope.catalog.decode()
        except UnicodeDecodeError as exc:
            raise NotAnEvent("a string is not UTF-8") from exc
    return RawEvent(
        catalog, envelope.resource_version, envelope.leader_epoch, envelope.occurred_micros,
        tuple(envelope.tables), intent, fields, prev_hash, recorded, computed, envelope.rv_span,
        envelope.tables_span, prev_at, tail,
    )  # fmt: skip


def _chain(
    reader: EventReader, data: bytes, tail: int, after: int
) -> tuple[int, bytes, bytes, bytes, int] | None:
    """Reading the chain fields before a `tail`-byte `trace_id`: (tail, prev, hash, computed,
    where prev's content starts); None when their lengths are not where that reading puts them."""
    found = chain_fields(reader, data, tail, after)
    if found is None:
        return None
    prev_hash, recorded, hash_at, prev_at = found
    return tail, prev_hash, recorded, body_hash(data, prev_hash, hash_at, tail), prev_at


def chain_fields(
    reader: EventReader, data: bytes, tail: int, after: int
) -> tuple[bytes, bytes, int, int] | None:
    """`prev_hash` and `hash` as recorded before a `tail`-byte `trace_id`, where the hash field
    starts and where `prev_hash`'s content starts; None when their lengths are not where that
    reading puts them, or they would start before `after`."""
    starts = reader.trailer.starts(data, tail, after)
    if starts is None:
        return None
    (prev_at, hash_at), ((prev_in, prev_out), (hash_in, hash_out)) = starts, reader.chain
    return (data[prev_at + prev_in : prev_at + prev_out],
            data[hash_at + hash_in : hash_at + hash_out], hash_at, prev_at + prev_in)  # fmt: skip


def rechained(data: bytes, event: RawEvent, resource_version: int, prev_hash: bytes) -> bytes:
    """The hash `event` would have at another resource_version after another `prev_hash`.

    Used to test a hypothesis about rewritten history (one inserted record)
    without decoding: the record's bytes with the two fields replaced.
    """
    front, tail = _moved(data, event, resource_version, prev_hash, None)
    return hashlib.sha256(prev_hash + front + EMPTIED + tail).digest()


def rewritten(
    data: bytes, event: RawEvent, resource_version: int, prev_hash: bytes,
    tables: tuple[tuple[int, int], ...] | None = None,
) -> tuple[bytes, bytes]:  # fmt: skip
    """The record `event` (read from `data`) becomes at another resource_version, after another
    `prev_hash` and with other envelope `tables` (None: its own), sealed: its bytes and hash."""
    front, tail = _moved(data, event, resource_version, prev_hash, tables)
    digest = hashlib.sha256(prev_hash + front + EMPTIED + tail).digest()
    return data[:HEADER_LENGTH] + front + encode_long(len(digest)) + digest + tail, digest


def _moved(
    data: bytes, event: RawEvent, resource_version: int, prev_hash: bytes,
    tables: tuple[tuple[int, int], ...] | None,
) -> tuple[bytes, bytes]:  # fmt: skip
    """The record's body before its hash field, with the fields replaced, and what follows
    the hash field."""
    reader = reader_of(data)
    start, end = event.rv_span
    hash_at = len(data) - event.tail - reader.trailer.widths[1]
    middle = data[end : event.prev_at]
    if tables is not None:
        tables_start, tables_end = event.tables_span
        middle = (data[end:tables_start] + tables_bytes(reader, tables)
                  + data[tables_end : event.prev_at])  # fmt: skip
    front = (data[HEADER_LENGTH:start] + encode_long(resource_version) + middle + prev_hash
             + data[event.prev_at + len(event.prev_hash) : hash_at])  # fmt: skip
    return front, data[len(data) - event.tail :]
