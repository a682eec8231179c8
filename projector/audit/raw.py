"""An event record read as bytes: the envelope's head, the chain fields, the hash recomputed.

The audit reads millions of records, so it builds no model: it walks the
Avro body as far as the intent (the envelope's fixed order is the same in
every schema version), reads `prev_hash`, `hash` and (v2 on) `trace_id` from
the end, and hashes the body with the hash field emptied, the canonical body
of `events.chain`. A record whose bytes do not parse this way is not an event
the leader wrote.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from events.checkpoint import Checkpoint
from events.schema_store import HEADER_LENGTH, MAGIC, default_store

_HASH_FIELD = 33
"""An Avro `bytes` of 32: the length byte 0x40 (zigzag 32), then the bytes."""


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
        prev_at: Where `prev_hash`'s 32 bytes start in the record.
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


def _intent_names() -> dict[bytes, tuple[tuple[str, ...], bool]]:
    """Per writer fingerprint: the intent union's branch names, and whether `trace_id` follows."""
    out = {}
    for version in default_store().versions("event"):
        fields = {f["name"]: f["type"] for f in version.parsed["fields"]}
        names = tuple(branch["name"].rsplit(".", 1)[-1] for branch in fields["intent"])
        out[version.fingerprint] = (names, "trace_id" in fields)
    return out


WRITERS = _intent_names()
"""Per event writer fingerprint: its intent names and whether it has `trace_id`."""
_CATALOGS: dict[bytes, str] = {}
"""Catalog names decoded once (a log holds few)."""


def _long(data: bytes, at: int) -> tuple[int, int]:
    byte = data[at]
    at += 1
    value = byte & 0x7F
    shift = 7
    while byte & 0x80:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
    return (value >> 1) ^ -(value & 1), at


def _past_catalog(data: bytes) -> tuple[int, int]:
    """Where the record's catalog ends (past `event_id` and `catalog`), and its length."""
    at = HEADER_LENGTH
    for _ in (0, 1):  # event_id, then the catalog
        size = data[at]
        if size & 0x80:
            size, at = _long(data, at)
        else:
            size, at = size >> 1, at + 1
        at += size
    return at, size


def _bytes(data: bytes, at: int) -> tuple[bytes, int]:
    size, at = _long(data, at)
    end = at + size
    if size < 0 or end > len(data):
        raise NotAnEvent("a length runs past the end of the record")
    return data[at:end], end


def long_at(data: bytes, at: int) -> tuple[int, int]:
    """The Avro long at `at`, and where the next field starts."""
    return _long(data, at)


def string_at(data: bytes, at: int) -> tuple[str, int]:
    """The Avro string at `at`, and where the next field starts.

    Raises:
        NotAnEvent: The length runs past the end of the record, or the bytes are not UTF-8.
    """
    raw, at = _bytes(data, at)
    try:
        return raw.decode(), at
    except UnicodeDecodeError as exc:
        raise NotAnEvent("a string is not UTF-8") from exc


