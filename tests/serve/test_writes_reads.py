"""`metalog serve` writes and reads against a real broker and leader."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from server.catalogs import ServerSettings
from tests.fixtures.kafka import TopicSet
from tests.serve.conftest import Served, create_body, settings_for

pytestmark = pytest.mark.integration

BASE = "/v1/catalogs/greptime"
PROBLEM = "application/problem+json"


def test_a_write_is_committed_and_read_back_at_its_resource_version(served: Served) -> None:
    """POST CreateTable commits through the leader; a read at its resource_version sees it."""
    made = served.post(f"{BASE}/commands/CreateTable", json=create_body("cpu"))
    assert made.status_code == 200, made.text
    rv = made.json()["resource_version"]
    assert made.headers["etag"] == f'"{rv}"'
    tables = served.get(f"{BASE}/tables", params={"resourceVersion": rv})
    assert tables.status_code == 200
    assert [t["table_name"] for t in tables.json()["items"]] == ["cpu"]
    assert tables.json()["resource_version"] >= rv
    one = served.get(f"{BASE}/tables/public/cpu", params={"resourceVersion": rv}).json()
    assert one["table"]["version"] == 1 and one["route"]["table_id"] == one["table"]["table_id"]
    names = served.get(f"{BASE}/names", params={"resourceVersion": rv}).json()["items"]
    assert names == [{"schema_name": "public", "table_name": "cpu",
                      "table_id": one["table"]["table_id"]}]  # fmt: skip
    state = served.get(BASE, params={"resourceVersion": rv}).json()
    assert state["resource_version"] >= rv and state["publish_mode"] == "auto"
    assert state["stable_epoch"] >= 1


def test_labels_show_in_label_rules_and_region_label(served: Served) -> None:
    """SetAttributes' rule is listed by /label-rules and as a REGION_LABEL row."""
    served.post(f"{BASE}/commands/CreateTable", json=create_body("t1"))
    done = served.post(f"{BASE}/commands/SetAttributes",
                       json={"schema_name": "public", "table_name": "t1",
                             "attributes": "merge_option=allow"})  # fmt: skip
    assert done.status_code == 200, done.text
    rv = done.json()["resource_version"]
    rules = served.get(f"{BASE}/label-rules", params={"resourceVersion": rv}).json()["items"]
    assert [r["rule_id"] for r in rules] == ["schema/public/t1"]
    rows = served.get(f"{BASE}/region-label", params={"resourceVersion": rv}).json()["items"]
    assert rows[0]["region_label"] == '"merge_option=allow"'
    routes = served.get(f"{BASE}/routes", params={"resourceVersion": rv}).json()["items"]
    assert len(routes) == 1
    keys = served.get(f"{BASE}/keys", params={"resourceVersion": rv,
                                              "keyPrefix": "__label_rule/"}).json()["items"]
    assert [k["key"] for k in keys] == ["__label_rule/schema/public/t1"]


def test_if_match_races_two_writes_one_409_with_the_current_version(served: Served) -> None:
    """Two writes conditioned on the same resource_version: one commits, one is a 409 problem."""
    rv = served.post(f"{BASE}/commands/CreateTable", json=create_body("a")).json()[
        "resource_version"]
    body = {"schema_name": "public", "table_name": "a", "set_options": {"ttl": "7d"}}
    first = served.post(f"{BASE}/commands/AlterTable", json=body, headers={"If-Match": f'"{rv}"'})
    second = served.post(f"{BASE}/commands/AlterTable", json=body, headers={"If-Match": f'"{rv}"'})
    assert first.status_code == 200, first.text
    assert second.status_code == 409
    assert second.headers["content-type"] == PROBLEM
    problem = second.json()
    assert problem["error"] == "VersionConflict" and problem["status"] == 409
    assert problem["type"] == "urn:metalog:error:VersionConflict"
    assert problem["current_resource_version"] == first.json()["resource_version"]


def test_the_body_expected_version_conflicts_like_if_match(served: Served) -> None:
    """A stale per-table `expected_version` in the body is a 409 with `current_version`."""
    served.post(f"{BASE}/commands/CreateTable", json=create_body("b"))
    stale = served.post(f"{BASE}/commands/DropTable",
                        json={"schema_name": "public", "table_name": "b", "expected_version": 5})
    assert stale.status_code == 409
    assert stale.json()["current_version"] == 1


def test_if_match_that_is_not_a_version_is_a_400(served: Served) -> None:
    """`If-Match: *` or text is refused before anything is sent."""
    answer = served.post(f"{BASE}/commands/Reload", json={}, headers={"If-Match": "*"})
    assert answer.status_code == 400 and answer.json()["error"] == "PreconditionInvalid"


def test_an_idempotency_key_makes_a_retry_safe(served: Served) -> None:
    """The same `Idempotency-Key` twice: one event, the first outcome both times."""
    key = {"Idempotency-Key": "create-retry-1"}
    first = served.post(f"{BASE}/commands/CreateTable", json=create_body("once"), headers=key)
    again = served.post(f"{BASE}/commands/CreateTable", json=create_body("once"), headers=key)
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert first.json()["command_id"] == "create-retry-1"
    after = served.post(f"{BASE}/commands/Reload", json={}).json()["resource_version"]
    assert after == first.json()["resource_version"] + 1


