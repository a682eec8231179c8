"""Signed checkpoints and `metalog audit` against a real broker.

A signing leader writes the log; each tampering is written straight to a
fresh events topic past the leader (a copy of the log with one change), and
`metalog audit verify` must name the kind of fault and the first bad offset
(in a copy written in one transaction, offset = position in the log).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from confluent_kafka import Producer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from events.checkpoint import Signer, from_event
from events.intents import CheckpointSigned, LeaderElected
from metalog.cli import main
from metalog.cli.follow import follow_demo
from metalog.cli.output import image_document
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from producers.leader.local import CheckpointSchedule
from producers.leader.owner import LeaderOptions
from projector.audit.read import TopicLog
from projector.kafka.clients import CLIENT_SETTINGS
from tests.audit.tamper import KEY, OTHER_KEY, events, forged_reload, rechain
from tests.domain.builders import COLUMNS
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import produce_raw, wait_until

pytestmark = pytest.mark.integration

CATALOG = "greptime"
EVERY = 4


def _leader(wire: TopicSet, key: Ed25519PrivateKey | None, every: int = EVERY,
            seconds: float = 3600.0) -> Leader:  # fmt: skip
    schedule = None if key is None else CheckpointSchedule(Signer(key), every, seconds)
    leader = Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
                    options=LeaderOptions(checkpoints=schedule)).start()  # fmt: skip
    assert leader.wait_until_serving(1, timeout=60.0), "the leader never owned its partition"
    return leader


def _workload(wire: TopicSet, tables: int = 5, name: str = "t") -> None:
    with MetadataClient(wire.bootstrap, catalog=CATALOG, actor="alice",
                        topics=wire.topics) as client:  # fmt: skip
        for n in range(tables):
            client.create_table("public", f"{name}{n}", COLUMNS)
            client.alter_table("public", f"{name}{n}", set_options={"ttl": f"{n}d"})


def _records(wire: TopicSet) -> list[bytes]:
    return [value for _, _, value in TopicLog(wire.bootstrap, wire.events).records()]


@pytest.fixture
def signed(wire: TopicSet) -> Iterator[list[bytes]]:
    """The records of a log a signing leader wrote (checkpoint every 4 events)."""
    leader = _leader(wire, KEY)
    try:
        _workload(wire)
    finally:
        leader.stop()
    yield _records(wire)


@pytest.fixture
def public_key(tmp_path: Path) -> str:
    path = tmp_path / "checkpoint.pub"
    path.write_bytes(KEY.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))
    return str(path)


def _verify(
    wire: TopicSet, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, object]]:
    capsys.readouterr()
    code = main(["audit", "verify", "--bootstrap", wire.bootstrap, "--prefix", wire.prefix,
                 "--json", *extra])  # fmt: skip
    return code, json.loads(capsys.readouterr().out)


@pytest.fixture
def tampered(
    topics: Callable[[int], TopicSet], capsys: pytest.CaptureFixture[str], public_key: str
) -> Callable[..., dict[str, object]]:
    """Write records into a fresh events topic, verify it; the fault (exit code 65 checked)."""

    def check(records: Sequence[bytes], *extra: str, key: bool = True) -> dict[str, object]:
        fresh = topics(1)
        produce_raw(fresh, records, key=CATALOG)
        code, report = _verify(fresh, capsys, *(("--public-key", public_key) if key else ()),
                               *extra)  # fmt: skip
        assert code == 65 and report["ok"] is False
        fault = report["fault"]
        assert isinstance(fault, dict)
        return fault

    return check


def _kinds(records: Sequence[bytes]) -> list[str]:
    return [type(e.intent).__name__ for e in events(records)]


def test_the_leader_signs_at_election_and_every_n_events_and_the_log_verifies(
    wire: TopicSet, signed: list[bytes], capsys: pytest.CaptureFixture[str], public_key: str
) -> None:
    kinds = _kinds(signed)
    assert kinds[:2] == ["LeaderElected", "CheckpointSigned"]
    changes = [i for i, k in enumerate(kinds) if k not in ("LeaderElected", "CheckpointSigned")]
    assert len(changes) == 10
    checkpoints = [i for i, k in enumerate(kinds) if k == "CheckpointSigned"]
    assert checkpoints == [1, 6, 11]  # after the election, then after every 4 events
    code, report = _verify(wire, capsys, "--public-key", public_key)
    assert code == 0 and report["ok"] is True and report["fault"] is None
    [catalog] = report["catalogs"]  # type: ignore[misc]
    assert catalog["checkpoints"] == 3 and catalog["signed_through"] == 11
    assert catalog["resource_version"] == len(signed)


def test_a_new_leader_signs_at_its_election(
    wire: TopicSet, signed: list[bytes], capsys: pytest.CaptureFixture[str], public_key: str
) -> None:
    second = _leader(wire, KEY)
    try:
        _workload(wire, tables=1, name="u")  # the partition's new owner: elected again
        log = events(_records(wire))
    finally:
        second.stop()
    elections = [i for i, e in enumerate(log) if isinstance(e.intent, LeaderElected)]
    assert len(elections) == 2
    after = log[elections[1] + 1]
    assert isinstance(after.intent, CheckpointSigned) and after.leader_epoch == 2
    assert from_event(after).verifies(KEY.public_key())
    assert _verify(wire, capsys, "--public-key", public_key)[0] == 0


def test_the_leader_signs_an_idle_catalog_after_the_interval(wire: TopicSet) -> None:
    leader = _leader(wire, KEY, every=1000, seconds=0.5)
    try:
        _workload(wire, tables=1)
        wait_until(lambda: _kinds(_records(wire))[-1] == "CheckpointSigned", timeout=30.0)
        time.sleep(1.0)  # idle and signed: no checkpoint of a checkpoint
        assert _kinds(_records(wire)).count("CheckpointSigned") == 2
    finally:
        leader.stop()


def test_followers_see_the_same_image_with_and_without_checkpoints(
    topics: Callable[[int], TopicSet],
) -> None:
    images = []
    for key in (KEY, None):
        wire = topics(1)
        leader = _leader(wire, key, every=2)
        try:
            _workload(wire, tables=4)
        finally:
            leader.stop()
        images.append(image_document(follow_demo(wire.bootstrap, wire.topics, CATALOG)))
    signed, unsigned = images
    assert signed["resource_version"] > unsigned["resource_version"]
    assert {**signed, "resource_version": 0} == {**unsigned, "resource_version": 0}


def test_an_altered_payload_is_modified(signed: list[bytes], tampered: Callable[..., dict]) -> None:
    altered = bytearray(signed[4])
    altered[-80] ^= 0x01
    fault = tampered([*signed[:4], bytes(altered), *signed[5:]])
    assert (fault["kind"], fault["offset"], fault["resource_version"]) == ("modified", 4, 5)


def test_a_removed_event_is_deleted(signed: list[bytes], tampered: Callable[..., dict]) -> None:
    fault = tampered([*signed[:7], *signed[8:]])
    assert (fault["kind"], fault["offset"], fault["resource_version"]) == ("deleted", 7, 8)


def test_two_swapped_events_are_reordered(
    signed: list[bytes], tampered: Callable[..., dict]
) -> None:
    fault = tampered([*signed[:3], signed[4], signed[3], *signed[5:]])
    assert (fault["kind"], fault["offset"], fault["resource_version"]) == ("reordered", 3, 5)


def test_an_inserted_event_with_a_recomputed_chain_is_inserted(
    signed: list[bytes], tampered: Callable[..., dict]
) -> None:
    log = events(signed)
    # Between two signed checkpoints, wherever the leader wrote them (a
    # re-election under load adds one), two events past the first.
    first, _second = [i for i, e in enumerate(log) if isinstance(e.intent, CheckpointSigned)][1:3]
    at = first + 2
    fault = tampered(rechain([*log[:at], forged_reload(log[at - 1]), *log[at:]]))
    assert (fault["kind"], fault["offset"], fault["resource_version"]) == ("inserted", at, at + 1)


def test_a_truncated_tail_is_truncated_against_a_kept_checkpoint(
    wire: TopicSet, signed: list[bytes], tampered: Callable[..., dict], public_key: str,
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    note = tmp_path / "kept.note"
    assert main(["audit", "checkpoint", "--bootstrap", wire.bootstrap, "--prefix", wire.prefix,
                 "--public-key", public_key, "--out", str(note)]) == 0  # fmt: skip
    assert note.read_text().startswith(f"metalog catalog {CATALOG}\n11\n")
    assert _verify(wire, capsys, "--public-key", public_key, "--against", str(note))[0] == 0
    fault = tampered(signed[:10], "--against", str(note))  # the kept one covers 11 events
    assert (fault["kind"], fault["offset"], fault["resource_version"]) == ("truncated", 10, 11)


def test_an_event_from_a_fenced_leader_is_stale_leader(
    wire: TopicSet, signed: list[bytes], tampered: Callable[..., dict]
) -> None:
    second = _leader(wire, KEY)
    try:
        _workload(wire, tables=1, name="u")
    finally:
        second.stop()
    log = events(_records(wire))
    elected = max(i for i, e in enumerate(log) if isinstance(e.intent, LeaderElected))
    at = elected + 3
    fault = tampered(rechain([*log[:at], forged_reload(log[elected - 1]), *log[at:]]))
    assert (fault["kind"], fault["offset"], fault["resource_version"]) == ("stale leader", at,
                                                                           at + 1)  # fmt: skip


def test_a_checkpoint_signed_by_another_key_is_forged(
    signed: list[bytes], tampered: Callable[..., dict]
) -> None:
    log = events(signed)
    # The last checkpoint the leader signed, wherever it wrote it (a re-election
    # under load adds one).
    at = [i for i, e in enumerate(log) if isinstance(e.intent, CheckpointSigned)][-1]
    other = Signer(OTHER_KEY).sign(from_event(log[at]))
    intent = log[at].intent.model_copy(update={"key_id": other.key_id,
                                               "signature": other.signature})  # fmt: skip
    changed = log[at].model_copy(update={"intent": intent})
    fault = tampered(rechain([*log[:at], changed, *log[at + 1 :]]))
    assert (fault["kind"], fault["offset"], fault["resource_version"]) == ("forged", at, at + 1)


def test_an_unsigned_log_is_unsigned_when_a_key_is_required(
    wire: TopicSet, tampered: Callable[..., dict], capsys: pytest.CaptureFixture[str]
) -> None:
    leader = _leader(wire, None)
    try:
        _workload(wire, tables=2)
    finally:
        leader.stop()
    assert _verify(wire, capsys)[0] == 0  # no key asked: it verifies, signatures unchecked
    fault = tampered(_records(wire))
    assert (fault["kind"], fault["offset"], fault["resource_version"]) == ("unsigned", 0, 1)


def test_a_bundle_verifies_offline_and_a_changed_byte_in_it_does_not(
    wire: TopicSet, signed: list[bytes], public_key: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    bundle = tmp_path / "bundle"
    assert main(["audit", "export", "--bootstrap", wire.bootstrap, "--prefix", wire.prefix,
                 "--public-key", public_key, "--to", str(bundle), "--json"]) == 0  # fmt: skip
    exported = json.loads(capsys.readouterr().out)
    assert exported["records"] == len(signed) and exported["checkpoints"] == 1
    assert (bundle / "public_key.pem").read_text().startswith("-----BEGIN PUBLIC KEY")
    assert (bundle / "checkpoints" / f"{CATALOG}.note").read_text().startswith("metalog catalog")
    rendered = [json.loads(line) for line in (bundle / "events.jsonl").read_text().splitlines()]
    assert [r["event"]["resource_version"] for r in rendered] == list(range(1, len(signed) + 1))
    assert {p.name for p in (bundle / "schemas").iterdir()} == {"v1", "v2", "v3"}
    offline = ["audit", "verify", "--bootstrap", "127.0.0.1:1", "--bundle", str(bundle), "--json"]
    assert main(offline) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["signatures_checked"] and report["public_key"] == "bundle"
    data = bytearray((bundle / "records" / "partition-0.bin").read_bytes())
    data[-40] ^= 0x01  # inside the last record
    (bundle / "records" / "partition-0.bin").write_bytes(bytes(data))
    assert main(offline) == 65
    fault = json.loads(capsys.readouterr().out)["fault"]
    *_, (_, last_offset, _) = TopicLog(wire.bootstrap, wire.events).records()
    assert (fault["kind"], fault["offset"]) == ("modified", last_offset)  # markers took offsets


def test_a_log_read_through_the_child_process_is_the_log_read_here(
    wire: TopicSet, signed: list[bytes]
) -> None:
    here = TopicLog(wire.bootstrap, wire.events, child_from=10**9)
    child = TopicLog(wire.bootstrap, wire.events, child_from=0)  # every log in a child
    records = list(child.records())
    assert records == list(here.records())
    assert [value for _, _, value in records] == signed
    assert child.ends == here.ends
    hashed = list(TopicLog(wire.bootstrap, wire.events, child_from=0).hashed_records())
    assert [r[:3] for r in hashed] == records and all(ok for *_, ok in hashed)  # genuine bytes
    stopped = child.records()
    assert next(stopped) == records[0]
    stopped.close()  # the reader's answer came early: the child is ended, nothing hangs


def test_a_read_waits_for_a_transaction_decided_just_after_it_starts(
    wire: TopicSet, signed: list[bytes]
) -> None:
    # Right after a commit returns, the broker may not have written its markers
    # yet: a read_committed read that stopped at its first end saw none of it.
    producer = Producer({"bootstrap.servers": wire.bootstrap, "transactional.id": wire.prefix,
                         **CLIENT_SETTINGS})  # fmt: skip
    producer.init_transactions(30)
    producer.begin_transaction()
    for value in signed[:3]:
        producer.produce(wire.events, key=CATALOG.encode(), value=value, partition=0)
    producer.flush(30)
    threading.Timer(1.0, producer.commit_transaction, (30,)).start()
    read = [value for _, _, value in TopicLog(wire.bootstrap, wire.events).records()]
    assert read == [*signed, *signed[:3]]
