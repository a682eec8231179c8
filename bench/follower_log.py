"""Big logs for the follower benchmark: `bench.apply.Generator`'s table creates, fast.

`Generator` builds pydantic events (~130 µs each here), too slow for a log of
a million tables; `create_records` builds the same creates as model-shaped
dicts and encodes them with `encode_event_dict`, byte for byte what
`encode_event(Generator(...)._create(...))` gives (`check_against_generator`
proves it on a prefix before every run). `produce_log` writes records with
one transactional producer in large transactions.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from confluent_kafka import Producer

from bench.apply import _AT, _POOL, CATALOG, SCHEMAS, Generator
from events.codec import encode_event, encode_event_dict
from events.keys import datanode_table_key, table_info_key, table_name_key, table_route_key
from events.topics import Topics


def _create(rng: random.Random, table_id: int) -> dict[str, Any]:
    """What `Generator._create` builds for `table_id` (rv = table_id), as a model-shaped dict."""
    schema = SCHEMAS[table_id % len(SCHEMAS)]
    name = f"t{table_id}"
    columns = [
        {"name": n, "data_type": t, "nullable": n != "id", "default_value": None}
        for n, t in [_POOL[0], *rng.sample(_POOL[1:], 7)]
    ]
    datanode = 1 + table_id % 16
    name_key = table_name_key(CATALOG, schema, name)
    info = {
        "type": "TableInfoValue", "table_id": table_id, "catalog": CATALOG,
        "schema_name": schema, "table_name": name, "columns": columns, "primary_key": ["id"],
        "options": {}, "partitions": [], "version": 1,
    }  # fmt: skip
    route = {
        "type": "TableRouteValue", "table_id": table_id,
        "region_routes": [{"region_id": table_id << 32, "leader_datanode": datanode,
                           "follower_datanodes": []}],
    }  # fmt: skip
    datanode_table = {"type": "DatanodeTableValue", "datanode_id": datanode,
                      "table_id": table_id, "regions": [0], "version": 1}  # fmt: skip
    return {
        "event_id": f"ev-{table_id}", "catalog": CATALOG, "resource_version": table_id,
        "leader_epoch": 0, "schema_epoch": table_id, "command_id": f"cmd-{table_id}",
        "actor": "bench", "occurred_at": _AT, "tables": [{"table_id": table_id, "version": 1}],
        "intent": {"type": "TableCreated", "table_id": table_id, "schema_name": schema,
                   "table_name": name},
        "requirements": [{"type": "KeyAbsent", "key": name_key},
                         {"type": "KeyAbsent", "key": table_info_key(table_id)}],
        "mutations": [
            {"key": table_info_key(table_id), "op": "PUT", "value": info},
            {"key": name_key, "op": "PUT", "value": {"type": "TableNameValue",
                                                     "table_id": table_id}},
            {"key": table_route_key(table_id), "op": "PUT", "value": route},
            {"key": datanode_table_key(datanode, table_id), "op": "PUT",
             "value": datanode_table},
        ],
        "prev_hash": (table_id - 1).to_bytes(32, "big"), "hash": table_id.to_bytes(32, "big"),
        "trace_id": None,
    }  # fmt: skip


def create_records(tables: int, seed: int = 7) -> Iterator[bytes]:
    """The encoded creates of tables 1..`tables` (resource versions 1..`tables`)."""
    rng = random.Random(seed)
    for table_id in range(1, tables + 1):
        yield encode_event_dict(_create(rng, table_id))


def check_against_generator(count: int = 300) -> None:
    """Fail unless `create_records` equals `Generator`'s creates byte for byte."""
    fast = list(create_records(count))
    slow = [encode_event(e) for e in Generator(count).events(count)]
    if fast != slow:
        raise SystemExit("bench.follower_log no longer matches bench.apply.Generator's creates")


def produce_log(bootstrap: str, topics: Topics, records: Iterable[bytes], per_txn: int) -> int:
    """Produce `records` to partition 0 of the events topic; the number produced."""
    producer = Producer({
        "bootstrap.servers": bootstrap, "transactional.id": str(uuid.uuid4()),
        "linger.ms": 20, "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
    })  # fmt: skip
    producer.init_transactions(30)
    producer.begin_transaction()
    count = 0
    for count, data in enumerate(records, 1):
        while True:
            try:
                producer.produce(topics.events, key=CATALOG.encode(), value=data, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
        if count % per_txn == 0:
            producer.commit_transaction(120)
            producer.begin_transaction()
    producer.commit_transaction(120)
    return count
