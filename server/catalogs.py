"""The catalogs a server serves: one shared `MetadataClient` and one `Follower` each, made lazily.

A server is a client and a follower in one process (DESIGN.md, "Network API"):
a catalog's client and follower are made on the first request that needs them
and shared by every request after it. Without a list of catalogs the server
serves any valid catalog name, up to `max_catalogs` of them (each follower is a
Kafka consumer and a thread).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from events.topics import Topics
from producers.client.client import MetadataClient
from producers.decide.rules import validate
from producers.errors import InvalidName
from projector.follower.follower import Follower
from projector.follower.metrics import FollowerMetrics
from projector.kafka.security import PLAINTEXT, KafkaSecurity
from server.auth import Principal, Users
from server.errors import CatalogNotServed


@dataclass(frozen=True)
class ServerSettings:
    """What `create_app` serves and its limits.

    Attributes:
        bootstrap: `host:port` of the Kafka cluster.
        catalogs: The catalogs served; None: any valid name (up to `max_catalogs`).
        topics: The topic names (prefix).
        actor: Stamped on every event written through the server.
        write_security: How the clients sign in to Kafka.
        read_security: How the followers sign in to Kafka.
        command_timeout: Seconds a write waits for its outcome before a 504.
        wait_timeout: The longest `?resourceVersion=N` wait, in seconds.
        max_body: The largest request body, in bytes (larger: 413).
        watch_lag_limit: Changes a watcher may fall behind before it is disconnected.
        bookmark_every: Seconds between BOOKMARK lines on a quiet watch.
        send_timeout: Seconds one write to a watcher may block before it is dropped.
        max_catalogs: The most catalogs served at once when `catalogs` is None.
        history_limit: Changes each follower keeps for watches resuming from the past.
        users: The principals that may sign in over HTTP (None: no sign-in, as on a
            PLAINTEXT cluster); a principal's commands go to Kafka signed in as it.
    """

    bootstrap: str
    catalogs: tuple[str, ...] | None = None
    topics: Topics = field(default_factory=Topics)
    actor: str = "http"
    write_security: KafkaSecurity = PLAINTEXT
    read_security: KafkaSecurity = PLAINTEXT
    command_timeout: float = 10.0
    wait_timeout: float = 10.0
    max_body: int = 1_048_576
    watch_lag_limit: int = 50_000
    bookmark_every: float = 10.0
    send_timeout: float = 30.0
    max_catalogs: int = 64
    history_limit: int = 100_000
    users: Users | None = None


class Catalogs:
    """The clients and followers of the served catalogs; thread-safe; `close()` stops them.

    Args:
        settings: What is served, and how.
        metrics: The collectors every follower is bound to (None: a private one each).
    """

    def __init__(self, settings: ServerSettings, metrics: FollowerMetrics | None = None) -> None:
        self.settings = settings
        self.metrics = metrics
        self._clients: dict[tuple[str, str | None], MetadataClient] = {}
        self._followers: dict[str, Follower] = {}
        self._lock = threading.Lock()
        self._closed = False

    def check(self, catalog: str) -> str:
        """`catalog` if this server serves it.

        Raises:
            CatalogNotServed: It is not in the list, not a valid name, or one too many.
        """
        served = self.settings.catalogs
        if served is not None:
            if catalog not in served:
                raise CatalogNotServed(catalog, served)
            return catalog
        try:
            validate.name("Catalog", "catalog", catalog)
        except InvalidName as exc:
            raise CatalogNotServed(catalog, None, f" ({exc})") from None
        with self._lock:
            known = {name for name, _ in self._clients} | set(self._followers)
        if catalog not in known and len(known) >= self.settings.max_catalogs:
            raise CatalogNotServed(
                catalog, None, f" (it already serves {len(known)}, the most it may)"
            )
        return catalog

    def client(self, catalog: str, principal: Principal | None = None) -> MetadataClient:
        """The catalog's client, made on first use (it connects on its first command).

        Args:
            catalog: The catalog written.
            principal: Who signed in (a secured server): the client signs in to Kafka as
                this principal and stamps its name as the actor; None: the server's own
                `write_security` and `actor`.
        """
        name = self.check(catalog)
        key = (name, None if principal is None else principal.name)
        with self._lock:
            made = self._clients.get(key)
            if made is None:
                s = self.settings
                security = s.write_security if principal is None else principal.security
                actor = s.actor if principal is None else principal.name
                made = self._clients[key] = MetadataClient(
                    s.bootstrap, catalog=name, actor=actor, topics=s.topics,
                    timeout=s.command_timeout, security=security,
                )  # fmt: skip
            return made

    def follower(self, catalog: str) -> Follower:
        """The catalog's follower, started on first use (then given `wait_timeout` to catch up)."""
        name = self.check(catalog)
        s = self.settings
        with self._lock:
            made = self._followers.get(name)
            if made is not None:
                return made
            made = self._followers[name] = Follower(
                s.bootstrap, name, topics=s.topics, security=s.read_security,
                history_limit=s.history_limit, metrics=self.metrics,
            ).start()  # fmt: skip
        made.wait_caught_up(s.wait_timeout)
        return made

    def followers(self) -> dict[str, Follower]:
        """The followers made so far, by catalog."""
        with self._lock:
            return dict(self._followers)

    def close(self) -> None:
        """Stop every follower and close every client."""
        with self._lock:
            followers, clients = list(self._followers.values()), list(self._clients.values())
            self._followers.clear()
            self._clients.clear()
        for follower in followers:
            follower.stop()
        for client in clients:
            client.close()
