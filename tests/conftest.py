"""Shared fixtures: a real Kafka cluster (``kafka``, ``topics``) and Spark (``spark``).

Tiers: unmarked tests are pure; ``integration`` tests use ``kafka``; ``spark``
tests use ``spark``. Set ``METALOG_BOOTSTRAP`` to run against an existing cluster.
"""

pytest_plugins = ["tests.fixtures.kafka", "tests.fixtures.spark"]
