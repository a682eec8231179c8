"""Topic names and partitioning: the wire layout every client shares.

All records of a catalog live in one partition of each topic, chosen by
murmur2 of the catalog name exactly as the Java client does, so JVM and
Python producers agree on where a catalog lives.
"""

import functools
from dataclasses import dataclass, field

DEFAULT_PREFIX = "metalog"

COMMAND_ID_HEADER = "metalog.command_id"
"""Command header: the command's id, so a leader can answer even a command it cannot read."""
REPLY_TO_HEADER = "metalog.reply_to"
"""Command header: the client id the reply is keyed by."""
REASON_HEADER = "metalog.reason"
"""DLQ header: why the record was dead-lettered."""
SOURCE_HEADER = "metalog.source"
"""DLQ header: `topic/partition/offset` of the original record."""
COMMANDS_OFFSET_HEADER = "metalog.commands_offset"
"""Event header: the next commands offset of the leader that wrote the event (decimal), set on
the last event of each transaction: the consumed position commits with the events it caused."""


@dataclass(frozen=True, slots=True)
class Topics:
    """The four topic names under one prefix (DESIGN.md, "Topics"), built once.

    Attributes:
        commands: Commands from services to the catalog's leader.
        events: The log: change and control events, kept forever.
        replies: The outcome of each command, keyed by the client id.
        dlq: Records a consumer could not decode or apply, with the reason in headers.
    """

    prefix: str = DEFAULT_PREFIX
    commands: str = field(init=False, repr=False, compare=False)
    events: str = field(init=False, repr=False, compare=False)
    replies: str = field(init=False, repr=False, compare=False)
    dlq: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Every record a leader writes names its topic: the names are not rebuilt per use.
        for name in ("commands", "events", "replies", "dlq"):
            object.__setattr__(self, name, f"{self.prefix}.{name}")

    def all(self) -> tuple[str, str, str, str]:
        """Every topic name."""
        return (self.commands, self.events, self.replies, self.dlq)


_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 hash (`org.apache.kafka.common.utils.Utils.murmur2`), unsigned."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


@functools.lru_cache(maxsize=4096)
def partition_for(key: str, partitions: int) -> int:
    """The partition the Java default partitioner picks for `key`.

    Remembered for the last 4,096 keys: it runs per command, and murmur2 in
    Python costs a few µs.
    """
    return (murmur2(key.encode()) & 0x7FFFFFFF) % partitions
