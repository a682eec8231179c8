"""`metalog status --metrics …`: a running stack seen through its processes' own metrics.

Each endpoint is a process started with ``--metrics-port`` (a leader, a follower, a
projection, or a service embedding several): its `/metrics` is parsed with
Prometheus' own parser and its `/readyz` read, and each role it serves is summed
up in a few numbers (docs/operations.md, "metalog status"). An endpoint that does not
answer is reported as such, never as a traceback: a stopped (or SIGSTOPped)
process is exactly what an operator looks for.
"""

from __future__ import annotations

import math
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from metalog.errors import StatusError

Families = dict[str, list[Sample]]


def endpoint(text: str) -> str:
    """The base URL of a metrics endpoint given as `PORT`, `HOST:PORT` or `http://HOST:PORT`.

    Raises:
        StatusError: Not one of those forms.
    """
    given = text.strip()
    if given.isdigit():
        given = f"127.0.0.1:{given}"
    if "://" not in given:
        given = f"http://{given}"
    parts = urlsplit(given)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None:
        raise StatusError(f"{text!r} is not a metrics endpoint: give the --metrics-port of a "
                          "running process as PORT, HOST:PORT or http://HOST:PORT")
    return f"{parts.scheme}://{parts.netloc}"


@dataclass
class Seen:
    """What one endpoint answered.

    Attributes:
        url: The endpoint's base URL.
        error: Why it could not be read (None: it answered).
        ready: Its `/readyz` verdict (None when it did not answer).
        why: The reason `/readyz` gave.
        roles: Each role it serves (`leader`, `follower`, `projection`) → its figures.
    """

    url: str
    error: str | None = None
    ready: bool | None = None
    why: str = ""
    roles: dict[str, dict[str, Any]] = field(default_factory=dict)

    def document(self) -> dict[str, Any]:
        """The endpoint as `metalog status --json` prints it (NaN as null)."""
        return _plain({"url": self.url, "reachable": self.error is None, "error": self.error,
                       "ready": self.ready, "readiness": self.why or None, **self.roles})


def look(url: str, timeout: float) -> Seen:
    """Scrape `url`'s `/metrics` and `/readyz`; an endpoint that does not answer says why."""
    seen = Seen(url)
    try:
        status, text = _get(f"{url}/metrics", timeout)
        if status != 200:
            seen.error = f"/metrics answered HTTP {status}"
            return seen
        families = {f.name: list(f.samples) for f in text_string_to_metric_families(text)}
        status, body = _get(f"{url}/readyz", timeout)
    except TimeoutError:
        seen.error = f"no answer within {timeout:g} s (stopped, paused or overloaded)"
        return seen
    except (OSError, ValueError) as exc:  # refused, unknown host, not Prometheus' format
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            seen.error = f"no answer within {timeout:g} s (stopped, paused or overloaded)"
        else:
            seen.error = f"cannot connect: {reason}"
        return seen
    seen.ready = status == 200
    seen.why = body.strip().removeprefix("ok: ").removeprefix("not ok: ")
    seen.roles = roles(families)
    return seen


def roles(families: Families) -> dict[str, dict[str, Any]]:
    """The figures of each role whose metrics `families` holds."""
    found: dict[str, dict[str, Any]] = {}
    if "metalog_leader_partitions_owned" in families:
        commands = families.get("metalog_leader_commands", [])
        found["leader"] = {
            "partitions_owned": _one(families, "metalog_leader_partitions_owned"),
            "commit_p99_seconds": quantile(0.99, _buckets(
                families, "metalog_leader_commit_duration_seconds")),
            "commits": _one(families, "metalog_leader_commit_duration_seconds_count"),
            "commands": sum(s.value for s in commands if s.name.endswith("_total")),
            "rejected": sum(s.value for s in commands if s.name.endswith("_total")
                            and s.labels.get("outcome") != "committed"),
            "commit_failures": sum(
                s.value for s in families.get("metalog_leader_commit_failures", [])
                if s.name.endswith("_total")),
        }  # fmt: skip
    if "metalog_follower_up" in families:
        catalogs: dict[str, dict[str, float]] = {}
        for name, figure in (("metalog_follower_resource_version", "resource_version"),
                             ("metalog_follower_lag_records", "lag_records"),
                             ("metalog_follower_lag_seconds", "lag_seconds")):  # fmt: skip
            for sample in families.get(name, []):
                catalogs.setdefault(sample.labels.get("catalog", ""), {})[figure] = sample.value
        found["follower"] = {"up": _one(families, "metalog_follower_up") == 1,
                             "catalogs": catalogs}
    if "metalog_projection_up" in families:
        found["projection"] = {
            "up": _one(families, "metalog_projection_up") == 1,
            "freshness_seconds": _one(families, "metalog_projection_freshness_seconds"),
            "compaction_lag_batches": _one(families, "metalog_projection_compaction_lag_batches"),
            "rows": _one(families, "metalog_projection_rows_total"),
        }
    return found


def quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float:
    """The `q` quantile of a cumulative histogram, as Prometheus' `histogram_quantile`
    computes it (linear within a bucket; the highest finite bound past it).

    Args:
        q: 0 to 1.
        buckets: (upper bound, cumulative count), `+Inf` last.

    Returns:
        The estimate; NaN when the histogram has no observation.
    """
    ordered = sorted(buckets)
    if not ordered or ordered[-1][1] <= 0:
        return math.nan
    rank = q * ordered[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in ordered:
        if count >= rank:
            if math.isinf(bound):
                return lower
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


def render(seen: Sequence[Seen]) -> list[str]:
    """The one-screen view: one line per endpoint and role."""
    lines = ["processes:"]
    for one in seen:
        if one.error is not None:
            lines.append(f"  {one.url}  UNREACHABLE: {one.error}")
            continue
        state = "ready" if one.ready else "NOT READY"
        lines.append(f"  {one.url}  {state}: {one.why}")
        if not one.roles:
            lines.append("    (no metalog metrics)")
        for role, figures in one.roles.items():
            lines.append(f"    {role:<10} {_describe(role, figures)}")
    return lines


def _describe(role: str, f: dict[str, Any]) -> str:
    if role == "leader":
        return (f"{_count(f['partitions_owned'])} partition(s) owned; commit p99 "
                f"{_ms(f['commit_p99_seconds'])} over {_count(f['commits'])} commits; "
                f"{_count(f['commands'])} commands, {_count(f['rejected'])} rejected, "
                f"{_count(f['commit_failures'])} failed commits")  # fmt: skip
    if role == "follower":
        shown = "; ".join(
            f"{name} rv {_count(c.get('resource_version', math.nan))} lag "
            f"{_count(c.get('lag_records', math.nan))} records / "
            f"{_seconds(c.get('lag_seconds', math.nan))}"
            for name, c in sorted(f["catalogs"].items()))
        return ("reading" if f["up"] else "NOT READING") + (f": {shown}" if shown else "")
    return (("projecting" if f["up"] else "NOT PROJECTING")
            + f": freshness {_seconds(f['freshness_seconds'])}, "
            f"{_count(f['compaction_lag_batches'])} batches not compacted, "
            f"{_count(f['rows'])} records read")


def _get(url: str, timeout: float) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as exc:  # /readyz answers 503 when not ready
        return exc.code, exc.read().decode()


def _one(families: Families, sample: str) -> float:
    family = sample.removesuffix("_total").removesuffix("_count")
    return sum(s.value for s in families.get(family, []) if s.name == sample)


def _buckets(families: Families, family: str) -> list[tuple[float, float]]:
    return [(float(s.labels["le"]), s.value) for s in families.get(family, [])
            if s.name == f"{family}_bucket"]


def _plain(value: Any) -> Any:
    """`value` with NaN as None, for JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _count(value: float) -> str:
    return "?" if math.isnan(value) else f"{value:,.0f}"


def _seconds(value: float) -> str:
    return "?" if math.isnan(value) else f"{value:.1f} s"


def _ms(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value * 1000:.1f} ms"
