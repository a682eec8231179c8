"""OpenTelemetry spans for one command across processes (docs/operations.md, "Traces").

A command carries its trace as a W3C `traceparent` Kafka header: the client
writes it on the command record (a caller may hand one in), the leader on the
event records it writes for it, and the follower reads it back. The event's
`trace_id` field keeps the trace id in the log itself. Each component takes a
`Tracer`; the default is OpenTelemetry's global one, which records nothing
until a process installs a provider (`configure`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACEPARENT = "traceparent"
"""The W3C Trace Context header name, on command and event records."""

_PROPAGATOR = TraceContextTextMapPropagator()


def tracer(name: str, provider: trace.TracerProvider | None = None) -> Tracer:
    """The tracer of a metalog component (`metalog.leader`, …) from `provider` or the global one."""
    return (provider or trace.get_tracer_provider()).get_tracer(name)


def configure(service: str) -> trace.TracerProvider | None:
    """Install a provider exporting over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.

    Without the variable nothing is installed and spans cost next to nothing.
    The exporter reads the other `OTEL_EXPORTER_OTLP_*` variables itself.

    Returns:
        The provider installed (shut it down at exit to flush), or None.
    """
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return None
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def parent(traceparent: str | None) -> Context | None:
    """The context a W3C `traceparent` value names; None when absent or malformed."""
    if not traceparent:
        return None
    context = _PROPAGATOR.extract({TRACEPARENT: traceparent})
    return context if trace.get_current_span(context).get_span_context().is_valid else None


def traceparent_of(span: Span) -> str | None:
    """The W3C `traceparent` value that makes a span the parent of the next hop."""
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, trace.set_span_in_context(span))
    return carrier.get(TRACEPARENT)


def trace_id_of(span: Span) -> str | None:
    """The span's trace id as 32 hex digits (the event's `trace_id`); None when invalid."""
    context = span.get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def current_trace() -> list[tuple[str, bytes]]:
    """The `traceparent` header of the current span, for a record sent inside it ([]: none)."""
    span = trace.get_current_span()
    if not span.get_span_context().is_valid:
        return []
    traceparent = traceparent_of(span)
    return [] if traceparent is None else [(TRACEPARENT, traceparent.encode())]


def header(
    headers: Mapping[str, str | bytes | None] | Iterable[tuple[str, str | bytes | None]] | None,
) -> str | None:
    """The `traceparent` among a Kafka record's headers (a list of pairs or a dict), if any."""
    pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
    for key, value in pairs:
        if key == TRACEPARENT and value is not None:
            return value.decode(errors="replace") if isinstance(value, bytes) else value
    return None
