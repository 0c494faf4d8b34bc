"""``tools/call``: arguments checked against ``inputSchema``, results against ``outputSchema``.

A call to an unknown tool is a protocol error (JSON-RPC ``-32602``). Arguments that fail
validation are a *tool execution* error instead (SEP-1303): the caller answers with
:attr:`CallCheck.error_result`, a ``CallToolResult`` with ``isError: true`` whose text tells
the model which argument is wrong and why, so that it can correct the call. The same codes go
in ``_meta`` under :data:`VALIDATION_META_KEY`, and in ``structuredContent`` only where that
cannot clash with the tool's own ``outputSchema``. No argument value ever appears in a
result, a violation or a message; argument *names* do, escaped and shortened.

Pointers in call violations are relative to the request (``/params/arguments/limit``); in
result violations, relative to the result (``/structuredContent``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..schema import VALID, LRUCache, SchemaError, ValidationResult, Validator, compile_schema
from ..schema.messages import quote_name
from ..schema.pointer import to_pointer
from .jsonrpc import INVALID_PARAMS
from .revisions import Revision
from .rules import Rule
from .tool_registry import ToolRegistry
from .tools import CheckedTool, json_type, resolve_local_ref
from .violations import Severity, Violation, errors

VALIDATION_META_KEY = "dev.strictmcp/validation"
"""The ``_meta`` key of an ``isError`` result strictmcp made: ``{"codes": [...], "problems":
[{"code", "message", "pointer"?}]}``. ``codes`` are the rule codes; each problem has the rule
or engine issue code, a value-free message, and, when it is about an argument, a JSON Pointer
into the arguments."""

ARGUMENTS = "/params/arguments"
"""Where a ``tools/call`` request carries its arguments: the prefix of every argument pointer
in a call violation, cut off where a problem points into the arguments themselves."""

# Lines of problems in the text the model reads; all of them go in _meta.
_TEXT_PROBLEMS = 10
_NAMES_SHOWN = 8


@dataclass(frozen=True)
class CallCheck:
    """The verdict on one ``tools/call`` request.

    At most one of ``error_result`` (answer the call with this ``CallToolResult`` instead of
    forwarding it) and ``jsonrpc_error`` (answer with this JSON-RPC error code and message) is
    set; neither means the call may go ahead. ``jsonrpc_data`` is the error's ``data``, when
    it has one (value-free, like every error strictmcp answers). ``tool`` is the listed tool
    the call was checked
    against: hand it to :func:`check_result` so the result is checked against the same
    listing, even if the tools are listed again meanwhile.
    """

    violations: tuple[Violation, ...] = ()
    error_result: dict[str, Any] | None = None
    jsonrpc_error: tuple[int, str] | None = None
    tool: CheckedTool | None = None
    jsonrpc_data: Any = None

    @property
    def allowed(self) -> bool:
        """Whether the call may be forwarded to the tool."""
        return self.error_result is None and self.jsonrpc_error is None


def check_call(
    registry: ToolRegistry,
    params: Mapping[str, Any] | None,
    *,
    strict: bool = False,
    json_size: int | None = None,
) -> CallCheck:
    """Check the ``params`` of a ``tools/call`` request against the listed tool.

    Missing ``arguments`` are validated as ``{}``. ``strict`` also refuses arguments the
    schema does not declare, even where it forgot ``additionalProperties: false`` (see
    :func:`declared_arguments`). ``json_size``, the size of the request's JSON text, lets
    the engine skip measuring the arguments.
    """
    name = params.get("name") if isinstance(params, (dict, Mapping)) else None
    if params is None or not isinstance(name, str):
        message = "tools/call params must name the tool in a string"
        violation = Violation(Rule.INVALID_PARAMS, message, "/params/name")
        return CallCheck((violation,), jsonrpc_error=(INVALID_PARAMS, f"Invalid params: {message}"))
    tool = registry.get(name)
    if tool is None:
        return unknown_tool(registry, name)
    validator = tool.input_validator
    if not tool.usable or validator is None:
        return _unusable(registry.revision, tool, name)
    arguments = params.get("arguments", {})
    result = _validate(validator, arguments, json_size)
    declared = declared_arguments(validator) if strict and isinstance(arguments, dict) else None
    extra = declared.undeclared(arguments) if declared is not None else []
    if result.valid and not extra:
        return CallCheck(tool=tool)
    quoted = quote_name(name)
    violations: list[Violation] = []
    problems: list[dict[str, str]] = []
    footer: list[str] = []
    if not result.valid:
        count = "1 problem" if len(result.issues) == 1 else f"{len(result.issues)} problems"
        more = " (and more not listed)" if result.truncated else ""
        violations.append(
            Violation(
                Rule.TOOL_ARGUMENTS_INVALID,
                f"arguments of tool {quoted} do not match its inputSchema: {count}{more}",
                ARGUMENTS,
                issues=result.issues,
            )
        )
        problems += [problem(i.code.value, i.message, i.instance_path) for i in result.issues]
    if declared is not None and extra:
        cap = validator.limits.max_issues
        violations += _undeclared_violations(extra, quoted, cap)
        problems += [
            problem(Rule.TOOL_ARGUMENT_UNDECLARED.value, _NOT_DECLARED, to_pointer([key]))
            for key in extra[:cap]
        ]
        footer.append(f"The tool declares these arguments: {declared.describe()}.")
    heading = f"Invalid arguments for tool {quoted}; the tool was not run:"
    return _refusal(registry.revision, tool, violations, problems, heading, footer)


def unknown_tool(registry: ToolRegistry, name: str) -> CallCheck:
    """A call to a tool the listing does not have: a protocol error, not a tool error. Also
    the answer to a call of a tool the caller may not use, which must not reveal that it
    exists."""
    if not registry.listed:
        why = "no tools/list result has been seen yet"
    elif registry.stale:
        why = "the server said its tools changed since they were listed: list them again"
    else:
        why = "the server did not list it"
    quoted = quote_name(name)
    violation = Violation(Rule.TOOL_UNKNOWN, f"unknown tool {quoted}: {why}", "/params/name")
    return CallCheck((violation,), jsonrpc_error=(INVALID_PARAMS, f"Unknown tool: {quoted}"))


def _unusable(revision: Revision, tool: CheckedTool, name: str) -> CallCheck:
    """A call to a listed tool whose definition has errors: refused, since it cannot be checked.

    An ``isError`` result rather than a protocol error, so that the model learns the tool is
    out of use and can pick another.
    """
    quoted = quote_name(name)
    refused = errors(tool.violations)
    violations = [
        Violation(v.rule, f"tool {quoted} cannot be called: {v.message}", "/params/name")
        for v in refused
    ]
    heading = (
        f"Tool {quoted} cannot be called: its definition from tools/list is invalid, so its "
        "arguments cannot be checked. Use another tool, or report the problem to the server:"
    )
    problems = [problem(v.code, v.message) for v in refused]
    return _refusal(revision, tool, violations, problems, heading, [])


def check_result(
    registry: ToolRegistry,
    name: str,
    result: Mapping[str, Any],
    *,
    json_size: int | None = None,
    tool: CheckedTool | None = None,
) -> list[Violation]:
    """Check a ``CallToolResult`` of tool ``name`` against its ``outputSchema``.

    ``tool`` is :attr:`CallCheck.tool` from the call, so the result is checked against the
    listing the call was; without it the registry's current listing is used. Before
    2026-07-28 ``structuredContent`` must be an object in every result; from 2026-07-28 it may
    be any JSON value (SEP-2106). When the tool has an ``outputSchema``, a result that is not
    ``isError: true`` must carry ``structuredContent`` that matches it; error results are not
    checked against the schema. ``json_size`` is the size of the response's JSON text.
    """
    revision = registry.revision
    present = "structuredContent" in result
    content = result.get("structuredContent")
    pointer = "/structuredContent"
    if (
        present
        and revision.has_structured_output
        and not revision.structured_content_any_json
        and not isinstance(content, dict)
    ):
        return [
            Violation(
                Rule.TOOL_STRUCTURED_CONTENT_NOT_OBJECT,
                f"structuredContent must be a JSON object in {revision.value}, not "
                f"{json_type(content)} (any JSON value is allowed from 2026-07-28)",
                pointer,
            )
        ]
    checked = tool if tool is not None else registry.get(name)
    if checked is None:
        message = (
            f"tool {quote_name(name)} is not in the current listing; its result was not checked"
        )
        return [Violation(Rule.TOOL_UNKNOWN, message, severity=Severity.WARNING)]
    validator = checked.output_validator
    if result.get("isError") is True:
        return []
    if validator is None:
        if "outputSchema" in checked.definition and revision.has_structured_output:
            # The tool promised a shape its listing could not make checkable: fail closed.
            message = (
                f"the outputSchema of tool {quote_name(name)} was refused when it was listed, "
                "so its results cannot be checked"
            )
            return [Violation(Rule.TOOL_OUTPUT_SCHEMA_INVALID, message, pointer)]
        return []
    if not present:
        return [
            Violation(
                Rule.TOOL_STRUCTURED_CONTENT_MISSING,
                f"tool {quote_name(name)} declares an outputSchema, so a result that is not an "
                "error must carry structuredContent",
                pointer,
            )
        ]
    verdict = _validate(validator, content, json_size)
    if verdict.valid:
        return []
    return [
        Violation(
            Rule.TOOL_STRUCTURED_CONTENT_INVALID,
            f"structuredContent does not match the outputSchema of tool {quote_name(name)}",
            pointer,
            issues=verdict.issues,
        )
    ]


@dataclass(frozen=True)
class DeclaredArguments:
    """The argument names a tool's ``inputSchema`` declares, as strict mode reads them."""

    names: tuple[str, ...]
    patterns: tuple[str, ...] = ()
    # The patterns compiled by the engine, so names match them exactly as validation does.
    _matcher: Validator | None = None

    def undeclared(self, arguments: Mapping[str, Any]) -> list[str]:
        """The names in ``arguments`` that are neither declared nor matched by a pattern."""
        lookup, matcher = self._lookup, self._matcher
        return [
            key
            for key in arguments
            if key not in lookup and (matcher is None or not matcher.is_valid(key))
        ]

    @cached_property
    def _lookup(self) -> frozenset[str]:
        return frozenset(self.names)

    def describe(self) -> str:
        """The declared names for a person or a model: quoted, escaped and bounded."""
        shown = ", ".join(quote_name(n) for n in self.names[:_NAMES_SHOWN]) or "none"
        if len(self.names) > _NAMES_SHOWN:
            shown += f" (and {len(self.names) - _NAMES_SHOWN} more)"
        if self.patterns:
            shown += ", and names matching its patternProperties"
        return shown


