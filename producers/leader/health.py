"""A leader's health checks, for `/readyz` and `/healthz` (docs/operations.md, "Health")."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from producers.leader.leader import Leader


def readiness(leader: Leader) -> tuple[bool, str]:
    """Ready when it owns partitions and its last commit succeeded.

    A failed commit makes it not ready until a commit, or its rebuild from the
    log with a new producer, succeeds; a fenced leader, until it joined its
    group again, took a partition and committed there.
    """
    failure = leader.failure
    if failure is not None:
        return False, f"stopped: {type(failure).__name__}: {failure}"
    owned = leader.owned
    rejoining = leader.rejoining
    if rejoining is not None and not owned:
        return False, (f"joining the group {leader.group_id} again after "
                       f"{type(rejoining).__name__}: {rejoining}")  # fmt: skip
    if not owned:
        return False, (f"owns no partition of {leader.topics.commands} (the group "
                       f"{leader.group_id} has assigned it none)")  # fmt: skip
    last = leader.metrics.last_failure
    if last is not None:
        return False, f"the last commit failed ({last}); rebuilding from the log"
    return True, f"owns partitions {owned} of {leader.topics.commands}"


def liveness(leader: Leader) -> tuple[bool, str]:
    """Alive unless its loop stopped on a fatal error (then restart the process).

    A leader joining its group again (after it was fenced) is alive: it will serve.
    """
    failure = leader.failure
    if failure is not None:
        return False, f"stopped: {type(failure).__name__}: {failure}"
    if leader.owned:
        return True, "serving"
    return True, "joining its group again" if leader.rejoining else "waiting for partitions"
