"""Group commit, without a broker: batching, order, failure, position."""

from __future__ import annotations

import threading

from events.replies import Committed, Reply
from events.topics import COMMANDS_OFFSET_HEADER
from producers.errors import TransactionFailed
from producers.leader.committer import Batch, GroupCommitter
from producers.leader.owner import Input


class _Broker:
    """A `transact` that records each batch; the first commit can be held open or fail."""

    def __init__(self, fail_first: bool = False) -> None:
        self.committed: list[Batch] = []
        self.first_started = threading.Event()
        self.release_first = threading.Event()
        self._fail_first = fail_first

    def transact(self, batch: Batch, group: object) -> None:
        first = not self.first_started.is_set()
        if first:
            self.first_started.set()
            assert self.release_first.wait(10.0)
            if self._fail_first:
                raise TransactionFailed("the broker said no")
        self.committed.append(batch)


def _batch(consumed: int | None, *names: str, events: bool = True) -> tuple[Batch, list]:
    answers: list[Reply | BaseException] = []
    batch = Batch(consumed)
    for name in names:
        if events:
            batch.last_event = len(batch.records)
            batch.records.append(("events", b"c", name.encode(), []))
        reply = Committed(command_id=name, catalog="c", resource_version=1, tables=(),
                          schema_epoch=0)  # fmt: skip
        batch.replies.append((Input(None, on_reply=answers.append), reply))
    return batch, answers


def test_batches_added_during_a_commit_go_out_together_in_order() -> None:
    broker = _Broker()
    committer = GroupCommitter("test", broker.transact, limit=100)
    first, _ = _batch(1, "a")
    committer.add(first, None)
    assert broker.first_started.wait(10.0)
    second, answers = _batch(2, "b")
    third, _ = _batch(3, "c", events=False)
    committer.add(second, None)
    committer.add(third, None)
    broker.release_first.set()
    committer.close()

    assert [[r[2] for r in b.records] for b in broker.committed] == [[b"a"], [b"b"]]
    merged = broker.committed[1]
    assert [reply.command_id for _, reply in merged.replies] == ["b", "c"]
    # The position of the whole transaction rides on its last event.
    assert merged.records[-1][3] == [(COMMANDS_OFFSET_HEADER, b"3")]
    assert committer.position == 3
    assert [type(a) for a in answers] == [Committed]


def test_a_failed_commit_drops_what_was_decided_after_it_and_reports_once() -> None:
    broker = _Broker(fail_first=True)
    committer = GroupCommitter("test", broker.transact, limit=100)
    first, first_answers = _batch(1, "a")
    committer.add(first, None)
    assert broker.first_started.wait(10.0)
    second, second_answers = _batch(2, "b")
    committer.add(second, None)
    broker.release_first.set()
    while not (first_answers and second_answers):
        threading.Event().wait(0.01)

    late, late_answers = _batch(3, "c")
    assert committer.add(late, None) is False
    assert isinstance(committer.take_failure(), TransactionFailed)
    assert committer.take_failure() is None
    for answers in (first_answers, second_answers, late_answers):
        assert len(answers) == 1 and isinstance(answers[0], TransactionFailed)
    assert committer.position is None

    again, again_answers = _batch(1, "a")
    assert committer.add(again, None) is True
    committer.close()
    assert [[r[2] for r in b.records] for b in broker.committed] == [[b"a"]]
    assert committer.position == 1 and isinstance(again_answers[0], Committed)


def test_a_batch_without_events_carries_no_position_header() -> None:
    batch, _ = _batch(7, "a", "b", events=False)
    batch.mark_position()
    assert batch.last_event == -1
    assert all(headers == [] for *_, headers in batch.records)


def test_an_unexpected_error_in_a_commit_is_a_failed_commit_and_the_thread_goes_on() -> None:
    calls: list[Batch] = []

    def transact(batch: Batch, group: object) -> None:
        calls.append(batch)
        if len(calls) == 1:
            raise KeyError("a bug in the commit path")

    committer = GroupCommitter("test", transact, limit=100)
    first, first_answers = _batch(1, "a")
    committer.add(first, None)
    while not first_answers:
        threading.Event().wait(0.01)
    failure = committer.take_failure()
    assert isinstance(failure, TransactionFailed) and "KeyError" in str(failure)

    again, again_answers = _batch(1, "a")
    assert committer.add(again, None) is True
    committer.close()
    assert committer.position == 1 and isinstance(again_answers[0], Committed)


def test_abandon_drops_what_waits_after_the_commit_in_flight_and_reports_it() -> None:
    broker = _Broker()
    committer = GroupCommitter("test", broker.transact, limit=100)
    first, first_answers = _batch(1, "a")
    committer.add(first, None)
    assert broker.first_started.wait(10.0)
    waiting, waiting_answers = _batch(2, "b")
    committer.add(waiting, None)

    abandoning = threading.Thread(
        target=committer.abandon, args=(TransactionFailed("half-decided batch"),)
    )
    abandoning.start()
    while committer._failure is None:  # abandoned: the commit thread takes nothing more
        threading.Event().wait(0.01)
    broker.release_first.set()
    abandoning.join(10.0)  # returns once "a" is committed

    assert [type(a) for a in first_answers] == [Committed]
    assert len(waiting_answers) == 1 and isinstance(waiting_answers[0], TransactionFailed)
    assert str(committer.take_failure()) == "half-decided batch"
    committer.close()
    assert [[r[2] for r in b.records] for b in broker.committed] == [[b"a"]]
    assert committer.position == 1
