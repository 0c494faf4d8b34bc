"""The Validation Protocol's dry-run validate tool."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from strictmcp.enforce import DryRun, Enforcer
from strictmcp.guards import GuardFinding
from strictmcp.guards.deep import DeepValidators, error, warning
from strictmcp.guards.text import TextGuard
from strictmcp.guards.validation import (
    FALLBACK_NAME,
    INPUT_SCHEMA,
    OUTPUT_SCHEMA,
    capability,
    choose_name,
    tool_definition,
)
from strictmcp.policy import GuardRule, Policy
from strictmcp.protocol import Revision, ToolRegistry, check_tool
from strictmcp.schema import compile_schema

SEARCH = {
    "name": "search",
    "description": "Search the archive",
    "inputSchema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": 20},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}


def registry(revision: Revision = Revision.V2025_06_18) -> ToolRegistry:
    tools = ToolRegistry(revision)
    tools.update({"tools": [SEARCH]})
    return tools


def dry_run(revision: Revision = Revision.V2025_06_18, **options: Any) -> DryRun:
    return Enforcer(**options).dry_run(registry(revision))


def answer(dry: DryRun, arguments: Any) -> dict[str, Any]:
    return asyncio.run(dry.answer(arguments))


def test_definition_is_a_valid_tool_in_every_revision() -> None:
    for revision in Revision:
        definition = tool_definition("validate", revision)
        checked = check_tool(definition, revision)
        assert checked.usable, checked.violations
        assert ("outputSchema" in definition) == revision.has_structured_output
    assert capability("validate") == {"toolValidation": {"tool": "validate"}}


def test_the_name_never_shadows_a_server_tool() -> None:
    assert choose_name(["search"]) == "validate"
    assert choose_name(["validate"]) == FALLBACK_NAME
    assert choose_name(["validate", FALLBACK_NAME]) == f"{FALLBACK_NAME}_2"
    assert choose_name(["check"], preferred="check") == FALLBACK_NAME


def test_valid_arguments() -> None:
    result = answer(dry_run(), {"tool": "search", "arguments": {"query": "cats"}})
    assert result["isError"] is False
    assert result["structuredContent"] == {"valid": True, "errors": [], "warnings": []}
    compile_schema(OUTPUT_SCHEMA).validate(result["structuredContent"])
    assert "would be accepted" in result["content"][0]["text"]


def test_schema_errors_are_listed_one_per_problem_without_values() -> None:
    secret = "sk-live-" + "x" * 30
    result = answer(
        dry_run(),
        {"tool": "search", "arguments": {"query": secret, "limit": 0, "token": "t"}},
    )
    content = result["structuredContent"]
    assert content["valid"] is False
    assert sorted(content["errors"]) == [
        '(arguments): property "token" is not allowed [unexpected-property]',
        "/limit: must be at least 1 [too-small]",
        "/query: must be at most 20 characters long [too-long]",
    ]
    assert secret not in str(result)


def test_unknown_tool() -> None:
    content = answer(dry_run(), {"tool": "nope", "arguments": {}})["structuredContent"]
    assert content["valid"] is False
    assert content["errors"][0].startswith('(tool): unknown tool "nope"')


def test_guards_and_deep_checks_join_in() -> None:
    guard = Policy(rules=(GuardRule("search", "/query", TextGuard(max_length=3)),))
    deep = DeepValidators()

    @deep("search")
    def archive_online(arguments: Any) -> list[GuardFinding]:
        return [warning("the archive is read-only today"), error("index is rebuilding")]

    dry = dry_run(policy=guard, deep=deep)
    content = answer(dry, {"tool": "search", "arguments": {"query": "cats"}})["structuredContent"]
    assert content["valid"] is False
    assert [line.split(" [")[-1] for line in content["errors"]] == [
        "text-too-long]",
        "deep-invalid]",
    ]
    assert content["warnings"] == ["(arguments): the archive is read-only today [deep-invalid]"]


def test_audit_mode_guards_only_warn() -> None:
    guard = Policy(rules=(GuardRule("search", "/query", TextGuard(max_length=3)),), mode="audit")
    content = answer(
        dry_run(policy=guard),
        {"tool": "search", "arguments": {"query": "cats"}},
    )["structuredContent"]
    assert content["valid"] is True
    assert [w.split(" [")[-1] for w in content["warnings"]] == ["text-too-long]"]


def test_deep_checks_do_not_run_when_the_schema_already_refuses() -> None:
    deep = DeepValidators()
    ran: list[bool] = []

    @deep("search")
    def record(arguments: Any) -> list[GuardFinding]:
        ran.append(True)
        return []

    answer(dry_run(deep=deep), {"tool": "search", "arguments": {"limit": 3}})
    assert ran == []


@pytest.mark.parametrize("arguments", [None, {}, {"tool": 3, "arguments": {}}, {"tool": "x"}])
def test_malformed_validate_calls_are_tool_errors(arguments: Any) -> None:
    result = answer(dry_run(), arguments)
    assert result["isError"] is True
    assert "structuredContent" not in result


def test_revisions_shape_the_result() -> None:
    old = answer(dry_run(Revision.V2025_03_26), {"tool": "search", "arguments": {}})
    assert "structuredContent" not in old
    new = answer(dry_run(Revision.V2026_07_28), {"tool": "search", "arguments": {}})
    assert new["resultType"] == "complete"
    assert new["structuredContent"]["valid"] is False


def test_input_schema_is_what_the_protocol_says() -> None:
    validator = compile_schema(INPUT_SCHEMA)
    assert validator.validate({"tool": "t", "arguments": {}}).valid
    assert not validator.validate({"tool": "t"}).valid
