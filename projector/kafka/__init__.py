"""Kafka plumbing both sides share: consumers, watermarks, partition counts, the DLQ."""
