"""The chaos tests need the Go toolchain: without it they fail with the reason, never skip."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chaos import gobuild
from chaos.errors import GoToolchainMissing
from producers.client.client import MetadataClient
from tests.fixtures.kafka import TopicSet


@pytest.fixture(scope="session")
def go_toolchain() -> str:
    """The `go` executable; a missing toolchain fails the test with how to install it."""
    try:
        return gobuild.go()
    except GoToolchainMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def client(wire: TopicSet) -> Iterator[MetadataClient]:
    """A client of catalog `greptime` on the test's topics."""
    with MetadataClient(wire.bootstrap, catalog="greptime", actor="alice",
                        topics=wire.topics) as made:  # fmt: skip
        yield made
