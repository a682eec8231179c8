"""One command's trace across client, leader and follower, on a real broker.

Each component gets its own tracer provider and in-memory exporter, as three
processes would: the spans meet only through the records' `traceparent` headers.
"""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from events.values import Column
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from projector.follower.follower import Follower
from projector.telemetry.tracing import tracer
from tests.fixtures.kafka import TopicSet
from tests.leader.conftest import log_of

pytestmark = pytest.mark.integration

COLUMNS = (Column(name="id", data_type="int64"),)
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = f"00-{CALLER_TRACE}-00f067aa0ba902b7-01"


def _recording(name: str) -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def test_one_command_is_one_trace_from_the_callers_traceparent_to_the_follower(
    wire: TopicSet,
) -> None:
    (client_spans, client_p), (leader_spans, leader_p), (follower_spans, follower_p) = (
        _recording("client"), _recording("leader"), _recording("follower"))  # fmt: skip
    with (
        Leader(wire.bootstrap, topics=wire.topics, group_id=f"{wire.prefix}-leaders",
               tracing=tracer("metalog.leader", leader_p)) as leader,
        MetadataClient(wire.bootstrap, catalog="greptime", actor="alice", topics=wire.topics,
                       tracing=tracer("metalog.client", client_p)) as client,
        Follower(wire.bootstrap, "greptime", topics=wire.topics,
                 tracing=tracer("metalog.follower", follower_p)) as follower,
    ):  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        client.create_table("public", "untraced", COLUMNS)  # no caller trace: still one span
        committed = client.create_table("public", "orders", COLUMNS, traceparent=CALLER)
        follower.wait_for(committed.resource_version, timeout=30.0)
        follower.stop()  # its spans end before we read them

    sends = [s for s in client_spans.get_finished_spans() if s.name == "metalog.client.send"]
    traced = [s for s in sends if format(s.context.trace_id, "032x") == CALLER_TRACE]
    assert len(sends) == 2 and len(traced) == 1
    send = traced[0]
    others = (*leader_spans.get_finished_spans(), *follower_spans.get_finished_spans())
    spans = {s.name: s for s in others if format(s.context.trace_id, "032x") == CALLER_TRACE}
    assert set(spans) == {"metalog.leader.decide", "metalog.leader.commit",
                          "metalog.follower.apply"}  # fmt: skip
    decide = spans["metalog.leader.decide"]
    assert send.parent is not None and format(send.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert decide.parent is not None and decide.parent.span_id == send.context.span_id
    assert spans["metalog.leader.commit"].parent.span_id == decide.context.span_id  # type: ignore[union-attr]
    assert spans["metalog.follower.apply"].parent.span_id == decide.context.span_id  # type: ignore[union-attr]
    event = next(e for e in log_of(wire) if e.resource_version == committed.resource_version)
    assert event.trace_id == CALLER_TRACE
