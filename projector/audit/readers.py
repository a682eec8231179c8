"""What the audit reads of an event record, as readers compiled from each writer schema.

The audit never writes a byte offset: it says which fields it reads (the items
below) and `events.compiled` compiles, for every shipped event schema, the
straight-line readers of those fields (`partial`: the envelope as far as the
intent's branch, some intents' leading fields) and of the chain fields at the
record's end (`trailer`: `prev_hash` and `hash` are sha256 digests, then from
v2 on the optional `trace_id`). A new schema version gets its readers from its
file; one the readers cannot cover is refused at import, naming the field.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, cast

from events.compiled.partial import Item, Prefix, Source, compile_prefix, encode_long, named_types
from events.compiled.trailer import Trailer, compile_trailer, source_names
from events.compiled.write import compile_writer
from events.schema_store import HEADER_LENGTH, SchemaVersion, default_store

DIGEST_SIZE = hashlib.sha256().digest_size
"""The size of `prev_hash` and `hash` (`events.chain`)."""
TRACE_ID_LENGTH = 32
"""The length of the `trace_id` a leader writes (a W3C trace id's 32 hex characters)."""
EMPTIED = encode_long(0)
"""The hash field emptied as the canonical body holds it (`events.chain`): bytes of length 0."""

HEAD: tuple[Item, ...] = (
    ("catalog", "content"), ("resource_version", "start"), ("resource_version", "value"),
    ("resource_version", "end"), ("leader_epoch", "value"), ("occurred_at", "value"),
    ("tables", "start"), ("tables", "value"), ("tables", "end"), ("intent", "branch"),
    ("intent", "end"),
)  # fmt: skip
"""`raw.head`'s items: the envelope, where its resource_version and tables sit, the intent."""
SKIM: tuple[Item, ...] = (
    ("tables", "start"), ("tables", "end"), ("intent", "branch"), ("intent", "end"),
)  # fmt: skip
"""`raw.skim`'s items: where the tables sit, the intent and where its fields start."""
ENVELOPE: tuple[Item, ...] = (
    ("catalog", "content"), ("resource_version", "value"), ("leader_epoch", "value"),
    ("tables", "value"), ("intent", "branch"),
)  # fmt: skip
"""`fast.checked`'s items: the envelope values the checks use."""
INTENT_FIELDS: Mapping[str, tuple[str, ...]] = {
    "LeaderElected": ("leader_id",),
    "CheckpointSigned": ("resource_version", "chain_hash", "key_id", "signature"),
    "TableCreated": ("table_id", "schema_name", "table_name"),
    "TableRecovered": ("table_id", "schema_name", "table_name"),
    "TableRenamed": ("table_id", "schema_name", "new_table_name"),
    "TableTruncated": ("table_id", "new_table_id"),
    "PartitionExchanged": ("table_id", "partition_id", "other_table_id"),
}
"""The intents whose fields the audit reads (the checks', the lineage's), and which."""
CHAIN = ("prev_hash", "hash")
"""The chain fields, read from the record's end."""


Checked = Callable[[bytes, int, bool], tuple[Any, ...] | None]
"""`EventReader.checked`."""
Matches = Callable[[bytes, int], bool | None]
"""`EventReader.matches`."""


class EventReader(NamedTuple):
    """The readers of records of one event writer schema (each `(record, offset)` → a tuple).

    Attributes:
        intents: The intent union's branches (record names), by index.
        head: `HEAD`'s items, from the body's start; then where the intent's fields start.
        skim: `SKIM`'s items.
        checked: `(record, body start, hashed)` → `ENVELOPE`'s items, then the recorded
            `prev_hash` and `hash` in the chain fields' likeliest reading (`Trailer.likely_read`),
            in one call (`fast.checked`'s work, generated); None when that reading does not
            fit, or (unless `hashed`: the caller checked it) the hash does not match.
        matches: `(record, body start)` → whether the record's bytes match its hash in that
            reading (`fast.matches`'s work, generated); None when the reading does not fit.
        fields: Per intent of `INTENT_FIELDS` the writer has: its fields' values from
            where they start, then where the last one ends.
        trailer: Where the chain fields (and `trace_id`) sit, from the end.
        chain: `(marker, width)` of `prev_hash` and `hash`: a field's content is
            `record[start + marker : start + width]`.
        tables: The bytes of an envelope's `tables` array holding `(table_id, version)` pairs.
    """

    intents: tuple[str, ...]
    head: Prefix
    skim: Prefix
    checked: Checked
    matches: Matches
    fields: Mapping[str, Prefix]
    trailer: Trailer
    chain: tuple[tuple[int, int], tuple[int, int]]
    tables: Callable[[dict[str, Any]], bytes]


def _reader(version: SchemaVersion) -> EventReader:
    parsed = version.parsed
    named = named_types(parsed)
    by_name = {f["name"]: f for f in parsed["fields"]}
    intents = tuple(b["name"].rpartition(".")[2] for b in by_name["intent"]["type"])
    fields: dict[str, Prefix] = {}
    for branch in by_name["intent"]["type"]:
        short = branch["name"].rpartition(".")[2]
        wanted = INTENT_FIELDS.get(short)
        if wanted is not None:
            items: list[Item] = [(name, "value") for name in wanted]
            fields[short] = compile_prefix(branch, [*items, (wanted[-1], "end")], named)
    sizes = dict.fromkeys(CHAIN, DIGEST_SIZE)
    trailer = compile_trailer(parsed, CHAIN[0], sizes, TRACE_ID_LENGTH)
    if trailer.names != CHAIN:
        raise ValueError(f"event v{version.version} ends with {trailer.names}, not {CHAIN}")
    chain = ((len(trailer.markers[0]), trailer.widths[0]),
             (len(trailer.markers[1]), trailer.widths[1]))  # fmt: skip
    write = compile_writer({"type": "record", "name": "metalog.events.Tables",
                            "fields": [by_name["tables"]]})  # fmt: skip
    # Their `then` gives them a signature and a result of their own (`_checks`).
    checked = cast(Checked, compile_prefix(parsed, ENVELOPE, named,
                                           then=_checks(trailer, hashed="hashed")))  # fmt: skip
    matches = cast(Matches, compile_prefix(parsed, (), named, then=_checks(trailer)))
    return EventReader(
        intents, compile_prefix(parsed, HEAD, named), compile_prefix(parsed, SKIM, named),
        checked, matches, fields, trailer, chain, write,
    )  # fmt: skip


def body_hash(data: bytes, prev_hash: bytes, hash_at: int, tail: int) -> bytes:
    """`sha256(prev_hash || canonical body)` of a record whose hash field starts at `hash_at`
    and is followed by `tail` bytes: the body with the hash field emptied (`events.chain`)."""
    return hashlib.sha256(
        prev_hash + data[HEADER_LENGTH:hash_at] + EMPTIED + data[len(data) - tail :]
    ).digest()


def _checks(trailer: Trailer, hashed: str | None = None) -> Source:
    """The chain fields' likeliest reading and the hash check after a prefix's items (`_reader`).

    With `hashed` (the name of an argument the function takes: true, the caller checked the
    hash), the function returns `ENVELOPE`'s values and the recorded `prev_hash` and `hash`,
    or None; without, whether the hash matches. The hash is `body_hash`, inline.
    """
    read = trailer.likely_source
    tail, prev, recorded, _, hash_at = source_names(read)
    digest = (f"_sha256({prev} + d[{HEADER_LENGTH}:{hash_at}] + _emptied"
              f" + d[size - {tail}:]).digest()")  # fmt: skip
    constants = {**read.constants, "_sha256": hashlib.sha256, "_emptied": EMPTIED}
    if hashed is None:
        return Source(read.lines, f"{digest} == {recorded}", constants, bound=())
    bound = ("catalog", "rv", "epoch", "tables", "intent")
    check = f"    if not {hashed} and {digest} != {recorded}: return None"
    return Source((*read.lines, check), f"{''.join(n + ', ' for n in bound)}{prev}, {recorded}, ",
                  constants, bound=bound, arguments=f", {hashed}")  # fmt: skip


def tables_bytes(reader: EventReader, tables: tuple[tuple[int, int], ...]) -> bytes:
    """An envelope's `tables` array holding `tables`, as `reader`'s writer schema writes it."""
    pairs = [{"table_id": t, "version": v} for t, v in tables]
    return reader.tables({"tables": pairs})


READERS: Mapping[bytes, EventReader] = {
    v.fingerprint: _reader(v) for v in default_store().versions("event")
}
"""Per event writer fingerprint: its readers."""
