"""A client's read of a catalog: its newest snapshot and the log after it, folded (read-only).

`MetadataClient.image` and `export` read here; nothing goes through the leader.
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import TopicPartition

from producers.errors import LeaderUnavailable
from producers.leader.log import read_partition
from projector.fold.apply import replay
from projector.fold.image import Image
from projector.kafka.security import PLAINTEXT, KafkaSecurity
from projector.snapshot.store import load_newest


def catalog_image(bootstrap: str, events: TopicPartition, catalog: str,
                  snapshot_dir: Path | None = None,
                  security: KafkaSecurity = PLAINTEXT) -> Image:  # fmt: skip
    """The catalog's committed image: everything committed before the call.

    It starts from the catalog's newest snapshot in `snapshot_dir` when that
    snapshot is of the catalog's partition (`events`); else the whole partition
    is replayed.

    Raises:
        LeaderUnavailable: The cluster or the events topic cannot be reached.
        AccessDenied: The cluster refused the principal.
    """
    image, start = Image.empty(catalog), 0
    found = None if snapshot_dir is None else load_newest(snapshot_dir, catalog)
    if found is not None and (found[1].topic, found[1].partition) == (events.topic,
                                                                       events.partition):
        image, start = found[0], found[1].next_offset
    # Up to the decided end: a write this client's caller just got acked is included.
    read = read_partition(bootstrap, events.topic, events.partition, start, decided=True,
                          security=security, unavailable=LeaderUnavailable)  # fmt: skip
    if start > read.end:  # a snapshot of another log: replay this one
        image = Image.empty(catalog)
        read = read_partition(bootstrap, events.topic, events.partition, decided=True,
                              security=security, unavailable=LeaderUnavailable)  # fmt: skip
    # Events already in a snapshot's image are duplicates to `replay`.
    return replay(image, [e for e in read.events if e.catalog == catalog])
