"""The leader's pure core: `decide(image, command, stamp)` and its rules."""

from producers.decide.core import Rejection, Stamp, decide, elect

__all__ = ["Rejection", "Stamp", "decide", "elect"]
