"""The audit's tests use the leader tests' fixtures (`wire`, `leader`, `client`)."""

from tests.leader.conftest import client, wire

__all__ = ["client", "wire"]
