"""Tests of the local stack: jars, broker lifecycle, topics, Spark + Kafka + Delta."""
