"""Watch streams and bad input: each a clear 4xx or a closed stream; the server serves on."""

from __future__ import annotations

import itertools
import json
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from server.catalogs import ServerSettings
from tests.fixtures.kafka import TopicSet
from tests.serve.conftest import Served, create_body, settings_for

pytestmark = pytest.mark.integration

BASE = "/v1/catalogs/greptime"
PROBLEM = "application/problem+json"


def _lines(answer: requests.Response) -> Iterator[dict[str, Any]]:
    for raw in answer.iter_lines():
        if raw:
            yield json.loads(raw)


def _cramped_watch(served: Served, timeout: float) -> tuple[socket.socket, bytes]:
    """An HTTP/1.0 watch of everything on a socket that holds 4 KiB, read past its first
    BOOKMARK: the socket (`timeout` on each read) and what it read."""
    host, port = served.url.removeprefix("http://").split(":")
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # then ~3 MB fill both sockets
    reader.settimeout(timeout)
    reader.connect((host, int(port)))
    reader.sendall(f"GET {BASE}/watch HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
    received = b""
    while b"BOOKMARK" not in received:
        received += reader.recv(4096)
    return reader, received


def _alter_note(served: Served, table: str, i: int) -> None:
    """Set `table`'s `note` option to 300 kB that start with `i` in two digits (20 such
    changes are more than a cramped watch's two sockets hold)."""
    altered = served.post(f"{BASE}/commands/AlterTable",
                          json={"schema_name": "public", "table_name": table,
                                "set_options": {"note": f"{i:02}" + "x" * 300_000}})  # fmt: skip
    assert altered.status_code == 200


def _read_to_close(reader: socket.socket, seconds: float) -> tuple[bytes, bool]:
    """What `reader` reads until the server closes it or `seconds` pass (bookmarks would keep
    each read alive), and whether it was closed."""
    received, deadline = b"", time.monotonic() + seconds
    while time.monotonic() < deadline:
        chunk = reader.recv(1 << 16)
        if not chunk:
            return received, True
        received += chunk
    return received, False


def test_a_watch_replays_from_a_resource_version_then_goes_live_in_order(served: Served) -> None:
    """ADDED, MODIFIED, DELETED of a table's info key, in log order, from resourceVersion=0."""
    with requests.get(served.url + f"{BASE}/watch", stream=True, timeout=60,
                      params={"resourceVersion": "0", "keyPrefix": "__table_info/"}) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "application/x-ndjson"
        lines = _lines(answer)
        assert next(lines)["type"] == "BOOKMARK"
        made = served.post(f"{BASE}/commands/CreateTable", json=create_body("w")).json()
        served.post(f"{BASE}/commands/AlterTable",
                    json={"schema_name": "public", "table_name": "w",
                          "set_options": {"ttl": "1d"}})  # fmt: skip
        dropped = served.post(f"{BASE}/commands/DropTable",
                              json={"schema_name": "public", "table_name": "w"}).json()
        seen: list[tuple[str, int]] = []
        for item in lines:
            if item["type"] != "BOOKMARK":
                seen.append((item["type"], item["resourceVersion"]))
                assert item["object"]["key"].startswith("__table_info/")
            if item["type"] == "DELETED":
                break
    assert [t for t, _ in seen] == ["ADDED", "MODIFIED", "DELETED"]
    assert seen[0][1] == made["resource_version"] and seen[-1][1] == dropped["resource_version"]
    assert [rv for _, rv in seen] == sorted(rv for _, rv in seen)


def test_a_watch_goes_live_on_an_asgi_server_that_does_not_hand_over_its_connection(
        leader: object, wire: TopicSet, serve: Callable[..., Served]) -> None:
    """On plain uvicorn h11 (no `metalog.connection` in the scope) the stream's own task
    writes the live changes, in order, as the broadcast does under `metalog serve`."""
    plain = serve(settings_for(wire), http="h11")
    with requests.get(plain.url + f"{BASE}/watch", stream=True, timeout=60,
                      params={"keyPrefix": "__table_info/"}) as answer:
        lines = _lines(answer)
        assert next(lines)["type"] == "BOOKMARK"
        made = [plain.post(f"{BASE}/commands/CreateTable", json=create_body(name)).json()
                for name in ("p1", "p2", "p3")]  # fmt: skip
        seen = [item for item in itertools.islice(
            (i for i in lines if i["type"] != "BOOKMARK"), 3)]  # fmt: skip
    assert [item["type"] for item in seen] == ["ADDED"] * 3
    assert [item["resourceVersion"] for item in seen] == [m["resource_version"] for m in made]


def test_a_watcher_that_reads_late_gets_every_change_once_the_catalog_is_quiet(
        leader: object, wire: TopicSet, serve: Callable[..., Served]) -> None:
    """Its socket full while the changes came (skipped, within the lag limit and the send
    timeout), it gets all of them, in order, when it reads after the last one."""
    late = serve(settings_for(wire))
    assert late.post(f"{BASE}/commands/CreateTable", json=create_body("late")).status_code == 200
    reader, received = _cramped_watch(late, 30)
    for i in range(20):
        _alter_note(late, "late", i)
    deadline = time.monotonic() + 30  # bookmarks keep the socket busy: a deadline of its own
    while b'"19' + b"x" * 100 not in received and time.monotonic() < deadline:
        received += reader.recv(1 << 16)
    reader.close()
    notes = [line[line.index(b'"note":"') + 8:][:2] for line in received.splitlines()
             if b'"MODIFIED"' in line]  # fmt: skip
    assert notes == [f"{i:02}".encode() for i in range(20)]


def test_a_watcher_whose_socket_takes_nothing_is_dropped_after_the_send_timeout(
        leader: object, wire: TopicSet, serve: Callable[..., Served]) -> None:
    """Not behind by more than the lag limit, but its socket full for longer than
    `send_timeout`: the server closes the stream and serves on."""
    stuck = serve(settings_for(wire, send_timeout=1.0))
    assert stuck.post(f"{BASE}/commands/CreateTable", json=create_body("stuck")).status_code == 200
    reader, received = _cramped_watch(stuck, 60)
    for i in range(22):  # more than the two sockets hold; then changes after the timeout
        if i >= 20:
            time.sleep(1.5)
        _alter_note(stuck, "stuck", i)
    rest, closed = _read_to_close(reader, 60)
    received += rest
    reader.close()
    assert closed, "the server kept the stuck stream open"
    assert received.count(b'"MODIFIED"') < 22
    assert stuck.get("/healthz").status_code == 200


def test_bookmarks_of_a_filtered_stream_reach_the_catalogs_resource_version(
        leader: object, wire: TopicSet, serve: Callable[[ServerSettings], Served]) -> None:
    """Changes outside the prefix are not sent, but the bookmarks move past them."""
    served = serve(settings_for(wire, bookmark_every=0.3))
    with requests.get(served.url + f"{BASE}/watch", stream=True, timeout=60,
                      params={"keyPrefix": "no-such-prefix/"}) as answer:
        lines = _lines(answer)
        first = next(lines)
        assert first["type"] == "BOOKMARK"
        made = served.post(f"{BASE}/commands/CreateTable", json=create_body("quiet")).json()
        assert made["resource_version"] > first["resourceVersion"]
        marks = [next(lines) for _ in range(20)]  # 6 s of bookmarks
    assert {item["type"] for item in marks} == {"BOOKMARK"}
    assert marks[-1]["resourceVersion"] >= made["resource_version"]


def test_a_watch_older_than_the_kept_history_is_410_with_the_oldest(
    leader: object, wire: TopicSet, serve: Callable[[ServerSettings], Served]
) -> None:
    """With a short history, resourceVersion=0 is Gone and the problem says what is kept."""
    small = serve(settings_for(wire, history_limit=2))
    for name in ("h1", "h2"):
        rv = small.post(f"{BASE}/commands/CreateTable", json=create_body(name)).json()[
            "resource_version"]
    small.get(f"{BASE}/tables", params={"resourceVersion": rv})
    answer = small.get(f"{BASE}/watch", params={"resourceVersion": "0"})
    assert answer.status_code == 410
    assert answer.json()["error"] == "ResourceVersionTooOld" and answer.json()["oldest"] > 0


@pytest.mark.parametrize("value", ["abc", "-1", "1e3", "99999999999999999999999"])
def test_a_garbage_resource_version_is_a_400_problem(served: Served, value: str) -> None:
    """A watch or a read with a resourceVersion that is not a number is refused."""
    for path in (f"{BASE}/watch", f"{BASE}/tables"):
        answer = served.get(path, params={"resourceVersion": value})
        assert answer.status_code == 400 and answer.headers["content-type"] == PROBLEM
        assert answer.json()["error"] == "InvalidResourceVersion"


def test_a_watcher_that_reads_nothing_is_ended_past_the_lag_limit_naming_the_reason(
    leader: object, wire: TopicSet, serve: Callable[[ServerSettings], Served]
) -> None:
    """Its socket full, more than the lag limit of changes wait for it: the last line is
    an ERROR naming SlowReader, after the changes its socket took, in order."""
    strict = serve(settings_for(wire, watch_lag_limit=2))
    assert strict.post(f"{BASE}/commands/CreateTable", json=create_body("slow")).status_code == 200
    reader, received = _cramped_watch(strict, 60)
    for i in range(20):
        _alter_note(strict, "slow", i)
    rest, _ = _read_to_close(reader, 60)
    received += rest
    reader.close()
    lines = [json.loads(raw) for raw in received.partition(b"\r\n\r\n")[2].splitlines()]
    assert lines[-1]["type"] == "ERROR"
    assert lines[-1]["object"]["error"] == "SlowReader" and lines[-1]["object"]["limit"] == 2
    notes = [item["object"]["value"]["options"]["note"][:2] for item in lines
             if item["type"] == "MODIFIED"]  # fmt: skip
    assert 0 < len(notes) < 20 and notes == [f"{i:02}" for i in range(len(notes))]
    assert strict.get("/healthz").status_code == 200


def test_disconnects_and_a_thousand_idle_watches_leave_the_server_serving(served: Served) -> None:
    """1,000 idle watches open, one client leaves mid-stream: writes, reads and watches go on."""
    host, port = served.url.removeprefix("http://").split(":")
    request = (f"GET {BASE}/watch HTTP/1.1\r\nHost: {host}\r\n\r\n").encode()
    idle: list[socket.socket] = []
    try:
        for _ in range(1000):
            conn = socket.create_connection((host, int(port)), timeout=60)
            conn.sendall(request)
            idle.append(conn)
        for conn in idle[:: 100]:
            assert b"200 OK" in conn.recv(4096)
        with requests.get(served.url + f"{BASE}/watch", stream=True, timeout=60) as leaving:
            assert next(_lines(leaving))["type"] == "BOOKMARK"
        made = served.post(f"{BASE}/commands/CreateTable", json=create_body("busy"))
        assert made.status_code == 200
        rv = made.json()["resource_version"]
        assert served.get(f"{BASE}/tables", params={"resourceVersion": rv}).status_code == 200
        with requests.get(served.url + f"{BASE}/watch", stream=True, timeout=60,
                          params={"resourceVersion": str(rv - 1)}) as fresh:  # fmt: skip
            kinds = [item["type"] for _, item in zip(range(2), _lines(fresh), strict=False)]
        assert kinds == ["BOOKMARK", "ADDED"]
    finally:
        for conn in idle:
            conn.close()


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (b'{"schema_name": "public", ', 400, "RequestInvalid"),
        (json.dumps({**create_body("t"), "columns": "many"}).encode(), 422, "RequestInvalid"),
        (json.dumps({**create_body("t"), "colour": "red"}).encode(), 422, "RequestInvalid"),
        (json.dumps({**create_body("t"), "command_id": "mine"}).encode(), 422, "RequestInvalid"),
        (b"x" * 10_000_000, 413, "BodyTooLarge"),
    ],
    ids=["malformed-json", "wrong-type", "unknown-field", "stamped-field", "10MB"],
)
def test_bad_bodies_are_problems_not_pydantic_text(
    served: Served, body: bytes, status: int, error: str
) -> None:
    """Malformed JSON, wrong types, unknown fields, a 10 MB body: one clear 4xx problem each."""
    answer = served.post(f"{BASE}/commands/CreateTable", data=body,
                         headers={"Content-Type": "application/json"})  # fmt: skip
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM
    assert answer.json()["error"] == error and answer.json()["detail"]
    assert served.get("/healthz").status_code == 200


def test_unknown_routes_and_catalogs_are_404_problems(served: Served) -> None:
    """No such route, no such command kind, a catalog not served: 404 problems."""
    for path in ("/v2/nothing", f"{BASE}/commands/Explode", "/v1/catalogs/other/tables"):
        answer = served.post(path, json={}) if "commands" in path else served.get(path)
        assert answer.status_code == 404, (path, answer.text)
        assert answer.headers["content-type"] == PROBLEM
