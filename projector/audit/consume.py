"""Consuming an events topic's partitions in batches, here or in a child process.

`python -m projector.audit.consume` is the child `projector.audit.read` starts
for a big log: it reads the spans and settings as one pickle on stdin and
writes pickles to stdout: ("batch", partition, offsets, lengths, block, hashed)
with the batch's values joined in one block and, per record, whether its bytes
match its hash (`fast.matches`: the child's share of the checks, so the two
processes share the work), ("end", partition, offset), ("error", code, reason)
(Kafka's, for the parent to put in metalog's words), then ("done",). The child's
stderr is discarded (a failure arrives as "error", or as the end of its output).
"""

from __future__ import annotations

import pickle
import sys
from array import array
from collections.abc import Iterator
from typing import Any, BinaryIO

from confluent_kafka import KafkaError, KafkaException

from projector.audit.fast import matches
from projector.kafka.clients import BULK_READ
from projector.kafka.errors import READ_FAILURES
from projector.kafka.partition import PartitionReader
from projector.kafka.security import KafkaSecurity

BATCH = 10_000
"""Records taken per `consume` call."""

Span = tuple[int, int, int]
"""A partition to read: (partition, low watermark, end) (see `partition.decided_ends`)."""


def batches(reader: PartitionReader, spans: list[Span],
            ends: dict[int, int]) -> Iterator[tuple[int, list[tuple[int, bytes]]]]:  # fmt: skip
    """Each partition's committed records, a batch at a time: (partition, [(offset, value)]).

    A partition is read to its end in `spans` (`PartitionReader.read`).

    Sets `ends[partition]` to the offset of each partition's EOF.

    Raises:
        ClusterUnavailable: The cluster failed a fetch.
        AccessDenied: The cluster refused the reader's principal.
    """
    for partition, low, end in spans:
        read = reader.read(partition, low, end, BATCH)
        for messages in read:
            yield partition, [(m.offset() or 0, m.value() or b"") for m in messages]
        assert read.eof is not None  # read to the end: it saw the end of partition
        ends[partition] = read.eof


def send_all(out: BinaryIO, bootstrap: str, topic: str, security: KafkaSecurity,
             spans: list[Span], hashing: bool) -> None:  # fmt: skip
    """Consume `spans` and write every batch, the ends and the outcome to `out` (see above);
    without `hashing` every record's `hashed` is 0."""
    ends: dict[int, int] = {}
    last: tuple[Any, ...] = ("done",)
    try:
        with PartitionReader(bootstrap, topic, security, read=BULK_READ) as reader:
            for partition, batch in batches(reader, spans, ends):
                offsets = array("q", (o for o, _ in batch)).tobytes()
                lengths = array("q", (len(v) for _, v in batch)).tobytes()
                block = b"".join(v for _, v in batch)
                hashed = bytes(matches(v) for _, v in batch) if hashing else bytes(len(batch))
                pickle.dump(("batch", partition, offsets, lengths, block, hashed), out,
                            protocol=5)  # fmt: skip
        for partition, end in ends.items():
            pickle.dump(("end", partition, end), out, protocol=5)
    except READ_FAILURES as exc:
        # The reader's failure crosses as Kafka's code and words: the parent puts them in
        # metalog's (an error with more than a message does not survive pickling).
        cause = exc.__cause__
        error = cause.args[0] if isinstance(cause, KafkaException) and cause.args else None
        if not isinstance(error, KafkaError):
            error = KafkaError(KafkaError._FAIL, str(exc))
        last = ("error", error.code(), error.str())
    pickle.dump(last, out, protocol=5)
    out.flush()


def main() -> None:
    """The child: its task from stdin, its records to stdout."""
    bootstrap, topic, security, spans, hashing = pickle.load(sys.stdin.buffer)
    try:
        send_all(sys.stdout.buffer, bootstrap, topic, security, spans, hashing)
    except BrokenPipeError:
        return  # the reader stopped early: it has its answer


if __name__ == "__main__":
    main()
