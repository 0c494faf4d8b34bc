"""What strictmcp does inside an MCP server, whichever framework the server is written with.

The framework adapters (:mod:`.lowlevel`, :mod:`.mcpserver`, :mod:`.fastmcp`) only fetch the
server's own tool listing, hand each ``tools/call`` here, and put the answers back on their
framework's types. Everything decided about a call is decided in :class:`ServerCore`:

1. the arguments against the ``inputSchema`` the server lists for the tool
   (:func:`~strictmcp.protocol.check_call`): an unknown tool is JSON-RPC ``-32602``, invalid
   arguments an SEP-1303 ``isError`` result;
2. the policy's guards, then the deep checks registered with ``on_calls=True``;
3. the tool's result against its ``outputSchema``. A result that breaks it is replaced by an
   ``isError`` result that says so without quoting it: a client that validates results (the
   official SDK does) would otherwise fail the whole call, and one that does not would hand a
   model data of a shape the tool never promised. The tool has run by then; only its answer
   is withheld;
4. the Validation Protocol's dry-run ``validate`` tool, answered here and never passed on.

In ``audit`` mode nothing is refused: every finding is logged and the call, or result, goes
through unchanged. Findings are logged in both modes on the :data:`AUDIT_LOGGER` logger, one
record per stage with rule codes and JSON Pointers, never argument or result values.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypedDict, TypeVar

from mcp.shared.exceptions import MCPError

from ..guards.deep import DeepValidators
from ..guards.policy import Mode, Policy
from ..guards.validation import PREFERRED_NAME, DryRun, capability, choose_name, tool_definition
from ..protocol import (
    LATEST,
    CallCheck,
    CheckedTool,
    Revision,
    ToolRegistry,
    Violation,
    check_call,
    check_result,
    errors,
)

# One builder for every isError result strictmcp makes, so results refused here look exactly
# like the ones check_call makes (text, _meta codes, structuredContent rules, resultType).
from ..protocol.tool_calls import problem, refusal
from ..schema import quote_name

AUDIT_LOGGER = "strictmcp.audit"
"""The logger every finding is reported on. Each record's ``strictmcp`` attribute holds
``{tool, stage, action, mode, codes, pointers}``; stage is ``arguments``, ``policy``, ``deep``
or ``result``, action ``refused`` or ``allowed``."""

_audit = logging.getLogger(AUDIT_LOGGER)
_log = logging.getLogger(__name__)

R = TypeVar("R")


@dataclass(frozen=True)
class Listing:
    """The server's tools at one revision, and the name the validate tool goes by there."""

    registry: ToolRegistry
    validate_name: str | None
    # The listing as JSON text: one that reads the same needs no new registry.
    fingerprint: str


class ServerOptions(TypedDict, total=False):
    """The options every server integration takes, passed on to :class:`ServerCore`."""

    policy: Policy | None
    deep: DeepValidators | None
    strict: bool
    mode: Mode
    validate_tool: bool
    validate_name: str


