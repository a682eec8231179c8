"""The one reader of a catalog's partition (`projector.kafka.partition`), which every reader
of the log shares: a read from an offset to an end, and Kafka's failures as metalog errors."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence

import pytest
from confluent_kafka import KafkaError, KafkaException, Message
from confluent_kafka.admin import ClusterMetadata

from bench.workload import produce as produce_records
from projector.errors import ClusterUnavailable
from projector.kafka.partition import PartitionReader
from tests.fixtures.kafka import TopicSet
from tests.follower.workload import CATALOG, produce_raw

NOWHERE = "127.0.0.1:1"
"""A port nothing listens on."""


class Fetches:
    """A consumer whose fetches return the batches given, then nothing."""

    def __init__(self, batches: Sequence[list[Message]]) -> None:
        self.batches = [list(batch) for batch in batches]
        self.assigned: list[tuple[int, int]] = []

    def assign(self, partitions: list) -> None:
        self.assigned = [(tp.partition, tp.offset) for tp in partitions]

    def unassign(self) -> None:
        self.assigned = []

    def poll(self, timeout: float) -> Message | None:
        return self.batches[0].pop(0) if self.batches else None

    def consume(self, size: int, timeout: float) -> list[Message]:
        return self.batches.pop(0) if self.batches else []

    def close(self) -> None:
        pass


def _reader(*batches: list[Message]) -> PartitionReader:
    """A reader of `t` whose fetches return `batches` (no cluster involved)."""
    reader = PartitionReader(NOWHERE, "t")
    reader.consumer.close()
    reader.consumer = Fetches(batches)  # type: ignore[assignment]
    return reader


def _record(offset: int) -> Message:
    return Message(topic="t", partition=0, offset=offset, value=b"%d" % offset)


def _error(code: int, offset: int = 0) -> Message:
    return Message(topic="t", partition=0, offset=offset, error=KafkaError(code))


def _offsets(runs: Iterable[list[Message]]) -> list[list[int | None]]:
    return [[m.offset() for m in run] for run in runs]


def test_a_batch_is_split_into_runs_at_its_error_events_and_an_end_is_noted() -> None:
    reader = _reader()
    batch = [_record(0), _record(1), _error(KafkaError._PARTITION_EOF, 2), _record(2)]
    runs = reader.runs(batch)
    assert _offsets([next(runs)]) == [[0, 1]] and reader.eof == {}  # not past the end yet
    assert _offsets(runs) == [[2]] and reader.eof == {0: 2}


class Answers:
    """A consumer whose metadata requests get the cluster's answer once (without the topic),
    then time out."""

    def __init__(self) -> None:
        self.asked = 0

    def list_topics(self, topic: str, timeout: float) -> ClusterMetadata:
        self.asked += 1
        if self.asked > 1:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get metadata"))
        return ClusterMetadata()  # no topics

    def close(self) -> None:
        pass


def test_a_topic_the_cluster_said_is_missing_stays_missing_when_the_last_ask_times_out() -> None:
    """The deadline's last round asks with a tiny wait that can time out on a busy machine:
    the error names what the cluster said before, not an unreachable cluster."""
    reader = PartitionReader(NOWHERE, "gone.events")
    reader.consumer.close()
    reader.consumer = Answers()  # type: ignore[assignment]
    with pytest.raises(ClusterUnavailable) as told:
        reader.partitions(timeout=0.5)
    assert "topic `gone.events` does not exist" in str(told.value), str(told.value)


def test_a_failed_fetch_ends_a_read_in_metalog_words_but_not_a_live_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = _reader()
    batch = [_record(0), _error(KafkaError._TRANSPORT), _record(1)]
    with pytest.raises(ClusterUnavailable, match=f"cannot reach the Kafka cluster at {NOWHERE}"):
        list(reader.runs(batch))
    with caplog.at_level(logging.WARNING, "projector.kafka.partition"):
        assert _offsets(reader.runs(batch, live=True)) == [[0], [1]]
    assert "_TRANSPORT" in caplog.text


def test_a_read_stops_at_the_first_end_at_or_past_its_end() -> None:
    eof = KafkaError._PARTITION_EOF
    reader = _reader([_record(5), _record(6), _error(eof, 7), _record(7)], [_record(8)])
    read = reader.read(0, 5, 7)
    assert _offsets(read) == [[5, 6]] and read.eof == read.reached == 7
    assert reader.consumer.assigned == []  # type: ignore[attr-defined]


def test_a_read_waits_past_an_end_before_its_end_only_while_it_settles() -> None:
    eof = KafkaError._PARTITION_EOF
    batches = ([_record(5), _error(eof, 6)], [_record(7), _error(eof, 8)])
    waiting = _reader(*batches).read(0, 5, 8)  # an undecided transaction at 6..7
    assert _offsets(waiting) == [[5], [7]] and waiting.eof == 8
    at_once = _reader(*batches).read(0, 5, 8, settle=0)
    assert _offsets(at_once) == [[5]] and at_once.eof == at_once.reached == 6


@pytest.mark.integration
def test_a_read_from_an_offset_to_the_decided_end_skips_aborted_records(wire: TopicSet) -> None:
    produce_records(wire.bootstrap, wire.events, [(CATALOG, b"gone"), (CATALOG, b"gone too")],
                    1, transactional_id=f"test-{uuid.uuid4()}", abort=True)  # fmt: skip
    produce_raw(wire, [b"x", b"y", b"z"])
    with PartitionReader(wire.bootstrap, wire.events) as reader:
        low = reader.bounds(0)[0]
        end = reader.decided_ends([0])[0]
        whole = reader.read(0, low, end, size=2)
        records = [(m.offset(), m.value()) for run in whole for m in run]
        assert [value for _, value in records] == [b"x", b"y", b"z"]
        assert whole.eof == whole.reached == end  # read to the end, markers included
        second = records[1][0]
        rest = reader.read(0, second, end)
        assert [m.value() for run in rest for m in run] == [b"y", b"z"]
        nothing = reader.read(0, end, end)
        assert list(nothing) == [] and nothing.eof is None and nothing.reached == end


@pytest.mark.integration
def test_reading_a_topic_that_does_not_exist_is_a_metalog_error(wire: TopicSet) -> None:
    missing = f"missing-{uuid.uuid4().hex[:8]}.events"
    with (
        PartitionReader(wire.bootstrap, missing) as reader,
        pytest.raises(ClusterUnavailable) as told,
    ):  # fmt: skip
        reader.partitions(timeout=2.0)
    text = str(told.value)
    assert f"a metalog topic is missing on {wire.bootstrap}" in text, text
    assert f"topic `{missing}` does not exist" in text and "run `metalog up`" in text, text
    assert isinstance(told.value.__cause__, KafkaException)


def test_a_closed_port_is_a_metalog_error_naming_the_bootstrap() -> None:
    with PartitionReader(NOWHERE, "metalog.events") as reader, pytest.raises(
        ClusterUnavailable, match=f"cannot reach the Kafka cluster at {NOWHERE}"
    ):  # fmt: skip
        reader.partitions(timeout=1.0)
