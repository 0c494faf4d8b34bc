"""What strictmcp does inside an MCP server, whichever framework the server is written with.

The framework adapters (:mod:`.lowlevel`, :mod:`.mcpserver`, :mod:`.fastmcp`) only fetch the
server's own tool listing, hand each ``tools/call`` here, and put the answers back on their
framework's types. :class:`ServerCore` hands each call to an
:class:`~strictmcp.enforce.Enforcer`, the proxy's own:

1. the arguments against the ``inputSchema`` the server lists for the tool: an unknown tool
   is JSON-RPC ``-32602``, invalid arguments an SEP-1303 ``isError`` result;
2. the policy's guards, then the deep checks registered with ``on_calls=True``;
3. the tool's result against its ``outputSchema``. A result that breaks it is replaced by an
   ``isError`` result that says so without quoting it: a client that validates results (the
   official SDK does) would otherwise fail the whole call, and one that does not would hand a
   model data of a shape the tool never promised. The tool has run by then; only its answer
   is withheld;
4. the Validation Protocol's dry-run ``validate`` tool, answered here and never passed on.

A call the server answers with a task (``CreateTaskResult``) is remembered, at most
``max_tasks`` at once and each for its time to live (:class:`~strictmcp.protocol.tasks.TaskBook`,
as the proxy's sessions do), so that the task's final result, when ``tasks/get`` (2026-07-28) or
``tasks/result`` (2025-11-25) delivers it, is judged and cleaned as the direct result of the call
would be (:meth:`ServerCore.task_result`). A final result for a task this server process did not
create a call for, or has forgotten, is refused in ``enforce`` mode (fail closed).

With ``[[access]]`` rules in the policy, a ``tools/list`` shows each caller only the tools it
may call (:meth:`ServerCore.shows`), and a call of another is an unknown tool, as in the proxy.

Requests other than ``tools/call`` that the policy guards (``[[guard]]`` with ``method``: a
``resources/read`` URI, ``prompts/get`` arguments, a ``completion/complete`` value) are refused
with the proxy's JSON-RPC error (:meth:`ServerCore.check_request`), and the results of
``resources/read``, ``prompts/get`` and ``completion/complete`` get the proxy's hygiene
(:meth:`ServerCore.clean_answer`).

Before any of that, the listing stage runs on the server's own listing, as the proxy's does
(:meth:`~strictmcp.enforce.Enforcer.check_listing`): lint's listing rules (by default SMT401,
hidden characters in names, titles and descriptions) and, given a lock file, the pins. A tool
with an error-level finding is left out of ``tools/list`` and its calls are refused, until the
server lists it clean.

In ``audit`` mode nothing is refused: every finding is logged and the call, or result, goes
through unchanged. Findings are logged in both modes on the :data:`AUDIT_LOGGER` logger, one
record per finding with rule codes and JSON Pointers, never argument or result values.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar

from ..enforce import AUDIT_LOGGER, Auditor, Enforcer, PinFile, outcome
from ..enforce import listing_rules as enforce_listing_rules
from ..enforce.audit import REQUEST
from ..extras import needs
from ..guards.deep import DeepValidators
from ..guards.validation import PREFERRED_NAME, capability, choose_name, tool_definition
from ..policy import Identity, Mode, Policy
from ..protocol import LATEST, Revision, ToolRegistry, check_result, errors
from ..protocol.tasks import (
    DEFAULT_MAX_TASKS,
    UNKNOWN_TASK,
    UNKNOWN_TASK_TEXT,
    TaskBook,
    TaskRecord,
    unknown_task,
)
from ..protocol.violations import under

with needs("mcp"):
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.shared.exceptions import MCPError

_log = logging.getLogger(__name__)

R = TypeVar("R")


@dataclass(frozen=True)
class Listing:
    """The server's tools at one revision, and the name the validate tool goes by there."""

    registry: ToolRegistry
    validate_name: str | None
    # The listing as JSON text: one that reads the same needs no new registry.
    fingerprint: str
    #: The tools the listing stage withholds: left out of ``tools/list``, calls refused.
    withheld: frozenset[str] = frozenset()

    def shown(self, name: object) -> bool:
        """Whether a tool of this name goes into the ``tools/list`` a client gets."""
        return name not in self.withheld


