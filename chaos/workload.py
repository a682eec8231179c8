"""The clients: threads sending create / alter / rename / drop / read, each op recorded.

Client `i` belongs to process group `clients{i % 2}`: its `MetadataClient`
and its group's follower bootstrap through that group's proxies, so a fault
on a group touches its clients alone. Tables come in families of two names
(`f{k}a`, `f{k}b`): a rename moves a table between the names of its family.
Each client keeps the last version it saw of each name and conditions its
writes on it, so writes both succeed and conflict.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from chaos.history import Kind, Operation, Seen
from events.replies import Committed
from events.topics import Topics
from events.values import Column
from producers.client.client import MetadataClient
from producers.errors import CommandRejected
from projector.fold.image import Image
from projector.follower.follower import Follower
from projector.kafka.partition import decided_ends

SCHEMA = "public"
COLUMNS = (Column(name="id", data_type="int64"),)
KINDS: tuple[Kind, ...] = ("create", "alter", "rename", "drop", "read")
WEIGHTS = (2, 3, 1, 1, 3)


def families(count: int) -> list[tuple[str, str]]:
    """The table names: `count` families of two."""
    return [(f"f{k}a", f"f{k}b") for k in range(count)]


@dataclass(frozen=True)
class WorkloadOptions:
    """How the clients run.

    Attributes:
        clients: How many client threads.
        families: How many families of two table names.
        timeout_s: How long a command or a read waits before its outcome is unknown.
        rate: Operations per second over all clients (0: as fast as they go).
        reads: `decided-end` (wait until the follower's image holds the events partition
            up to its end now, undecided transactions included, then read) or
            `caught-up` (the follower's own `wait_caught_up`, which targets the last
            stable offset: docs/reliability.md, "Anomalies").
    """

    clients: int = 8
    families: int = 3
    timeout_s: float = 8.0
    rate: float = 0.0
    reads: Literal["decided-end", "caught-up"] = "decided-end"


class Workload:
    """The clients of one run; `start`, then `stop` and read `operations`.

    Args:
        bootstrap: The bootstrap of a process group (`Layout.bootstrap`).
        catalog: The catalog they all write.
        topics: The topic names.
        options: See `WorkloadOptions`.
        seed: Seed of the clients' choices (each client draws from `seed + i`).
    """

    def __init__(
        self, bootstrap: Callable[[str], str], catalog: str, topics: Topics,
        options: WorkloadOptions, seed: int,
    ) -> None:  # fmt: skip
        self.bootstrap = bootstrap
        self.catalog = catalog
        self.topics = topics
        self.options = options
        self.seed = seed
        self.names = families(options.families)
        self.operations: list[Operation] = []
        self.followers: dict[str, Follower] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start each group's follower and the client threads."""
        for group in ("clients0", "clients1"):
            self.followers[group] = Follower(self.bootstrap(group), self.catalog,
                                             topics=self.topics).start()  # fmt: skip
        for i in range(self.options.clients):
            thread = threading.Thread(target=self._client, args=(i,), name=f"chaos-client-{i}")
            thread.start()
            self._threads.append(thread)

    def stop_clients(self) -> None:
        """Stop the clients (each finishes its operation); the followers go on."""
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def stop(self) -> None:
        """Stop the clients and the followers."""
        self.stop_clients()
        for follower in self.followers.values():
            follower.stop()

    def _client(self, i: int) -> None:
        rng = random.Random(self.seed * 1000 + i)
        group = f"clients{i % 2}"
        follower = self.followers[group]
        known: dict[tuple[int, int], int] = {}
        pace = self.options.clients / self.options.rate if self.options.rate else 0.0
        with MetadataClient(self.bootstrap(group), catalog=self.catalog, actor=f"c{i}",
                            topics=self.topics, timeout=self.options.timeout_s) as client:
            while not self._stop.is_set():
                began = time.monotonic()
                kind = rng.choices(KINDS, WEIGHTS)[0]
                family, name = rng.randrange(len(self.names)), rng.randrange(2)
                if kind == "read":
                    op = self._read(i, group, follower, family, name)
                    for n, seen in enumerate(op.read):
                        if seen.present:
                            known[(family, n)] = seen.version
                else:
                    expected = None if kind == "create" else known.get((family, name), 1)
                    op = self._write(i, client, kind, family, name, expected)
                    if op.outcome == "ok" and kind in ("create", "alter"):
                        known[(family, name)] = op.version
                    elif op.outcome == "ok" and kind == "rename":
                        known[(family, 1 - name)] = op.version
                    elif op.error == "VersionConflict":
                        known[(family, name)] = op.version
                with self._lock:
                    self.operations.append(op)
                if pace:
                    self._stop.wait(max(0.0, pace - (time.monotonic() - began)))

    def _write(
        self, i: int, client: MetadataClient, kind: Kind, family: int, name: int,
        expected: int | None,
    ) -> Operation:  # fmt: skip
        table = self.names[family][name]
        call: dict[str, Any] = {"expected_version": expected}
        begun = time.monotonic_ns()
        try:
            done: Committed
            if kind == "create":
                done = client.create_table(SCHEMA, table, COLUMNS)
            elif kind == "alter":
                done = client.alter_table(SCHEMA, table, set_options={"by": f"c{i}"}, **call)
            elif kind == "rename":
                done = client.rename_table(SCHEMA, table, self.names[family][1 - name], **call)
            else:
                done = client.drop_table(SCHEMA, table, **call)
        except CommandRejected as rejected:
            version = rejected.current_version
            return Operation(i, kind, family, name, expected, begun, time.monotonic_ns(),
                             "rejected", rejected.code,
                             version=-1 if version is None else version)  # fmt: skip
        except Exception as exc:  # anything else: the outcome is not known
            return Operation(i, kind, family, name, expected, begun, None, "unknown",
                             type(exc).__name__)  # fmt: skip
        ended = time.monotonic_ns()
        touched = done.tables[0]
        return Operation(i, kind, family, name, expected, begun, ended, "ok",
                         table_id=touched.table_id, version=touched.version)  # fmt: skip

    def _read(self, i: int, group: str, follower: Follower, family: int, name: int) -> Operation:
        """A linearizable read: wait until the follower's image holds everything committed
        before the call, then read it (`WorkloadOptions.reads` says how)."""
        begun = time.monotonic_ns()
        try:
            if self.options.reads == "caught-up":
                caught_up = follower.wait_caught_up(timeout=self.options.timeout_s)
            else:
                caught_up = _at_decided_end(follower, self.bootstrap(group), self.topics,
                                            self.catalog, self.options.timeout_s)  # fmt: skip
            image = follower.current()
        except Exception as exc:  # a failed read constrains nothing
            return Operation(i, "read", family, name, None, begun, None, "unknown",
                             type(exc).__name__)  # fmt: skip
        ended = time.monotonic_ns()
        if not caught_up:
            return Operation(i, "read", family, name, None, begun, None, "unknown", "WaitTimeout")
        seen = tuple(_seen(image, table) for table in self.names[family])
        return Operation(i, "read", family, name, None, begun, ended, "ok",
                         read=(seen[0], seen[1]))  # fmt: skip


def _at_decided_end(
    follower: Follower, bootstrap: str, topics: Topics, catalog: str, timeout_s: float
) -> bool:
    """Wait until the follower reached the catalog's events partition's end as it is now,
    undecided transactions' records included (`decided_ends`): every write acked before
    this call lies below that end, even while its commit markers are still being written.
    False on timeout or before the follower connected."""
    deadline = time.monotonic() + timeout_s
    partition = follower.published()[catalog].partition
    if partition < 0:
        return False
    target = decided_ends(bootstrap, topics.events, range(partition + 1))[partition]
    image = follower.current()
    while follower.published()[catalog].end_offset < target:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        image = follower.next_image(image, timeout=left) or image
    return True


def _seen(image: Image, table: str) -> Seen:
    info = image.published.table_by_name(SCHEMA, table)
    return Seen() if info is None else Seen(True, info.table_id, info.version)