def declared_arguments(validator: Validator) -> DeclaredArguments | None:
    """What strict mode treats as the declared arguments of ``validator``'s schema.

    Declared means named in ``properties`` or matched by a ``patternProperties`` pattern, at
    the root or in any subschema that applies to the root object itself: ``allOf``,
    ``anyOf``, ``oneOf``, ``if``/``then``/``else``, ``dependentSchemas`` and local ``$ref``
    chains. A name declared in any branch counts, so strict mode never refuses an argument
    that some branch accepts.

    None when strict mode has nothing to add: the schema closes the object itself
    (``additionalProperties`` or ``unevaluatedProperties`` false at the root), leaves it open
    on purpose (either keyword set to anything but false, anywhere on those paths), or
    composes in ways that cannot be followed with certainty (``$dynamicRef``, anchors,
    embedded ``$id`` resources). Only the arguments object is covered, not objects nested in
    it. Cached per validator.
    """
    return _DECLARED.get_or_create(validator, lambda: _declared(validator))


# Keyed by the validator itself (not its id, which may be reused): bounded like the engine's.
_DECLARED: LRUCache[DeclaredArguments | None] = LRUCache(maxsize=1024)
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_SCHEMAS = ("if", "then", "else")
_SCHEMA_MAPS = ("dependentSchemas", "dependencies")
_CLOSERS = ("additionalProperties", "unevaluatedProperties")
_NOT_DECLARED = "is not declared by the tool's inputSchema"


