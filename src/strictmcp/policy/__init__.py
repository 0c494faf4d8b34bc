"""Policies: which guard checks which argument of which tool, whether findings block, and who
may call what.

A policy attaches guards to arguments by a tool name glob and a JSON Pointer into the
arguments, where a ``*`` token stands for any array item or object key, so it protects servers
whose code we do not control::

    mode = "enforce"                 # or "audit": log and allow
    [[guard]]
    tool = "read_*"
    argument = "/path"
    kind = "path"
    roots = ["/srv/data"]

This package owns the file's whole format. Each table is declared once in
:data:`~strictmcp.policy.tables.TABLES` (its keys with their types, defaults and
descriptions, and the builder of its entries); the loader, the top-level "known:" message and
the reference page (``docs/policy-reference.md``, :mod:`.reference`) read that registry, and a
policy with an unknown table or key, or a value of the wrong type, is refused when it is
loaded, never at the first call. The kinds of ``[[guard]]`` and ``[[deep]]`` entries and their
options are :mod:`.kinds`'. ``docs/policy.md`` documents the format; secrets are named by
environment variable or file (``..._env``, ``..._file``), never written as literal values.
"""

from .callers import AccessRule, Identity, RateLimit
from .kinds import guard_kinds
from .model import Mode, Policy
from .options import PolicyError
from .rules import (
    DEFAULT_DEEP_TIMEOUT,
    DEFAULT_RESULT_RULE,
    DEFAULT_TOOL_RULE,
    GUARD_METHODS,
    RESULT_METHODS,
    TOOLS_CALL,
    DeepRule,
    GuardRule,
    Hygiene,
    ResultRule,
    ToolRule,
    select,
)
from .settings import (
    ASYMMETRIC_ALGORITHMS,
    AUDIT_RECORDS,
    AuditRecord,
    AuthSettings,
    EndpointSettings,
    FlowAction,
    FlowRule,
    GatewaySettings,
    InterceptorSettings,
    RateStoreSettings,
    ServerSettings,
    ToolOffer,
    UpstreamSettings,
)
from .urls import is_loopback, redis_url_problem

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "AUDIT_RECORDS",
    "DEFAULT_DEEP_TIMEOUT",
    "DEFAULT_RESULT_RULE",
    "DEFAULT_TOOL_RULE",
    "GUARD_METHODS",
    "RESULT_METHODS",
    "TOOLS_CALL",
    "AccessRule",
    "AuditRecord",
    "AuthSettings",
    "DeepRule",
    "EndpointSettings",
    "FlowAction",
    "FlowRule",
    "GatewaySettings",
    "GuardRule",
    "Hygiene",
    "Identity",
    "InterceptorSettings",
    "Mode",
    "Policy",
    "PolicyError",
    "RateLimit",
    "RateStoreSettings",
    "ResultRule",
    "ServerSettings",
    "ToolOffer",
    "ToolRule",
    "UpstreamSettings",
    "guard_kinds",
    "is_loopback",
    "redis_url_problem",
    "select",
]
