"""`?watch=true` on a collection: Kubernetes' list-then-watch on the list's own route."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from server.catalogs import ServerSettings
from tests.fixtures.kafka import TopicSet
from tests.serve.conftest import Served, create_body, settings_for

pytestmark = pytest.mark.integration

BASE = "/v1/catalogs/greptime"


def _lines(answer: requests.Response) -> Iterator[dict[str, Any]]:
    for raw in answer.iter_lines():
        if raw:
            yield json.loads(raw)


def _changes(served: Served, collection: str, since: int, count: int) -> list[dict[str, Any]]:
    """The first `count` change lines of `collection?watch=true` after `since`."""
    seen: list[dict[str, Any]] = []
    with requests.get(served.url + f"{BASE}/{collection}", stream=True, timeout=60,
                      params={"watch": "true", "resourceVersion": str(since)}) as answer:
        assert answer.status_code == 200, answer.text
        assert answer.headers["content-type"] == "application/x-ndjson"
        for item in _lines(answer):
            if item["type"] != "BOOKMARK":
                seen.append(item)
                if len(seen) == count:
                    break
    return seen


def test_each_collection_watch_streams_only_its_own_keys_in_order(served: Served) -> None:
    """tables, names and routes each stream their keys' changes of a create and a rename."""
    start = served.get(BASE).json()["resource_version"]
    made = served.post(f"{BASE}/commands/CreateTable", json=create_body("cw")).json()
    renamed = served.post(f"{BASE}/commands/RenameTable",
                          json={"schema_name": "public", "table_name": "cw",
                                "new_table_name": "cw2"}).json()  # fmt: skip
    end = renamed["resource_version"]

    tables = _changes(served, "tables", start, 2)
    assert [(t["type"], t["resourceVersion"]) for t in tables] == [
        ("ADDED", made["resource_version"]), ("MODIFIED", end)]
    assert all(t["object"]["key"].startswith("__table_info/") for t in tables)
    assert tables[-1]["object"]["value"]["table_name"] == "cw2"

    names = _changes(served, "names", start, 3)
    assert [n["resourceVersion"] for n in names] == [made["resource_version"], end, end]
    assert [(n["type"], n["object"]["key"]) for n in names] == [
        ("ADDED", "__table_name/greptime/public/cw"),
        ("DELETED", "__table_name/greptime/public/cw"),
        ("ADDED", "__table_name/greptime/public/cw2"),
    ]
    routes = _changes(served, "routes", start, 1)
    assert [r["type"] for r in routes] == ["ADDED"]
    assert routes[0]["object"]["key"].startswith("__table_route/")


def test_a_collection_watch_from_now_goes_live_and_without_watch_it_lists(served: Served) -> None:
    """No resourceVersion: a BOOKMARK, then the next change; with watch=false it lists."""
    with requests.get(served.url + f"{BASE}/label-rules", stream=True, timeout=60,
                      params={"watch": "true"}) as answer:
        lines = _lines(answer)
        first = next(lines)
        assert first["type"] == "BOOKMARK"
        served.post(f"{BASE}/commands/CreateTable", json=create_body("lw"))
        labelled = served.post(f"{BASE}/commands/SetAttributes",
                               json={"schema_name": "public", "table_name": "lw",
                                     "attributes": "merge_option=deny"}).json()  # fmt: skip
        change = next(item for item in lines if item["type"] != "BOOKMARK")
    assert change["type"] == "ADDED"
    assert change["object"]["key"] == "__label_rule/schema/public/lw"
    assert change["resourceVersion"] == labelled["resource_version"]
    listed = served.get(f"{BASE}/label-rules", params={"watch": "false"})
    assert listed.headers["content-type"] == "application/json"
    assert [r["rule_id"] for r in listed.json()["items"]] == ["schema/public/lw"]


def test_a_collection_watch_older_than_the_kept_history_is_410(
    leader: object, wire: TopicSet, serve: Callable[[ServerSettings], Served]
) -> None:
    """The watch's own answers: 410 Gone with `oldest` (a list at 0 would be a 200)."""
    small = serve(settings_for(wire, history_limit=2))
    for name in ("g1", "g2"):
        rv = small.post(f"{BASE}/commands/CreateTable", json=create_body(name)).json()[
            "resource_version"]
    assert small.get(f"{BASE}/tables", params={"resourceVersion": "0"}).status_code == 200
    small.get(f"{BASE}/tables", params={"resourceVersion": rv})
    answer = small.get(f"{BASE}/tables", params={"watch": "true", "resourceVersion": "0"})
    assert answer.status_code == 410
    assert answer.json()["error"] == "ResourceVersionTooOld" and answer.json()["oldest"] > 0
