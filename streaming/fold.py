"""The projection's fold: `projector.fold.gate` per catalog, its state in the state store.

`events.groupBy("catalog").transformWithStateInPandas(CatalogFold(), FOLD_OUTPUT, ...)`
runs one `CatalogFold` handler per catalog and micro-batch, on pandas
DataFrames (Arrow underneath): quarantined records are a column selection,
and only the gate's loop touches events one by one, on plain Python values
taken from each column once (a Row per record and per output row cost about
four times more). Its state (RocksDB provider) is the catalog's `GateState` (a
value state) and the events waiting in its gate (a map state by
resource_version: held behind a gap, or changes not yet released, with their
raw bytes). Nothing is read back from Delta.

The handler's output rows (`FOLD_OUTPUT`), by `row_type` (`metadata_log` is
appended by a query of its own, straight from Kafka):
- `change`: a released change, with its raw bytes, intent, keys and
  publication epoch, in the order it becomes visible;
- `state`: the catalog's new position, when it moved;
- `quarantine`: a record that did not decode (grouped under `QUARANTINE`) or
  was written by a stale leader.
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

QUARANTINE = ""
"""The group of the records that did not decode: no catalog name is empty."""

FOLD_INPUT = ("catalog", "resource_version", "leader_epoch", "logged_schema_epoch", "intent",
              "table_ids", "keys", "assign_epoch", "assign_resource_versions",
              "stable_epoch_to", "publish_mode", "partition", "offset", "value")
"""The `streaming.decode.envelope` columns the gate reads (and the order of the records)."""

PLACE_COLUMNS = ("topic", "kafka_timestamp", "record_key", "reason")
"""The envelope columns only a record that did not decode keeps (to be quarantined with)."""

FOLD_OUTPUT = (
    "row_type string, catalog string, resource_version long, schema_epoch long, "
    "intent string, leader_epoch long, "
    "topic string, partition int, offset long, kafka_timestamp timestamp, record_key binary, "
    "value binary, reason string, stable_epoch long, publish_mode string, "
    "keys array<string>")
"""The handler's rows: see the module docstring for which columns each `row_type` fills."""

_STATE = StructType([StructField(name, kind) for name, kind in (
    ("resource_version", LongType()), ("stable_epoch", LongType()),
    ("leader_epoch", LongType()), ("publish_mode", StringType()))])
_WAITING_KEY = StructType([StructField("resource_version", LongType())])
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


def _records(batch: pd.DataFrame, row_type: str) -> pd.DataFrame:
    """One output row per input record, column by column (no Python per row)."""
    columns: dict[str, Any] = dict.fromkeys(_OUTPUT_COLUMNS)
    columns.update({name: batch[name] for name in _RECORD_COLUMNS})
    columns.update(row_type=row_type, schema_epoch=batch["logged_schema_epoch"])
    return pd.DataFrame(columns, index=batch.index)


def _rows(row_type: str, catalog: str, **columns: list[Any]) -> pd.DataFrame:
    """Output rows built by the gate: `columns` are equal-length lists, the rest null (a
    scalar pandas repeats down the column)."""
    frame: dict[str, Any] = dict.fromkeys(_OUTPUT_COLUMNS)
    frame.update(columns, row_type=row_type, catalog=catalog)
    return pd.DataFrame(frame)


def _ints(column: pd.Series) -> list[int]:
    """A long column as Python ints: pandas gives floats when any row of the Arrow batch
    (not only of this group: a quarantined record) is null there."""
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


def _envelopes(batch: pd.DataFrame) -> Iterator[Envelope]:
    """The batch's events as the gate's envelopes, in (resource_version, partition, offset) order.

    Each column is turned into Python values once; only the envelopes are built per event.
    """
    order = np.lexsort((batch["offset"].to_numpy(), batch["partition"].to_numpy(),
                        batch["resource_version"].to_numpy()))
    if (np.diff(order) != 1).any():  # a catalog's records mostly come in order
        batch = batch.iloc[order]
    columns = zip(
        _ints(batch["resource_version"]), _ints(batch["leader_epoch"]),
        _ints(batch["logged_schema_epoch"]), batch["intent"].tolist(),
        _tuples(batch["table_ids"]), _tuples(batch["keys"]),
        _optional_ints(batch["assign_epoch"]), _tuples(batch["assign_resource_versions"]),
        _optional_ints(batch["stable_epoch_to"]), batch["publish_mode"].tolist(),
        batch["value"].tolist(), strict=True)
    for (resource_version, leader_epoch, logged_schema_epoch, intent, table_ids, keys,
         assign_epoch, assign_resource_versions, stable_epoch_to, publish_mode,
         value) in columns:
        yield Envelope(
            resource_version=resource_version, leader_epoch=leader_epoch,
            logged_schema_epoch=logged_schema_epoch, intent=intent, table_ids=table_ids,
            keys=keys, assign_epoch=assign_epoch,
            assign_resource_versions=assign_resource_versions,
            stable_epoch_to=stable_epoch_to, publish_mode=publish_mode, payload=value)


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


class CatalogFold(StatefulProcessor):
    """One catalog's gate, kept in the state store between micro-batches."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Declare the state variables."""
        self._state = handle.getValueState("gate", _STATE)
        self._waiting = handle.getMapState("waiting", _WAITING_KEY, _WAITING)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame],
                        timerValues: Any) -> Iterator[pd.DataFrame]:
        """Fold one micro-batch's records of one catalog.

        Raises:
            EpochOutOfOrder: The log breaks the publication order (the query stops).
        """
        catalog = key[0]
        chunks = list(rows)
        batch = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
        if catalog == QUARANTINE:
            yield _records(batch, "quarantine")
            return
        stored = self._state.get()  # None for a new catalog (one call to the JVM, not two)
        state = GateState(*stored) if stored else GateState()
        waiting = ({k[0]: _restored(k[0], v) for k, v in self._waiting.iterator()}
                   if self._waiting.exists() else {})
        stored_keys = set(waiting)
        gate = Gate(state=state, waiting=waiting)
        before = (state.resource_version, state.stable_epoch, state.leader_epoch,
                  state.publish_mode)
        for event in _envelopes(batch):
            gate.admit(event)
        released, stale = gate.advance()
        if released:
            yield _rows("change", catalog,
                        resource_version=[c.resource_version for c in released],
                        schema_epoch=[c.schema_epoch for c in released],
                        intent=[c.intent for c in released],
                        keys=[list(c.keys) for c in released],
                        value=[c.payload for c in released])
        if stale:
            yield _rows("quarantine", catalog,
                        resource_version=[e.resource_version for e in stale],
                        value=[e.payload for e in stale],
                        reason=[f"stale leader_epoch {e.leader_epoch}: below "
                                f"{gate.state.leader_epoch}, written by a fenced leader"
                                for e in stale])
        # Every state call is a round trip to the JVM: an event admitted and
        # released within this batch never touches the store.
        for at in gate.removed & stored_keys:
            self._waiting.removeKey((at,))
        for at in gate.changed:
            self._waiting.updateValue((at,), _stored(gate.waiting[at]))
        after = (state.resource_version, state.stable_epoch, state.leader_epoch,
                 state.publish_mode)
        if after != before:
            self._state.update(after)
            yield _rows("state", catalog, resource_version=[state.resource_version],
                        stable_epoch=[state.stable_epoch], leader_epoch=[state.leader_epoch],
                        publish_mode=[state.publish_mode])

    def close(self) -> None:
        """Nothing to release."""
