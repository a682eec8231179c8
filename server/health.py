"""`/healthz` and `/readyz`: is the process up; are its followers caught up and a leader there."""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from server.catalogs import Catalogs


class Readiness:
    """Answers `/readyz` from the followers made so far and the leaders' consumer group.

    Args:
        catalogs: The served catalogs.
        leader_group: The leaders' consumer group (default `{prefix}-leaders`).
        timeout: Seconds the group lookup may take.
    """

    def __init__(self, catalogs: Catalogs, leader_group: str | None = None,
                 timeout: float = 3.0) -> None:  # fmt: skip
        settings = catalogs.settings
        self.catalogs = catalogs
        self.leader_group = leader_group or f"{settings.topics.prefix}-leaders"
        self.timeout = timeout
        self._admin: AdminClient | None = None
        self._lock = threading.Lock()

    def check(self) -> dict[str, Any]:
        """`{"ready": bool, "checks": {...}}`: each follower's lag and the leaders' members."""
        checks: dict[str, Any] = {}
        ready = True
        for name, follower in sorted(self.catalogs.followers().items()):
            if follower.failure is not None:
                checks[f"follower:{name}"] = f"stopped: {follower.failure}"
                ready = False
            elif not follower.connected or follower.lag(name).events > 1:
                checks[f"follower:{name}"] = "catching up"
                ready = False
            else:
                checks[f"follower:{name}"] = "caught up"
        members, why = self._leaders()
        checks["leaders"] = why
        return {"ready": ready and members > 0, "checks": checks}

    def _leaders(self) -> tuple[int, str]:
        with self._lock:
            if self._admin is None:
                config = self.catalogs.settings.read_security.client_config()
                self._admin = AdminClient(
                    {**config, "bootstrap.servers": self.catalogs.settings.bootstrap})
            admin = self._admin
        try:
            group = admin.describe_consumer_groups([self.leader_group])[self.leader_group]
            members = len(group.result(self.timeout).members)
        except (KafkaException, TimeoutError) as exc:
            return 0, f"group {self.leader_group} unreachable: {exc}"
        if members == 0:
            return 0, f"no leader in group {self.leader_group}: start `metalog leader`"
        return members, f"{members} leader(s) in group {self.leader_group}"
