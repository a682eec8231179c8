"""Shared fixtures: a real Kafka cluster (``kafka``, ``topics``) and Spark (``spark``).

Tiers: unmarked tests are pure; ``integration`` tests use ``kafka``; ``spark``
tests use ``spark``. Set ``METALOG_BOOTSTRAP`` to run against an existing cluster.
"""

import gc
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = [
    "tests.fixtures.kafka",
    "tests.fixtures.leader",
    "tests.fixtures.secure",
    "tests.fixtures.spark",
]

# Hypothesis' per-example deadline and its "too slow" health check are timing
# thresholds: on a shared two-core machine they fail tests for load, not for
# behaviour. Properties bound their work with `max_examples` instead.
settings.register_profile("metalog", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("metalog")


@pytest.fixture(autouse=True)
def _unfrozen_heap() -> Iterator[None]:
    """Every test starts with nothing frozen: a CLI command run in-process freezes the
    heap (`metalog.cli.follow`, as its own process would), and the collector's tests
    read what is frozen."""
    yield
    if gc.get_freeze_count():
        gc.unfreeze()
