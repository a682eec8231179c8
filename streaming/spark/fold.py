"""The projection's fold: `projector.fold.gate` per catalog, its state in the state store.

`events.groupBy("partition").transformWithStateInPandas(PartitionFold(), FOLD_OUTPUT, ...)`
runs one `PartitionFold` handler per Kafka partition of the events topic and
micro-batch, on pandas DataFrames (Arrow underneath). A catalog's events all live
in one partition (the catalog is the record key), so each handler runs the gate of
every catalog of its partition that the batch holds; records that did not decode
are a column selection, and only the gate's loop touches events one by one, on
plain Python values taken from each column once. Its state (RocksDB provider): the
position of every catalog of the partition (`GateState` and how many events wait,
one list state, read and written once per batch), and the events waiting in the
gates (a map state by catalog and resource_version: held behind a gap, or changes
not yet released, with their raw bytes). Nothing is read back from Delta.

Grouped by catalog instead, every catalog a batch touched cost five or six calls
from the Python worker into the JVM (its grouping key set and removed, its state
read and written): at 1,000 catalogs a batch of 10,000 events took 4.6 s
(docs/benchmarks/projection.md). Grouped by partition, a batch makes two or three
per partition, whatever number of catalogs it touches; the list state it reads
and writes grows with the partition's catalogs (a few tens of bytes each).

The handler's output rows (`FOLD_OUTPUT`), by `row_type` (`metadata_log` is
appended by a query of its own, straight from Kafka):
- `change`: a released change, with its raw bytes, intent, keys and
  publication epoch, in the order it becomes visible;
- `state`: a catalog's new position, when it moved;
- `quarantine`: a record that did not decode or was written by a stale leader.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from projector.fold.gate import Envelope, Gate, GateState

FOLD_INPUT = ("catalog", "resource_version", "leader_epoch", "logged_schema_epoch", "intent",
              "table_ids", "keys", "assign_epoch", "assign_resource_versions",
              "stable_epoch_to", "publish_mode", "partition", "offset", "value")
"""The `streaming.spark.decode.envelope` columns the gate reads (and the order of the records)."""

PLACE_COLUMNS = ("topic", "kafka_timestamp", "record_key", "reason")
"""The envelope columns only a record that did not decode keeps (to be quarantined with)."""

FOLD_OUTPUT = (
    "row_type string, catalog string, resource_version long, schema_epoch long, "
    "intent string, leader_epoch long, "
    "topic string, partition int, offset long, kafka_timestamp timestamp, record_key binary, "
    "value binary, reason string, stable_epoch long, publish_mode string, "
    "keys array<string>")
"""The handler's rows: see the module docstring for which columns each `row_type` fills."""

_POSITIONS = StructType([StructField(name, kind) for name, kind in (
    ("catalog", StringType()), ("resource_version", LongType()), ("stable_epoch", LongType()),
    ("leader_epoch", LongType()), ("publish_mode", StringType()), ("waiting", LongType()))])
"""One row per catalog of the partition: its `GateState` and how many of its events wait."""

_WAITING_KEY = StructType([StructField("catalog", StringType()),
                           StructField("resource_version", LongType())])
_WAITING = StructType([StructField(name, kind) for name, kind in (
    ("leader_epoch", LongType()), ("logged_schema_epoch", LongType()), ("intent", StringType()),
    ("table_ids", ArrayType(LongType())), ("keys", ArrayType(StringType())),
    ("assign_epoch", LongType()), ("assign_resource_versions", ArrayType(LongType())),
    ("stable_epoch_to", LongType()), ("publish_mode", StringType()),
    ("schema_epoch", LongType()), ("sequenced", BooleanType()), ("value", BinaryType()))])


_RECORD_COLUMNS = ("catalog", "resource_version", "intent", "leader_epoch", "topic", "partition",
                   "offset", "kafka_timestamp", "record_key", "value", "reason")
"""The input columns a `quarantine` row of a record passes on unchanged."""

_OUTPUT_COLUMNS = tuple(part.split()[0] for part in FOLD_OUTPUT.split(", "))

_NEW = (0, 0, 0, "auto")
"""The position of a catalog the partition has not seen (`GateState()`'s)."""

Position = tuple[str, int, int, int, str, int]
"""A `_POSITIONS` row: catalog, resource_version, stable_epoch, leader_epoch, publish_mode,
waiting."""