def _declared(validator: Validator) -> DeclaredArguments | None:
    root = validator.schema
    if not isinstance(root, dict) or any(root.get(k) is False for k in _CLOSERS):
        return None
    names: dict[str, None] = {}
    patterns: dict[str, None] = {}
    stack: list[Any] = [root]
    followed: set[str] = set()
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if node is not root and "$id" in node:
            return None
        if "$dynamicRef" in node or "$recursiveRef" in node:
            return None
        if any(k in node and node[k] is not False for k in _CLOSERS):
            return None
        names.update(dict.fromkeys(node.get("properties") or {}))
        patterns.update(dict.fromkeys(node.get("patternProperties") or {}))
        for keyword in _IN_PLACE_LISTS:
            stack += node.get(keyword) or []
        stack += [node.get(keyword) for keyword in _IN_PLACE_SCHEMAS]
        for keyword in _SCHEMA_MAPS:
            stack += (node.get(keyword) or {}).values()
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in followed:
            followed.add(ref)
            target = resolve_local_ref(root, ref)
            if target is None:
                return None
            stack.append(target)
    matcher = None
    if patterns:
        try:
            matcher = compile_schema(
                {"anyOf": [{"pattern": p} for p in patterns]}, limits=validator.limits
            )
        except SchemaError:
            return None
    return DeclaredArguments(tuple(names), tuple(patterns), matcher)


