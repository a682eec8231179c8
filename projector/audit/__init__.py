"""Replay and audit of a catalog's log (docs/audit.md): the verifier, its report and faults."""

from projector.audit.faults import AuditFailed, CatalogSummary, Fault, FaultKind, Report

__all__ = ["AuditFailed", "CatalogSummary", "Fault", "FaultKind", "Report"]
