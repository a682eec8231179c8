"""A leader's health checks, for `/readyz` and `/healthz` (docs/operations.md, "Health")."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from producers.leader.leader import Leader


def readiness(leader: Leader) -> tuple[bool, str]:
    """Ready when it owns partitions and its last commit succeeded.

    A failed commit makes it not ready until a commit, or its rebuild from the
    log with a new producer, succeeds.
    """
    failure = leader.failure
    if failure is not None:
        return False, f"stopped: {type(failure).__name__}: {failure}"
    owned = leader.owned
    if not owned:
        return False, (f"owns no partition of {leader.topics.commands} (the group "
                       f"{leader.group_id} has assigned it none)")  # fmt: skip
    last = leader.metrics.last_failure
    if last is not None:
        return False, f"the last commit failed ({last}); rebuilding from the log"
    return True, f"owns partitions {owned} of {leader.topics.commands}"


def liveness(leader: Leader) -> tuple[bool, str]:
    """Alive unless its loop stopped on a fatal error (then restart the process)."""
    failure = leader.failure
    if failure is not None:
        return False, f"stopped: {type(failure).__name__}: {failure}"
    return True, "serving" if leader.owned else "waiting for partitions"
