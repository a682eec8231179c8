"""A small history checker: what every log of a catalog must satisfy."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from events.chain import verify_chain
from events.event import Event


def check_history(events: Sequence[Event]) -> None:
    """Resource versions dense from 1, per-table versions dense, hash chain whole,
    and each command id applied at most once."""
    assert [e.resource_version for e in events] == list(range(1, len(events) + 1))
    verify_chain(events)
    versions: dict[int, list[int]] = defaultdict(list)
    for event in events:
        for table in event.tables:
            versions[table.table_id].append(table.version)
    for table_id, seen in versions.items():
        assert seen == list(range(seen[0], seen[0] + len(seen))), (table_id, seen)
    ids = [e.command_id for e in events if e.command_id is not None]
    assert len(ids) == len(set(ids)), "a command id was applied twice"
