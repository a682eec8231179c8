"""The pure fold: an Image, its Views, and `apply` (no Kafka, pyarrow, clock or randomness)."""
