"""The verifier on in-memory logs: a clean log passes; each tampering is named, kind and record."""

import gc
from collections.abc import Iterator, Sequence

import pytest

from events.chain import seal_record
from events.changes import KeyAtVersion
from events.checkpoint import Checkpoint, Signer, from_event
from events.intents import CheckpointSigned, LeaderElected, TableAltered
from projector.audit.fast import matches
from projector.audit.faults import Fault, Report
from projector.audit.read import verify_records
from projector.audit.verify import NAME_TAKING_INTENTS, Verifier
from tests.audit import scripted
from tests.audit.tamper import KEY, OTHER_KEY, events, forged_reload, rechain, signed_log


def verify(records: Sequence[bytes], key: bool = True, kept: Checkpoint | None = None) -> Report:
    notes = None if kept is None else {"kept.note": kept}
    verifier = Verifier(public_key=KEY.public_key() if key else None, kept=notes)
    for offset, record in enumerate(records):
        verifier.feed(0, offset, record)
    return verifier.finish()


def fault(records: Sequence[bytes], **options: object) -> Fault:
    found = verify(records, **options).fault  # type: ignore[arg-type]
    assert found is not None
    return found


def _checkpoints(log: Sequence[bytes]) -> list[int]:
    return [i for i, e in enumerate(events(log)) if isinstance(e.intent, CheckpointSigned)]


def test_a_clean_signed_log_verifies() -> None:
    log = signed_log()
    report = verify(log)
    assert report.fault is None and report.records == len(log)
    summary = report.catalogs["c"]
    assert summary.resource_version == len(log) and summary.leader_epoch == 1
    assert summary.checkpoints == len(_checkpoints(log)) >= 3
    last = events(log)[_checkpoints(log)[-1]]
    assert summary.signed_through == last.resource_version - 1
    assert summary.chain_hash == events(log)[-1].hash.hex()


def test_an_altered_byte_is_modified_at_that_record() -> None:
    log = signed_log()
    altered = bytearray(log[7])
    altered[30] ^= 0x01
    found = fault([*log[:7], bytes(altered), *log[8:]])
    assert (found.kind, found.offset, found.resource_version) == ("modified", 7, 8)


def test_a_removed_event_is_deleted_at_the_record_after_the_hole() -> None:
    log = signed_log()
    found = fault([*log[:6], *log[7:]])
    assert (found.kind, found.offset, found.resource_version) == ("deleted", 6, 7)


def test_two_swapped_events_are_reordered_at_the_first() -> None:
    log = signed_log()
    found = fault([*log[:6], log[7], log[6], *log[8:]])
    assert (found.kind, found.offset, found.resource_version) == ("reordered", 6, 8)


def test_an_inserted_event_with_a_recomputed_chain_is_found_by_the_next_checkpoint() -> None:
    log = events(signed_log())
    at = _checkpoints(signed_log())[1] + 2  # inside a signed window, not at its edge
    forged = rechain([*log[:at], forged_reload(log[at - 1]), *log[at:]])
    found = fault(forged)
    assert (found.kind, found.offset, found.resource_version) == ("inserted", at, at + 1)
    assert fault(forged, key=False).kind == "inserted"  # the checkpoints' own claims show it


def test_a_deleted_event_with_a_recomputed_chain_is_deleted_within_its_window() -> None:
    log = events(signed_log())
    window = _checkpoints(signed_log())[1:3]
    found = fault(rechain([*log[: window[0] + 2], *log[window[0] + 3 :]]))
    # The hole hides behind the new chain: the table's next version or the next checkpoint shows it.
    assert found.kind == "deleted" and window[0] < found.offset < window[1]


def test_a_rewritten_event_with_a_recomputed_chain_is_caught_by_the_fold_first() -> None:
    log = events(signed_log())
    at = next(i for i, e in enumerate(log) if isinstance(e.intent, TableAltered))
    requirement = KeyAtVersion(key=log[at].requirements[0].key, version=99)
    changed = log[at].model_copy(update={"requirements": (requirement,)})
    found = fault(rechain([*log[:at], changed, *log[at + 1 :]]))
    assert (found.kind, found.offset) == ("modified", at)
    assert "does not fit" in found.reason


def test_a_truncated_tail_is_caught_against_a_kept_checkpoint() -> None:
    log = signed_log()
    kept_at = _checkpoints(log)[-1]
    kept = from_event(events(log)[kept_at])
    assert verify(log, kept=kept).fault is None
    found = fault(log[: kept_at - 3], kept=kept)
    assert (found.kind, found.offset, found.resource_version) == ("truncated", kept_at - 3,
                                                                  kept_at - 2)  # fmt: skip


