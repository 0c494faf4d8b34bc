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
3. ``deep``: the tool author's deep checks, awaited (:meth:`Enforcer.check_deep`); the
   first two stages are synchronous (:meth:`Enforcer.check_call`), for the proxy's hot path;
4. the tool runs, unless a stage refused the call, and then ``result``: its result against
   the ``outputSchema`` (:meth:`Enforcer.check_result`); a result that breaks it is replaced
   by an ``isError`` result that does not quote it.

The decision on a call is the protocol's :class:`~strictmcp.protocol.CallCheck`, extended by
each stage: answer with its ``error_result`` or ``jsonrpc_error``, else run the tool. In
``audit`` mode every stage reports and none refuses. The dry run (:meth:`Enforcer.dry_run`)
runs the first three stages and answers with what they found. The proxy reports two more
stages itself, on the same :class:`Auditor`: ``message`` (what the protocol checks found in
any message) and ``listing`` (tool definitions in a ``tools/list`` result, ``withheld`` when
they cannot be checked).
"""

from .audit import AUDIT_LOGGER, Action, Auditor, Stage, audit_records
from .dry_run import DryRun, DryRunResult
from .enforcer import Enforcer
from .limits import RATE_LIMITED, RateLimiter

__all__ = [
    "AUDIT_LOGGER",
    "RATE_LIMITED",
    "Action",
    "Auditor",
    "DryRun",
    "DryRunResult",
    "Enforcer",
    "RateLimiter",
    "Stage",
    "audit_records",
]
