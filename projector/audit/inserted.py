"""History rewritten under a recomputed chain: the kind of fault, and the record inserted.

A signature that disagrees with the chain shows how the window since the last good
checkpoint moved (`rewritten`): moved up = `inserted`, down = `deleted`, not at all =
`modified`.

A chain recomputed over history with one record inserted reaches a later checkpoint
one resource_version late. The window since the last good checkpoint is re-chained
without each record in turn; the one whose removal makes the chain reach the signed
hash is the inserted one. The search is quadratic, so only windows up to
`SEARCH_LIMIT` records are searched.
"""

from __future__ import annotations

from typing import NamedTuple

from projector.audit.faults import Fault, FaultKind
from projector.audit.raw import RawEvent, parse, rechained

SEARCH_LIMIT = 5_000
"""The longest unsigned window searched for one inserted record (the search is quadratic)."""


class Seen(NamedTuple):
    """A record as the verifier read it: where it is, its bytes, its envelope."""

    partition: int
    offset: int
    data: bytes
    raw: RawEvent

    def fault(self, kind: FaultKind, reason: str, rv: int | None = None) -> Fault:
        """A fault at this record, at `rv` (the resource_version it should have) or its own."""
        at = self.raw.resource_version if rv is None else rv
        return Fault(kind, self.raw.catalog, self.partition, self.offset, at, reason)


def rewritten(
    base: tuple[int, bytes], records: list[tuple[int, int, bytes]], signed_rv: int,
    signed_hash: bytes, checkpoint: Seen | None,
) -> Fault:  # fmt: skip
    """A signature (a checkpoint's, or a kept note's when `checkpoint` is None) disagrees with
    the chain: the fault, from how the window since `base` (the last good checkpoint's
    resource_version and hash; its `records`: partition, offset, bytes) moved."""
    base_rv, _ = base
    window = [Seen(p, o, data, parse(data)) for p, o, data in records]
    where = (
        f"the checkpoint signed resource_version {signed_rv} with a chain hash the log "
        f"does not have: history after resource_version {base_rv} was rewritten"
    )
    moved = None if checkpoint is None else checkpoint.raw.resource_version - 1 - signed_rv
    if moved is None or moved > 0:
        inserted = find_inserted(base, window, signed_rv, signed_hash)
        if inserted is not None:
            return inserted.fault("inserted", f"{where}; without this record the chain matches")
    kind: FaultKind = "modified" if not moved else ("inserted" if moved > 0 else "deleted")
    first = window[0] if window else checkpoint
    assert first is not None
    return first.fault(kind, f"{where} (the first record after it is named)")


def find_inserted(
    base: tuple[int, bytes], window: list[Seen], signed_rv: int, signed_hash: bytes
) -> Seen | None:
    """The record of `window` without which the chain from `base` (a resource_version and
    its hash) reaches `signed_hash` at `signed_rv`; None if no one record does."""
    base_rv, base_hash = base
    covered = signed_rv - base_rv
    if len(window) > SEARCH_LIMIT or covered <= 0:
        return None
    for skip in range(min(len(window), covered + 1)):
        rest = window[:skip] + window[skip + 1 :]
        if len(rest) < covered:
            break
        chain = base_hash if skip == 0 else window[skip - 1].raw.hash
        for index in range(skip, covered):
            seen = rest[index]
            chain = rechained(seen.data, seen.raw, base_rv + 1 + index, chain)
        if chain == signed_hash:
            return window[skip]
    return None
