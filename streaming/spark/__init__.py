"""The Spark jobs: the projection into Delta, its compaction, the batch replay, their session."""
