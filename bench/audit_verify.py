"""`metalog audit verify` against the raw consume rate of the same records.

Two logs of one catalog, each in its own one-partition events topic, with a
checkpoint signed every `--every` events:

- the big log (`--events`, default 1M): a genuine template of `--template`
  events (`bench.apply.grown_log`: creates, alters, renames, attribute sets)
  repeated with fresh table ids in the envelope, renumbered and re-chained
  byte by byte. It passes every check but the fold (its mutations repeat),
  so it measures the integrity pass (`--skip-fold`: bytes, hash chain,
  sequences, leader epochs, table versions, signatures);
- the template itself, genuine: it measures the full verify, every event
  also decoded and folded (requirements, publication order).

For each: the raw consume rate and the verify rate, one after the other, both
read the same way (`projector.audit.read.TopicLog`: bulk fetch settings, and a
log of 200,000 records or more consumed in a child process): the raw consume
counts `TopicLog.records()` (the floor), the verify runs `verify_topic` (the
child also checks each record's hash, its share of the work).

Run: `.venv/bin/python -m bench.audit_verify [--events 1000000] [--template 10000]`
(starts its own broker on a free bench port unless `--bootstrap` is given).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bench.apply import CATALOG, grown_log
from bench.baseline import BENCH_PORTS
from bench.ports import free_port_pair
from bench.workload import produce
from events.chain import seal_record
from events.checkpoint import Checkpoint, Signer, micros
from events.codec import encode_event
from events.event import Event
from events.intents import CheckpointSigned
from metalog.stack import broker as stack
from metalog.stack.config import StackConfig
from projector.audit.raw import parse, rewritten
from projector.audit.read import TopicLog, verify_topic
from projector.audit.verify import Verifier
from projector.kafka.topics import create_metalog_topics

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


def _checkpoint(last: Event, prev: bytes, rv: int, signer: Signer) -> tuple[bytes, bytes]:
    """A checkpoint record after `last`'s envelope, signing (rv - 1, prev); its record and hash."""
    signed = signer.sign(Checkpoint(CATALOG, rv - 1, prev, last.leader_epoch,
                                    micros(last.occurred_at)))  # fmt: skip
    intent = CheckpointSigned(resource_version=rv - 1, chain_hash=prev, key_id=signed.key_id,
                              signature=signed.signature)  # fmt: skip
    event = last.model_copy(update={
        "event_id": f"checkpoint-{rv}", "resource_version": rv, "intent": intent, "tables": (),
        "requirements": (), "mutations": (), "command_id": None, "schema_epoch": 0,
        "prev_hash": prev, "actor": "bench-leader",
    })  # fmt: skip
    sealed = seal_record(event)
    return sealed.record, sealed.event.hash


def genuine(template: Sequence[Event], every: int) -> list[bytes]:
    """The template re-sealed with a checkpoint after every `every` events."""
    signer, out, prev, rv = Signer(KEY), [], bytes(32), 0
    for n, event in enumerate(template, 1):
        rv += 1
        sealed = seal_record(event.model_copy(update={"resource_version": rv, "prev_hash": prev}))
        out.append(sealed.record)
        prev = sealed.event.hash
        if n % every == 0 or n == 1:
            rv += 1
            record, prev = _checkpoint(event, prev, rv, signer)
            out.append(record)
    return out


def tiled(template: Sequence[Event], events: int, every: int) -> Iterator[bytes]:
    """`events` records: the template repeated with fresh table ids, re-chained as bytes."""
    signer = Signer(KEY)
    records = [encode_event(e) for e in template]
    parsed = [parse(r) for r in records]
    stride = 1 + max((t for p in parsed for t, _ in p.tables), default=0)
    prev, rv, written, tile = bytes(32), 0, 0, 0
    while True:
        for n, (data, raw) in enumerate(zip(records, parsed, strict=True)):
            if tile and raw.intent == "LeaderElected":
                continue
            rv += 1
            tables = tuple((t + tile * stride, v) for t, v in raw.tables)
            record, digest = rewritten(data, raw, rv, prev, tables)
            yield record
            prev, written = digest, written + 1
            if written >= events:
                return
            if written % every == 0 or written == 1:
                rv += 1
                record, prev = _checkpoint(template[n], prev, rv, signer)
                yield record
        tile += 1


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds) if seconds > 0 else 0.0


def _measure(bootstrap: str, topic: str, fold: bool) -> dict[str, Any]:
    started = time.perf_counter()
    consumed = sum(1 for _ in TopicLog(bootstrap, topic).records())
    raw_seconds = time.perf_counter() - started
    started = time.perf_counter()
    report = verify_topic(bootstrap, topic, Verifier(KEY.public_key(), fold=fold))
    seconds = time.perf_counter() - started
    assert report.fault is None, report.fault
    return {
        "records": consumed, "raw_consume_per_s": _rate(consumed, raw_seconds),
        "verify_per_s": _rate(report.records, seconds), "fold": fold,
        "verify_vs_raw": round(raw_seconds / seconds, 2),
        "checkpoints": report.catalogs[CATALOG].checkpoints,
    }  # fmt: skip


def run(bootstrap: str, args: argparse.Namespace) -> dict[str, Any]:
    """Build both logs, write them, measure; the results."""
    started = time.perf_counter()
    template = grown_log(max(1, args.template // 10), args.template)
    built = {"template_seconds": round(time.perf_counter() - started, 1)}
    result: dict[str, Any] = {"load_before": os.getloadavg()[0], **built}
    for name, records, fold in (
        ("integrity", tiled(template, args.events, args.every), False),
        ("full", iter(genuine(template, args.every)), True),
    ):
        prefix = f"bench-audit-{name}-{os.getpid()}"
        create_metalog_topics(bootstrap, prefix, 1)
        produce(bootstrap, f"{prefix}.events", ((CATALOG, r) for r in records), 1,
                transactional_id=prefix, per_txn=10_000)  # fmt: skip
        result[name] = _measure(bootstrap, f"{prefix}.events", fold)
    result["load_after"] = os.getloadavg()[0]
    return result


def main() -> None:
    """Parse the options, get a broker, print the results as one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--template", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=1000)
    args = parser.parse_args()
    if args.bootstrap:
        print(json.dumps(run(args.bootstrap, args)))
        return
    port = free_port_pair(BENCH_PORTS)
    with tempfile.TemporaryDirectory(prefix="metalog-bench-audit-") as tmp:
        config = StackConfig(state_dir=Path(tmp), port=port, controller_port=port + 1)
        stack.up(config)
        try:
            print(json.dumps(run(config.bootstrap, args)))
        finally:
            stack.down(config)


if __name__ == "__main__":
    main()
