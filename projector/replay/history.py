"""One table's history read from the log: `metalog audit history`, the demo and the replay bench."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from events.topics import Topics
from projector.audit.history import TableHistory
from projector.audit.history_raw import table_history_batches
from projector.errors import ReplayError
from projector.kafka.security import PLAINTEXT, KafkaSecurity
from projector.replay.source import LogReader

Batches = Iterator[list[bytes]]
"""The log's records, a fetched batch at a time (`LogReader.raw_batches`)."""


def history_of(
    bootstrap: str, topics: Topics, catalog: str, table: str | None, table_id: int | None,
    reader: KafkaSecurity = PLAINTEXT, watch: Callable[[Batches], Batches] | None = None,
) -> TableHistory:
    """The history of `table` (`SCHEMA.TABLE`) or of the table that had `table_id`, from the log.

    Args:
        bootstrap: The Kafka cluster.
        topics: The topic names.
        catalog: The catalog whose log is read.
        table: The table's last name, as `SCHEMA.TABLE`; or None, with `table_id`.
        table_id: An id the table had; or None, with `table`.
        reader: The security settings the log is read with.
        watch: Wraps the batches as they are read (the command line counts them on a
            progress bar); only the events the history needs are decoded.

    Raises:
        ReplayError: The name is malformed, or no table had it.
    """
    name = None
    if table is not None:
        schema, dot, rest = table.partition(".")
        if not dot or not schema or not rest:
            raise ReplayError(f"`{table}` is not SCHEMA.TABLE: name the schema, e.g. public.orders")
        name = (schema, rest)
    batches: Batches = LogReader(bootstrap, topics, catalog, security=reader).raw_batches()
    return table_history_batches(catalog, batches if watch is None else watch(batches), name,
                                 table_id)  # fmt: skip
