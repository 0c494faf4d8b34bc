"""The Validation Protocol's dry run: what the ``validate`` tool answers.

A client (or a scheduler acting for one) asks ``validate`` with ``{tool, arguments}`` before it
commits to a call, and gets ``{valid, errors, warnings}``: what the real call would meet at
:class:`~strictmcp.enforce.Enforcer`'s stages, the tool itself never run. The tool's
definition, name and capability are in :mod:`strictmcp.guards.validation`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..policy import Identity
from ..protocol import Revision, Rule, Severity, ToolRegistry, Violation
from ..protocol.tool_calls import ARGUMENTS
from ..schema import quote_name

if TYPE_CHECKING:
    from .enforcer import Enforcer


@dataclass(frozen=True)
class DryRunResult:
    """The verdict of a dry run: ``errors`` and ``warnings`` are the protocol's strings."""

    valid: bool
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    violations: tuple[Violation, ...]

    def to_dict(self) -> dict[str, Any]:
        """The Validation Protocol's ``{valid, errors, warnings}``."""
        return {"valid": self.valid, "errors": list(self.errors), "warnings": list(self.warnings)}


class DryRun:
    """Answers the validate tool for the tools in ``registry``, as ``enforcer`` would decide
    for ``identity`` (see :meth:`~strictmcp.enforce.Enforcer.rehearse`); made by
    :meth:`~strictmcp.enforce.Enforcer.dry_run`."""

    def __init__(
        self,
        registry: ToolRegistry,
        enforcer: Enforcer,
        identity: Identity | None = None,
        owner: Hashable = None,
    ) -> None:
        self.registry = registry
        self.enforcer = enforcer
        self.identity = identity
        self.owner = owner

    async def check(self, tool: str, arguments: Any) -> DryRunResult:
        """Everything a real call to ``tool`` with ``arguments`` would be refused for."""
        violations = await self.enforcer.rehearse(
            self.registry, tool, arguments, identity=self.identity, owner=self.owner
        )
        errors = tuple(
            line for v in violations if v.severity is Severity.ERROR for line in _lines(v)
        )
        warnings = tuple(
            line for v in violations if v.severity is Severity.WARNING for line in _lines(v)
        )
        return DryRunResult(not errors, errors, warnings, tuple(violations))

    async def answer(self, params_arguments: Any) -> dict[str, Any]:
        """The ``CallToolResult`` for one call of the validate tool itself."""
        revision = self.registry.revision
        request = params_arguments if isinstance(params_arguments, Mapping) else {}
        tool, arguments = request.get("tool"), request.get("arguments")
        if not isinstance(tool, str) or not isinstance(arguments, Mapping):
            return _result(
                revision,
                "validate needs {tool: string, arguments: object}",
                structured=None,
                is_error=True,
            )
        verdict = await self.check(tool, arguments)
        summary = _summary(tool, verdict)
        return _result(revision, summary, structured=verdict.to_dict(), is_error=False)


def _lines(violation: Violation) -> list[str]:
    """A violation as the protocol's strings, argument pointers relative to the arguments."""
    where = _relative(violation.pointer)
    if violation.rule is Rule.TOOL_ARGUMENTS_INVALID and violation.issues:
        return [
            f"{_relative(ARGUMENTS + issue.instance_path) or '(arguments)'}: {issue.message} "
            f"[{issue.code.value}]"
            for issue in violation.issues
        ]
    return [f"{where or '(arguments)'}: {violation.message} [{violation.code}]"]


def _relative(pointer: str) -> str:
    if pointer.startswith(ARGUMENTS):
        return pointer[len(ARGUMENTS) :]
    return "(tool)" if pointer == "/params/name" else pointer


def _summary(tool: str, verdict: DryRunResult) -> str:
    name = quote_name(tool)
    if verdict.valid and not verdict.warnings:
        return f"A call to {name} with these arguments would be accepted."
    parts = [
        f"A call to {name} with these arguments would be "
        f"{'accepted' if verdict.valid else 'refused'}."
    ]
    parts += [f"Error: {line}" for line in verdict.errors]
    parts += [f"Warning: {line}" for line in verdict.warnings]
    return "\n".join(parts)


def _result(
    revision: Revision, text: str, *, structured: dict[str, Any] | None, is_error: bool
) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None and revision.has_structured_output:
        result["structuredContent"] = structured
    if revision.at_least(Revision.V2026_07_28):
        result["resultType"] = "complete"
    return result
