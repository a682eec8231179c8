"""Scraping a metrics endpoint in tests: fetch, parse with Prometheus' own parser."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


def get(url: str) -> tuple[int, str]:
    """GET `url`: (status, body), 4xx/5xx included."""
    try:
        with urllib.request.urlopen(url, timeout=10.0) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def scrape(url: str) -> dict[str, list[Sample]]:
    """`url`/metrics parsed: metric family name → its samples."""
    status, text = get(f"{url}/metrics")
    assert status == 200, text
    return {family.name: list(family.samples) for family in text_string_to_metric_families(text)}


def value(families: dict[str, list[Sample]], sample: str, **labels: str) -> float:
    """The value of the one sample named `sample` with these labels (0 when absent)."""
    family = sample.removesuffix("_total").removesuffix("_count").removesuffix("_sum")
    family = family.removesuffix("_bucket")
    found = [
        s.value
        for s in families.get(family, [])
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    return sum(found)


def free_port() -> int:
    """A loopback port free now (the OS picks it), released for a process to take."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def status_of(url: str) -> int:
    """The HTTP status of a GET of `url`; 0 while nothing answers there."""
    try:
        return get(url)[0]
    except OSError:  # not listening (yet)
        return 0