def _undeclared_violations(extra: list[str], quoted: str, cap: int) -> list[Violation]:
    violations = [
        Violation(
            Rule.TOOL_ARGUMENT_UNDECLARED,
            f"argument {quote_name(key)} is not declared by the inputSchema of tool {quoted}",
            to_pointer(["params", "arguments", key]),
        )
        for key in extra[:cap]
    ]
    if len(extra) > cap:
        violations.append(
            Violation(
                Rule.TOOL_ARGUMENT_UNDECLARED,
                f"and {len(extra) - cap} more undeclared arguments of tool {quoted}",
                ARGUMENTS,
            )
        )
    return violations


def _validate(validator: Validator, instance: Any, json_size: int | None) -> ValidationResult:
    # json_size measures the whole message, an upper bound for the part validated here; it
    # may stand in for measuring only while the whole message is within the engine's bound.
    if json_size is None or json_size > validator.limits.max_instance_size:
        return validator.validate(instance)
    fast = validator.fast_path
    try:
        if fast is not None and fast(instance):
            return VALID
    except ValueError:
        pass  # the backend could not read the instance; validate() says why
    return validator.validate(instance, json_size=json_size)


def problem(code: str, message: str, pointer: str | None = None) -> dict[str, str]:
    """One entry of the ``problems`` list under :data:`VALIDATION_META_KEY`."""
    problem = {"code": code, "message": message}
    if pointer is not None:
        problem["pointer"] = pointer
    return problem


def _refusal(
    revision: Revision,
    tool: CheckedTool,
    violations: list[Violation],
    problems: list[dict[str, str]],
    heading: str,
    footer: list[str],
) -> CallCheck:
    """A refused call, answered with an ``isError`` result the model can learn from."""
    result = _error_result(revision, tool, violations, problems, heading, footer)
    return CallCheck(tuple(violations), error_result=result, tool=tool)


def refused_arguments(
    revision: Revision, tool: CheckedTool, name: str, found: list[Violation]
) -> dict[str, Any]:
    """The ``isError`` result for a call whose arguments a guard or a deep check refuses.

    It reads like a refused call's (text, ``_meta`` codes, ``structuredContent`` rules), the
    problems pointing into the arguments; only the errors among ``found`` are named.
    """
    refused = errors(found)
    problems = [
        problem(v.code, f"was refused: {v.message}", v.pointer.removeprefix(ARGUMENTS))
        for v in refused
    ]
    heading = f"The arguments of tool {quote_name(name)} were refused; the tool was not run:"
    return _error_result(revision, tool, refused, problems, heading, [])


