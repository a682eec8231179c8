"""What the audit finds: the first bad record and the kind of fault, and what it checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from events.errors import MetalogError

FaultKind = Literal[
    "modified", "deleted", "inserted", "reordered", "truncated", "forged", "stale leader",
    "unsigned",
]  # fmt: skip
"""The kinds of fault (docs/audit.md, "Verify"):

- modified: a record's bytes are not what was hashed, or its content does not
  fit the log (a requirement, a table version, the publication order);
- deleted: a resource_version is missing;
- inserted: a record that does not belong (a repeated resource_version, or an
  extra record hidden by a recomputed chain);
- reordered: records out of resource_version order;
- truncated: the log ends before a kept checkpoint, or a bundle's records before
  its manifest says (`projector.audit.complete`);
- forged: a checkpoint whose signature does not verify with the public key;
- stale leader: an event whose leader_epoch is not the elected one;
- unsigned: a key is required and a leader_epoch holds no valid checkpoint.
"""


@dataclass(frozen=True, slots=True)
class Fault:
    """The first bad record.

    Attributes:
        kind: What is wrong.
        catalog: Its catalog.
        partition: Its events partition.
        offset: Its offset (for `truncated`: the offset after the catalog's
            last record, where the missing ones should follow; -1 where no offset is
            known: docs/cli.md lists each case).
        resource_version: The resource_version it has or should have.
        reason: What was found, in words.
    """

    kind: FaultKind
    catalog: str
    partition: int
    offset: int
    resource_version: int
    reason: str

    def describe(self) -> str:
        """One line: kind, position, reason."""
        return (
            f"{self.kind} at partition {self.partition} offset {self.offset} "
            f"(catalog `{self.catalog}`, resource_version {self.resource_version}): {self.reason}"
        )


@dataclass(slots=True)
class CatalogSummary:
    """What was verified of one catalog.

    Attributes:
        catalog: The catalog.
        events: Records read.
        resource_version: The last resource_version.
        chain_hash: The hash of the last event (hex).
        leader_epoch: The last elected leader_epoch.
        checkpoints: Checkpoints found.
        signed_through: The highest resource_version a verified signature covers (0: none).
    """

    catalog: str
    events: int = 0
    resource_version: int = 0
    chain_hash: str = ""
    leader_epoch: int = 0
    checkpoints: int = 0
    signed_through: int = 0


@dataclass(slots=True)
class Report:
    """The outcome of one verification.

    Attributes:
        records: Records read.
        catalogs: Per catalog, what was verified.
        signatures_checked: Whether a public key checked the checkpoints.
        fold_checked: Whether every event went through the fold (requirements,
            table versions, publication order).
        fault: The first bad record, or None when the log verifies.
    """

    records: int = 0
    catalogs: dict[str, CatalogSummary] = field(default_factory=dict)
    signatures_checked: bool = False
    fold_checked: bool = True
    fault: Fault | None = None


class AuditFailed(MetalogError):
    """The log does not verify: `fault` names the first bad record and the kind of fault."""

    def __init__(self, fault: Fault) -> None:
        self.fault = fault
        super().__init__(f"the log does not verify: {fault.describe()}")
