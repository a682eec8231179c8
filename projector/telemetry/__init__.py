"""Operations plumbing shared by every long-running process: metrics, health, traces.

`exposition.respond` renders a `CollectorRegistry` and the health checks into
HTTP responses with no web framework (the FastAPI server mounts the same
function); `server.MetricsServer` serves them on `--metrics-port`;
`tracing` turns a command's W3C trace context into OpenTelemetry spans.
"""

from projector.telemetry.exposition import (
    Check,
    Response,
    always_ok,
    respond,
)
from projector.telemetry.server import MetricsServer

__all__ = ["Check", "MetricsServer", "Response", "always_ok", "respond"]
