"""`/metrics` of `metalog serve`: requests by route template and status, watches, followers."""

from __future__ import annotations

import threading

import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.serve.conftest import Served, create_body

BASE = "/v1/catalogs/greptime"


def _samples(served: Served) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    page = served.get("/metrics")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(page.text)
            for s in family.samples}  # fmt: skip


def test_metrics_count_requests_by_route_template_and_status(served: Served) -> None:
    """Two creates (one 409) and two reads of different tables are counted under their
    route templates, never their paths; the follower's resource_version is the last write's."""
    first = served.post(f"{BASE}/commands/CreateTable", json=create_body("m1"))
    again = served.post(f"{BASE}/commands/CreateTable", json=create_body("m1"))
    assert (first.status_code, again.status_code) == (200, 409)
    rv = first.json()["resource_version"]
    for table in ("m1", "nope"):
        served.get(f"{BASE}/tables/public/{table}", params={"resourceVersion": rv})
    samples = _samples(served)
    create = "/v1/catalogs/{catalog}/commands/CreateTable"
    table = "/v1/catalogs/{catalog}/tables/{schema_name}/{table_name}"
    assert samples[("metalog_server_requests_total",
                    (("code", "200"), ("method", "POST"), ("route", create)))] == 1
    assert samples[("metalog_server_requests_total",
                    (("code", "409"), ("method", "POST"), ("route", create)))] == 1
    assert samples[("metalog_server_requests_total",
                    (("code", "200"), ("method", "GET"), ("route", table)))] == 1
    assert samples[("metalog_server_requests_total",
                    (("code", "404"), ("method", "GET"), ("route", table)))] == 1
    assert samples[("metalog_server_request_duration_seconds_count",
                    (("method", "POST"), ("route", create)))] == 2
    assert not any("m1" in str(labels) for _, labels in samples)
    assert samples[("metalog_follower_resource_version", (("catalog", "greptime"),))] >= rv
    assert samples[("metalog_follower_up", ())] == 1


def test_an_open_watch_is_counted_until_it_ends(served: Served) -> None:
    """`metalog_server_watches` is 1 while a watch streams and 0 after the client left."""
    served.post(f"{BASE}/commands/CreateTable", json=create_body("w1"))
    assert _samples(served).get(("metalog_server_watches", ()), 0) == 0
    with requests.get(served.url + f"{BASE}/watch", params={"resourceVersion": 0},
                      stream=True, timeout=30) as stream:  # fmt: skip
        assert stream.status_code == 200, stream.text
        lines = stream.iter_lines()  # kept: a dropped iterator closes the connection
        assert next(lines)  # the stream is open: its first line arrived
        assert _samples(served)[("metalog_server_watches", ())] == 1
    for _ in range(100):  # the server notices the closed socket on its next read
        if _samples(served)[("metalog_server_watches", ())] == 0:
            break
        threading.Event().wait(0.1)
    assert _samples(served)[("metalog_server_watches", ())] == 0
