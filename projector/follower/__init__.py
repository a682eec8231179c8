"""The follower runtime: tails the events topic, publishes images, serves watches."""
