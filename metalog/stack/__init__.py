"""The local stack: the Kafka broker (one node or three), its configuration, TLS and ACLs."""
