"""The leader's pure core: `decide(image, command, stamp)` and its rules."""
