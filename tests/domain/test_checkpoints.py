"""Signed checkpoints: the note, its signature, the leader's schedule; the fold ignores them."""

import hashlib
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from events.checkpoint import (
    Checkpoint,
    CheckpointNoteError,
    Signer,
    from_event,
    key_id,
    parse_note,
)
from events.commands import AlterTable, Reload
from events.intents import CHANGE_INTENTS, CONTROL_INTENTS, CheckpointSigned, LeaderElected
from producers.leader.local import CheckpointSchedule, LocalCatalog
from projector.fold.apply import apply
from projector.fold.gate import RULES, Envelope, Gate
from tests.domain.builders import CATALOG, command, create, stamps

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))


def _signed(**fields: object) -> Checkpoint:
    values: dict[str, object] = dict(
        catalog="c", resource_version=7, chain_hash=bytes(range(32)), leader_epoch=2,
        occurred_micros=1_767_225_600_000_001,
    )  # fmt: skip
    values.update(fields)
    return Signer(KEY).sign(Checkpoint(**values))  # type: ignore[arg-type]


def test_the_signed_text_is_the_documented_note() -> None:
    checkpoint = _signed()
    assert checkpoint.text() == (
        b"metalog catalog c\n7\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n"
        b"leader_epoch 2\ntime 2026-01-01T00:00:00.000001Z\n"
    )
    note = checkpoint.note()
    assert note.startswith(checkpoint.text().decode() + "\n\u2014 metalog ")
    assert parse_note(note) == checkpoint


def test_the_key_id_follows_signed_note() -> None:
    raw = KEY.public_key().public_bytes_raw()
    assert key_id(KEY.public_key()) == hashlib.sha256(b"metalog\n\x01" + raw).digest()[:4]


def test_a_signature_verifies_only_with_its_key_and_its_text() -> None:
    checkpoint = _signed()
    assert checkpoint.verifies(KEY.public_key())
    assert not checkpoint.verifies(OTHER.public_key())
    for change in ({"resource_version": 8}, {"chain_hash": bytes(32)}, {"leader_epoch": 3},
                   {"catalog": "d"}, {"occurred_micros": 1}):  # fmt: skip
        forged = Checkpoint(**{**_fields(checkpoint), **change})  # type: ignore[arg-type]
        assert not forged.verifies(KEY.public_key())


def _fields(checkpoint: Checkpoint) -> dict[str, object]:
    return {name: getattr(checkpoint, name) for name in Checkpoint.__slots__}


@pytest.mark.parametrize(
    "text",
    ["", "metalog catalog c\n7\n", "x\n7\nAA==\nleader_epoch 2\ntime t\n\n\u2014 metalog AA==\n"],
)
def test_a_malformed_note_is_a_typed_error(text: str) -> None:
    with pytest.raises(CheckpointNoteError, match="metalog audit checkpoint"):
        parse_note(text)


def _signing(events: int = 3, seconds: float = 3600.0) -> LocalCatalog:
    return LocalCatalog(
        CATALOG, stamps(), checkpoints=CheckpointSchedule(Signer(KEY), events, seconds),
        leader_id="node-1",
    )  # fmt: skip


def test_the_leader_signs_at_election_covering_the_election() -> None:
    catalog = _signing()
    elected = catalog.elect("node-1")
    checkpoint = catalog.events[-1]
    assert isinstance(checkpoint.intent, CheckpointSigned)
    assert checkpoint.resource_version == elected.resource_version + 1
    signed = from_event(checkpoint)
    assert (signed.resource_version, signed.chain_hash) == (1, elected.hash)
    assert signed.leader_epoch == elected.leader_epoch == 1
    assert signed.verifies(KEY.public_key())


def test_the_leader_signs_every_n_events() -> None:
    catalog = _signing(events=3)
    catalog.elect("node-1")
    for n in range(7):
        catalog.submit(create(f"t{n}"))
    kinds = [type(e.intent).__name__ for e in catalog.events]
    assert kinds == ["LeaderElected", "CheckpointSigned",
                     "TableCreated", "TableCreated", "TableCreated", "CheckpointSigned",
                     "TableCreated", "TableCreated", "TableCreated", "CheckpointSigned",
                     "TableCreated"]  # fmt: skip


def test_the_leader_signs_after_the_interval_and_never_an_idle_head() -> None:
    catalog = _signing(events=1000, seconds=2.5)  # stamps are one second apart
    catalog.elect("node-1")
    catalog.submit(create())
    assert type(catalog.events[-1].intent).__name__ == "TableCreated"
    later = catalog.events[-1].occurred_at + timedelta(seconds=10)
    assert catalog.checkpoint_if_due(later)
    assert isinstance(catalog.events[-1].intent, CheckpointSigned)
    assert not catalog.checkpoint_if_due(later + timedelta(hours=1))  # nothing new to sign
    catalog.submit(command(Reload))
    catalog.submit(command(Reload))  # 2 s after the checkpoint's stamp: not yet
    assert type(catalog.events[-1].intent).__name__ == "Reloaded"
    catalog.submit(command(AlterTable, table_name="orders", set_options={"a": "1"}))
    assert isinstance(catalog.events[-1].intent, CheckpointSigned)


def test_no_key_no_checkpoints() -> None:
    catalog = LocalCatalog(CATALOG, stamps())
    catalog.elect("node-1")
    for n in range(5):
        catalog.submit(create(f"t{n}"))
    assert not any(isinstance(e.intent, CheckpointSigned) for e in catalog.events)
    assert isinstance(catalog.events[0].intent, LeaderElected)


def test_a_checkpoint_changes_no_state_but_the_resource_version() -> None:
    catalog = _signing()
    catalog.elect("node-1")
    catalog.submit(create())
    catalog.submit(create("t2"))
    catalog.submit(create("t3"))  # the third event since the last checkpoint: one follows
    checkpoint = catalog.events[-1]
    assert isinstance(checkpoint.intent, CheckpointSigned)
    after_change = LocalCatalog.from_log(CATALOG, stamps(), catalog.events[:-1]).image
    after = apply(after_change, checkpoint)
    assert after.resource_version == after_change.resource_version + 1
    assert after.last_hash == checkpoint.hash
    assert after.head is after_change.head and after.published is after_change.published
    assert after.leader_epoch == after_change.leader_epoch
    assert after.stable_epoch == after_change.stable_epoch


def test_every_intent_has_a_rule_in_the_spark_gate() -> None:
    names = {str(kind.model_fields["type"].default) for kind in (*CHANGE_INTENTS, *CONTROL_INTENTS)}
    assert names - set(RULES) == set()


def test_the_spark_gate_passes_over_checkpoints_as_the_fold_does() -> None:
    catalog = _signing(events=2)
    catalog.elect("node-1")
    for name in ("t1", "t2", "t3", "t4"):
        catalog.submit(create(name))
    assert sum(isinstance(e.intent, CheckpointSigned) for e in catalog.events) >= 3
    gate = Gate()
    for event in catalog.events:
        gate.admit(Envelope.of(event))
    released, stale = gate.advance()
    assert stale == [] and not gate.waiting
    assert gate.state.resource_version == catalog.image.resource_version
    assert [e.resource_version for e in released] == [
        e.resource_version for e in catalog.events if e.is_change]
