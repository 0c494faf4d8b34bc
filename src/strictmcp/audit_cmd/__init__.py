"""``strictmcp audit``: read what the proxy's audit log says it refused (docs/cli.md)."""

from .summary import AuditSummary, summarize

__all__ = ["AuditSummary", "summarize"]
