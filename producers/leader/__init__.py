"""The leader runtime: owns partitions, decides, commits one transaction per batch."""
