"""The per-catalog hash chain, shared by the leader (`seal`) and the audit (`verify_*`).

`hash = sha256(prev_hash || canonical_body)`, where the canonical body is the
schemaless Avro encoding of the event with `hash` set to `b""`. The first event
of a catalog has `prev_hash = GENESIS_HASH` (32 zero bytes).

The body is encoded under a given schema version: the leader seals with the
current one; the audit of stored records uses each record's writer schema
(`verify_encoded_chain`), so events written before a schema change keep
verifying after it.
"""

import hashlib
from collections.abc import Iterable
from typing import NamedTuple

from events.base import built
from events.codec import codec
from events.errors import ChainBroken, DecodeError
from events.event import GENESIS_HASH, Event
from events.schema_store import SchemaVersion


def canonical_body(event: Event, schema: SchemaVersion | None = None) -> bytes:
    """The schemaless Avro body of `event` with `hash` emptied.

    Args:
        event: The event (its `hash` is ignored).
        schema: The event schema version to encode under; default the current one.
    """
    event_codec = codec("event")
    avro = event_codec.model_to_avro(event)
    avro["hash"] = b""
    return event_codec.body(avro, schema)


def event_hash(prev_hash: bytes, event: Event, schema: SchemaVersion | None = None) -> bytes:
    """`sha256(prev_hash || canonical_body(event, schema))`."""
    return hashlib.sha256(prev_hash + canonical_body(event, schema)).digest()


class Sealed(NamedTuple):
    """A sealed event and its record: the bytes `encode_event` gives for it, written once."""

    event: Event
    record: bytes


def seal(event: Event) -> Event:
    """A copy of `event` with `hash` computed from its `prev_hash` under the current schema."""
    return seal_record(event).event


def seal_record(event: Event) -> Sealed:
    """Seal `event` (as `seal`) and return it with its single-object encoded record.

    One Avro write, straight from the models, serves twice: the body written
    with `hash` empty is the canonical body, and the record is that body with
    the digest in the hash's place (the writer says where the field starts).
    Under `METALOG_CODEC=fastavro` it is `seal_record_reference`.
    """
    event_codec = codec("event")
    write = event_codec.model_writer("hash")
    if write is None:
        return seal_record_reference(event)
    fields = event.__dict__
    if fields["hash"]:
        fields = {**fields, "hash": b""}
        event = built(Event, fields, event.__pydantic_fields_set__)
    out = bytearray(event_codec.current.header)
    at = write(out, event)
    assert at is not None  # the Event schema has a `hash` field
    header = len(event_codec.current.header)
    digest = hashlib.sha256(event.prev_hash + out[header:]).digest()
    # Avro bytes: zigzag length (0 -> 0x00, 32 -> 0x40), then the bytes.
    out[at : at + 1] = b"\x40" + digest
    sealed = built(Event, {**fields, "hash": digest}, event.__pydantic_fields_set__)
    return Sealed(sealed, bytes(out))


def seal_record_reference(event: Event) -> Sealed:
    """`seal_record` the plain way: the Avro-shaped dict of the event, hashed
    (`event_hash`), then the sealed event's dict written again. The fast path
    must give the same bytes (`tests/events/test_events_chain.py`)."""
    event_codec = codec("event")
    sealed = event.model_copy(update={"hash": event_hash(event.prev_hash, event)})
    return Sealed(sealed, event_codec.encode_avro(event_codec.model_to_avro(sealed)))


def verify_chain(events: Iterable[Event], prev_hash: bytes = GENESIS_HASH) -> None:
    """Check that `events` (one catalog, in log order) form an unbroken chain.

    All events are hashed under the current schema; to audit stored records
    written under older schemas use `verify_encoded_chain`.

    Args:
        events: The events, in resource_version order.
        prev_hash: The hash before the first event (`GENESIS_HASH` from the start).

    Raises:
        ChainBroken: An event's `prev_hash`, `hash`, catalog or resource_version is off.
    """
    _verify(((event, None) for event in events), prev_hash)


def verify_encoded_chain(records: Iterable[bytes], prev_hash: bytes = GENESIS_HASH) -> None:
    """Like `verify_chain` for encoded records, each hashed under its writer schema.

    A record must be the exact encoding of the event it decodes to, so a
    changed byte can never hide behind a lenient decoder.

    Raises:
        ChainBroken: The chain breaks, or a record does not decode.
    """
    _verify(_decoded(records), prev_hash)


def _decoded(records: Iterable[bytes]) -> Iterable[tuple[Event, SchemaVersion]]:
    event_codec = codec("event")
    for position, data in enumerate(records):
        try:
            shaped, writer = event_codec.read(data)
            event: Event = event_codec.validate(shaped)
        except DecodeError as exc:
            raise ChainBroken(-1, f"record #{position} does not decode: {exc.reason}") from exc
        reencoded = writer.header + event_codec.body(event_codec.model_to_avro(event), writer)
        if reencoded != bytes(data):
            raise ChainBroken(
                event.resource_version,
                f"record #{position} is not the exact encoding of its event (altered bytes)",
            )
        yield event, writer


def _verify(items: Iterable[tuple[Event, SchemaVersion | None]], prev_hash: bytes) -> None:
    catalog: str | None = None
    version: int | None = None
    for event, schema in items:
        at = event.resource_version
        if catalog is not None and event.catalog != catalog:
            raise ChainBroken(at, f"catalog {event.catalog!r} in the chain of {catalog!r}")
        if version is not None and at != version + 1:
            raise ChainBroken(at, f"follows resource_version {version}: out of order or a gap")
        if event.prev_hash != prev_hash:
            raise ChainBroken(
                at, f"prev_hash {event.prev_hash.hex()} is not the previous hash {prev_hash.hex()}"
            )
        expected = event_hash(prev_hash, event, schema)
        if event.hash != expected:
            raise ChainBroken(
                at, f"hash {event.hash.hex()} is not {expected.hex()}: the event was altered"
            )
        catalog, version, prev_hash = event.catalog, at, event.hash
