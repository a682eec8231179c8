"""The leader runtime: owns partitions, decides, commits one transaction per batch."""

from producers.leader.leader import Leader

__all__ = ["Leader"]
