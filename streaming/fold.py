"""The projection's fold: `projector.fold.gate` per catalog, its state in the state store.

`events.groupBy("catalog").transformWithState(CatalogFold(), FOLD_OUTPUT, ...)`
runs one `CatalogFold` handler per catalog and micro-batch. Its state (RocksDB
provider) is the catalog's `GateState` (a value state) and the events waiting
in its gate (a map state by resource_version: held behind a gap, or changes
not yet released, with their raw bytes). Nothing is read back from Delta.

The handler's output rows (`FOLD_OUTPUT`), by `row_type`:
- `log`: every record of the catalog, as read (for `metadata_log`);
- `change`: a released change, with its raw bytes and its publication epoch,
  in the order it becomes visible;
- `state`: the catalog's new position, when it moved;
- `quarantine`: a record that did not decode (grouped under `QUARANTINE`) or
  was written by a stale leader.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql import Row
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

FOLD_OUTPUT = (
    "row_type string, catalog string, resource_version long, schema_epoch long, "
    "intent string, event_id string, leader_epoch long, occurred_at timestamp, "
    "topic string, partition int, offset long, kafka_timestamp timestamp, record_key binary, "
    "value binary, reason string, stable_epoch long, publish_mode string")
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


def _envelope(resource_version: int, row: Any) -> Envelope:
    """An input row (or a stored entry's fields) as the gate's envelope."""
    return Envelope(
        resource_version=resource_version, leader_epoch=row["leader_epoch"],
        logged_schema_epoch=row["logged_schema_epoch"], intent=row["intent"],
        table_ids=tuple(row["table_ids"] or ()), keys=tuple(row["keys"] or ()),
        assign_epoch=row["assign_epoch"],
        assign_resource_versions=tuple(row["assign_resource_versions"] or ()),
        stable_epoch_to=row["stable_epoch_to"], publish_mode=row["publish_mode"],
        payload=row["value"])


def _restored(resource_version: int, stored: tuple[Any, ...]) -> Envelope:
    """A waiting entry read back from the map state."""
    fields = dict(zip(_WAITING.names, stored, strict=True))
    event = _envelope(resource_version, fields)
    event.schema_epoch, event.sequenced = fields["schema_epoch"], fields["sequenced"]
    return event


def _stored(event: Envelope) -> tuple[Any, ...]:
    return (event.leader_epoch, event.logged_schema_epoch, event.intent, list(event.table_ids),
            list(event.keys), event.assign_epoch, list(event.assign_resource_versions),
            event.stable_epoch_to, event.publish_mode, event.schema_epoch, event.sequenced,
            event.payload)


def _log(row: Row, row_type: str, reason: str | None = None) -> Row:
    return Row(
        row_type=row_type, catalog=row["catalog"], resource_version=row["resource_version"],
        schema_epoch=row["logged_schema_epoch"], intent=row["intent"], event_id=row["event_id"],
        leader_epoch=row["leader_epoch"], occurred_at=row["occurred_at"], topic=row["topic"],
        partition=row["partition"], offset=row["offset"],
        kafka_timestamp=row["kafka_timestamp"], record_key=row["record_key"],
        value=row["value"], reason=reason or row["reason"], stable_epoch=None,
        publish_mode=None)


def _out(row_type: str, catalog: str, resource_version: int, **fields: Any) -> Row:
    values: dict[str, Any] = dict.fromkeys(
        ("schema_epoch", "intent", "event_id", "leader_epoch", "occurred_at", "topic",
         "partition", "offset", "kafka_timestamp", "record_key", "value", "reason",
         "stable_epoch", "publish_mode"))
    values.update(fields)
    return Row(row_type=row_type, catalog=catalog, resource_version=resource_version,
               **values)


class CatalogFold(StatefulProcessor):
    """One catalog's gate, kept in the state store between micro-batches."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        """Declare the state variables."""
        self._state = handle.getValueState("gate", _STATE)
        self._waiting = handle.getMapState("waiting", _WAITING_KEY, _WAITING)

    def handleInputRows(self, key: Any, rows: Iterator[Row],
                        timerValues: Any) -> Iterator[Row]:
        """Fold one micro-batch's records of one catalog.

        Raises:
            EpochOutOfOrder: The log breaks the publication order (the query stops).
        """
        catalog = key[0]
        if catalog == QUARANTINE:
            for row in rows:
                yield _log(row, "quarantine")
            return
        stored = self._state.get() if self._state.exists() else None
        state = GateState(*stored) if stored else GateState()
        waiting = ({k[0]: _restored(k[0], v) for k, v in self._waiting.iterator()}
                   if self._waiting.exists() else {})
        stored_keys = set(waiting)
        gate = Gate(state=state, waiting=waiting)
        before = (state.resource_version, state.stable_epoch, state.leader_epoch,
                  state.publish_mode)
        # Rows of a group come in no order: the gate sorts them out by resource_version.
        for row in sorted(rows, key=lambda r: (r["resource_version"], r["partition"],
                                               r["offset"])):
            yield _log(row, "log")
            gate.admit(_envelope(row["resource_version"], row))
        released, stale = gate.advance()
        for change in released:
            yield _out("change", catalog, change.resource_version,
                       schema_epoch=change.schema_epoch, value=change.payload)
        for event in stale:
            yield _out("quarantine", catalog, event.resource_version, value=event.payload,
                       reason=f"stale leader_epoch {event.leader_epoch}: below "
                              f"{gate.state.leader_epoch}, written by a fenced leader")
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
            yield _out("state", catalog, state.resource_version,
                       stable_epoch=state.stable_epoch, leader_epoch=state.leader_epoch,
                       publish_mode=state.publish_mode)

    def close(self) -> None:
        """Nothing to release."""
