"""The command line against the secure stack: `--credentials` picks each command's principal."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from events.topics import partition_for
from events.values import Column
from metalog.stack import secure as stack_secure
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from producers.leader.owner import LeaderOptions
from projector.snapshot.store import read_partition_mark
from tests.fixtures.secure import SecureKafka
from tests.stack.test_cli_errors import metalog

pytestmark = pytest.mark.integration


def _where(kafka: SecureKafka, credentials: Path, catalog: str) -> list[str]:
    return ["--bootstrap", kafka.bootstrap, "--prefix", kafka.topics.prefix,
            "--credentials", str(credentials), "--catalog", catalog]  # fmt: skip


def _catalog(kafka: SecureKafka, rename_to: str | None = None) -> tuple[str, int]:
    """A new catalog with `public.orders` (renamed to `rename_to`), written through a leader
    signed in as `leader` by a client signed in as `client`; its name and the creation's rv."""
    catalog = f"c{uuid.uuid4().hex[:8]}"
    with (Leader(kafka.bootstrap, topics=kafka.topics, security=kafka.security("leader")) as leader,
          MetadataClient(kafka.bootstrap, catalog=catalog, actor="alice", timeout=30.0,
                         topics=kafka.topics,
                         security=kafka.security("client")) as client):  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        created = client.create_table("public", "orders", (Column(name="id", data_type="int64"),))
        if rename_to is not None:
            client.rename_table("public", "orders", rename_to)
    return catalog, created.resource_version


def test_show_reads_a_catalog_as_the_follower_principal(secure_kafka: SecureKafka) -> None:
    catalog, _ = _catalog(secure_kafka)
    credentials = stack_secure.credentials_file(secure_kafka.config)
    run = metalog("show", "--json", "--timeout", "60",
                  *_where(secure_kafka, credentials, catalog))
    assert run.code == 0, run.err
    shown = json.loads(run.out)
    assert [(t["schema"], t["table"]) for t in shown["tables"]] == [("public", "orders")]


def test_replay_history_and_verify_read_the_log_as_the_follower_principal(
    secure_kafka: SecureKafka,
) -> None:
    catalog, created = _catalog(secure_kafka, rename_to="sales")
    where = _where(secure_kafka, stack_secure.credentials_file(secure_kafka.config), catalog)

    replay = metalog("replay", "--json", "--as-of", str(created), *where)
    assert replay.code == 0, replay.err
    assert [t["table"] for t in json.loads(replay.out)["tables"]] == ["orders"]
    history = metalog("audit", "history", "public.sales", "--json", *where)
    assert history.code == 0, history.err
    assert len(json.loads(history.out)["changes"]) == 2
    verify = metalog("audit", "verify", "--json", *where)
    assert verify.code == 0, verify.err
    verified = {c["catalog"]: c for c in json.loads(verify.out)["catalogs"]}
    assert verified[catalog]["resource_version"] == 3  # LeaderElected, create, rename


def test_a_secure_leader_takes_restart_points_and_writes_snapshots(
    secure_kafka: SecureKafka, tmp_path: Path
) -> None:
    options = LeaderOptions(snapshot_dir=tmp_path, snapshot_every=3)
    catalog = f"snap-{uuid.uuid4().hex[:8]}"  # the secure broker's data outlives a run
    with (Leader(secure_kafka.bootstrap, topics=secure_kafka.topics, options=options,
                 security=secure_kafka.security("leader")) as leader,
          MetadataClient(secure_kafka.bootstrap, catalog=catalog, actor="alice", timeout=30.0,
                         topics=secure_kafka.topics,
                         security=secure_kafka.security("client")) as client):  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        # Reading the partition's end signs in as the leader too, or no restart point is
        # taken. The first one may be written while this catalog's first events commit
        # (the secure broker's partition keeps every earlier run's catalogs, all written
        # then): creating on, a later restart point names it.
        partition = partition_for(catalog, 3)
        for n in range(60):
            client.create_table("public", f"t{n}", (Column(name="id", data_type="int64"),))
            mark = read_partition_mark(tmp_path, secure_kafka.topics.events, partition)
            if n >= 7 and mark is not None and catalog in mark.catalogs:
                break
    mark = read_partition_mark(tmp_path, secure_kafka.topics.events, partition)
    assert mark is not None and catalog in mark.catalogs
    assert mark.position.next_offset > 3


def test_show_with_a_wrong_password_prints_one_line_naming_the_principal(
    secure_kafka: SecureKafka, tmp_path: Path
) -> None:
    data = json.loads(stack_secure.credentials_file(secure_kafka.config).read_text())
    data["principals"]["follower"]["password"] = "not-the-password"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(data))
    os.chmod(wrong, 0o600)
    run = metalog("show", "--timeout", "20", *_where(secure_kafka, wrong, "greptime"))
    assert run.code == 77
    assert run.one_line.startswith("metalog: error: AuthenticationFailed: principal follower may "
                                   "not sign in")  # fmt: skip
    assert "not-the-password" not in run.err
