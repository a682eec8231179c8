"""The hash chain: a sealed log verifies; any change, reordering or wrong link breaks it."""

import hashlib

import event_samples as samples
import pytest

from events.chain import (
    canonical_body,
    event_hash,
    seal,
    seal_record,
    seal_record_reference,
    verify_chain,
    verify_encoded_chain,
)
from events.codec import codec, decode_event, encode_event
from events.errors import ChainBroken
from events.event import GENESIS_HASH, Event
from events.schema_store import default_store


def _chain(length: int = 6) -> list[Event]:
    events, prev = [], GENESIS_HASH
    for position, intent in enumerate(samples.INTENTS[:length], start=1):
        event = seal(samples.sample_event(intent, resource_version=position, prev_hash=prev))
        events.append(event)
        prev = event.hash
    return events


def test_hash_is_sha256_of_prev_and_canonical_body() -> None:
    event = _chain(1)[0]
    assert event.prev_hash == bytes(32)
    body = canonical_body(event)
    assert body == canonical_body(event.model_copy(update={"hash": b"\x09" * 32}))
    assert event.hash == hashlib.sha256(GENESIS_HASH + body).digest()
    assert event_hash(GENESIS_HASH, event) == event.hash


@pytest.mark.parametrize("prev_hash", [GENESIS_HASH, b"\x40" * 32], ids=["genesis", "0x40"])
def test_sealing_gives_the_same_hash_and_bytes_as_encoding_afresh(prev_hash: bytes) -> None:
    # Every intent type; a prev_hash of 0x40 bytes looks like the hash's length byte.
    for position, intent in enumerate(samples.INTENTS, start=1):
        unsealed = samples.sample_event(intent, resource_version=position, prev_hash=prev_hash)
        event, record = seal_record(unsealed)
        assert seal(unsealed) == event
        assert event.hash == hashlib.sha256(prev_hash + canonical_body(event)).digest()
        # The record seal_record wrote is the one the plain encoder writes.
        assert record == encode_event(event)
        assert decode_event(record) == event
        # ... and the one the reference path (Avro-shaped dicts) writes, byte for byte.
        assert seal_record_reference(unsealed) == (event, record)


def test_sealing_an_event_that_carries_a_hash_replaces_it() -> None:
    unsealed = samples.sample_event(samples.INTENTS[0], resource_version=1, prev_hash=GENESIS_HASH)
    sealed = seal_record(unsealed)
    assert seal_record(sealed.event.model_copy(update={"hash": b"\x01" * 32})) == sealed
    assert seal_record_reference(sealed.event) == sealed


def test_a_sealed_chain_verifies() -> None:
    events = _chain()
    verify_chain(events)
    verify_encoded_chain([encode_event(e) for e in events])
    verify_chain(events[3:], prev_hash=events[2].hash)


def test_reordering_breaks_the_chain() -> None:
    events = _chain()
    events[2], events[3] = events[3], events[2]
    with pytest.raises(ChainBroken) as caught:
        verify_chain(events)
    assert caught.value.resource_version == 4


def test_wrong_prev_hash_breaks_the_chain() -> None:
    events = _chain()
    events[4] = seal(events[4].model_copy(update={"prev_hash": b"\x01" * 32}))
    with pytest.raises(ChainBroken, match="prev_hash"):
        verify_chain(events)
    with pytest.raises(ChainBroken, match="prev_hash"):
        verify_chain(_chain(), prev_hash=b"\x02" * 32)


def test_an_altered_event_breaks_the_chain() -> None:
    events = _chain()
    events[1] = events[1].model_copy(update={"actor": "mallory"})
    with pytest.raises(ChainBroken, match="altered") as caught:
        verify_chain(events)
    assert caught.value.resource_version == 2


def test_flipping_any_byte_of_any_record_breaks_the_chain() -> None:
    records = [encode_event(e) for e in _chain(3)]
    for index, record in enumerate(records):
        for position in range(len(record)):
            altered = bytearray(record)
            altered[position] ^= 0x01
            log = [*records[:index], bytes(altered), *records[index + 1 :]]
            with pytest.raises(ChainBroken):
                verify_encoded_chain(log)


def test_events_written_under_v1_verify_after_the_schema_changed() -> None:
    v1 = default_store().versions("event")[0]
    event_codec = codec("event")
    records, prev = [], GENESIS_HASH
    for position, intent in enumerate(samples.INTENTS[:3], start=1):
        event = samples.sample_event(intent, resource_version=position, prev_hash=prev)
        event = event.model_copy(update={"hash": event_hash(prev, event, v1)})
        records.append(v1.header + event_codec.body(event_codec.to_avro(event.model_dump()), v1))
        prev = event.hash
    verify_encoded_chain(records)
