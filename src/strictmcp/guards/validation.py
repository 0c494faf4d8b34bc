"""The Validation Protocol: a dry-run ``validate`` tool that answers ``{valid, errors, warnings}``.

A client (or a scheduler acting for one) asks ``validate`` with ``{tool, arguments}`` before it
commits to a call. The answer comes from the tool's schema, the policy's guards and the tool
author's deep checks; the tool itself never runs. Servers advertise it under
``capabilities.experimental.toolValidation``; a server that already has a tool called
``validate`` keeps it, and strictmcp's goes by another name, which the capability says.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from ..protocol import Revision, Rule, Severity, ToolRegistry, Violation, check_call
from ..schema import quote_name
from .deep import DeepValidators
from .policy import Policy

PREFERRED_NAME = "validate"
FALLBACK_NAME = "strictmcp_validate"
CAPABILITY = "toolValidation"
_ARGUMENTS = "/params/arguments"

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        # SEP-986 bounds every tool name to 128 characters; a longer one names no tool.
        "tool": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
            "description": "Name of the tool whose call to check",
        },
        "arguments": {"type": "object", "description": "The arguments that call would carry"},
    },
    "required": ["tool", "arguments"],
    "additionalProperties": False,
}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "valid": {"type": "boolean"},
        "errors": {"type": "array", "items": {"type": "string"}},
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["valid", "errors", "warnings"],
    "additionalProperties": False,
}


def choose_name(existing: Collection[str], preferred: str = PREFERRED_NAME) -> str:
    """The name for the validate tool that shadows no tool the server already has."""
    for name in (preferred, FALLBACK_NAME):
        if name not in existing:
            return name
    suffix = 2
    while f"{FALLBACK_NAME}_{suffix}" in existing:
        suffix += 1
    return f"{FALLBACK_NAME}_{suffix}"


def tool_definition(name: str, revision: Revision) -> dict[str, Any]:
    """The ``Tool`` to add to a ``tools/list`` result."""
    tool: dict[str, Any] = {
        "name": name,
        "description": (
            "Check a call before making it (dry run): answers whether `arguments` are valid "
            "for `tool`, with errors and warnings. The tool itself is not run."
        ),
        "inputSchema": INPUT_SCHEMA,
    }
    if revision.has_structured_output:
        tool["outputSchema"] = OUTPUT_SCHEMA
    return tool


def capability(name: str) -> dict[str, Any]:
    """The entry for ``capabilities.experimental`` that advertises the validate tool."""
    return {CAPABILITY: {"tool": name}}


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
    """Answers the validate tool for the tools in ``registry``.

    Checks, in order: the tool exists, the arguments match the schema it was listed with
    (``strict`` also refuses undeclared arguments), the policy's guards, and the deep checks
    registered for the tool. A policy in audit mode reports guard errors as warnings, since
    in that mode the real call would go ahead.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        policy: Policy | None = None,
        deep: DeepValidators | None = None,
        strict: bool = False,
    ) -> None:
        self.registry = registry
        self.policy = policy
        self.deep = deep
        self.strict = strict

    async def check(self, tool: str, arguments: Any) -> DryRunResult:
        """Everything a real call to ``tool`` with ``arguments`` would be refused for."""
        call = check_call(self.registry, {"name": tool, "arguments": arguments}, strict=self.strict)
        violations = list(call.violations)
        if call.allowed and isinstance(arguments, Mapping):
            if self.policy is not None:
                found = self.policy.check(tool, arguments)
                violations += found if self.policy.mode == "enforce" else _as_warnings(found)
            if self.deep is not None:
                violations += await self.deep.run(tool, arguments)
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


def _as_warnings(violations: list[Violation]) -> list[Violation]:
    return [Violation(v.rule, v.message, v.pointer, Severity.WARNING, v.issues) for v in violations]


def _lines(violation: Violation) -> list[str]:
    """A violation as the protocol's strings, argument pointers relative to the arguments."""
    where = _relative(violation.pointer)
    if violation.rule is Rule.TOOL_ARGUMENTS_INVALID and violation.issues:
        return [
            f"{_relative(_ARGUMENTS + issue.instance_path) or '(arguments)'}: {issue.message} "
            f"[{issue.code.value}]"
            for issue in violation.issues
        ]
    return [f"{where or '(arguments)'}: {violation.message} [{violation.code}]"]


def _relative(pointer: str) -> str:
    if pointer.startswith(_ARGUMENTS):
        return pointer[len(_ARGUMENTS) :]
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
