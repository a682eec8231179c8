"""Audit: replay-based history and diffs, signed checkpoints, and the verifier."""
