"""The chaos tests need the Go toolchain: without it they fail with the reason, never skip."""

from __future__ import annotations

import pytest

from chaos import gobuild
from chaos.errors import GoToolchainMissing


@pytest.fixture(scope="session")
def go_toolchain() -> str:
    """The `go` executable; a missing toolchain fails the test with how to install it."""
    try:
        return gobuild.go()
    except GoToolchainMissing as exc:
        pytest.fail(str(exc), pytrace=False)
