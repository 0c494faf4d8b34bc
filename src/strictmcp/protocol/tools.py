"""Tool definitions as a ``tools/list`` result lists them: names and schemas, compiled once.

Pointers in the violations here are relative to a ``tools/list`` result
(``/tools/3/inputSchema/properties/path``); :func:`check_tool` alone takes the tool's own
pointer as ``pointer``.

Decisions worth knowing:

- Every schema compiles with the engine's defaults (2020-12 unless ``$schema`` says otherwise,
  formats asserted, linear-time patterns, no reference leaving the document). Revisions before
  2025-11-25 named no dialect; 2020-12 is what 2025-11-25 made the default and what the
  official Python SDK's ``jsonschema.validate`` falls back to.
- A schema must be a JSON object: every revision's ``Tool`` says so, so ``true`` is refused.
- *Object-rooted* means a root ``"type": "object"``, exactly what the MCP schema requires and
  what SDK clients parse as a literal. A root that constrains arguments to objects some other
  way (``"type": ["object"]``, or no ``type`` but a local ``$ref`` whose target has it, as
  pydantic writes for recursive models) is a *warning*: validation still rejects non-objects,
  but strict clients reject the definition. Anything else is an error.
- ``outputSchema`` under a revision without structured output is ignored (a warning): the
  revision gives it no meaning, so results are not checked against it.
- Duplicate names are an error in every revision: ``tools/call`` names a tool and nothing
  else, so a call to a duplicated name cannot be matched to one schema.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from types import MappingProxyType
from typing import Any

from ..schema import Limits, SchemaError, Validator, compile_schema
from ..schema.messages import quote_name
from ..schema.pointer import from_fragment
from .revisions import Revision
from .rules import Rule
from .tool_names import check_tool_name
from .violations import Severity, Violation, errors

# Engine messages may quote a server's schema (a reference URI, a pattern); keep them short.
_MESSAGE_LIMIT = 240


@dataclass(frozen=True)
class CheckedTool:
    """One tool as listed, with its schemas compiled and the rules its definition breaks.

    ``name`` is None when the definition has no string name. A validator is None when its
    schema is absent, was refused, or has no meaning in the revision. Violation pointers are
    relative to the ``tools/list`` result the tool came in.
    """

    name: str | None
    definition: Mapping[str, Any]
    input_validator: Validator | None
    output_validator: Validator | None
    violations: tuple[Violation, ...] = ()

    @cached_property
    def usable(self) -> bool:
        """Whether no error was found: calls to an unusable tool are refused."""
        return not errors(self.violations)


def check_tool(
    tool: Mapping[str, Any],
    revision: Revision,
    *,
    portable: bool = False,
    limits: Limits | None = None,
    pointer: str = "",
) -> CheckedTool:
    """Check and compile one tool definition; never raises for a bad definition.

    ``portable`` makes non-portable names errors (see :func:`check_tool_name`); ``limits``
    bounds the schemas (the engine's defaults otherwise); ``pointer`` is where the tool sits
    in its message (``/tools/3``). A ``tool`` that is not a JSON object (it came from the
    wire) gets :attr:`Rule.INVALID_RESULT`, no name and an empty ``definition``.
    """
    if not isinstance(tool, Mapping):
        message = f"a tool definition is a JSON object, not {json_type(tool)}"
        violation = Violation(Rule.INVALID_RESULT, message, pointer)
        return CheckedTool(None, MappingProxyType({}), None, None, (violation,))
    name = tool.get("name")
    violations = check_tool_name(name, revision, portable=portable, pointer=f"{pointer}/name")
    input_validator = None
    if "inputSchema" not in tool:
        violations.append(
            Violation(
                Rule.TOOL_INPUT_SCHEMA_INVALID,
                "tool has no inputSchema; every revision requires one",
                f"{pointer}/inputSchema",
            )
        )
    else:
        schema, where = tool["inputSchema"], f"{pointer}/inputSchema"
        violations += _object_root(schema, where, Rule.TOOL_INPUT_SCHEMA_NOT_OBJECT)
        input_validator, found = _compile(schema, where, Rule.TOOL_INPUT_SCHEMA_INVALID, limits)
        violations += found
    output_validator = None
    if "outputSchema" in tool:
        if revision.has_structured_output:
            schema, where = tool["outputSchema"], f"{pointer}/outputSchema"
            # SEP-2106: from 2026-07-28 structured results may be any JSON value.
            if not revision.structured_content_any_json:
                violations += _object_root(schema, where, Rule.TOOL_OUTPUT_SCHEMA_NOT_OBJECT)
            output_validator, found = _compile(
                schema, where, Rule.TOOL_OUTPUT_SCHEMA_INVALID, limits
            )
            violations += found
        else:
            violations.append(
                Violation(
                    Rule.TOOL_OUTPUT_SCHEMA_NOT_IN_REVISION,
                    f"outputSchema is not part of {revision.value} (structured output arrived "
                    "in 2025-06-18); it is ignored and results are not checked against it",
                    f"{pointer}/outputSchema",
                    Severity.WARNING,
                )
            )
    return CheckedTool(
        name=name if isinstance(name, str) else None,
        definition=tool,
        input_validator=input_validator,
        output_validator=output_validator,
        violations=tuple(violations),
    )


def check_tools(
    tools: Sequence[Mapping[str, Any]],
    revision: Revision,
    *,
    portable: bool = False,
    limits: Limits | None = None,
    already_listed: Collection[str] = (),
) -> list[CheckedTool]:
    """Check the ``tools`` array of one ``tools/list`` result, in order.

    A name listed earlier in the array, or in ``already_listed`` (names from earlier pages of
    the same paginated listing), gets :attr:`Rule.TOOL_NAME_DUPLICATE` at ``/tools/<i>/name``.
    """
    seen = set(already_listed)
    checked: list[CheckedTool] = []
    for index, tool in enumerate(tools):
        pointer = f"/tools/{index}"
        result = check_tool(tool, revision, portable=portable, limits=limits, pointer=pointer)
        name = result.name
        if name is not None:
            if name in seen:
                duplicate = Violation(
                    Rule.TOOL_NAME_DUPLICATE,
                    f"tool name {quote_name(name)} is listed more than once; a call "
                    "names only the tool, so it cannot be matched to one definition",
                    f"{pointer}/name",
                )
                result = replace(result, violations=(*result.violations, duplicate))
            seen.add(name)
        checked.append(result)
    return checked


def resolve_local_ref(document: Any, ref: str) -> Any:
    """The target of a same-document JSON Pointer reference (``#/$defs/Args``), or None.

    Anchors and URIs are not followed: a caller that needs certainty treats None as unknown.
    """
    tokens = from_fragment(ref)
    if tokens is None:
        return None
    node = document
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _compile(
    schema: Any, where: str, invalid: Rule, limits: Limits | None
) -> tuple[Validator | None, list[Violation]]:
    """Compile one of a tool's schemas (found at ``where``), or say why it was refused."""
    field = where.rsplit("/", 1)[-1]
    if not isinstance(schema, dict):
        message = f"{field} must be a JSON Schema object, not {json_type(schema)}"
        return None, [Violation(invalid, message, where)]
    try:
        return compile_schema(schema, limits=limits), []
    except SchemaError as error:
        at = f" at {error.location}" if error.location else ""
        message = _bounded(f"{field} was refused [{error.code.value}]{at}: {error.message}")
        return None, [Violation(invalid, message, where + error.location)]


def _object_root(schema: Any, where: str, rule: Rule) -> list[Violation]:
    """``rule`` broken, as an error or a warning, unless ``schema`` is object-rooted.

    A schema that is not a JSON object is left to :func:`_compile`, which refuses it.
    """
    if not isinstance(schema, dict):
        return []
    field = where.rsplit("/", 1)[-1]
    declared = schema.get("type")
    if declared == "object":
        return []
    wire = 'the MCP schema requires "type": "object" at the root and strict clients reject this'
    if declared == ["object"]:
        message = f'{field} declares "type" as the list ["object"]; {wire}'
        return [Violation(rule, message, where, Severity.WARNING)]
    if declared is None and _reaches_object(schema):
        message = f'{field} reaches "type": "object" only through its root $ref; {wire}'
        return [Violation(rule, message, where, Severity.WARNING)]
    found = (
        "has no type"
        if declared is None
        else f"has type {_bounded(json.dumps(declared, default=str))}"
    )
    message = (
        f'{field} must have "type": "object" at the root, as the MCP schema requires; it {found}'
    )
    return [Violation(rule, message, where)]


def _reaches_object(schema: dict[str, Any]) -> bool:
    """Whether a root without ``type`` constrains instances to objects through local ``$ref``s."""
    node: Any = schema
    followed: set[str] = set()
    while isinstance(node, dict) and "type" not in node:
        ref = node.get("$ref")
        if not isinstance(ref, str) or ref in followed:
            return False
        followed.add(ref)
        node = resolve_local_ref(schema, ref)
    return isinstance(node, dict) and node.get("type") in ("object", ["object"])


def json_type(value: Any) -> str:
    """The JSON type of ``value`` with its article, for messages: ``an array``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    return "an object" if isinstance(value, Mapping) else f"a {type(value).__name__}"


def _bounded(text: str) -> str:
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"