class ServerOptions(TypedDict, total=False):
    """The options every server integration takes, passed on to :class:`ServerCore`."""

    policy: Policy | None
    deep: DeepValidators | None
    strict: bool
    mode: Mode
    validate_tool: bool
    validate_name: str
    listing_rules: Sequence[str] | None
    pins: PinFile | None
    max_tasks: int


class ServerCore:
    """strictmcp's checks for one server; see the module documentation for what they are.

    ``strict`` also refuses arguments a tool's ``inputSchema`` does not declare, even where
    the schema forgot ``additionalProperties: false``. ``validate_tool`` adds the dry-run tool,
    named ``validate_name`` unless the server has a tool of that name already.
    ``listing_rules`` selects lint's rules for the listing stage by code or prefix (empty:
    none; default: the policy's ``[listing]`` rules, else SMT401); ``pins`` is a lock file
    (:meth:`PinFile.load`) the listed tools must match. ``max_tasks`` bounds how many tasks
    are remembered to check their final results (the oldest forgotten first).
    """

    def __init__(
        self,
        *,
        policy: Policy | None = None,
        deep: DeepValidators | None = None,
        strict: bool = False,
        mode: Mode = "enforce",
        validate_tool: bool = True,
        validate_name: str = PREFERRED_NAME,
        listing_rules: Sequence[str] | None = None,
        pins: PinFile | None = None,
        max_tasks: int = DEFAULT_MAX_TASKS,
    ) -> None:
        auditor = Auditor(logger=logging.getLogger(AUDIT_LOGGER))
        if listing_rules is None and policy is not None:
            listing_rules = policy.listing_rules
        self.enforcer = Enforcer(
            policy=policy,
            deep=deep,
            strict=strict,
            mode=mode,
            auditor=auditor,
            # UnknownRuleError (a ValueError) for a selector that names no rule.
            listing=enforce_listing_rules(listing_rules),
            pins=pins,
        )
        self.validate_tool = validate_tool
        self.validate_name = validate_name
        self._listings: dict[Revision, Listing] = {}
        #: The tasks calls were answered with, to check their final results against.
        self.tasks = TaskBook(max_tasks)

    def listing(self, version: str, tools: Sequence[Mapping[str, Any]]) -> Listing:
        """The listing of ``tools`` (the server's ``tools/list`` tools, every page) at ``version``,
        through the listing stage.

        Reused while the server lists the same tools; rebuilt, its schemas compiled through
        the engine's cache and the listing stage run again, when they change.
        """
        revision = _revision(version)
        # JSON text tells true from 1, which == on the listings themselves would not.
        fingerprint = json.dumps(tools, default=repr)
        cached = self._listings.get(revision)
        if cached is not None and cached.fingerprint == fingerprint:
            return cached
        registry = ToolRegistry(revision)
        broken = errors(registry.update({"tools": list(tools)}))
        if broken:
            # Calls to these tools are refused as unusable; the operator needs to know why.
            _log.warning(
                "the server lists tool definitions strictmcp cannot check calls against: %s",
                "; ".join(str(v) for v in broken),
            )
        known = frozenset(registry.names())
        found = self.enforcer.check_listing(tools, revision, known=known)
        withheld = frozenset(
            name for index in found if isinstance(name := tools[index].get("name"), str)
        )
        name = choose_name(registry.names(), self.validate_name) if self.validate_tool else None
        listing = Listing(registry, name, fingerprint, withheld)
        self._listings[revision] = listing
        return listing

    def advertised(self, listing: Listing) -> dict[str, Any] | None:
        """The validate tool's definition to append to ``tools/list``, or None without it."""
        if listing.validate_name is None:
            return None
        return tool_definition(listing.validate_name, listing.registry.revision)

    def capability(self, listing: Listing) -> dict[str, Any] | None:
        """The ``capabilities.experimental`` entries to advertise, or None without the tool."""
        return None if listing.validate_name is None else capability(listing.validate_name)

    def caller(self, identity: Identity | None = None) -> Identity | None:
        """Who the request in progress comes from: ``identity`` when given, else the SDK's
        authenticated caller (:func:`authenticated`), else the policy's ``[identity]``."""
        if identity is None:
            identity = authenticated()
        policy = self.enforcer.policy
        if identity is None and policy is not None:
            identity = policy.identity
        return identity

    def check_request(
        self, method: str, params: Mapping[str, Any] | None, identity: Identity | None = None
    ) -> None:
        """The policy's guards on a request other than ``tools/call`` (by the caller,
        :meth:`caller`); raises :class:`MCPError` (-32602, the proxy's refusal) when they
        refuse it."""
        enforcer = self.enforcer
        if not enforcer.guards_request(method):
            return
        error = enforcer.check_request(method, params, identity=self.caller(identity))
        if error is not None:
            raise MCPError(code=error["code"], message=error["message"], data=error["data"])

    def clean_answer(self, method: str, result: Mapping[str, Any]) -> dict[str, Any] | None:
        """The result of ``method`` (``resources/read``, ``prompts/get``,
        ``completion/complete``) with what a client may show a model cleaned as the proxy
        cleans it, or None to hand ``result`` on."""
        cleaned = self.enforcer.clean_message({"result": dict(result)}, method)
        return None if cleaned is None else dict(cleaned["result"])

    def shows(self, name: str, identity: Identity | None = None) -> bool:
        """Whether the caller (:meth:`caller`) is listed the tool ``name``: only a tool the
        policy's access rules let it call, as the proxy lists (all, in audit mode)."""
        return self.enforcer.shows(name, self.caller(identity))

    async def call(
        self,
        listing: Listing,
        name: str,
        arguments: dict[str, Any] | None,
        proceed: Callable[[], Awaitable[R]],
        dump: Callable[[R], Mapping[str, Any] | None],
        identity: Identity | None = None,
        created: Callable[[R], Mapping[str, Any] | None] | None = None,
        request_id: int | str | None = None,
    ) -> R | dict[str, Any]:
        """Answer one ``tools/call`` of ``identity`` (by default the SDK's authenticated
        caller, :func:`authenticated`, else the policy's ``[identity]``): ``proceed()`` runs
        the tool, unless a check refuses it.

        Returns what ``proceed`` returned, or a ``CallToolResult`` dict strictmcp made (a
        refusal, a withheld result, the validate tool's answer). ``dump`` gives a result's
        wire form to check against the ``outputSchema``, or None for results that are not
        the tool's output (an ``input_required`` round, a task). ``created`` gives the task
        object of a result that is a ``CreateTaskResult``
        (:func:`~strictmcp.protocol.tasks.created_task`), or None: that task is remembered,
        to check its final result (:meth:`task_result`). Raises :class:`MCPError` for an
        unknown tool. ``request_id`` is the call's JSON-RPC id, which its audit records name
        as the proxy's do.
        """
        token = REQUEST.set(request_id)
        try:
            return await self._call(listing, name, arguments, proceed, dump, identity, created)
        finally:
            REQUEST.reset(token)

    async def _call(
        self,
        listing: Listing,
        name: str,
        arguments: dict[str, Any] | None,
        proceed: Callable[[], Awaitable[R]],
        dump: Callable[[R], Mapping[str, Any] | None],
        identity: Identity | None,
        created: Callable[[R], Mapping[str, Any] | None] | None,
    ) -> R | dict[str, Any]:
        registry = listing.registry
        enforcer = self.enforcer
        identity = self.caller(identity)
        if name == listing.validate_name:
            return await enforcer.dry_run(registry, identity).answer(arguments)
        given = arguments or {}
        decision = enforcer.check_call(registry, name, given, identity=identity)
        decision = await enforcer.check_deep(registry, name, given, decision, identity=identity)
        if decision.jsonrpc_error is not None:
            code, message = decision.jsonrpc_error
            raise MCPError(code=code, message=message, data=decision.jsonrpc_data)
        if decision.error_result is not None:
            return decision.error_result
        result = await proceed()
        task = created(result) if created is not None else None
        if task is not None:
            status = str(task.get("status", "working"))
            record = TaskRecord("tools/call", {"name": name}, name, decision.tool, status, None)
            self.tasks.created(task, record)
            return result
        dumped = dump(result)
        if dumped is None:
            return result
        withheld = enforcer.check_result(registry, name, decision.tool, dumped, identity=identity)
        if withheld is not None:
            return withheld
        # Hygiene (flags by default) rewrites only a result it found something in.
        cleaned = enforcer.clean_result(registry, name, decision.tool, dict(dumped))
        return result if cleaned is None else cleaned

    def task_result(
        self,
        listing: Listing,
        method: str,
        task_id: str | None,
        body: Mapping[str, Any],
        identity: Identity | None = None,
    ) -> dict[str, Any] | None:
        """The answer to hand on instead of ``body``, the server's answer to ``method``
        (``tasks/get``, whose ``result`` is a finished task's final result from 2026-07-28
        on, or ``tasks/result``, which is one, 2025-11-25) for the task ``task_id``; None to
        hand ``body`` on.

        A tool-call task's final result goes through
        :meth:`~strictmcp.enforce.Enforcer.check_task_result`: checked against the
        ``outputSchema`` of the tool as it was listed when the task was created, replaced
        by the same ``isError`` result a direct one would be, and cleaned. Raises
        :class:`MCPError` (``-32602``) in ``enforce`` mode when the task is not one a call
        created here, or is forgotten: its result cannot be checked, so it is not trusted.
        """
        inline = method == "tasks/get"
        payload = body.get("result") if inline else body
        if method not in ("tasks/get", "tasks/result") or not isinstance(payload, Mapping):
            return None
        enforcer = self.enforcer
        identity = self.caller(identity)
        task = self.tasks.get(task_id)
        if task is None:
            found = [unknown_task("/result/result" if inline else "/result")]
            enforcer.auditor.record(
                found,
                direction="s2c",
                method=method,
                action=outcome(True, enforcer.mode, "replaced"),
                identity=identity,
            )
            if enforcer.enforcing:
                raise MCPError(code=UNKNOWN_TASK, message=UNKNOWN_TASK_TEXT)
            return None
        if task_id is not None and inline:
            task.status = str(body.get("status", task.status))
        if task.name is None:
            return None
        registry = listing.registry
        found = check_result(registry, task.name, payload, tool=task.tool)
        found = under("/result/result" if inline else "/result", found)
        changed = enforcer.check_task_result(
            registry, task, dict(payload), found, identity=identity
        )
        if changed is None:
            return None
        return {**body, "result": changed} if inline else changed


def authenticated() -> Identity | None:
    """The caller of the request in progress as the official SDK's auth middleware verified
    it (its access token's subject, client id, scopes and claims; FastMCP's HTTP transport
    sets the same), or None when the request is not authenticated. The token itself is left
    behind."""
    token = get_access_token()
    if token is None:
        return None
    claims = dict(token.claims or {})
    claims["client_id"] = token.client_id
    claims["scope"] = " ".join(token.scopes)  # what the SDK's verifier granted
    if token.subject is not None:
        claims["sub"] = token.subject
    return Identity.from_claims(claims)


def _revision(version: str) -> Revision:
    try:
        return Revision(version)
    except ValueError:
        # The SDK negotiates only revisions it knows, so one unknown here is newer than ours.
        return LATEST
