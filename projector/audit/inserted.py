"""The record inserted under a recomputed chain, found by re-hashing a checkpoint's window.

A chain recomputed over history with one record inserted reaches a later checkpoint
one resource_version late. The window since the last good checkpoint is re-chained
without each record in turn; the one whose removal makes the chain reach the signed
hash is the inserted one. The search is quadratic, so only windows up to
`SEARCH_LIMIT` records are searched.
"""

from __future__ import annotations

from typing import NamedTuple

from projector.audit.raw import RawEvent, rechained

SEARCH_LIMIT = 5_000
"""The longest unsigned window searched for one inserted record (the search is quadratic)."""


class Seen(NamedTuple):
    """A record as the verifier read it: where it is, its bytes, its envelope."""

    partition: int
    offset: int
    data: bytes
    raw: RawEvent


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
