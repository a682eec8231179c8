"""One table's history from a catalog's records as bytes: only what it needs is decoded.

Decoding is the cost of a table's history over a big log, and the history
needs few of the events. One pass over the records reads each envelope and,
for the intents that move a lineage (create, rename, recover, truncate,
exchange), their leading fields, without models (a batch's envelopes at once,
`projector.audit.envelopes`, then only these intents' fields); that
is enough to follow every lineage (`Lineage.apply`) and to find the table.
Then only these events are decoded and folded (`history.follow`):

- the table's own events (the envelope names an id the lineage had then);
- every earlier event that wrote a key the table's events write or read (for
  each key's value before a change): a record that writes a key holds the
  key's Avro string. A key of a table id (`__table_info/7`, its route, its
  datanode keys) is written only by events whose envelope names the id, so
  only those are searched; a key of a name (`__table_name/…`, label rules) is
  searched for in every earlier record;
- the epoch events (`EpochAssigned`, `StableEpochAdvanced`), few in auto mode.

The result is the same as following the table through every event of the
decoded log (`tests/audit/history_oracle.py` is that, from the fold).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, compress, islice

from events.codec import decode_event
from events.compiled.partial import encode_long
from events.errors import DecodeError
from events.event import Event
from events.keys import DATANODE_TABLE, REMOVED, TABLE_INFO, TABLE_ROUTE, table_info_key
from projector.audit.envelopes import skim_batch
from projector.audit.history import TableHistory, begin, follow
from projector.audit.lineage import Lineage, QualifiedName, Step
from projector.audit.raw import Head, head, intent_fields
from projector.heap import collector_paused

EPOCH_INTENTS = frozenset({"EpochAssigned", "StableEpochAdvanced"})
"""The events that give changes their epoch and their release; they name no table."""

_ID_KINDS = (TABLE_INFO, TABLE_ROUTE, DATANODE_TABLE)
"""Kinds of key named by a table id: only events whose envelope names the id write them."""


BATCH = 5000
"""Records whose envelopes the first pass reads at once (`table_history_raw`)."""
Block = tuple[int, int, bytes]
"""A batch of the log: the index of its first record, its record count, its records joined."""

LINEAGE_INTENTS = frozenset(
    {"TableCreated", "TableRecovered", "TableRenamed", "TableTruncated", "PartitionExchanged"}
)
"""The intents that create a lineage, move it to another id or name it; each starts with
`table_id` in every schema version. The others only touch the tables of their envelope."""


def step_of(data: bytes, envelope: Head | None = None) -> tuple[str, Step]:
    """A record's intent name and what it does to the lineages, read from its bytes.

    Args:
        data: The record.
        envelope: Its envelope, if read already (`raw.head`).

    Raises:
        NotAnEvent: The bytes are not a well-formed event record.
    """
    if envelope is None:
        envelope = head(data)
    return envelope.intent, _step(data, tuple(t for t, _ in envelope.tables), envelope.intent,
                                  envelope.at)  # fmt: skip


def _step(data: bytes, tables: tuple[int, ...], intent: str, at: int) -> Step:
    """The step of an intent whose fields start at `at` (see `step_of`)."""
    if intent not in LINEAGE_INTENTS:
        return Step(tables, None)
    fields = intent_fields(data, intent, at)
    if intent == "TableCreated":
        return Step(tables, fields[0], created=(fields[1], fields[2]))
    if intent == "TableTruncated":
        return Step(tables, fields[0], moved=(fields[0], fields[1]))
    if intent == "PartitionExchanged":
        table_id, partition_id, other_id, _ = fields
        return Step(tables, table_id, moved=(other_id, partition_id))
    return Step(tables, fields[0], named=(fields[1], fields[2]))  # a rename, a recover


def table_history_raw(
    catalog: str,
    log: Iterable[bytes],
    name: QualifiedName | None = None,
    table_id: int | None = None,
) -> TableHistory:
    """The history of the table named `name` (the last to hold it) or that had `table_id`,
    from the catalog's records (log order), decoding only what it needs.

    A record that is not an event is skipped, as the decoded log skips it. The first
    pass reads `log` as it comes (from a consumer: while the next records are fetched),
    `BATCH` records at a time (see `table_history_batches`).

    Raises:
        ReplayError: No table in the log had that name or id.
    """
    source = iter(log)
    batches = iter(lambda: list(islice(source, BATCH)), [])
    return table_history_batches(catalog, batches, name, table_id)


@collector_paused()  # what it builds is acyclic (`projector.heap`)
def table_history_batches(
    catalog: str,
    batches: Iterable[Sequence[bytes]],
    name: QualifiedName | None = None,
    table_id: int | None = None,
) -> TableHistory:
    """`table_history_raw` over the records in batches (`LogReader.raw_batches`): each batch's
    envelopes are read at once (`envelopes.skim_batch`).

    Raises:
        ReplayError: No table in the log had that name or id.
    """
    lineage = Lineage()
    envelopes: list[bytes] = []  # each record's `tables` array as bytes (empty: not an event)
    epochs: list[int] = []
    records: list[bytes] = []
    blocks: list[Block] = []
    for batch in batches:
        blocks.append((len(records), len(batch), b"".join(batch)))
        skimmed = skim_batch(batch, blocks[-1][2])
        for at in skimmed.where(LINEAGE_INTENTS):
            lineage.apply(_step(batch[at], (), skimmed.intent(at), skimmed.ats[at]))
        epochs.extend(len(records) + at for at in skimmed.where(EPOCH_INTENTS))
        records.extend(batch)
        envelopes.extend(skimmed.tables)
    history, target = begin(catalog, lineage, name, table_id)
    own = _own(records, envelopes, lineage.ids[target])
    decoded = dict(_decoded(records, sorted(own)))
    needed = set(epochs)
    if decoded:
        needed |= _writers(records, envelopes, blocks, decoded, set(own.values()), max(decoded))
    decoded.update(_decoded(records, sorted(needed - decoded.keys())))
    follow(history, ((decoded[i], own.get(i)) for i in sorted(decoded)))
    return history


def _naming(
    records: Sequence[bytes], envelopes: list[bytes], ids: set[int], last: int
) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """The records before `last` whose envelope names one of `ids`, with the envelope's pairs.

    Most envelopes hold one pair (the block's count 1, then the id's bytes):
    those are checked on the id's bytes, one pattern matched against every envelope
    (an Avro long ends at its first byte below 0x80, so no id's bytes begin another's);
    the others, none (0) or several, are read (`raw.head`).
    """
    one, end = encode_long(1), encode_long(0)
    single = [re.escape(one + encode_long(i)) for i in sorted(ids)]
    other = b"[^" + re.escape(end) + re.escape(one) + b"]"  # not one pair, nor none
    maybe = re.compile(b"|".join([other, *single])).match
    for index in compress(range(last), map(maybe, islice(envelopes, last))):
        pairs = head(records[index]).tables
        if any(t in ids for t, _ in pairs):
            yield index, pairs


def _own(records: Sequence[bytes], envelopes: list[bytes], ids: list[int]) -> dict[int, int]:
    """The lineage's records (an envelope or an intent naming its id, its creation) → its id after.

    Only records whose envelope names one of its ids can; the lineage is followed
    through them from its creation (`ids[0]`, never reused) as `Lineage.apply` does.
    """
    own: dict[int, int] = {}
    current: int | None = None
    for index, pairs in _naming(records, envelopes, set(ids), len(records)):
        _, step = step_of(records[index])
        touched = current is not None and (
            current == step.table_id or any(t == current for t, _ in pairs)
        )
        if step.created is not None and step.table_id == ids[0]:
            current, touched = ids[0], True
        elif step.moved is not None and current is not None and step.moved[0] == current:
            current = step.moved[1]
        if touched and current is not None:
            own[index] = current
    return own


def _decoded(records: Sequence[bytes], indices: Sequence[int]) -> Iterator[tuple[int, Event]]:
    """The events at `indices`; a record that does not decode is skipped (as `LogReader` does)."""
    for index in indices:
        try:
            yield index, decode_event(records[index])
        except DecodeError:
            continue


def _writers(
    records: Sequence[bytes],
    envelopes: list[bytes],
    blocks: Sequence[Block],
    own: dict[int, Event],
    own_ids: set[int],
    last: int,
) -> set[int]:
    """The records before `last` that write a key the table's events write or read.

    Read: the table's info under each id it had (its name after a change), and the
    info of each table an intent names (the DDL words, `ddl`).
    """
    keys = {k for t in own_ids for k in (table_info_key(t), REMOVED + table_info_key(t))}
    ids = set(own_ids)
    for event in own.values():
        keys.update(m.key for m in event.mutations)
        ids.update(t.table_id for t in event.tables)
        for field in ("table_id", "other_table_id"):  # the DDL words name them (`ddl`)
            named = getattr(event.intent, field, None)
            if isinstance(named, int):
                keys.add(table_info_key(named))
                keys.add(REMOVED + table_info_key(named))
                ids.add(named)
    by_id = {k for k in keys if k.removeprefix(REMOVED).split("/", 1)[0] in _ID_KINDS}
    needles = [_avro_string(k) for k in by_id]
    found = {index for index, _ in _naming(records, envelopes, ids, last)
             if any(n in records[index] for n in needles)}  # fmt: skip
    found |= _search(records, blocks, last, [_avro_string(k) for k in keys - by_id])
    return found


def _search(
    records: Sequence[bytes], blocks: Sequence[Block], last: int, needles: list[bytes]
) -> set[int]:
    """The records before `last` that hold any of `needles`: one search per needle over
    each batch's joined bytes."""
    found: set[int] = set()
    for first, count, block in blocks if needles else ():
        if first >= last:
            break
        ends: list[int] = []  # the batch's records' ends in the block, once a needle is in it
        for needle in needles:
            at = block.find(needle)
            while at >= 0:
                ends = ends or list(accumulate(map(len, records[first : first + count])))
                index = bisect_right(ends, at)
                if first + index >= last:
                    break
                found.add(first + index)
                at = block.find(needle, ends[index])  # on from the next record
    return found


def _avro_string(text: str) -> bytes:
    data = text.encode()
    return encode_long(len(data)) + data
