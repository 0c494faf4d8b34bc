"""MCP protocol validation: JSON-RPC envelopes, method params and results, tools, elicitation,
sampling and prompts, for every revision from 2024-11-05 to 2026-07-28. Transport-independent:
the proxy and the SDK integrations use exactly this layer."""

from .revisions import LATEST, Revision
from .rules import Rule
from .violations import Severity, Violation, errors

__all__ = ["LATEST", "Revision", "Rule", "Severity", "Violation", "errors"]
