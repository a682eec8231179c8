"""The follower runtime: tails the events topic, publishes images, serves watches."""

from projector.follower.follower import Follower

__all__ = ["Follower"]