class ServerCore:
    """strictmcp's checks for one server; see the module documentation for what they are.

    ``strict`` also refuses arguments a tool's ``inputSchema`` does not declare, even where
    the schema forgot ``additionalProperties: false``. ``validate_tool`` adds the dry-run tool,
    named ``validate_name`` unless the server has a tool of that name already.
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
    ) -> None:
        if mode not in ("enforce", "audit"):
            raise ValueError('mode must be "enforce" or "audit"')
        self.policy = policy
        self.deep = deep
        self.strict = strict
        self.mode = mode
        self.validate_tool = validate_tool
        self.validate_name = validate_name
        # The dry run tells what the real call would meet: in audit mode guard errors do not
        # refuse it, so they are warnings there.
        self._dry_policy = (
            replace(policy, mode="audit") if policy is not None and mode == "audit" else policy
        )
        self._listings: dict[Revision, Listing] = {}

    @property
    def enforcing(self) -> bool:
        """Whether findings refuse calls (``enforce``) rather than only being logged."""
        return self.mode == "enforce"

    def listing(self, version: str, tools: Sequence[Mapping[str, Any]]) -> Listing:
        """The listing of ``tools`` (the server's ``tools/list`` tools, every page) at ``version``.

        Reused while the server lists the same tools; rebuilt, and its schemas compiled
        through the engine's cache, when they change.
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
        name = choose_name(registry.names(), self.validate_name) if self.validate_tool else None
        listing = Listing(registry, name, fingerprint)
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

    async def call(
        self,
        listing: Listing,
        name: str,
        arguments: dict[str, Any] | None,
        proceed: Callable[[], Awaitable[R]],
        dump: Callable[[R], Mapping[str, Any] | None],
    ) -> R | dict[str, Any]:
        """Answer one ``tools/call``: ``proceed()`` runs the tool, unless a check refuses it.

        Returns what ``proceed`` returned, or a ``CallToolResult`` dict strictmcp made (a
        refusal, a withheld result, the validate tool's answer). ``dump`` gives a result's
        wire form to check against the ``outputSchema``, or None for results that are not
        the tool's output (an ``input_required`` round). Raises :class:`MCPError` for an
        unknown tool.
        """
        registry = listing.registry
        if name == listing.validate_name:
            dry_run = DryRun(registry, policy=self._dry_policy, deep=self.deep, strict=self.strict)
            return await dry_run.answer(arguments)
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        verdict = check_call(registry, params, strict=self.strict)
        self._report(name, "arguments", verdict.violations, refused=self.enforcing)
        if self.enforcing and verdict.jsonrpc_error is not None:
            code, message = verdict.jsonrpc_error
            raise MCPError(code=code, message=message)
        if self.enforcing and verdict.error_result is not None:
            return verdict.error_result
        refusal = await self._guard(registry.revision, name, arguments or {}, verdict.tool)
        if refusal is not None:
            return refusal
        result = await proceed()
        return self._checked_result(registry, name, verdict.tool, result, dump)

    async def _guard(
        self, revision: Revision, name: str, arguments: dict[str, Any], tool: CheckedTool | None
    ) -> dict[str, Any] | None:
        """The refusal for a call the policy's guards or the deep checks stop, else None."""
        if self.policy is not None:
            found = self.policy.check(name, arguments)
            # The policy's own mode still counts: an audit-mode policy never blocks.
            blocked = self.enforcing and self.policy.blocks(found)
            self._report(name, "policy", found, refused=blocked)
            if blocked:
                return _refused_arguments(revision, tool, name, found)
        if self.deep is not None:
            found = await self.deep.run(name, arguments, real_call=True)
            blocked = self.enforcing and bool(errors(found))
            self._report(name, "deep", found, refused=blocked)
            if blocked:
                return _refused_arguments(revision, tool, name, found)
        return None

    def _checked_result(
        self,
        registry: ToolRegistry,
        name: str,
        tool: CheckedTool | None,
        result: R,
        dump: Callable[[R], Mapping[str, Any] | None],
    ) -> R | dict[str, Any]:
        dumped = dump(result)
        # No tool means an unknown one let through in audit mode: there is no schema to check.
        if tool is None or dumped is None:
            return result
        found = errors(check_result(registry, name, dumped, tool=tool))
        self._report(name, "result", found, refused=self.enforcing)
        if not found or not self.enforcing:
            return result
        heading = (
            f"Tool {quote_name(name)} returned a result that does not match its outputSchema; "
            "strictmcp withheld it:"
        )
        problems = [problem(v.code, v.message) for v in found]
        return _error_result(refusal(registry.revision, tool, found, problems, heading, []))

    def _report(
        self, name: str, stage: str, violations: Sequence[Violation], *, refused: bool
    ) -> None:
        if not violations:
            return
        found = list(_codes_and_pointers(violations))
        codes = list(dict.fromkeys(code for code, _ in found))
        pointers = list(dict.fromkeys(pointer for _, pointer in found))
        action = "refused" if refused else "allowed"
        _audit.warning(
            "tools/call %s %s at the %s stage: %s",
            quote_name(name),
            action,
            stage,
            ", ".join(f"{code} at {pointer or '(message)'}" for code, pointer in found),
            extra={
                "strictmcp": {
                    "tool": name,
                    "stage": stage,
                    "action": action,
                    "mode": self.mode,
                    "codes": codes,
                    "pointers": pointers,
                }
            },
        )


def _codes_and_pointers(violations: Sequence[Violation]) -> Iterator[tuple[str, str]]:
    """Each finding's code and pointer; a schema violation stands for each of its issues."""
    for violation in violations:
        if violation.issues:
            for issue in violation.issues:
                yield issue.code.value, violation.pointer + issue.instance_path
        else:
            yield violation.code, violation.pointer


def _revision(version: str) -> Revision:
    try:
        return Revision(version)
    except ValueError:
        # The SDK negotiates only revisions it knows, so one unknown here is newer than ours.
        return LATEST


_ARGUMENTS = "/params/arguments"


def _refused_arguments(
    revision: Revision, tool: CheckedTool | None, name: str, found: list[Violation]
) -> dict[str, Any]:
    # Only an enforced call refuses, and enforce mode got here only past a listed tool.
    assert tool is not None
    refused = errors(found)
    problems = [
        problem(v.code, f"was refused: {v.message}", v.pointer.removeprefix(_ARGUMENTS))
        for v in refused
    ]
    heading = f"The arguments of tool {quote_name(name)} were refused; the tool was not run:"
    return _error_result(refusal(revision, tool, refused, problems, heading, []))


def _error_result(check: CallCheck) -> dict[str, Any]:
    if check.error_result is None:  # refusal() always makes one; not stripped under -O
        raise RuntimeError("a refusal without an isError result")
    return check.error_result
