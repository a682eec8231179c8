"""The fold's faults and bookkeeping: sequence, duplicates, divergence, leaders, chain."""

import pytest

from events.chain import seal
from events.changes import KeyAbsent, KeyAtVersion
from events.codec import codec, encode_event
from events.commands import AlterTable, Reload
from events.event import Event
from events.intents import LeaderResigned
from events.keys import table_info_key
from events.schema_store import default_store
from events.values import TableVersion
from producers.decide.core import decide, elect
from projector.errors import Divergence, SequenceGap, StaleLeader
from projector.fold.apply import Delivery, apply, classify, replay
from projector.fold.image import Image
from projector.fold.packed_events import unpacked
from projector.replay.source import packed_decoder
from tests.domain.builders import CATALOG, command, create, local, stamps


def _log() -> tuple[Event, ...]:
    catalog = local()
    catalog.submit(create())
    catalog.submit(command(AlterTable, table_name="orders", set_options={"a": "1"}))
    catalog.submit(command(Reload))
    return catalog.events


def test_a_gap_in_resource_versions_raises_sequence_gap_naming_the_missing_range() -> None:
    events = _log()
    with pytest.raises(SequenceGap, match=r"expected resource_version 2: events 2\.\.2") as caught:
        replay(Image.empty(CATALOG), (events[0], events[2]))
    assert (caught.value.expected, caught.value.got) == (2, 3)


def test_a_duplicate_is_ignored_and_returns_the_same_image_object() -> None:
    events = _log()
    image = replay(Image.empty(CATALOG), events[:2])
    assert classify(image, events[0]) is Delivery.DUPLICATE
    assert apply(image, events[0]) is image
    assert classify(image, events[2]) is Delivery.NEXT
    assert classify(Image.empty(CATALOG), events[2]) is Delivery.GAP


def test_a_failed_requirement_is_divergence_naming_the_resource_version_and_requirement() -> None:
    events = _log()
    image = replay(Image.empty(CATALOG), events[:1])
    name_key = f"__table_name/{CATALOG}/public/orders"
    forged = events[1].model_copy(update={"requirements": (KeyAbsent(key=name_key),)})
    expected = rf"resource_version 2: requirement KeyAbsent\({name_key}\)"
    with pytest.raises(Divergence, match=expected):
        apply(image, forged)


def test_a_failed_requirement_read_packed_is_named_as_when_read_as_a_model() -> None:
    events = _log()
    image = replay(Image.empty(CATALOG), events[:1])
    info_key = table_info_key(1)
    forged = events[1].model_copy(update={"requirements": (KeyAtVersion(key=info_key, version=7),)})
    packed = packed_decoder()(encode_event(forged))
    assert type(packed) is not Event and type(packed.requirements[0]) is not KeyAtVersion
    expected = rf"resource_version 2: requirement KeyAtVersion\({info_key} @ version 7\)"
    with pytest.raises(Divergence, match=expected):
        apply(image, packed)


def test_an_event_read_packed_unpacks_to_the_event_as_logged() -> None:
    for event in _log():  # a create, an alter and a control event
        packed = packed_decoder()(encode_event(event))
        assert type(packed) is not Event
        assert unpacked(packed) == event
        assert type(unpacked(packed).intent) is type(event.intent)


def test_a_log_read_packed_may_hold_an_older_schemas_record_read_as_a_model() -> None:
    events = _log()
    v1, event_codec = default_store().versions("event")[0], codec("event")
    older = v1.header + event_codec.body(event_codec.model_to_avro(events[0]), v1)
    read = [packed_decoder()(older), *map(packed_decoder(), map(encode_event, events[1:]))]
    assert type(read[0]) is Event and type(read[1]) is not Event
    assert replay(Image.empty(CATALOG), read) == replay(Image.empty(CATALOG), events)


def test_a_table_version_jump_is_divergence() -> None:
    events = _log()
    image = replay(Image.empty(CATALOG), events[:1])
    forged = events[1].model_copy(update={"tables": (TableVersion(table_id=1, version=3),)})
    with pytest.raises(Divergence, match="goes to version 3 but is at 1"):
        apply(image, forged)


def test_a_new_table_id_must_start_at_version_one() -> None:
    event = _log()[0]
    forged = event.model_copy(update={"tables": (TableVersion(table_id=1, version=2),)})
    with pytest.raises(Divergence, match="goes to version 2 but is at 0"):
        apply(Image.empty(CATALOG), forged)


def test_an_event_from_an_older_leader_is_stale_leader_and_leader_elected_raises_the_epoch() -> (
    None
):
    image = Image.empty(CATALOG)
    stamp = stamps()
    first = elect(image, "a", stamp())
    image = apply(image, first)
    assert image.leader_epoch == 1
    second = elect(image, "b", stamp())
    image = apply(image, second)
    assert image.leader_epoch == 2
    stale = decide(image, create(), stamp())
    assert isinstance(stale, Event)
    stale = stale.model_copy(update={"leader_epoch": 1})
    with pytest.raises(StaleLeader, match="leader_epoch 1 is below the current leader_epoch 2"):
        apply(image, stale)
    again = second.model_copy(update={"resource_version": 3, "prev_hash": image.last_hash})
    with pytest.raises(StaleLeader):
        apply(image, again)


def test_an_unelected_leader_epoch_and_a_broken_chain_are_divergence() -> None:
    event = _log()[0]
    with pytest.raises(Divergence, match="never elected"):
        apply(Image.empty(CATALOG), event.model_copy(update={"leader_epoch": 4}))
    with pytest.raises(Divergence, match="chain is broken"):
        apply(Image.empty(CATALOG), event.model_copy(update={"prev_hash": b"x" * 32}))
    with pytest.raises(Divergence, match="belongs to catalog `c`, not `other`"):
        apply(Image.empty("other"), event)


def test_every_apply_moves_last_hash_and_resource_version() -> None:
    events = _log()
    image = Image.empty(CATALOG)
    for event in events:
        image = apply(image, event)
        assert image.last_hash == event.hash
        assert image.resource_version == event.resource_version


def test_auto_mode_shares_one_view_for_head_and_published() -> None:
    image = replay(Image.empty(CATALOG), _log())
    assert image.published is image.head
    assert image.stable_epoch == 2


def test_leader_resigned_bumps_only_the_resource_version() -> None:
    events = _log()
    image = replay(Image.empty(CATALOG), events)
    last = events[-1]
    resigned = seal(
        last.model_copy(
            update={
                "event_id": "resigned-1",
                "resource_version": last.resource_version + 1,
                "command_id": None,
                "intent": LeaderResigned(leader_id="leader-a"),
                "prev_hash": last.hash,
            }
        )
    )
    after = apply(image, resigned)
    assert after.resource_version == image.resource_version + 1
    assert after.head == image.head and after.published == image.published
    assert after.leader_epoch == image.leader_epoch
