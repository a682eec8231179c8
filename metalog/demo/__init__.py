"""The end-to-end demo (`make demo`): the write path, SQL, a follower, Spark and the audit."""
