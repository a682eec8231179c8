"""Where a command's time goes through a ``metalog leader``, hop by hop.

Run with ``python -m bench.leader_hops`` (see ``--help``); about 2 minutes. It
starts its own broker (``bench.leader``'s ports), a leader subprocess and one
``MetadataClient``, and times each command at every hop of its remote path
with the wall clock (one machine, one clock, so the two processes' stamps
compare):

- client: the call starts → ``produce()`` of the command → its delivery ack;
- leader: the command's record (its CreateTime, ms) → returned by the
  consumer's poll → decided and handed to the commit thread (``_serve``
  returns) → ``begin_transaction`` → records produced → offsets sent →
  ``commit_transaction`` returns;
- client: the reply read (``read_committed``) → the call returns.

The leader subprocess and the client are the product's own classes; only
their Kafka clients are replaced by subclasses that note the time (nothing in
the product is changed). Then raw transactional produce (``bench.leader_raw``)
is timed the same way. Phases: 1 client closed loop, then ``--rate`` open loop,
then (with ``--clients N``) N client threads closed loop, each on its own table.
Prints, per phase, the p50 / p99 (ms) of each hop.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Message, Producer

from bench.leader import CATALOG, KAFKA_PORTS, REPO, Table, alter, create_tables
from bench.leader_load import closed_loop, open_loop, percentile
from bench.ports import free_port_pair
from events.codec import decode_reply
from events.topics import COMMAND_ID_HEADER, Topics

Stamps = dict[str, dict[str, float]]
"""Per command id, the wall-clock time (s) of each hop it passed."""

_STAMPS: Stamps = defaultdict(dict)
TRANSACTIONS: list[dict[str, float]] = []
"""Each transaction's steps (raw transactional produce has no command ids)."""


def _command_id(message: Message) -> str | None:
    value = dict(message.headers() or []).get(COMMAND_ID_HEADER)
    return value.decode() if isinstance(value, bytes) else None


class TracedConsumer(Consumer):
    """The leader's command consumer: notes when each command is returned."""

    def poll(self, timeout: float = -1) -> Message | None:
        message = super().poll(timeout)
        if message is not None and message.error() is None:
            self._note([message])
        return message

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        messages = super().consume(num_messages, timeout)
        self._note([m for m in messages if m.error() is None])
        return messages

    @staticmethod
    def _note(messages: list[Message]) -> None:
        now = time.time()
        for message in messages:
            command_id = _command_id(message)
            if command_id is not None:
                _STAMPS[command_id]["created"] = message.timestamp()[1] / 1000.0
                _STAMPS[command_id]["polled"] = now


class TracedTransactions(Producer):
    """A transactional producer that notes each step of a transaction per reply it carries."""

    replies_topic = "metalog.replies"

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self._steps: dict[str, float] = {}
        self._ids: list[str] = []

    def begin_transaction(self) -> None:
        self._steps, self._ids = {"begin": time.time()}, []
        super().begin_transaction()
        self._steps["begun"] = time.time()

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None:
        super().produce(topic, *args, **kwargs)
        self._steps["produced"] = time.time()
        value = kwargs.get("value", args[0] if args else None)
        if topic == self.replies_topic and value:
            self._ids.append(decode_reply(value).command_id)

    def send_offsets_to_transaction(self, *args: Any, **kwargs: Any) -> None:
        super().send_offsets_to_transaction(*args, **kwargs)
        self._steps["offsets"] = time.time()

    def commit_transaction(self, *args: Any, **kwargs: Any) -> None:
        self._steps["commit"] = time.time()
        super().commit_transaction(*args, **kwargs)
        self._steps["committed"] = time.time()
        self._steps["batch"] = float(len(self._ids))
        TRANSACTIONS.append(self._steps)
        for command_id in self._ids:
            _STAMPS[command_id].update(self._steps)


def serve(bootstrap: str, prefix: str, out: Path) -> None:
    """The leader subprocess: a traced `Leader` until SIGTERM, then its stamps to `out`."""
    from producers.leader import leader as leader_module
    from producers.leader import owner as owner_module

    setattr(leader_module, "Consumer", TracedConsumer)  # noqa: B010
    setattr(owner_module, "Producer", TracedTransactions)  # noqa: B010
    TracedTransactions.replies_topic = Topics(prefix).replies
    original = leader_module.Leader._serve

    def traced_serve(self: Any, consumer: Consumer, messages: list[Message]) -> None:
        original(self, consumer, messages)
        now = time.time()
        for message in messages:
            if message.error() is None and (command_id := _command_id(message)) is not None:
                _STAMPS[command_id]["decided"] = now

    leader_module.Leader._serve = traced_serve  # type: ignore[method-assign]
    if "HOPS_SWITCH" in os.environ:
        sys.setswitchinterval(float(os.environ["HOPS_SWITCH"]))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    leader = leader_module.Leader(bootstrap, topics=Topics(prefix), group_id="bench-leaders")
    with leader:
        stop.wait()
    out.write_text(json.dumps(_STAMPS))