def _records(batch: pd.DataFrame, row_type: str) -> pd.DataFrame:
    """One output row per input record, column by column (no Python per row)."""
    columns: dict[str, Any] = dict.fromkeys(_OUTPUT_COLUMNS)
    columns.update({name: batch[name] for name in _RECORD_COLUMNS})
    columns.update(row_type=row_type, schema_epoch=batch["logged_schema_epoch"])
    return pd.DataFrame(columns, index=batch.index)


def _rows(row_type: str, **columns: list[Any]) -> pd.DataFrame:
    """Output rows built by the gates: `columns` are equal-length lists, the rest null (a
    scalar pandas repeats down the column)."""
    frame: dict[str, Any] = dict.fromkeys(_OUTPUT_COLUMNS)
    frame.update(columns, row_type=row_type)
    return pd.DataFrame(frame)


def _ints(column: pd.Series) -> list[int]:
    """A long column as Python ints: pandas gives floats when any row of the Arrow batch
    (a record that did not decode) is null there."""
    return column.astype("int64").tolist()


def _optional_ints(column: pd.Series) -> list[int | None]:
    """A nullable long column as Python values (pandas gives floats with NaN when one is null)."""
    values: list[int | None] = [None] * len(column)
    present = column.notna().to_numpy()
    for at, value in zip(present.nonzero()[0].tolist(), column.to_numpy()[present].tolist(),
                         strict=True):
        values[at] = int(value)
    return values


def _tuples(column: pd.Series) -> list[tuple[Any, ...]]:
    """An array column (a numpy array or None per cell) as tuples of Python values."""
    return [() if cell is None else tuple(cell.tolist()) for cell in column.tolist()]


def _envelopes(batch: pd.DataFrame) -> dict[str, list[Envelope]]:
    """The batch's events as the gates' envelopes, by catalog, each catalog's in
    (resource_version, partition, offset) order.

    Each column is turned into Python values once; only the envelopes are built per event.
    """
    order = np.lexsort((batch["offset"].to_numpy(), batch["partition"].to_numpy(),
                        batch["resource_version"].to_numpy()))
    if (np.diff(order) != 1).any():  # a catalog's records mostly come in order
        batch = batch.iloc[order]
    columns = zip(
        batch["catalog"].tolist(),
        _ints(batch["resource_version"]), _ints(batch["leader_epoch"]),
        _ints(batch["logged_schema_epoch"]), batch["intent"].tolist(),
        _tuples(batch["table_ids"]), _tuples(batch["keys"]),
        _optional_ints(batch["assign_epoch"]), _tuples(batch["assign_resource_versions"]),
        _optional_ints(batch["stable_epoch_to"]), batch["publish_mode"].tolist(),
        batch["value"].tolist(), strict=True)
    catalogs: dict[str, list[Envelope]] = {}
    for (catalog, resource_version, leader_epoch, logged_schema_epoch, intent, table_ids, keys,
         assign_epoch, assign_resource_versions, stable_epoch_to, publish_mode,
         value) in columns:
        events = catalogs.get(catalog)
        if events is None:
            events = catalogs[catalog] = []
        events.append(Envelope(
            resource_version=resource_version, leader_epoch=leader_epoch,
            logged_schema_epoch=logged_schema_epoch, intent=intent, table_ids=table_ids,
            keys=keys, assign_epoch=assign_epoch,
            assign_resource_versions=assign_resource_versions,
            stable_epoch_to=stable_epoch_to, publish_mode=publish_mode, payload=value))
    return catalogs


def _restored(resource_version: int, stored: tuple[Any, ...]) -> Envelope:
    """A waiting entry read back from the map state."""
    fields = dict(zip(_WAITING.names, stored, strict=True))
    return Envelope(
        resource_version=resource_version, leader_epoch=fields["leader_epoch"],
        logged_schema_epoch=fields["logged_schema_epoch"], intent=fields["intent"],
        table_ids=tuple(fields["table_ids"] or ()), keys=tuple(fields["keys"] or ()),
        assign_epoch=fields["assign_epoch"],
        assign_resource_versions=tuple(fields["assign_resource_versions"] or ()),
        stable_epoch_to=fields["stable_epoch_to"], publish_mode=fields["publish_mode"],
        schema_epoch=fields["schema_epoch"], sequenced=fields["sequenced"],
        payload=fields["value"])


