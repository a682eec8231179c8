"""Spark's Kafka source reads the log as the projector principal (`KafkaSecurity.spark_options`)."""

from __future__ import annotations

import uuid

import pytest
from pyspark.sql import SparkSession

from events.values import Column
from producers.client.client import MetadataClient
from producers.leader.leader import Leader
from tests.fixtures.secure import SecureKafka

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_the_spark_kafka_source_reads_events_as_the_projector(
    spark: SparkSession, secure_kafka: SecureKafka
) -> None:
    catalog = f"c{uuid.uuid4().hex[:8]}"
    with (Leader(secure_kafka.bootstrap, topics=secure_kafka.topics,
                 security=secure_kafka.security("leader")) as leader,
          MetadataClient(secure_kafka.bootstrap, catalog=catalog, actor="alice", timeout=30.0,
                         topics=secure_kafka.topics,
                         security=secure_kafka.security("client")) as client):  # fmt: skip
        assert leader.wait_until_serving(1, timeout=60.0)
        committed = client.create_table("public", "orders", (Column(name="id",
                                                                    data_type="int64"),))
    events = (spark.read.format("kafka")
              .option("kafka.bootstrap.servers", secure_kafka.bootstrap)
              .option("subscribe", secure_kafka.topics.events)
              .option("kafka.isolation.level", "read_committed")
              .options(**secure_kafka.security("projector").spark_options())
              .load())  # fmt: skip
    keys = {bytes(row.key).decode() for row in events.select("key").collect()}
    assert catalog in keys, f"{catalog}'s events (up to rv {committed.resource_version}) unread"
