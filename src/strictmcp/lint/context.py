"""What a rule's check sees: one tool definition, its schemas compiled once, and the run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..policy import Policy
from ..protocol import Revision, Violation, check_tool_name
from ..schema import SchemaError, SchemaErrorCode, Validator, compile_schema
from .walk import Node, walk_schema

_UNWALKABLE = frozenset(
    {
        SchemaErrorCode.NOT_A_SCHEMA,
        SchemaErrorCode.TOO_DEEP,
        SchemaErrorCode.TOO_MANY_SUBSCHEMAS,
        SchemaErrorCode.TOO_EXPENSIVE,
    }
)

#: Observed ``tools/call`` results, per tool name (what ``strictmcp check`` saw).
Results = Mapping[str, Sequence[Mapping[str, Any]]]


@dataclass
class LintContext:
    """The run: the revision and policy linted against, observed results, every tool."""

    revision: Revision
    policy: Policy | None
    results: Results
    tools: Sequence[Any]
    _first_index: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _guards: dict[str, Policy] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for index, tool in enumerate(self.tools):
            name = tool.get("name") if isinstance(tool, Mapping) else None
            if isinstance(name, str):
                self._first_index.setdefault(name, index)

    def first_index(self, name: str) -> int:
        """Where the first tool with this name is listed."""
        return self._first_index[name]

    def guards_of_kind(self, kind: str) -> Policy | None:
        """The policy's rules with guards of one kind (``path``, ``url``...), as a policy;
        None when no policy was given."""
        if self.policy is None:
            return None
        if kind not in self._guards:
            rules = tuple(rule for rule in self.policy.rules if rule.guard.kind == kind)
            self._guards[kind] = Policy(rules=rules, mode=self.policy.mode)
        return self._guards[kind]


class SchemaView:
    """One of a tool's schemas (``inputSchema`` or ``outputSchema``), compiled once."""

    def __init__(self, field_name: str, schema: Any) -> None:
        self.field = field_name
        self.pointer = "/" + field_name
        self.schema = schema

    @cached_property
    def compiled(self) -> tuple[Validator | None, SchemaError | None]:
        """The engine's validator, or why the engine refused the schema."""
        if not isinstance(self.schema, dict):
            return None, None
        try:
            return compile_schema(self.schema), None
        except SchemaError as error:
            return None, error

    @property
    def validator(self) -> Validator | None:
        """The compiled schema, or None when it was refused or is not an object."""
        return self.compiled[0]

    @property
    def error(self) -> SchemaError | None:
        """Why the engine refused the schema, or None."""
        return self.compiled[1]

    @cached_property
    def nodes(self) -> list[Node]:
        """Every subschema, root first (see :func:`walk_schema`); none when the engine
        refused the schema for its size or shape: then that refusal is the one finding
        worth having, not hundreds about a document nobody can validate with."""
        if self.error is not None and self.error.code in _UNWALKABLE:
            return []
        return walk_schema(self.schema, self.pointer)


class ToolView:
    """One tool definition as rules see it. ``definition`` is empty when the listed value
    was not a JSON object (one rule says so; the others then find nothing)."""

    def __init__(self, index: int, tool: Any, context: LintContext) -> None:
        self.index = index
        self.is_object = isinstance(tool, Mapping)
        self.definition: Mapping[str, Any] = tool if isinstance(tool, Mapping) else {}
        raw_name = self.definition.get("name")
        self.name = raw_name if isinstance(raw_name, str) else None
        self.context = context

    @cached_property
    def input(self) -> SchemaView | None:
        """The input schema, when the definition has one."""
        if "inputSchema" not in self.definition:
            return None
        return SchemaView("inputSchema", self.definition["inputSchema"])

    @cached_property
    def output(self) -> SchemaView | None:
        """The output schema, when the definition has one."""
        if "outputSchema" not in self.definition:
            return None
        return SchemaView("outputSchema", self.definition["outputSchema"])

    @property
    def schemas(self) -> list[SchemaView]:
        """The schemas the definition has, input first."""
        return [view for view in (self.input, self.output) if view is not None]

    @cached_property
    def name_violations(self) -> list[Violation]:
        """What the protocol layer's tool-name check says about this tool's name."""
        if not self.is_object:
            return []
        return check_tool_name(self.definition.get("name"), self.context.revision, pointer="/name")

    @property
    def results(self) -> Sequence[Mapping[str, Any]]:
        """The observed results of calls to this tool (empty when none were given)."""
        return self.context.results.get(self.name, ()) if self.name is not None else ()
