"""Many records' envelopes read at once: one regular expression over their joined bytes.

`raw.skim` walks one record in Python (≈ 2.5 µs); a pass over a million
records spends most of its time there. Here a batch of records is joined and
one compiled pattern (`re`, which runs in C) reads every envelope as far as its
intent: the `tables` array and the intent's branch, with no Python step per
record. The pattern is compiled from the event schemas (`events.compiled.pattern`)
and covers the envelope's usual shape (strings shorter than 64 bytes, `tables`
in one block of at most 63 pairs, a known writer schema); when
a record of the batch falls outside it, the batch is read record by record
with `raw.skim`. Either way the answer is `skim`'s, record for record.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from operator import itemgetter
from typing import NamedTuple

from events.compiled.partial import named_types
from events.compiled.pattern import prefix_pattern
from events.schema_store import FINGERPRINT, MAGIC, default_store
from projector.audit.raw import NotAnEvent, skim
from projector.audit.readers import READERS

INTENTS = max((reader.intents for reader in READERS.values()), key=len)
"""Every intent name by its branch index (each writer's union is a prefix of the newest's)."""
NOT_AN_EVENT = 0xFF
"""The intent byte of a record that is not an event."""

_COMMON = min(len(reader.intents) for reader in READERS.values())
"""Branches every writer has; a record with a later one is checked against its own writer."""


def _patterns() -> dict[bytes, tuple[bytes, tuple[bytes, ...]]]:
    """Per writer fingerprint: its envelope's expression up to the intent (`tables` captured)
    and the intent's branch indexes as written (`events.compiled.pattern`)."""
    return {v.fingerprint: prefix_pattern(v.parsed, "intent", "tables", named_types(v.parsed))
            for v in default_store().versions("event")}  # fmt: skip


_PATTERNS = _patterns()
_ALIGNED = len({fields for fields, _ in _PATTERNS.values()}) == 1 and all(
    INTENTS[: len(reader.intents)] == reader.intents for reader in READERS.values()
)
"""Every writer's envelope reads alike up to the intent and its intent union is a prefix of
the newest's (if not, batches are read by `skim`)."""
_BRANCHES = max((branches for _, branches in _PATTERNS.values()), key=len)
_ENVELOPE = re.compile(
    b"(" + re.escape(MAGIC) + b"(?:" + b"|".join(map(re.escape, _PATTERNS)) + b")"
    + next(iter(_PATTERNS.values()))[0]
    + b"[" + b"".join(map(re.escape, _BRANCHES)) + b"])",
    re.DOTALL,
)  # fmt: skip
"""An envelope of the usual shape up to its intent's branch: (the whole, the `tables` array)."""
_NAMES = {branch[0]: name for branch, name in zip(_BRANCHES, INTENTS, strict=True)}
"""An intent's name by its branch byte."""
_LATE = re.compile(b"[" + b"".join(map(re.escape, _BRANCHES[_COMMON:])) + b"]"
                   if len(INTENTS) > _COMMON else b"(?!)")  # fmt: skip
"""A branch byte some writer lacks."""


class Skimmed(NamedTuple):
    """What `skim` finds in each record of a batch, in the batch's order.

    Attributes:
        tables: Each record's `tables` array as bytes (empty: not an event).
        intents: Each record's intent as its branch byte (its index in `INTENTS` as Avro
            writes it; `NOT_AN_EVENT`: not an event).
        ats: Where each record's intent fields start (0: not an event).
    """

    tables: list[bytes]
    intents: bytes
    ats: list[int]

    def intent(self, at: int) -> str:
        """The intent of the record at position `at` of the batch (an event's)."""
        return _NAMES[self.intents[at]]

    def where(self, names: frozenset[str]) -> Iterator[int]:
        """The positions in the batch of the records whose intent is one of `names`."""
        wanted = [re.escape(_BRANCHES[i]) for i, name in enumerate(INTENTS) if name in names]
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
                if _BRANCHES.index(intents[at : at + 1]) >= len(
                    READERS[heads[at][FINGERPRINT]].intents
                ):
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
        intents += _BRANCHES[INTENTS.index(intent)]
        ats.append(at)
    return Skimmed(tables, bytes(intents), ats)
