"""Audit of a catalog's log (docs/audit.md): replay-based history and diffs, signed
checkpoints, and the verifier with its report and faults."""

from projector.audit.faults import AuditFailed, CatalogSummary, Fault, FaultKind, Report

__all__ = ["AuditFailed", "CatalogSummary", "Fault", "FaultKind", "Report"]