class TracedClientProducer(Producer):
    """The client's command producer: notes `produce()` and the ack of each command."""

    def __init__(self, config: dict[str, Any]) -> None:
        knobs = json.loads(os.environ.get("HOPS_CLIENT", "{}"))
        super().__init__({**config, **knobs, "delivery.report.only.error": False})
        self._closed = threading.Event()
        threading.Thread(target=self._acks, daemon=True).start()

    def _acks(self) -> None:  # serves the acks as they come, not between reply reads
        while not self._closed.is_set():
            super().poll(0.1)

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None:
        headers = dict(kwargs.get("headers") or [])
        command_id = headers[COMMAND_ID_HEADER].decode()
        _STAMPS[command_id]["produce"] = time.time()
        undelivered = kwargs.pop("on_delivery")

        def acked(error: Any, message: Message) -> None:
            _STAMPS[command_id]["acked"] = time.time()
            if error is not None:
                undelivered(error, message)

        kwargs["on_delivery"] = acked
        super().produce(topic, *args, **kwargs)


def _traced_client() -> None:
    from producers.client import channel

    setattr(channel, "Producer", TracedClientProducer)  # noqa: B010
    answer = channel.CommandChannel._answer

    def traced_answer(self: Any, value: bytes) -> None:
        _STAMPS[decode_reply(value).command_id]["read"] = time.time()
        answer(self, value)

    channel.CommandChannel._answer = traced_answer  # type: ignore[method-assign]


HOPS = (
    ("client: call → produce()", "call", "produce"),
    ("client: produce() → ack", "produce", "acked"),
    ("produce() → leader polled it", "produce", "polled"),
    ("leader: polled → decided", "polled", "decided"),
    ("leader: decided → begin_transaction", "decided", "begin"),
    ("leader: begin_transaction", "begin", "begun"),
    ("leader: produce records", "begun", "produced"),
    ("leader: produced → commit_transaction", "produced", "commit"),
    ("leader: commit_transaction", "commit", "committed"),
    ("committed → client read the reply", "committed", "read"),
    ("client: reply read → call returns", "read", "returned"),
    ("whole call", "call", "returned"),
)
RAW_HOPS = (
    ("raw: begin_transaction", "begin", "begun"),
    ("raw: produce records", "begun", "produced"),
    ("raw: commit_transaction", "commit", "committed"),
    ("raw: whole command", "call", "returned"),
)


_HEADER = "\n| hop | p50 ms | p99 ms |\n|---|---|---|"


def hop_table(stamps: Stamps, hops: tuple[tuple[str, str, str], ...]) -> list[str]:
    """One markdown row per hop: p50 / p99 in ms over the commands that passed both ends."""
    rows = []
    for name, start, end in hops:
        spans = sorted(
            (s[end] - s[start]) * 1000.0 for s in stamps.values() if start in s and end in s
        )
        if spans:
            p50, p99 = percentile(spans, 0.5), percentile(spans, 0.99)
            rows.append(f"| {name} | {p50:.2f} | {p99:.2f} |")
    batches = sorted(s["batch"] for s in stamps.values() if "batch" in s)
    if batches:
        rows.append(f"| commands per transaction | {percentile(batches, 0.5):.0f} | "
                    f"{percentile(batches, 0.99):.0f} |")  # fmt: skip
    return rows


@contextmanager
def _leader(bootstrap: str, prefix: str, out: Path, log_file: Path) -> Iterator[None]:
    command = [sys.executable, "-m", "bench.leader_hops", "--serve", bootstrap, prefix, str(out)]
    with log_file.open("ab") as log:
        process = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield
    finally:
        process.terminate()
        process.wait(timeout=60.0)


def _timed(client: Any, tables: list[Table], calls: Stamps, since: float) -> Any:
    counter = iter(range(1 << 62))

    def one(slot: int) -> None:
        start = time.time()
        reply = alter(client, tables[slot], next(counter))
        if start >= since:
            calls[reply.command_id] = {"call": start, "returned": time.time()}

    return one


