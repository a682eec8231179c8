"""The channel under a `MetadataClient` whose leader runs in the same process."""

from __future__ import annotations

import asyncio

from events import commands as c
from events.replies import Committed, Rejected
from producers.leader.leader import Leader
from producers.routing.layout import Layout


class LeaderChannel:
    """Hands a client's commands to an embedded `Leader` (`Leader.request`).

    No commands topic and no replies topic: a command joins the leader's next
    batch (the same decide, the same transaction as a command from the topic)
    and its caller is woken when that transaction commits.
    """

    reply_to: str | None = None
    """Commands carry no reply address: the reply comes back in-process."""

    def __init__(self, leader: Leader) -> None:
        self.leader = leader

    def layout(self) -> Layout:
        """The topics' layout the leader read at start."""
        return self.leader.layout

    def request(self, command: c.Command, timeout: float) -> Committed | Rejected | None:
        """The command's reply; None when its outcome is unknown (retry with its id).

        Raises:
            NotLeader: this process does not lead the command's catalog.
        """
        return self.leader.request(command, timeout)

    async def request_async(
        self, command: c.Command, timeout: float
    ) -> Committed | Rejected | None:
        """`request` for a coroutine (in a worker thread: the leader's waiter is a lock)."""
        return await asyncio.to_thread(self.leader.request, command, timeout)

    def close(self) -> None:
        """Nothing to release: the leader belongs to the service that started it."""
