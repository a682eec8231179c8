"""The write side's Kafka plumbing: the partition layout, and Kafka errors as metalog's."""
