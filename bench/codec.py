"""Codec throughput: metalog's codec against bare fastavro on the same event.

Run `python -m bench.codec`. The event is a realistic `TableAltered`: a
`TableInfoValue` with 8 columns and options, 2 mutations, 1 requirement. Bare
fastavro runs `schemaless_writer`/`schemaless_reader` on the same Avro-shaped
dict with the same parsed schema (reading with `return_record_name=True`, as
the codec does, so both get the union branch names).
"""

import argparse
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from io import BytesIO
from typing import Any

from fastavro import schemaless_reader, schemaless_writer

from events.changes import KeyAtVersion, Mutation, MutationOp
from events.codec import (
    codec,
    decode_event,
    decode_event_dict,
    encode_event,
    encode_event_dict,
    to_avro_dict,
)
from events.event import Event
from events.intents import TableAltered
from events.values import Column, TableInfoValue, TableNameValue, TableVersion


def realistic_event() -> Event:
    """A `TableAltered` event: 8-column table info with options, 2 mutations, 1 requirement."""
    columns = tuple(
        Column(name=f"col_{i}", data_type="BIGINT" if i % 2 else "STRING", nullable=i > 0)
        for i in range(8)
    )
    info = TableInfoValue(
        table_id=1024,
        catalog="greptime",
        schema_name="public",
        table_name="orders",
        columns=columns,
        primary_key=("col_0",),
        options={"ttl": "7d", "compaction": "twcs", "append_mode": "false"},
        version=8,
    )
    return Event(
        event_id="0b9e6f7c-3d55-4b71-a3c8-4f0e1c2d9a10",
        catalog="greptime",
        resource_version=123_456,
        leader_epoch=3,
        schema_epoch=0,
        command_id="cmd-8f1c",
        actor="ddl-service",
        occurred_at=datetime(2024, 5, 1, 12, 30, 45, 123456, tzinfo=UTC),
        tables=(TableVersion(table_id=1024, version=8),),
        intent=TableAltered(table_id=1024, add_columns=columns[-1:], set_options={"ttl": "7d"}),
        requirements=(KeyAtVersion(key="__table_info/1024", version=7),),
        mutations=(
            Mutation(key="__table_info/1024", op=MutationOp.PUT, value=info),
            Mutation(
                key="__table_name/greptime/public/orders",
                op=MutationOp.PUT,
                value=TableNameValue(table_id=1024),
            ),
        ),
        prev_hash=bytes(32),
        hash=bytes(range(32)),
    )


def rates(fns: dict[str, Callable[[], Any]], seconds: float) -> dict[str, float]:
    """Calls per second of each function: the best ~20 ms batch of many, interleaved.

    Interleaving the functions and keeping each one's best batch makes the
    ratios robust to other load on the machine.
    """
    batches = {}
    for name, fn in fns.items():
        batch = 1
        while True:
            start = time.perf_counter()
            for _ in range(batch):
                fn()
            if time.perf_counter() - start > 0.02:
                break
            batch *= 2
        batches[name] = batch
    best = dict.fromkeys(fns, 0.0)
    deadline = time.perf_counter() + seconds * len(fns)
    while time.perf_counter() < deadline:
        for name, fn in fns.items():
            batch = batches[name]
            start = time.perf_counter()
            for _ in range(batch):
                fn()
            best[name] = max(best[name], batch / (time.perf_counter() - start))
    return best


def main() -> None:
    """Run the benchmark and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0, help="time per operation")
    args = parser.parse_args()

    event = realistic_event()
    parsed = codec("event").current.parsed
    avro = to_avro_dict(event)
    shaped = event.model_dump()
    data = encode_event(event)
    body = data[10:]

    def bare_write() -> bytes:
        fo = BytesIO()
        schemaless_writer(fo, parsed, avro)
        return fo.getvalue()

    def bare_read() -> Any:
        return schemaless_reader(BytesIO(body), parsed, None, return_record_name=True)

    assert decode_event(data) == event and bare_write() == body
    got = rates(
        {
            "encode: fastavro schemaless_writer (Avro dict)": bare_write,
            "encode_event (model)": lambda: encode_event(event),
            "encode_event_dict (model-shaped dict)": lambda: encode_event_dict(shaped),
            "decode: fastavro schemaless_reader (Avro dict)": bare_read,
            "decode_event_dict (model-shaped dict)": lambda: decode_event_dict(data),
            "decode_event (validated model)": lambda: decode_event(data),
        },
        args.seconds,
    )
    bare = {k[:6]: v for k, v in got.items() if k.startswith(("encode:", "decode:"))}
    print(
        f"python {platform.python_version()}, {platform.machine()}, "
        f"{len(data)} bytes/event ({len(body)} body + 10 header)\n"
    )
    print("| operation | events/s | vs bare fastavro |")
    print("|---|---:|---:|")
    for name, value in got.items():
        print(f"| {name} | {value:,.0f} | {value / bare[name[:6]]:.2f} |")


if __name__ == "__main__":
    main()