def test_history_rewritten_under_a_kept_checkpoint_is_not_the_kept_one() -> None:
    log = events(signed_log())
    kept = from_event(log[_checkpoints(signed_log())[-1]])
    at = 3
    forged = rechain([*log[:at], forged_reload(log[at - 1]), *log[at:]])
    # The in-log checkpoints catch it first; without a key they still do (their claims).
    assert fault(forged, key=False, kept=kept).kind == "inserted"


def test_an_event_from_a_fenced_leader_is_stale_leader() -> None:
    log = events(signed_log(tables=3, elections=2))
    second = [i for i, e in enumerate(log) if isinstance(e.intent, LeaderElected)][1]
    old = forged_reload(log[second - 1])  # leader_epoch 1, after epoch 2's election
    at = second + 3
    found = fault(rechain([*log[:at], old, *log[at:]]), key=False)
    assert (found.kind, found.offset) == ("stale leader", at)
    assert "fenced" in found.reason


def test_a_checkpoint_signed_by_another_key_is_forged() -> None:
    log = events(signed_log())
    at = _checkpoints(signed_log())[-1]
    other = Signer(OTHER_KEY).sign(from_event(log[at]))
    intent = log[at].intent.model_copy(update={"key_id": other.key_id,
                                               "signature": other.signature})  # fmt: skip
    forged = rechain([*log[:at], log[at].model_copy(update={"intent": intent}), *log[at + 1 :]])
    found = fault(forged)
    assert (found.kind, found.offset) == ("forged", at)
    assert verify(forged, key=False).fault is None  # without the key nobody can tell


def test_an_unsigned_log_fails_when_a_key_is_required() -> None:
    log = signed_log(key=None)
    assert verify(log, key=False).fault is None
    found = fault(log)
    assert (found.kind, found.offset, found.resource_version) == ("unsigned", 0, 1)


def test_a_record_that_is_not_an_event_is_modified() -> None:
    log = signed_log()
    found = fault([*log[:4], b"garbage", *log[5:]])
    assert (found.kind, found.offset) == ("modified", 4)


LOG = signed_log(tables=4, every=3)


