"""``--metrics-port`` and ``--metrics-host``: a long-running command serves its metrics.

Off by default. With a port, the command makes one `CollectorRegistry`, hands
it to its component and serves it with `/healthz` and `/readyz`
(docs/operations.md, "Metrics, health and traces").
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry

from projector.telemetry import Check, MetricsServer, always_ok
from projector.telemetry.tracing import configure


def port(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65_535:
        raise argparse.ArgumentTypeError(f"{value} is not a port: use 1 to 65535")
    return value


def add_metrics_flags(parser: Any) -> None:
    """Add ``--metrics-port`` and ``--metrics-host`` to a long-running command."""
    parser.add_argument("--metrics-port", type=port, default=None,
                        help="serve Prometheus /metrics, /healthz and /readyz on this port "
                             "(off by default; docs/operations.md)")  # fmt: skip
    parser.add_argument("--metrics-host", default="127.0.0.1",
                        help="the address the metrics port listens on (default 127.0.0.1; "
                             "0.0.0.0 for a scraper on another machine)")  # fmt: skip


@contextlib.contextmanager
def serving_metrics(
    args: argparse.Namespace,
    registry: CollectorRegistry,
    ready: Check = always_ok,
    live: Check = always_ok,
    service: str = "metalog",
) -> Iterator[MetricsServer | None]:
    """Serve `registry` while the block runs, if ``--metrics-port`` was given; export
    spans over OTLP meanwhile if ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set.

    Raises:
        TelemetryError: The port cannot be bound.
    """
    provider = configure(service)  # OTLP only when its endpoint is set
    try:
        if args.metrics_port is None:
            yield None
            return
        with MetricsServer(registry, args.metrics_port, host=args.metrics_host,
                           ready=ready, live=live) as server:  # fmt: skip
            yield server
    finally:
        if provider is not None:
            provider.shutdown()  # type: ignore[attr-defined]  # flushes the spans
