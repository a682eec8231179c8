"""Many records' envelopes read at once: one regular expression over their joined bytes.

`raw.skim` walks one record in Python (≈ 2.5 µs); a pass over a million
records spends most of its time there. Here a batch of records is joined and
one compiled pattern (`re`, which runs in C) reads every envelope as far as its
intent: the `tables` array and the intent's branch, with no Python step per
record. The pattern covers the envelope's usual shape (strings shorter than 64
bytes, `tables` in one block of at most 63 pairs, a known writer schema); when
a record of the batch falls outside it, the batch is read record by record
with `raw.skim`. Either way the answer is `skim`'s, record for record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import NamedTuple

from events.schema_store import MAGIC
from projector.audit.raw import WRITERS, NotAnEvent, skim

INTENTS = max((names for names, _ in WRITERS.values()), key=len)
"""Every intent name by its branch index (each writer's union is a prefix of the newest's)."""
NOT_AN_EVENT = 0xFF
"""The intent byte of a record that is not an event."""

_ALIGNED = all(INTENTS[: len(names)] == names for names, _ in WRITERS.values())
"""Every writer's intent union is a prefix of the newest's (if not, batches are read by `skim`)."""
_COMMON = min(len(names) for names, _ in WRITERS.values())
"""Branches every writer has; a record with a later one is checked against its own writer."""

_VARINT = rb"[\x80-\xff]*[\x00-\x7f]"
"""An Avro long (written out, not repeated with `{n}`: `re` runs a repeated group slower)."""
_STRING = b"(?:" + b"|".join(re.escape(bytes([2 * n])) + b".{%d}" % n for n in range(64)) + b")"
_TABLES = b"(?:" + b"|".join(
    re.escape(bytes([2 * n])) + _VARINT * (2 * n) + (b"\x00" if n else b"") for n in range(64)
) + b")"  # fmt: skip
_BRANCH = b"[" + b"".join(re.escape(bytes([2 * i])) for i in range(len(INTENTS))) + b"]"
_ENVELOPE = re.compile(
    b"(" + re.escape(MAGIC) + b"(?:" + b"|".join(re.escape(fp) for fp in WRITERS) + b")"
    + _STRING + _STRING  # event_id, catalog
    + _VARINT * 3  # resource_version, leader_epoch, schema_epoch
    + b"(?:\x00|\x02" + _STRING + b")" + _STRING  # command_id (null or a string), actor
    + _VARINT  # occurred_at
    + b"(" + _TABLES + b")" + _BRANCH + b")",
    re.DOTALL,
)  # fmt: skip
"""An envelope of the usual shape up to its intent's branch: (the whole, the `tables` array)."""
_LATE = re.compile(b"[" + b"".join(re.escape(bytes([2 * i]))
                                 for i in range(_COMMON, len(INTENTS))) + b"]"
                   if len(INTENTS) > _COMMON else b"(?!)")  # fmt: skip
"""A branch byte some writer lacks."""


class Skimmed(NamedTuple):
    """What `skim` finds in each record of a batch, in the batch's order.

    Attributes:
        tables: Each record's `tables` array as bytes (empty: not an event).
        intents: Each record's intent as its branch byte (twice its index in `INTENTS`;
            `NOT_AN_EVENT`: not an event).
        ats: Where each record's intent fields start (0: not an event).
    """

    tables: list[bytes]
    intents: bytes
    ats: list[int]

    def where(self, names: frozenset[str]) -> Iterator[int]:
        """The positions in the batch of the records whose intent is one of `names`."""
        wanted = [re.escape(bytes([2 * i])) for i, name in enumerate(INTENTS) if name in names]
        if not wanted:
            return
        for match in re.finditer(b"[" + b"".join(wanted) + b"]", self.intents):
            yield match.start()


def skim_batch(records: Sequence[bytes], joined: bytes | None = None) -> Skimmed:
    """`raw.skim` of every record of a batch (see the module's docstring).

    Args:
        records: The batch.
        joined: `b"".join(records)`, if the caller has it.
    """
    if _ALIGNED and records:
        found = _ENVELOPE.findall(b"".join(records) if joined is None else joined)
        heads = list(map(itemgetter(0), found))
        # Each record begins with its match: every record is of the usual shape (a match
        # reads only its own bytes, so the same bytes at a record's start read the same).
        if len(found) == len(records) and all(map(bytes.startswith, records, heads)):
            intents = bytearray(map(itemgetter(-1), heads))
            tables = list(map(itemgetter(1), found))
            ats = list(map(len, heads))
            for match in _LATE.finditer(intents):  # a branch its writer may not have
                at = match.start()
                if intents[at] >> 1 >= len(WRITERS[heads[at][2:10]][0]):
                    intents[at], tables[at], ats[at] = NOT_AN_EVENT, b"", 0
            return Skimmed(tables, bytes(intents), ats)
    return _one_by_one(records)


def _one_by_one(records: Sequence[bytes]) -> Skimmed:
    tables: list[bytes] = []
    intents = bytearray()
    ats: list[int] = []
    for data in records:
        try:
            (start, end), intent, at = skim(data)
        except NotAnEvent:
            tables.append(b"")
            intents.append(NOT_AN_EVENT)
            ats.append(0)
            continue
        tables.append(data[start:end])
        intents.append(2 * INTENTS.index(intent))
        ats.append(at)
    return Skimmed(tables, bytes(intents), ats)