@pytest.mark.parametrize("at", range(len(LOG)))
def test_any_altered_record_is_modified_at_its_offset(at: int) -> None:
    for byte in (2, 10, len(LOG[at]) // 2, len(LOG[at]) - 40):  # header, envelope, body, chain
        altered = bytearray(LOG[at])
        altered[byte] ^= 0x10
        found = fault([*LOG[:at], bytes(altered), *LOG[at + 1 :]])
        assert (found.kind, found.offset) == ("modified", at), byte


@pytest.mark.parametrize("at", range(len(LOG) - 1))
def test_any_removed_record_but_the_last_is_deleted_at_the_next(at: int) -> None:
    found = fault([*LOG[:at], *LOG[at + 1 :]])
    assert (found.kind, found.offset, found.resource_version) == ("deleted", at, at + 1)


@pytest.mark.parametrize("at", range(len(LOG) - 1))
def test_any_two_neighbours_swapped_are_reordered_at_the_first(at: int) -> None:
    found = fault([*LOG[:at], LOG[at + 1], LOG[at], *LOG[at + 2 :]])
    assert (found.kind, found.offset, found.resource_version) == ("reordered", at, at + 2)


@pytest.mark.parametrize("at", range(1, len(LOG)))
def test_an_event_inserted_anywhere_under_a_recomputed_chain_is_found(at: int) -> None:
    log = events(LOG)
    forged = rechain([*log[:at], forged_reload(log[at - 1]), *log[at:]])
    last_checkpoint = _checkpoints(LOG)[-1]
    if at > last_checkpoint:  # after the last signature: nothing signed covers it yet
        assert verify(forged).fault is None
        return
    found = fault(forged)
    assert (found.kind, found.offset) == ("inserted", at)


def _tampered() -> list[list[bytes]]:
    """LOG and, at every record, each tampering above that the integrity checks name."""
    log, decoded = LOG, events(LOG)
    out = [list(LOG)]
    for at in range(len(log) - 1):
        altered = bytearray(log[at])
        altered[len(altered) // 2] ^= 0x10
        out.append([*log[:at], bytes(altered), *log[at + 1 :]])
        out.append([*log[:at], *log[at + 1 :]])
        out.append([*log[:at], log[at + 1], log[at], *log[at + 2 :]])
        if at:
            out.append(rechain([*decoded[:at], forged_reload(decoded[at - 1]), *decoded[at:]]))
        unchained = seal_record(decoded[at].model_copy(update={"prev_hash": bytes(32)})).record
        out.append([*log[:at], unchained, *log[at + 1 :]])
        if decoded[at].tables and decoded[at].intent.type not in NAME_TAKING_INTENTS:
            # A table version skipped, the chain recomputed over it (for an id that takes
            # a name a jump is allowed, and the fold checks the number: the test below).
            table = decoded[at].tables[0]
            skipped = (table.model_copy(update={"version": table.version + 1}),
                       *decoded[at].tables[1:])  # fmt: skip
            changed = decoded[at].model_copy(update={"tables": skipped})
            out.append(rechain([*decoded[:at], changed, *decoded[at + 1 :]]))
    return out


@pytest.mark.parametrize("log", _tampered())
def test_the_fast_path_over_batches_names_what_the_checks_one_by_one_name(log: list[bytes]) -> None:
    exact = verify(log)  # one record a call, every check step by step and the fold
    for fold in (False, True):  # the fast path alone, and with the fold beside it
        fast = Verifier(public_key=KEY.public_key(), fold=fold)
        records = ((0, offset, record, matches(record)) for offset, record in enumerate(log))
        report = verify_records(records, fast, batch=4)  # faults at every place in a batch
        assert report.fault == exact.fault, fold
        assert report.fault is not None or report.records == exact.records == len(log)


_NAMING = [i for i, e in enumerate(events(LOG)) if e.intent.type in NAME_TAKING_INTENTS]


@pytest.mark.parametrize("at", _NAMING)
def test_a_skipped_version_of_a_table_taking_a_name_is_named_by_the_fold_at_its_record(
    at: int,
) -> None:
    log = events(LOG)
    table = log[at].tables[0]
    skipped = (table.model_copy(update={"version": table.version + 1}), *log[at].tables[1:])
    rewritten = rechain([*log[:at], log[at].model_copy(update={"tables": skipped}), *log[at + 1 :]])
    records = ((0, offset, record, matches(record)) for offset, record in enumerate(rewritten))
    report = verify_records(records, Verifier(fold=True), batch=4)
    assert report.fault is not None and report.fault == verify(rewritten).fault
    assert (report.fault.kind, report.fault.offset) == ("modified", at)
    assert f"goes to version {table.version + 1}" in report.fault.reason


_ALTERED = [i for i, e in enumerate(events(LOG)) if isinstance(e.intent, TableAltered)]


@pytest.mark.parametrize("at", _ALTERED)
def test_an_event_the_fold_refuses_is_named_at_its_offset_from_any_place_in_a_batch(
    at: int,
) -> None:
    log = events(LOG)
    requirement = KeyAtVersion(key=log[at].requirements[0].key, version=99)
    changed = log[at].model_copy(update={"requirements": (requirement,)})
    rewritten = rechain([*log[:at], changed, *log[at + 1 :]])
    records = ((0, offset, record, matches(record)) for offset, record in enumerate(rewritten))
    report = verify_records(records, Verifier(fold=True), batch=4)  # the batch path
    assert report.fault is not None
    assert (report.fault.kind, report.fault.offset) == ("modified", at)
    assert report.fault.resource_version == log[at].resource_version
    assert "does not fit" in report.fault.reason
    assert report.records == at + 1  # the records read up to it, the refused one too


def test_a_verify_pauses_the_cycle_collector_and_turns_it_back_on() -> None:
    """The fold's image is acyclic: a verify runs with the collector off, then on again."""
    during: list[bool] = []

    def records() -> Iterator[tuple[int, int, bytes, bool]]:
        for offset, record in enumerate(LOG):
            during.append(gc.isenabled())
            yield 0, offset, record, matches(record)

    assert gc.isenabled()
    assert verify_records(records(), Verifier(public_key=KEY.public_key())).fault is None
    assert during and not any(during) and gc.isenabled()


def test_a_log_whose_tables_take_used_names_verifies_with_their_versions_going_on() -> None:
    # Issue 50: an id that takes a name jumps to the name's next version; that is no
    # missing change, with the fold (which checks the number) or without it.
    catalog = scripted.lifecycle()
    log = [sealed.record for sealed in catalog.take_new_records()]
    last: dict[int, int] = {}
    jumps = 0
    for event in events(log):
        for table in event.tables:
            jumps += table.version > last.get(table.table_id, 0) + 1
            last[table.table_id] = table.version
    assert jumps, "no id took a used name above its own next version"
    for fold in (True, False):
        verifier = Verifier(fold=fold)
        for offset, record in enumerate(log):
            verifier.feed(0, offset, record)
        assert verifier.finish().fault is None
