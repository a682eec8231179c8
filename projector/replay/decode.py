"""`python -m projector.replay.decode`: the child that reads and decodes a long replay.

`LogReader.events` starts it for a long span (`projector.replay.source`): it
reads the reader (a `LogReader` with its partition, start and end set) as one
pickle on stdin, reads the catalog's records, decodes each to the model-shaped
dict (`KindCodec.decode_dict`: the Avro half of `decode_event`, no pydantic)
and writes pickles to stdout: ("batch", offsets, dicts, unreadable) per
`BATCH` records of the catalog, with the count of records that did not
decode; then ("end", last offset read), or ("error", code, reason).
"""

from __future__ import annotations

import pickle
import sys
from array import array
from typing import Any, BinaryIO

from confluent_kafka import KafkaException

from events.codec import codec
from events.errors import DecodeError
from projector.replay.source import LogReader

BATCH = 2_000
"""Events per message: small enough that the parent starts folding early."""


def send_all(out: BinaryIO, reader: LogReader) -> None:
    """Read `reader`'s records, decode them and write the batches and the outcome to `out`."""
    decode = codec("event").decode_dict
    offsets: list[int] = []
    shaped: list[dict[str, Any]] = []
    unreadable = 0
    last: tuple[Any, ...]
    try:
        for data in reader.raw():
            try:
                shaped.append(decode(data))
            except DecodeError:
                unreadable += 1
                continue
            offsets.append(reader.offset)
            if len(shaped) >= BATCH:
                message = ("batch", array("q", offsets).tobytes(), shaped, unreadable)
                pickle.dump(message, out, protocol=5)
                offsets, shaped, unreadable = [], [], 0
        if shaped or unreadable:
            pickle.dump(("batch", array("q", offsets).tobytes(), shaped, unreadable), out,
                        protocol=5)  # fmt: skip
        last = ("end", reader.offset)
    except KafkaException as exc:
        error = exc.args[0]
        last = ("error", error.code(), error.str())
    pickle.dump(last, out, protocol=5)
    out.flush()


def main() -> None:
    """The child: its reader from stdin, its batches to stdout."""
    reader = pickle.load(sys.stdin.buffer)
    try:
        send_all(sys.stdout.buffer, reader)
    except BrokenPipeError:
        return  # the replay reached its point and stopped reading


if __name__ == "__main__":
    main()
