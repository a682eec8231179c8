"""Schema evolution: v1 records stay readable; unknown fingerprints are typed errors."""

import json
from importlib import resources

import event_golden as golden
import event_samples as samples
import pytest
from fastavro.schema import parse_schema

from events.codec import decode_event, decode_event_dict
from events.errors import UnknownSchema
from events.schema_store import KINDS, default_store, load_directory

V1_EVENT = {"TableCreated", "AttributesSet", "Reloaded"}
V2_EVENT = {"TableCreated", "Reloaded", "LeaderResigned"}


def test_store_holds_every_shipped_version() -> None:
    store = default_store()
    assert [v.version for v in store.versions("event")] == [1, 2, 3]
    assert [v.version for v in store.versions("command")] == [1]
    assert [v.version for v in store.versions("reply")] == [1]
    for kind in KINDS:
        assert store.current(kind) is store.versions(kind)[-1]


def test_v2_only_adds_a_defaulted_field_and_a_union_branch() -> None:
    store = default_store()
    v1, v2 = (json.loads(v.schema_json) for v in store.versions("event")[:2])
    added = [f for f in v2["fields"] if f["name"] not in {g["name"] for g in v1["fields"]}]
    assert added == [
        {"name": "trace_id", "type": ["null", "string"], "default": None, "doc": added[0]["doc"]}
    ]
    intents = {f["name"]: f["type"] for f in v2["fields"]}["intent"]
    v1_intents = {f["name"]: f["type"] for f in v1["fields"]}["intent"]
    assert [b["name"] for b in intents][: len(v1_intents)] == [b["name"] for b in v1_intents]
    assert [b["name"] for b in intents][len(v1_intents) :] == ["LeaderResigned"]


def test_v3_only_adds_the_checkpoint_branch() -> None:
    v2, v3 = (json.loads(v.schema_json) for v in default_store().versions("event")[1:])
    assert [f["name"] for f in v3["fields"]] == [f["name"] for f in v2["fields"]]
    intents = {f["name"]: f["type"] for f in v3["fields"]}["intent"]
    v2_intents = {f["name"]: f["type"] for f in v2["fields"]}["intent"]
    assert intents[: len(v2_intents)] == v2_intents
    assert [b["name"] for b in intents][len(v2_intents) :] == ["CheckpointSigned"]


@pytest.mark.parametrize("name", sorted(V2_EVENT))
def test_v2_golden_bytes_decode_with_the_current_reader(name: str) -> None:
    data = bytes.fromhex(golden.EVENTS_V2[name])
    assert data[2:10] == default_store().versions("event")[1].fingerprint
    assert decode_event(data) == samples.EVENTS[name]
    # Appending a union branch moved no index: only the header differs from v3's bytes.
    assert data[10:] == bytes.fromhex(golden.EVENTS[name])[10:]


@pytest.mark.parametrize("name", sorted(V1_EVENT))
def test_v1_golden_bytes_decode_with_the_current_reader(name: str) -> None:
    data = bytes.fromhex(golden.EVENTS_V1[name])
    assert data[2:10] == default_store().versions("event")[0].fingerprint
    assert data[2:10] != default_store().current("event").fingerprint
    event = decode_event(data)
    assert event == samples.EVENTS[name]
    assert event.trace_id is None
    assert decode_event_dict(data)["trace_id"] is None


def test_unknown_fingerprint_is_unknown_schema() -> None:
    data = bytearray(bytes.fromhex(golden.EVENTS["Reloaded"]))
    data[2:10] = b"\x00" * 8
    with pytest.raises(UnknownSchema) as caught:
        decode_event(bytes(data))
    assert caught.value.fingerprint == b"\x00" * 8
    assert "0000000000000000" in str(caught.value)


def test_shipped_versions_are_immutable_by_fingerprint() -> None:
    # A shipped version is never edited: these are the fingerprints that went out.
    shipped = {
        (kind, v.version): v.fingerprint_hex
        for kind in KINDS
        for v in default_store().versions(kind)
    }
    assert shipped == {
        ("event", 1): "7a07f785df657f02",
        ("event", 2): "409f3d20d2472cfe",
        ("event", 3): "109e7f01853d3493",
        ("command", 1): "a4877ad267d181f2",
        ("reply", 1): "e47aed98d0222abf",
    }


def test_every_schema_has_docs_everywhere() -> None:
    def walk(node: object) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            if node.get("type") in ("record", "enum"):
                assert node.get("doc"), node.get("name")
            for field in node.get("fields", ()):
                assert field.get("doc"), field["name"]
                walk(field["type"])
            walk(node.get("items"))
            walk(node.get("values"))

    root = load_directory(resources.files("events") / "schemas")
    for kind in KINDS:
        for version in root.versions(kind):
            schema = json.loads(version.schema_json)
            parse_schema(schema)
            walk(schema)