def refused_request(method: str, found: list[Violation]) -> dict[str, Any]:
    """The JSON-RPC ``error`` (-32602) for a request other than ``tools/call`` (a
    ``resources/read``, a ``prompts/get``...) whose params a policy's guard refuses: a
    protocol error, since only a tool call has an ``isError`` result. It names each problem's
    code and place, never the value; ``data`` is ``{"codes": [...]}``."""
    refused = errors(found)
    reasons = "; ".join(
        f"{quote_name(v.pointer)} {v.message} [{v.code}]" for v in refused[:_TEXT_PROBLEMS]
    )
    if len(refused) > _TEXT_PROBLEMS:
        reasons += f"; and {len(refused) - _TEXT_PROBLEMS} more problems"
    return {
        "code": INVALID_PARAMS,
        "message": f"The {quote_name(method)} request was refused by strictmcp: {reasons}",
        "data": {"codes": list(dict.fromkeys(str(v.code) for v in refused))},
    }


def withheld_tool_result(
    revision: Revision, tool: CheckedTool, name: str, found: list[Violation]
) -> dict[str, Any]:
    """The ``isError`` result for a call of a tool withheld from the listing (``found`` says
    what its definition breaks), without quoting the definition."""
    heading = (
        f"Tool {quote_name(name)} was withheld from the tool listing by strictmcp, and the "
        "tool was not run:"
    )
    problems = [problem(v.code, v.message) for v in found]
    return _error_result(revision, tool, found, problems, heading, [])


def withheld_result(
    revision: Revision,
    tool: CheckedTool,
    name: str,
    broken: list[Violation],
    why: str = "does not match its outputSchema",
) -> dict[str, Any]:
    """The ``isError`` result replacing a result of ``tool`` that breaks its ``outputSchema``
    (or, as ``why`` says, a bound on results), ``broken`` saying how, without quoting it."""
    heading = f"Tool {quote_name(name)} returned a result that {why}; strictmcp withheld it:"
    problems = [problem(v.code, v.message) for v in broken]
    return _error_result(revision, tool, broken, problems, heading, [])


def _error_result(
    revision: Revision,
    tool: CheckedTool,
    violations: list[Violation],
    problems: list[dict[str, str]],
    heading: str,
    footer: list[str],
) -> dict[str, Any]:
    lines = [heading]
    lines += [f"- {_sentence(p)} [{p['code']}]" for p in problems[:_TEXT_PROBLEMS]]
    if len(problems) > _TEXT_PROBLEMS:
        lines.append(f"- and {len(problems) - _TEXT_PROBLEMS} more problems")
    lines += footer
    payload = {"codes": list(dict.fromkeys(v.code for v in violations)), "problems": problems}
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": "\n".join(lines)}],
        "isError": True,
        "_meta": {VALIDATION_META_KEY: payload},
    }
    # structuredContent must match the tool's outputSchema when it has one, which a report of
    # ours cannot promise; without one it is free, wherever the revision has it at all. The
    # text stays plain English rather than the payload's JSON: the model reads it.
    if revision.has_structured_output and "outputSchema" not in tool.definition:
        result["structuredContent"] = payload
    if revision.at_least(Revision.V2026_07_28):
        result["resultType"] = "complete"  # required on every result from 2026-07-28
    return result


def _sentence(problem: Mapping[str, str]) -> str:
    pointer = problem.get("pointer")
    if pointer is None:
        return problem["message"]
    if not pointer:
        return f"The arguments object {problem['message']}."
    top = pointer[1:].split("/", 1)[0].replace("~1", "/").replace("~0", "~")
    where = f"Argument {quote_name(top)}"
    if pointer != to_pointer([top]):
        where += f" (at {quote_name(pointer)})"
    return f"{where} {problem['message']}."
