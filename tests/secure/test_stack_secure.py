"""The secure stack's files, arguments and ACLs, without a broker."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from confluent_kafka.admin import AclOperation, ResourceType

from events.topics import Topics
from metalog.errors import StackError
from metalog.stack import secure as stack_secure
from metalog.stack.config import StackConfig

ROLES = {role: role for role in ("admin", "leader", "client", "follower", "projector")}


def test_the_format_arguments_go_through_an_owner_only_file(tmp_path: Path) -> None:
    config = StackConfig(state_dir=tmp_path, secure=True)
    cmd = ["/usr/bin/java", "-cp", "a b.jar", "Main", "--add-scram", 'SCRAM=[name=x,password="p"]']
    with stack_secure.argument_file(config, cmd) as short:
        path = Path(short[1][1:])
        assert short == ["/usr/bin/java", f"@{path}"]
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.read_text().splitlines() == [
            '"-cp"', '"a b.jar"', '"Main"', '"--add-scram"', '"SCRAM=[name=x,password=\\"p\\"]"']
    assert not path.exists()


def test_prepare_writes_an_owner_only_credentials_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("METALOG_PRINCIPALS", "leader=svc-leader")
    config = StackConfig(state_dir=tmp_path, secure=True)
    stack_secure.prepare(config)
    path = stack_secure.credentials_file(config)
    first = path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o700
    assert json.loads(first)["principals"]["leader"]["username"] == "svc-leader"
    stack_secure.prepare(config)
    assert path.read_text() == first


def test_a_state_directory_keeps_its_mode(tmp_path: Path) -> None:
    (tmp_path / "kraft").mkdir()
    (tmp_path / "kraft" / "meta.properties").write_text("")
    with pytest.raises(StackError, match="formatted without --secure"):
        stack_secure.check_mode(StackConfig(state_dir=tmp_path, secure=True))
    (tmp_path / "credentials.json").write_text("{}")
    with pytest.raises(StackError, match="holds a secure stack: start it with `metalog up "
                                         "--secure`"):  # fmt: skip
        stack_secure.check_mode(StackConfig(state_dir=tmp_path))


def test_only_the_leader_may_write_the_log_or_hold_the_leaders_ids() -> None:
    topics = Topics("metalog")
    acls = stack_secure.acl_bindings(topics, ROLES)
    writers = {a.principal for a in acls if a.name == topics.events
               and a.operation == AclOperation.WRITE}  # fmt: skip
    ids = {a.principal for a in acls if a.restype == ResourceType.TRANSACTIONAL_ID}
    readers = {a.principal for a in acls if a.name == topics.events
               and a.operation == AclOperation.READ}  # fmt: skip
    assert writers == ids == {"User:leader"}
    assert readers == {"User:leader", "User:follower", "User:projector"}
    assert not [a for a in acls if a.restype == ResourceType.BROKER]  # no cluster rights
