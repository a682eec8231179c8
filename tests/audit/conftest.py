"""The audit's broker tests use the leader tests' `wire` fixture (one test's topics)."""

from tests.leader.conftest import wire

__all__ = ["wire"]
