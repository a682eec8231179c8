"""What changed in a catalog between two points: keys per kind, and each table's DDL in a line.

Pure: `catalog_diff` takes the image at the first point and the events after
it, applies them through the fold up to the second point, and compares the
two head views on the keys those events wrote (a key no event wrote did not
change). Statements are grouped per table, following truncate's and
exchange's new ids within the span.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from events.event import Event
from events.intents import PartitionExchanged, TableTruncated
from projector.audit.changes import KeyChange, compare
from projector.audit.ddl import NameOf, ddl
from projector.fold.apply import apply
from projector.fold.image import Image
from projector.fold.view import View
from projector.heap import collector_paused
from projector.replay.point import Point


@dataclass(slots=True)
class CatalogDiff:
    """The difference between the catalog at two points (head views: everything committed).

    Attributes:
        catalog: The catalog.
        from_resource_version: The first point, as a resource_version.
        to_resource_version: The second.
        keys: Each key that differs, by key.
        tables: Each table the span changed (`schema.table` at the second point) →
            its statements in order, joined by `; `.
    """

    catalog: str
    from_resource_version: int
    to_resource_version: int
    keys: list[KeyChange] = field(default_factory=list)
    tables: dict[str, str] = field(default_factory=dict)

    def counts(self) -> dict[str, dict[str, int]]:
        """Kind → {added, changed, removed} → how many keys."""
        counted: dict[str, Counter[str]] = {}
        for change in self.keys:
            counted.setdefault(change.kind, Counter())[change.op] += 1
        return {kind: {op: c[op] for op in ("added", "changed", "removed")}
                for kind, c in sorted(counted.items())}  # fmt: skip

    def document(self) -> dict[str, Any]:
        """JSON (docs/cli.md, `metalog audit diff --json`)."""
        return {
            "catalog": self.catalog, "from_resource_version": self.from_resource_version,
            "to_resource_version": self.to_resource_version, "kinds": self.counts(),
            "tables": [{"table": t, "summary": s} for t, s in self.tables.items()],
            "keys": [k.document() for k in self.keys],
        }  # fmt: skip


@collector_paused()  # what it builds is acyclic (`projector.heap`)
def catalog_diff(start: Image, events: Iterable[Event], to: Point) -> tuple[CatalogDiff, Image]:
    """The diff from `start` to the point `to`, and the image there.

    Args:
        start: The image at the first point.
        events: The catalog's events in log order (those at or below `start` are skipped).
        to: The second point.

    Raises:
        ApplyError: An event does not fit (a damaged log).
    """
    image = start
    written: dict[str, None] = {}
    group: dict[int, int] = {}
    statements: dict[int, list[str]] = {}
    for event in events:
        if event.resource_version <= image.resource_version:
            continue
        if to.passed_by(event):
            break
        before = image.head
        image = apply(image, event)
        if not event.is_change:
            continue
        for mutation in event.mutations:
            written[mutation.key] = None
        intent = event.intent
        table = getattr(intent, "table_id", None)
        if table is None:
            continue
        owner = group.setdefault(table, table)
        statement = ddl(intent, _namer(before))
        statements.setdefault(owner, []).append(statement)
        if isinstance(intent, TableTruncated):
            group[intent.new_table_id] = owner
        elif isinstance(intent, PartitionExchanged):
            other = group.setdefault(intent.other_table_id, intent.other_table_id)
            statements.setdefault(other, []).append(statement)
            group[intent.partition_id] = other
    diff = CatalogDiff(start.catalog, start.resource_version, image.resource_version)
    for key in sorted(written):
        change = compare(key, start.head.get(key), image.head.get(key))
        if change is not None:
            diff.keys.append(change)
    last_id = {owner: table for table, owner in group.items()}
    for owner, lines in statements.items():
        table = last_id.get(owner, owner)
        name = _name(image.head, table) if _known(image.head, table) else _name(start.head, owner)
        diff.tables[name] = "; ".join(lines)
    return diff, image


def _known(view: View, table_id: int) -> bool:
    return view.table(table_id) is not None or view.dropped_table(table_id) is not None


def _name(view: View, table_id: int) -> str:
    info = view.table(table_id) or view.dropped_table(table_id)
    return f"table #{table_id}" if info is None else f"{info.schema_name}.{info.table_name}"


def _namer(view: View) -> NameOf:
    return lambda table_id: _name(view, table_id)