def zigzag(value: int) -> bytes:
    """The Avro encoding of a long."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _chain(data: bytes, tail: int, after: int) -> tuple[int, bytes, bytes, bytes] | None:
    """Reading the chain fields before a `tail`-byte `trace_id`: (tail, prev, hash, computed).

    None when the two fields' length markers are not where that reading puts them.
    """
    hash_at = len(data) - tail - _HASH_FIELD
    prev_at = hash_at - _HASH_FIELD
    if prev_at < after or data[hash_at] != 0x40 or data[prev_at] != 0x40:
        return None
    prev_hash = data[prev_at + 1 : hash_at]
    computed = hashlib.sha256(
        prev_hash + data[HEADER_LENGTH:hash_at] + b"\x00" + data[len(data) - tail :]
    ).digest()
    return tail, prev_hash, data[hash_at + 1 : hash_at + _HASH_FIELD], computed


def _tails(data: bytes) -> Iterator[int]:
    """Every length a v2+ `trace_id` may take at the end of the record.

    Read from the end the field is ambiguous (a hash byte may look like a
    marker), so the caller keeps the reading whose hash matches.
    """
    size = len(data)
    if data[-1] == 0:
        yield 1
    for length in range(0, min(size, 4096)):
        prefix = b"\x02" + zigzag(length)
        tail = len(prefix) + length
        if tail < size and data[size - tail : size - length] == prefix:
            yield tail


def _writer(data: bytes) -> tuple[tuple[str, ...], bool]:
    """The intent names and whether the record carries a trace id, by its writer schema.

    Raises:
        NotAnEvent: The bytes are not a single-object encoded event record.
    """
    if data[:2] != MAGIC or len(data) < HEADER_LENGTH + 2 * _HASH_FIELD:
        raise NotAnEvent("not a single-object encoded record")
    writer = WRITERS.get(data[2:HEADER_LENGTH])
    if writer is None:
        raise NotAnEvent(f"writer schema {data[2:HEADER_LENGTH].hex()} is not an event schema")
    return writer


def parse(data: bytes) -> RawEvent:
    """Read one record's envelope head and chain fields, and recompute its hash.

    Raises:
        NotAnEvent: The bytes are not a well-formed event record.
    """
    names, traced = _writer(data)
    try:
        return _parse(data, names, traced)
    except IndexError as exc:
        raise NotAnEvent("the record is truncated") from exc
    except UnicodeDecodeError as exc:
        raise NotAnEvent("a string is not UTF-8") from exc


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


def head(data: bytes) -> Head:
    """Read one record's envelope as far as its intent, with no model and no hash.

    Raises:
        NotAnEvent: The bytes are not a well-formed event record.
    """
    names, _ = _writer(data)
    try:
        return _head(data, names)
    except IndexError as exc:
        raise NotAnEvent("the record is truncated") from exc


_VARINTS = [re.compile(rb"(?:[\x80-\xff]*[\x00-\x7f]){%d}" % n, re.DOTALL) for n in range(9)]
"""`_VARINTS[n]` matches n Avro longs (any long ends at its first byte below 0x80)."""


def skim(data: bytes) -> tuple[tuple[int, int], str, int]:
    """`head`'s walk without its values: where the `tables` array sits, the intent, where its
    fields start. About three times faster than `head`, for a pass over every record.

    Raises:
        NotAnEvent: The bytes are not a well-formed event record.
    """
    writer = WRITERS.get(data[2:HEADER_LENGTH])
    if writer is None or data[:2] != MAGIC:
        raise NotAnEvent("not an event record")
    names = writer[0]
    try:
        at, _ = _past_catalog(data)
        at = _VARINTS[3].match(data, at).end()  # type: ignore[union-attr]  # rv, epochs
        strings = 2 if data[at] else 1  # command_id (null, or a string), then the actor
        at += 1
        for _ in range(strings):
            size = data[at]
            if size & 0x80:
                size, at = _long(data, at)
            else:
                size, at = size >> 1, at + 1
            at += size
        at = _VARINTS[1].match(data, at).end()  # type: ignore[union-attr]  # occurred_at
        start = at
        while True:
            count = data[at]
            if count & 0x80 or count & 1:  # a big or a sized block: read it as `head` does
                envelope = _head(data, names)
                return envelope.tables_span, envelope.intent, envelope.at
            at += 1
            if not count:
                break
            count >>= 1
            skip = (
                _VARINTS[2 * count]
                if count <= 4
                else re.compile(rb"(?:[\x80-\xff]*[\x00-\x7f]){%d}" % (2 * count), re.DOTALL)
            )
            at = skip.match(data, at).end()  # type: ignore[union-attr]
        index = data[at]
    except (IndexError, AttributeError) as exc:
        raise NotAnEvent("the record is truncated") from exc
    if index & 0x80 or index & 1 or index >> 1 >= len(names):
        raise NotAnEvent(f"intent branch {index} does not exist")
    return (start, at), names[index >> 1], at + 1


def _head(data: bytes, names: tuple[str, ...]) -> Head:
    # Inline one-byte varints (lengths, epochs, small ids): a call per field halves the rate.
    at, size = _past_catalog(data)
    catalog_bytes = data[at - size : at]
    rv_start = at
    resource_version, at = _long(data, at)
    rv_span = (rv_start, at)
    byte = data[at]
    if byte & 0x80:
        leader_epoch, at = _long(data, at)
    else:
        leader_epoch, at = (byte >> 1) ^ -(byte & 1), at + 1
    at = at + 1 if data[at] < 0x80 else _long(data, at)[1]  # schema_epoch
    strings = 2 if data[at] else 1  # command_id (its branch: null, or a string), then the actor
    at += 1
    for _ in range(strings):
        size = data[at]
        if size & 0x80:
            size, at = _long(data, at)
        else:
            size, at = size >> 1, at + 1
        at += size
    occurred, at = _long(data, at)
    tables = []
    tables_start = at
    while True:
        count = data[at]
        if count & 0x80:
            count, at = _long(data, at)
        else:
            count, at = (count >> 1) ^ -(count & 1), at + 1
        if not count:
            break
        if count < 0:  # a block with its byte size
            count = -count
            _, at = _long(data, at)
        for _ in range(count):
            table_id = data[at]
            if table_id & 0x80:
                table_id, at = _long(data, at)
            else:
                table_id, at = (table_id >> 1) ^ -(table_id & 1), at + 1
            version = data[at]
            if version & 0x80:
                version, at = _long(data, at)
            else:
                version, at = (version >> 1) ^ -(version & 1), at + 1
            tables.append((table_id, version))
    tables_span = (tables_start, at)
    index = data[at]
    if index & 0x80 or index & 1 or index >> 1 >= len(names):
        raise NotAnEvent(f"intent branch {index} does not exist")
    index, at = index >> 1, at + 1
    intent = names[index]
    return Head(catalog_bytes, resource_version, rv_span, leader_epoch, occurred, tables,
                tables_span, intent, at)  # fmt: skip


def _parse(data: bytes, names: tuple[str, ...], traced: bool) -> RawEvent:
    (catalog_bytes, resource_version, rv_span, leader_epoch, occurred, tables, tables_span,
     intent, at) = _head(data, names)  # fmt: skip
    fields: dict[str, Any] = {}
    if intent == "LeaderElected":
        leader_id, at = _bytes(data, at)
        fields["leader_id"] = leader_id.decode()
    elif intent == "CheckpointSigned":
        fields["resource_version"], at = _long(data, at)
        fields["chain_hash"], at = _bytes(data, at)
        fields["key_id"], at = _bytes(data, at)
        fields["signature"], at = _bytes(data, at)
    # The likeliest reading first: no trace id (null), or a W3C one (0x02, 0x40, 32 characters).
    chain = _chain(data, (1 if data[-1] == 0 else 34) if traced else 0, at)
    if traced and (chain is None or chain[2] != chain[3]):
        for tail in _tails(data):
            found = _chain(data, tail, at)
            if found is not None and (chain is None or found[2] == found[3]):
                chain = found
                if found[2] == found[3]:
                    break
    if chain is None:
        raise NotAnEvent("the record does not end with the chain fields")
    tail, prev_hash, recorded, computed = chain
    prev_at = len(data) - tail - 2 * _HASH_FIELD
    catalog = _CATALOGS.get(catalog_bytes)
    if catalog is None:
        catalog = _CATALOGS[catalog_bytes] = catalog_bytes.decode()
    return RawEvent(
        catalog, resource_version, leader_epoch, occurred, tuple(tables), intent,
        fields, prev_hash, recorded, computed, rv_span, tables_span, prev_at + 1, tail,
    )  # fmt: skip


def rechained(data: bytes, event: RawEvent, resource_version: int, prev_hash: bytes) -> bytes:
    """The hash `event` would have at another resource_version after another `prev_hash`.

    Used to test a hypothesis about rewritten history (one inserted record)
    without decoding: the record's bytes with the two fields replaced.
    """
    start, end = event.rv_span
    hash_at = len(data) - event.tail - _HASH_FIELD
    body = (
        data[HEADER_LENGTH:start] + zigzag(resource_version) + data[end : event.prev_at]
        + prev_hash + data[event.prev_at + 32 : hash_at] + b"\x00" + data[len(data) - event.tail :]
    )  # fmt: skip
    return hashlib.sha256(prev_hash + body).digest()
