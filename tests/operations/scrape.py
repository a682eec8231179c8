"""Scraping a metrics endpoint in tests: fetch, parse with Prometheus' own parser."""

from __future__ import annotations

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
