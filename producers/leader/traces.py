"""The leader's spans of a traced command: decide, then commit (which writes its reply).

Only commands that arrive with a W3C `traceparent` get spans; the others cost
one attribute check.
"""

from __future__ import annotations

import time

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Tracer

from events.commands import Command
from producers.leader.committer import Batch, Headers, Input
from projector.telemetry.tracing import TRACEPARENT, parent, traceparent_of


def decide_span(tracer: Tracer, item: Input, command: Command) -> Span | None:
    """Start the decide span of a traced command (kept on `item` for its commit span)."""
    if item.traceparent is None:
        return None
    span = tracer.start_span(
        "metalog.leader.decide", context=parent(item.traceparent), kind=SpanKind.CONSUMER,
        attributes={"metalog.command": command.type, "metalog.command_id": command.command_id},
    )  # fmt: skip
    item.span = span
    return span


def event_headers(span: Span | None) -> Headers:
    """The headers of the events a traced command caused: the decide span as their parent."""
    if span is None:
        return []
    traceparent = traceparent_of(span)
    return [] if traceparent is None else [(TRACEPARENT, traceparent.encode())]


def commit_spans(tracer: Tracer, batch: Batch, began_ns: int) -> None:
    """One commit span per traced command of a committed batch, from `began_ns` to now."""
    for item, reply in batch.replies:
        if item.span is None:
            continue
        span = tracer.start_span(
            "metalog.leader.commit", context=trace.set_span_in_context(item.span),
            kind=SpanKind.PRODUCER, start_time=began_ns,
            attributes={"metalog.outcome": reply.type},
        )  # fmt: skip
        span.end()
        item.span = None


def now_ns() -> int:
    """The wall clock in ns, as spans take their times."""
    return time.time_ns()
