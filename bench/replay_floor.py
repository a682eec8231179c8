"""The floor of a Python replay: decode each record, and the least a fold must do with it.

`bench.replay` times it beside the raw decode and the as-of replay, in turns.
Each event is decoded as models (`events.codec.decode_event`) and then checked
and written as one flat loop over one dict: the resource_version follows the
last, the hash chain holds, every requirement holds, every table goes to the
next version (its info's: the bench's log drops no table), and the mutations
are written (a PUT stores the value as read, a DELETE removes the key). No
calls, no modes, no packing, no indexes, no read from Kafka (the records are in
memory): where a replay that decodes its events as models stops. The replay
reads them lighter (`projector.fold.packed_events`), so it can pass it. A fault
raises `AssertionError`: the floor must replay the same log.
"""

from __future__ import annotations

import time

from events.changes import KeyAbsent, KeyAtVersion, KeyPresent, MutationOp, ValueEquals
from events.codec import decode_event
from events.event import GENESIS_HASH
from events.keys import table_info_key
from projector.heap import collector_paused


def floor_s(records: list[bytes]) -> tuple[float, int]:
    """Seconds the floor takes over the records (collector paused), and its key count."""
    put = MutationOp.PUT
    with collector_paused():
        started = time.perf_counter()
        values: dict[str, object] = {}
        at, last = 0, GENESIS_HASH
        for record in records:
            event = decode_event(record)
            assert event.resource_version == at + 1 and event.prev_hash == last
            at, last = event.resource_version, event.hash
            for requirement in event.requirements:
                key = requirement.key
                if type(requirement) is KeyAtVersion:
                    held = values.get(key)
                    assert getattr(held, "version", None) == requirement.version
                elif type(requirement) is KeyAbsent:
                    assert key not in values
                elif type(requirement) is KeyPresent:
                    assert key in values
                else:
                    assert isinstance(requirement, ValueEquals)
                    assert values.get(key) == requirement.value
            for table in event.tables:
                info = values.get(table_info_key(table.table_id))
                assert getattr(info, "version", 0) + 1 == table.version
            for mutation in event.mutations:
                if mutation.op is put:
                    values[mutation.key] = mutation.value
                else:
                    values.pop(mutation.key, None)
        return time.perf_counter() - started, len(values)
