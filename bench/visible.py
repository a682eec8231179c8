"""When rows became visible in a Delta table, from its log (read without a JVM).

A Delta version is visible once its commit file `_delta_log/<version>.json`
exists; its modification time is taken as that instant. For each version the
caller reduces the table at that version to a *watermark* (how far the table
has got, e.g. the highest resource_version per catalog), and a record is
visible from the first version whose watermark covers it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

Watermark = dict[Hashable, int]


def versions(path: str, since: float) -> list[tuple[int, float]]:
    """(version, commit file mtime) of the commits at or after wall clock `since`."""
    out = []
    for entry in Path(path, "_delta_log").glob("*.json"):
        mtime = os.stat(entry).st_mtime
        if mtime >= since:
            out.append((int(entry.stem), mtime))
    return sorted(out)


def watermarks(path: str, since: float, columns: Sequence[str],
               reduce: Callable[[pa.Table], Watermark]) -> list[tuple[float, Watermark]]:
    """(commit time, watermark) per version committed since `since`, in version order."""
    out = []
    for version, mtime in versions(path, since):
        table = DeltaTable(path, version=version).to_pyarrow_table(columns=list(columns))
        out.append((mtime, reduce(table)))
    return out


def max_per(group: str, value: str) -> Callable[[pa.Table], Watermark]:
    """The watermark `group` → max(`value`)."""
    def reduce(table: pa.Table) -> Watermark:
        grouped = table.group_by(group).aggregate([(value, "max")]).to_pydict()
        return dict(zip(grouped[group], grouped[f"{value}_max"], strict=True))
    return reduce


def visible_at(marks: list[tuple[float, Watermark]],
               positions: Sequence[tuple[Hashable, int]]) -> list[float | None]:
    """For each (group, value), the first commit time whose watermark reaches it.

    Args:
        marks: `watermarks`' output (watermarks only grow from version to version).
        positions: (group, value) pairs, values non-decreasing within a group.

    Returns:
        The commit time per position, None if no version reached it.
    """
    cursor: dict[Hashable, int] = {}
    out: list[float | None] = []
    for group, value in positions:
        index = cursor.get(group, 0)
        while index < len(marks) and marks[index][1].get(group, -1) < value:
            index += 1
        cursor[group] = index
        out.append(marks[index][0] if index < len(marks) else None)
    return out
