"""The audit's byte-level reader agrees with the codec and the chain, for every schema version."""

import pytest

from events.chain import event_hash, seal_record
from events.codec import codec, decode_event
from events.schema_store import default_store
from projector.audit.fast import checked, matches
from projector.audit.raw import NotAnEvent, parse, rechained
from tests.events import event_golden as golden
from tests.events import event_samples as samples

GOLDEN = [
    *((name, data) for name, data in golden.EVENTS_V1.items()),
    *((name, data) for name, data in golden.EVENTS_V2.items()),
    *((name, data) for name, data in golden.EVENTS.items()),
]


@pytest.mark.parametrize(("name", "data"), GOLDEN)
def test_the_envelope_and_the_hash_match_the_codec_for_every_version(name: str, data: str) -> None:
    record = bytes.fromhex(data)
    raw, event = parse(record), decode_event(record)
    writer = default_store().by_fingerprint[record[2:10]]
    assert (raw.catalog, raw.resource_version, raw.leader_epoch) == (
        event.catalog, event.resource_version, event.leader_epoch)  # fmt: skip
    assert raw.tables == tuple((t.table_id, t.version) for t in event.tables)
    assert raw.intent == name == type(event.intent).__name__
    assert (raw.prev_hash, raw.hash) == (event.prev_hash, event.hash)
    assert raw.computed == event_hash(event.prev_hash, event, writer)
    assert codec("event").read(record)[1] is writer


@pytest.mark.parametrize("trace_id", [None, "0af7651916cd43dd8448eb211c80319c", "", "x" * 300])
def test_a_traced_event_parses_and_rechains_like_a_resealed_one(trace_id: str | None) -> None:
    event = samples.EVENTS["TableAltered"].model_copy(update={"trace_id": trace_id})
    sealed = seal_record(event)
    raw = parse(sealed.record)
    assert raw.computed == raw.hash == sealed.event.hash
    moved = event.model_copy(update={"resource_version": 1234567, "prev_hash": bytes(range(32))})
    assert rechained(sealed.record, raw, 1234567, bytes(range(32))) == event_hash(
        bytes(range(32)), moved)  # fmt: skip


@pytest.mark.parametrize("cut", [1, 10, 40, 200])
def test_a_cut_record_is_not_an_event(cut: int) -> None:
    record = bytes.fromhex(golden.EVENTS["TableCreated"])
    with pytest.raises(NotAnEvent):
        parse(record[:-cut] if cut < len(record) else b"")


@pytest.mark.parametrize("name", sorted(samples.EVENTS))
def test_the_fast_path_reads_what_parse_reads_in_every_sealed_intent(name: str) -> None:
    record = seal_record(samples.EVENTS[name]).record
    raw, fast = parse(record), checked(record)
    assert fast == (raw.catalog.encode(), raw.resource_version, raw.leader_epoch,
                    list(raw.tables), raw.intent, raw.prev_hash, raw.hash)  # fmt: skip
    changed = bytearray(record)
    changed[-40] ^= 0x01  # inside the hash: the bytes no longer match it
    assert checked(bytes(changed)) is None


@pytest.mark.parametrize(("name", "data"), GOLDEN)
def test_the_fast_path_leaves_a_record_not_matching_its_hash_to_parse(name: str, data: str) -> None:
    assert checked(bytes.fromhex(data)) is None  # the golden records are not sealed


@pytest.mark.parametrize("trace_id", [None, "0af7651916cd43dd8448eb211c80319c", "", "x" * 300])
def test_the_fast_path_reads_a_traced_event_or_leaves_it_to_parse(trace_id: str | None) -> None:
    event = samples.EVENTS["TableAltered"].model_copy(update={"trace_id": trace_id})
    sealed = seal_record(event)
    fast = checked(sealed.record)
    if trace_id is None or len(trace_id) == 32:  # the shapes a leader writes
        assert fast is not None and fast[1:3] == (event.resource_version, event.leader_epoch)
        assert fast[6] == sealed.event.hash
    else:
        assert fast is None


@pytest.mark.parametrize("trace_id", [None, "0af7651916cd43dd8448eb211c80319c", "", "x" * 300])
def test_matches_says_whether_the_bytes_match_the_hash_as_parse_finds(trace_id: str | None) -> None:
    event = samples.EVENTS["TableAltered"].model_copy(update={"trace_id": trace_id})
    record = seal_record(event).record
    changed = bytearray(record)
    changed[20] ^= 0x01  # in the envelope
    for data in (record, bytes(changed)):
        raw = parse(data)
        plain = trace_id is None or len(trace_id) == 32  # the readings `matches` tries
        assert matches(data) == (plain and raw.computed == raw.hash)
        assert checked(data, hashed=matches(data)) == checked(data)
