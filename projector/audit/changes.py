"""Key-level differences: what one event, or a stretch of the log, did to each key.

Pure. A value is shown as its fields (`model_dump(mode="json")`); a changed
value also names the fields that differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from events.changes import Mutation, MutationOp
from events.values import KeyValue

KeyOp = Literal["added", "changed", "removed"]


@dataclass(frozen=True, slots=True)
class KeyChange:
    """One key's change.

    Attributes:
        key: The key.
        op: `added` (absent before), `changed` (another value) or `removed` (absent after).
        before: The value before (None when added).
        after: The value after (None when removed).
    """

    key: str
    op: KeyOp
    before: KeyValue | None
    after: KeyValue | None

    @property
    def kind(self) -> str:
        """The key's kind: its first segment (`__table_info`, `__removed-__table_route`, …)."""
        return kind_of(self.key)

    def fields(self) -> dict[str, tuple[Any, Any]]:
        """For a changed value: each top-level field that differs → (before, after)."""
        if self.before is None or self.after is None:
            return {}
        old, new = _fields(self.before), _fields(self.after)
        return {name: (old.get(name), new.get(name))
                for name in sorted(old.keys() | new.keys())
                if old.get(name) != new.get(name)}  # fmt: skip

    def document(self) -> dict[str, Any]:
        """JSON: key, kind, op, before, after (fields or null), fields (the changed ones)."""
        return {
            "key": self.key, "kind": self.kind, "op": self.op,
            "before": None if self.before is None else _fields(self.before),
            "after": None if self.after is None else _fields(self.after),
            "fields": {n: {"before": b, "after": a} for n, (b, a) in self.fields().items()},
        }  # fmt: skip


def kind_of(key: str) -> str:
    """A key's kind: `__table_info`, `__removed-__table_info`, … (the part before the first /)."""
    head = key.split("/", 1)[0]
    return head


def compare(key: str, before: KeyValue | None, after: KeyValue | None) -> KeyChange | None:
    """The change of `key` from `before` to `after`; None when it did not change."""
    if before == after:
        return None
    if before is None:
        return KeyChange(key, "added", None, after)
    return KeyChange(key, "removed" if after is None else "changed", before, after)


def mutation_changes(
    state: dict[str, KeyValue], mutations: tuple[Mutation, ...]
) -> list[KeyChange]:
    """Apply `mutations` to `state` (key → value, updated in place) and say what each key did.

    A key written twice by one event counts once, from its value before to its value after.
    """
    before: dict[str, KeyValue | None] = {}
    for mutation in mutations:
        key = mutation.key
        if key not in before:
            before[key] = state.get(key)
        if mutation.op is MutationOp.PUT:
            assert mutation.value is not None
            state[key] = mutation.value
        else:
            state.pop(key, None)
    found = (compare(key, old, state.get(key)) for key, old in before.items())
    return [change for change in found if change is not None]


def _fields(value: KeyValue) -> dict[str, Any]:
    return value.model_dump(mode="json")