def main(argv: list[str] | None = None) -> int:
    """Run the phases and print the hop tables."""
    parser = argparse.ArgumentParser(prog="python -m bench.leader_hops", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--duration", type=float, default=10.0, help="s per phase (10)")
    parser.add_argument("--rate", type=float, default=1000.0, help="open loop /s (1000)")
    parser.add_argument("--clients", type=int, default=0,
                        help="also a closed loop of this many client threads (0: none)")
    parser.add_argument("--warmup", type=float, default=20.0, help="s of load first (20)")
    parser.add_argument("--no-raw", action="store_true", help="skip raw transactional produce")
    parser.add_argument("--dump", type=Path, help="write every command's stamps here (JSON)")
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve[0], args.serve[1], Path(args.serve[2]))
        return 0
    import bench.leader_raw as raw_module
    from bench.leader_raw import RawCommitter
    from metalog.stack import broker as stack
    from metalog.stack.config import StackConfig
    from producers.client.client import MetadataClient
    from projector.kafka.topics import create_topics

    _traced_client()
    topics = Topics("metalog")
    port = free_port_pair(KAFKA_PORTS)
    print(f"load average {os.getloadavg()}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="metalog-bench-hops-") as tmp, ExitStack() as stack_:
        root = Path(tmp)
        config = StackConfig(state_dir=root / "kafka", port=port, controller_port=port + 1)
        stack.up(config)
        stack_.callback(stack.down, config)
        create_topics(config.bootstrap, ["bench.raw.events", "bench.raw.replies"], partitions=3)
        client = stack_.enter_context(
            MetadataClient(config.bootstrap, catalog=CATALOG, actor="bench", topics=topics)
        )
        out = root / "leader-stamps.json"
        phases: dict[str, Stamps] = {}
        with _leader(config.bootstrap, topics.prefix, out, root / "leader.log"):
            tables = create_tables(client, max(256, args.clients))
            warm: Stamps = {}
            open_loop("warm-up", _timed(client, tables, warm, 0.0), args.rate, 0.0,
                      args.warmup, pool=256)  # fmt: skip
            # (name, open-loop rate or None for a closed loop, client threads)
            leader_phases = [("1 client", None, 1), (f"{args.rate:,.0f}/s open loop", args.rate, 0)]
            if args.clients:
                leader_phases.append((f"{args.clients} clients", None, args.clients))
            for name, rate, count in leader_phases:
                calls: Stamps = {}
                since = time.time() + 1.0
                if rate is None:
                    op = _timed(client, tables, calls, since)
                    result = closed_loop("leader", [partial(op, i) for i in range(count)], 1.0,
                                         args.duration)  # fmt: skip
                else:
                    result = open_loop("leader", _timed(client, tables, calls, since), rate,
                                       1.0, args.duration, pool=256)  # fmt: skip
                print(f"{name}: {result}", file=sys.stderr)
                phases[name] = calls
        leader_stamps = json.loads(out.read_text())
        setattr(raw_module, "Producer", TracedTransactions)  # noqa: B010
        TracedTransactions.replies_topic = ""  # raw replies carry no command id
        raw_phases: dict[str, tuple[Stamps, list[dict[str, float]]]] = {}
        for name, rate in (("1 client", None), (f"{args.rate:,.0f}/s open loop", args.rate)):
            if args.no_raw:
                break
            stamps: Stamps = {}
            TRANSACTIONS.clear()
            with RawCommitter(config.bootstrap, "bench.raw.events", "bench.raw.replies",
                              b"e" * 342, b"r" * 62) as raw:  # fmt: skip
                raw_op = _raw_timed(raw, stamps, time.time() + 1.0)
                if rate is None:
                    closed_loop("raw", [lambda: raw_op(0)], 1.0, args.duration)  # noqa: B023
                else:
                    open_loop("raw", raw_op, rate, 1.0, args.duration, pool=256)
            raw_phases[name] = stamps, list(TRANSACTIONS)
    dumped: dict[str, Stamps] = {}
    for name, calls in phases.items():
        merged = {cid: {**leader_stamps.get(cid, {}), **_STAMPS.get(cid, {}), **stamps}
                  for cid, stamps in calls.items()}  # fmt: skip
        dumped[name] = merged
        print(f"\n### leader, {name} ({len(merged)} commands)\n{_HEADER}")
        print("\n".join(hop_table(merged, HOPS)))
    if args.dump is not None:
        args.dump.write_text(json.dumps(dumped))
    for name, (calls, transactions) in raw_phases.items():
        print(f"\n### raw, {name} ({len(calls)} commands)\n{_HEADER}")
        print("\n".join(hop_table(calls, RAW_HOPS[-1:])))
        steps = {str(i): t for i, t in enumerate(transactions)}
        print("\n".join(hop_table(steps, RAW_HOPS[:-1])))
    return 0


def _raw_timed(raw: Any, stamps: Stamps, since: float) -> Any:
    counter = iter(range(1 << 62))

    def one(_slot: int) -> None:
        start = time.time()
        raw.command()
        if start >= since:
            stamps[str(next(counter))] = {"call": start, "returned": time.time()}

    return one


if __name__ == "__main__":
    sys.exit(main())
