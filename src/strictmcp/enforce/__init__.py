"""Enforcement: what strictmcp does about a ``tools/call`` and its result, decided once.

The proxy (:class:`~strictmcp.proxy.ProxySession`), the SDK integrations (their
``ServerCore``) and the Validation Protocol's dry run all hand their calls to one
:class:`Enforcer`, so a rule written here gives the same verdict everywhere. A ``tools/call``
goes through it in stages, each reported to the :class:`Auditor` with the same record
(:func:`audit_records`):

1. ``arguments``: the arguments against the ``inputSchema`` the tool was listed with
   (:func:`~strictmcp.protocol.check_call`; the proxy's conversation has checked it already
   and passes its verdict). An unknown tool is a JSON-RPC error, invalid arguments an
   ``isError`` result;
2. ``policy``: the policy's guards; a finding that blocks is an ``isError`` result naming it;
3. ``deep``: the policy's declared deep checks (``[[deep]]`` with ``on_calls``) and the tool
   author's registered for calls, awaited (:meth:`Enforcer.check_deep`, which first takes
   from the rate limits shared through Redis, the ``rate`` stage; the proxy awaits it only
   for a tool that has either, :meth:`Enforcer.awaits`); the first two stages, with the
   access rules and the rate limits kept in memory before them, are synchronous
   (:meth:`Enforcer.check_call`), for the proxy's hot path;
4. the tool runs, unless a stage refused the call, and then ``result``: its result against
   the ``outputSchema`` (:meth:`Enforcer.check_result`); a result that breaks it is replaced
   by an ``isError`` result that does not quote it.

The decision on a call is the protocol's :class:`~strictmcp.protocol.CallCheck`, extended by
each stage: answer with its ``error_result`` or ``jsonrpc_error``, else run the tool. In
``audit`` mode every stage reports and none refuses. The dry run (:meth:`Enforcer.dry_run`)
runs the first three stages and answers with what they found. The proxy reports two more
stages itself, on the same :class:`Auditor`: ``message`` (what the protocol checks found in
any message) and ``listing`` (tool definitions in a ``tools/list`` result, ``withheld`` when
they cannot be checked). The enforcer's own part of the ``listing`` stage,
:meth:`Enforcer.check_listing`, runs lint rules on each listed tool (:mod:`.listing`; hidden
characters by default) and compares it with its pin, if any (:mod:`.pins`), and withholds a
tool with an error-level finding, whose calls :meth:`Enforcer.check_call` then refuses at the
``listing`` stage.

After the ``result`` stage's schema check, :meth:`Enforcer.clean_result` applies the result's
hygiene (:mod:`.hygiene`: hidden characters and terminal sequences flagged or stripped,
labels, bounds, redaction), and :meth:`Enforcer.clean_server_request` the same to what a server
asks of the user or the model. Two opt-in rewrites per tool (:mod:`.rewrites`):
:meth:`Enforcer.decode_arguments` (JSON-string arguments, before the ``arguments`` stage) and
:meth:`Enforcer.rewrite_listing` (``$ref`` inlining, in what the client is listed).
"""

from .audit import AUDIT_LOGGER, Action, Auditor, Stage, audit_records, outcome
from .dry_run import DryRun, DryRunResult
from .enforcer import Enforcer
from .hidden import HiddenTool, hidden_tools
from .limits import (
    RATE_LIMITED,
    Limiter,
    RateLimiter,
    SharedRateLimiter,
    StoreUnavailable,
    limiter_for,
)
from .listing import DEFAULT_LISTING_RULES, LintCode, listing_option, listing_rules
from .pins import PinError, PinFile, PinRule

__all__ = [
    "AUDIT_LOGGER",
    "DEFAULT_LISTING_RULES",
    "RATE_LIMITED",
    "Action",
    "Auditor",
    "DryRun",
    "DryRunResult",
    "Enforcer",
    "HiddenTool",
    "Limiter",
    "LintCode",
    "PinError",
    "PinFile",
    "PinRule",
    "RateLimiter",
    "SharedRateLimiter",
    "Stage",
    "StoreUnavailable",
    "audit_records",
    "hidden_tools",
    "limiter_for",
    "listing_option",
    "listing_rules",
    "outcome",
]
