"""Where the write side sends things: the partition layout and the record limit read from
the cluster, and the write side's reading of the one Kafka error table
(`projector.kafka.errors`: `LeaderUnavailable`, `TooLarge`). Kafka's clients, settings and
security have one home, `projector.kafka`."""