@pytest.mark.parametrize(
    ("kind", "body", "status", "error"),
    [
        ("DropTable", {"schema_name": "public", "table_name": "nope"}, 404, "TableNotFound"),
        ("CreateTable", create_body("x/y"), 422, "InvalidName"),
        ("AdvanceStableEpoch", {"epoch": -1}, 422, "OutOfRange"),
    ],
)
def test_each_rejection_is_one_status_and_a_problem(
    served: Served, kind: str, body: dict[str, object], status: int, error: str
) -> None:
    """A typed rejection maps to its status and names itself in the problem body."""
    answer = served.post(f"{BASE}/commands/{kind}", json=body)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM
    assert answer.json()["error"] == error and answer.json()["detail"]


def test_a_command_is_answered_alike_whatever_path_its_request_takes(served: Served) -> None:
    """A JSON body is validated from its bytes (`CommandRoute`); a body with a charset in
    its content type goes through FastAPI's handler: the same answer either way; a body
    that is not JSON is refused as FastAPI refuses it."""
    for table, content_type in (("plain", "application/json"),
                                ("charset", "application/json; charset=utf-8")):
        made = served.post(f"{BASE}/commands/CreateTable", data=json.dumps(create_body(table)),
                           headers={"Content-Type": content_type})  # fmt: skip
        assert made.status_code == 200, made.text
        assert made.headers["content-type"] == "application/json"
        assert made.headers["etag"] == f'"{made.json()["resource_version"]}"'
        assert [t["version"] for t in made.json()["tables"]] == [1]
        listed = served.get(f"{BASE}/tables/public/{table}",
                            params={"resourceVersion": made.json()["resource_version"]})
        assert listed.json()["table"]["table_id"] == made.json()["tables"][0]["table_id"]
    text = served.post(f"{BASE}/commands/CreateTable", data=json.dumps(create_body("text")),
                       headers={"Content-Type": "text/plain"})  # fmt: skip
    assert text.status_code == 422 and text.headers["content-type"] == PROBLEM


def test_a_taken_name_is_a_409(served: Served) -> None:
    """CreateTable of a live name: 409 NameTaken."""
    served.post(f"{BASE}/commands/CreateTable", json=create_body("dup"))
    answer = served.post(f"{BASE}/commands/CreateTable", json=create_body("dup"))
    assert answer.status_code == 409 and answer.json()["error"] == "NameTaken"


def test_sql_runs_select_and_show_and_refuses_writes(served: Served) -> None:
    """POST …/sql: SELECT rows through the engine; a DDL statement is a 400 NotAQuery."""
    rv = served.post(f"{BASE}/commands/CreateTable", json=create_body("s1")).json()[
        "resource_version"]
    read = served.post(f"{BASE}/sql", params={"resourceVersion": rv},
                       json={"sql": "SELECT table_name FROM table_info"})  # fmt: skip
    assert read.status_code == 200, read.text
    assert read.json()["results"][0]["rows"] == [["s1"]]
    show = served.post(f"{BASE}/sql", json={"sql": "SHOW CREATE TABLE s1"})
    assert show.status_code == 200 and "CREATE TABLE" in str(show.json()["results"][0]["rows"])
    write = served.post(f"{BASE}/sql", json={"sql": "DROP TABLE s1"})
    assert write.status_code == 400 and write.json()["error"] == "NotAQuery"
    broken = served.post(f"{BASE}/sql", json={"sql": "SELEC nothing"})
    assert broken.status_code == 400 and broken.headers["content-type"] == PROBLEM


def test_a_wait_past_the_log_is_a_504_problem(
    wire: TopicSet, serve: Callable[[ServerSettings], Served]
) -> None:
    """`?resourceVersion=` the follower never reaches: 504 WaitTimeout after the bounded wait."""
    short = serve(settings_for(wire, wait_timeout=1.0))
    answer = short.get(f"{BASE}/tables", params={"resourceVersion": "999999999"})
    assert answer.status_code == 504, answer.text
    assert answer.json()["error"] == "WaitTimeout" and answer.json()["wanted"] == 999999999


def test_no_outcome_in_time_is_a_504_with_the_command_id(
    wire: TopicSet, serve: Callable[[ServerSettings], Served]
) -> None:
    """Without a leader a write gets no reply: 504 CommandOutcomeUnknown naming the id to retry."""
    lonely = serve(settings_for(wire, command_timeout=1.0))
    answer = lonely.post(f"{BASE}/commands/Reload", json={}, headers={"Idempotency-Key": "k-504"})
    assert answer.status_code == 504, answer.text
    assert answer.json()["error"] == "CommandOutcomeUnknown"
    assert answer.json()["command_id"] == "k-504"
    assert lonely.get("/readyz").status_code == 503


def test_health_and_readiness(served: Served) -> None:
    """/healthz answers; /readyz is ready once the follower is caught up and a leader is there."""
    assert served.get("/healthz").json() == {"status": "ok"}
    served.get(f"{BASE}/tables")  # starts the follower
    ready = served.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["checks"]["follower:greptime"] == "caught up"