def _stored(event: Envelope) -> tuple[Any, ...]:
    return (event.leader_epoch, event.logged_schema_epoch, event.intent, list(event.table_ids),
            list(event.keys), event.assign_epoch, list(event.assign_resource_versions),
            event.stable_epoch_to, event.publish_mode, event.schema_epoch, event.sequenced,
            event.payload)


_ROW_COLUMNS = {
    "change": ("catalog", "resource_version", "schema_epoch", "intent", "keys", "value"),
    "quarantine": ("catalog", "resource_version", "value", "reason"),
    "state": ("catalog", "resource_version", "stable_epoch", "leader_epoch", "publish_mode"),
}
"""The columns the gates fill in their rows, by `row_type` (a fenced leader's record is a
`quarantine` row)."""

Rows = dict[str, list[tuple[Any, ...]]]
"""A batch's rows from the gates, by `row_type`, each a tuple in `_ROW_COLUMNS` order."""


def _frames(rows: Rows) -> Iterator[pd.DataFrame]:
    """One frame per row type for the batch's gates (a frame per catalog would cost pandas'
    construction per catalog)."""
    for row_type, found in rows.items():
        if found:
            columns = map(list, zip(*found, strict=True))
            yield _rows(row_type, **dict(zip(_ROW_COLUMNS[row_type], columns, strict=True)))


class PartitionFold(StatefulProcessor):
    """The gates of one Kafka partition's catalogs, kept in the state store between
    micro-batches."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Declare the state variables."""
        self._positions = handle.getListState("positions", _POSITIONS)
        self._waiting = handle.getMapState("waiting", _WAITING_KEY, _WAITING)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame],
                        timerValues: Any) -> Iterator[pd.DataFrame]:
        """Fold one micro-batch's records of one partition.

        Raises:
            EpochOutOfOrder: The log breaks the publication order (the query stops).
        """
        chunks = list(rows)
        batch = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
        undecoded = batch["catalog"].isna()
        if undecoded.any():
            yield _records(batch[undecoded], "quarantine")
            batch = batch[~undecoded]
        if batch.empty:
            return
        positions: dict[str, Position] = {row[0]: row for row in self._positions.get()}
        waiting = self._read_waiting(positions)
        out: Rows = {row_type: [] for row_type in _ROW_COLUMNS}
        moved = False
        for catalog, events in _envelopes(batch).items():
            stored = positions.get(catalog)
            position = self._fold(catalog, stored, waiting.get(catalog, {}), events, out)
            if position != stored:
                positions[catalog], moved = position, True
        if moved:
            self._positions.put(list(positions.values()))
        yield from _frames(out)

    def _read_waiting(self, positions: dict[str, Position]) -> dict[str, dict[int, Envelope]]:
        """The waiting events of the partition's catalogs, by catalog: one read of the map
        state, and none when no catalog has any."""
        waiting: dict[str, dict[int, Envelope]] = {}
        if any(position[5] for position in positions.values()):
            for (catalog, at), stored in self._waiting.iterator():
                waiting.setdefault(catalog, {})[at] = _restored(at, stored)
        return waiting

    def _fold(self, catalog: str, stored: Position | None, waiting: dict[int, Envelope],
              events: list[Envelope], out: Rows) -> Position:
        """Run one catalog's gate over its events of the batch, its rows into `out`; its new
        position."""
        state = GateState(*stored[1:5]) if stored else GateState()
        stored_keys = set(waiting)
        gate = Gate(state=state, waiting=waiting)
        for event in events:
            gate.admit(event)
        released, stale = gate.advance()
        out["change"] += [(catalog, c.resource_version, c.schema_epoch, c.intent, list(c.keys),
                            c.payload) for c in released]
        out["quarantine"] += [
            (catalog, e.resource_version, e.payload, f"stale leader_epoch {e.leader_epoch}: "
             f"below {state.leader_epoch}, written by a fenced leader") for e in stale]
        # Every state call is a round trip to the JVM: an event admitted and
        # released within this batch never touches the store.
        for at in gate.removed & stored_keys:
            self._waiting.removeKey((catalog, at))
        for at in gate.changed:
            self._waiting.updateValue((catalog, at), _stored(gate.waiting[at]))
        position = (catalog, state.resource_version, state.stable_epoch, state.leader_epoch,
                    state.publish_mode, len(gate.waiting))
        if position[1:5] != (stored[1:5] if stored else _NEW):
            out["state"].append(position[:5])
        return position

    def close(self) -> None:
        """Nothing to release."""
