"""tools/call: arguments, strict mode, isError results, and results against outputSchema."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from mcp_types.jsonrpc import INVALID_PARAMS

from strictmcp.protocol import (
    VALIDATION_META_KEY,
    CallCheck,
    Revision,
    Rule,
    Severity,
    ToolRegistry,
    Violation,
    check_call,
    check_result,
    declared_arguments,
)
from strictmcp.schema import IssueCode, Limits, Validator, compile_schema

ALL = list(Revision)
STRUCTURED = [r for r in Revision if r.has_structured_output]
UNSTRUCTURED = [r for r in Revision if not r.has_structured_output]
OBJECT_OUTPUT = [r for r in STRUCTURED if not r.structured_content_any_json]
ANY_OUTPUT = [r for r in Revision if r.structured_content_any_json]
SPEC = Path("/work/shared/mcp-schema")

# The arguments model FastMCP builds from a function signature with pydantic: titles, defaults,
# an Optional nested model behind anyOf/$ref, and no additionalProperties.
SEARCH_ISSUES = {
    "$defs": {
        "DateRange": {
            "properties": {
                "start": {"format": "date", "title": "Start", "type": "string"},
                "end": {
                    "anyOf": [{"type": "string"}, {"type": "null"}],
                    "default": None,
                    "title": "End",
                },
            },
            "required": ["start"],
            "title": "DateRange",
            "type": "object",
        }
    },
    "properties": {
        "query": {"title": "Query", "type": "string"},
        "limit": {"default": 10, "maximum": 100, "minimum": 1, "title": "Limit", "type": "integer"},
        "state": {
            "default": "open",
            "enum": ["open", "closed"],
            "title": "State",
            "type": "string",
        },
        "dates": {"anyOf": [{"$ref": "#/$defs/DateRange"}, {"type": "null"}], "default": None},
    },
    "required": ["query"],
    "title": "search_issuesArguments",
    "type": "object",
}
# mcp-server-time's convert_time: its input schema, and the output schema pydantic writes for
# its TimeConversionResult model (two TimeResult fields through $ref/$defs).
CONVERT_TIME = {
    "type": "object",
    "properties": {
        "source_timezone": {"type": "string", "description": "Source IANA timezone name"},
        "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
        "target_timezone": {"type": "string", "description": "Target IANA timezone name"},
    },
    "required": ["source_timezone", "time", "target_timezone"],
}
TIME_CONVERSION_RESULT = {
    "$defs": {
        "TimeResult": {
            "properties": {
                "timezone": {"title": "Timezone", "type": "string"},
                "datetime": {"title": "Datetime", "type": "string"},
                "day_of_week": {"title": "Day Of Week", "type": "string"},
                "is_dst": {"title": "Is Dst", "type": "boolean"},
            },
            "required": ["timezone", "datetime", "day_of_week", "is_dst"],
            "title": "TimeResult",
            "type": "object",
        }
    },
    "properties": {
        "source": {"$ref": "#/$defs/TimeResult"},
        "target": {"$ref": "#/$defs/TimeResult"},
        "time_difference": {"title": "Time Difference", "type": "string"},
    },
    "required": ["source", "target", "time_difference"],
    "title": "TimeConversionResult",
    "type": "object",
}
CONVERSION: dict[str, Any] = {
    "source": {
        "timezone": "Europe/Paris",
        "datetime": "2025-06-01T12:00:00+02:00",
        "day_of_week": "Sunday",
        "is_dst": True,
    },
    "target": {
        "timezone": "Asia/Tokyo",
        "datetime": "2025-06-01T19:00:00+09:00",
        "day_of_week": "Sunday",
        "is_dst": False,
    },
    "time_difference": "+7.0h",
}
SECRET = "sk-live-3f9a-DO-NOT-LEAK"


def registry_with(revision: Revision, *tools: dict[str, Any], **options: Any) -> ToolRegistry:
    registry = ToolRegistry(revision, **options)
    registry.update({"tools": list(tools)})
    return registry


def search_registry(revision: Revision, **fields: Any) -> ToolRegistry:
    return registry_with(
        revision, {"name": "search_issues", "inputSchema": SEARCH_ISSUES, **fields}
    )


def call(registry: ToolRegistry, arguments: Any, **options: Any) -> CallCheck:
    return check_call(registry, {"name": registry.names()[0], "arguments": arguments}, **options)


def text_of(check: CallCheck) -> str:
    assert check.error_result is not None
    (block,) = check.error_result["content"]
    assert block["type"] == "text"
    text: str = block["text"]
    return text


@cache
def spec_validator(revision: Revision, definition: str) -> Validator:
    spec = json.loads((SPEC / revision.value / "schema.json").read_text())
    defs = "$defs" if "$defs" in spec else "definitions"
    return compile_schema({**spec, "$ref": f"#/{defs}/{definition}"})


# --- valid calls ------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", ALL)
def test_realistic_tools_list_without_violations(revision: Revision) -> None:
    listing: dict[str, Any] = {
        "tools": [
            {"name": "search_issues", "inputSchema": SEARCH_ISSUES},
            {"name": "convert_time", "inputSchema": CONVERT_TIME},
        ]
    }
    if revision is Revision.V2026_07_28:
        listing.update(resultType="complete", cacheScope="private", ttlMs=0)
    assert spec_validator(revision, "ListToolsResult").validate(listing).valid
    assert ToolRegistry(revision).update(listing) == []


@pytest.mark.parametrize("revision", ALL)
@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "bug"},
        {"query": "bug", "limit": 100, "state": "closed", "dates": None},
        {"query": "bug", "dates": {"start": "2025-01-31", "end": None}},
    ],
)
def test_a_valid_call_is_allowed(revision: Revision, arguments: dict[str, Any]) -> None:
    registry = search_registry(revision)
    for strict in (False, True):
        checked = call(registry, arguments, strict=strict)
        assert checked == CallCheck(tool=registry.get("search_issues"))
        assert checked.allowed


@pytest.mark.parametrize("revision", ALL)
def test_missing_arguments_are_validated_as_an_empty_object(revision: Revision) -> None:
    registry = registry_with(
        revision,
        {"name": "now", "inputSchema": {"type": "object"}},
        {"name": "search_issues", "inputSchema": SEARCH_ISSUES},
    )
    assert check_call(registry, {"name": "now"}, strict=True).allowed
    refused = check_call(registry, {"name": "search_issues"})
    assert 'The arguments object is missing the required property "query".' in text_of(refused)


# --- unknown tools and bad params -------------------------------------------------------------


@pytest.mark.parametrize("revision", ALL)
def test_an_unknown_tool_is_a_jsonrpc_invalid_params_error(revision: Revision) -> None:
    registry = search_registry(revision)
    checked = check_call(registry, {"name": "delete_repo", "arguments": {"x": SECRET}})
    assert checked.jsonrpc_error == (INVALID_PARAMS, 'Unknown tool: "delete_repo"')
    assert checked.error_result is None
    assert not checked.allowed
    (violation,) = checked.violations
    assert (violation.rule, violation.pointer) == (Rule.TOOL_UNKNOWN, "/params/name")
    assert "the server did not list it" in violation.message


def test_an_unknown_tool_before_any_listing_says_so() -> None:
    checked = check_call(ToolRegistry(Revision.V2025_06_18), {"name": "x"})
    assert "no tools/list result has been seen yet" in checked.violations[0].message


def test_an_unknown_tool_name_is_escaped_and_bounded() -> None:
    name = "rm\u202e" + "x" * 5000
    checked = check_call(search_registry(Revision.V2025_11_25), {"name": name})
    assert checked.jsonrpc_error is not None
    assert checked.jsonrpc_error[1].isascii()
    assert len(checked.jsonrpc_error[1]) < 100
    assert "\\u202e" in checked.violations[0].message


@pytest.mark.parametrize("params", [None, {}, {"name": 5}, {"arguments": {}}])
def test_params_without_a_string_name_are_invalid_params(params: Any) -> None:
    checked = check_call(search_registry(Revision.V2025_06_18), params)
    assert checked.jsonrpc_error is not None
    assert checked.jsonrpc_error[0] == INVALID_PARAMS
    assert [v.rule for v in checked.violations] == [Rule.INVALID_PARAMS]


# --- invalid arguments: isError results -------------------------------------------------------


@pytest.mark.parametrize("revision", ALL)
def test_invalid_arguments_say_which_argument_and_why(revision: Revision) -> None:
    registry = search_registry(revision)
    checked = call(registry, {"limit": 500, "state": "merged"})
    assert checked.jsonrpc_error is None
    assert not checked.allowed
    (violation,) = checked.violations
    assert violation.rule is Rule.TOOL_ARGUMENTS_INVALID
    assert violation.pointer == "/params/arguments"
    assert {(i.code, i.instance_path) for i in violation.issues} == {
        (IssueCode.MISSING_REQUIRED, ""),
        (IssueCode.TOO_LARGE, "/limit"),
        (IssueCode.NOT_IN_ENUM, "/state"),
    }
    assert checked.error_result is not None
    assert checked.error_result["isError"] is True
    text = text_of(checked)
    assert text.startswith('Invalid arguments for tool "search_issues"; the tool was not run:')
    assert '- Argument "limit" must be at most 100. [too-large]' in text
    assert '- Argument "state" must be one of "open", "closed". [not-in-enum]' in text
    assert '- The arguments object is missing the required property "query".' in text


def test_a_nested_failure_names_the_argument_and_the_place_in_it() -> None:
    schema = {
        "type": "object",
        "properties": {
            "filter": {"type": "object", "properties": {"since": {"type": "string"}}},
        },
    }
    registry = registry_with(Revision.V2025_06_18, {"name": "find", "inputSchema": schema})
    text = text_of(call(registry, {"filter": {"since": 1}}))
    assert '- Argument "filter" (at "/filter/since") must be of type string. [wrong-type]' in text


def test_many_problems_are_listed_in_meta_and_summarised_in_text() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(30)}}
    registry = registry_with(Revision.V2025_11_25, {"name": "wide", "inputSchema": schema})
    checked = call(registry, {f"p{i}": "x" for i in range(30)})
    assert checked.error_result is not None
    assert len(checked.error_result["_meta"][VALIDATION_META_KEY]["problems"]) == 30
    assert "- and 20 more problems" in text_of(checked)


@pytest.mark.parametrize("revision", ALL)
@pytest.mark.parametrize("has_output_schema", [False, True])
def test_the_error_result_is_a_valid_call_tool_result_of_the_revision(
    revision: Revision, has_output_schema: bool
) -> None:
    fields = {"outputSchema": TIME_CONVERSION_RESULT} if has_output_schema else {}
    checked = call(search_registry(revision, **fields), {"limit": 0}, strict=True)
    result = checked.error_result
    assert result is not None
    assert spec_validator(revision, "CallToolResult").validate(result).valid
    payload = result["_meta"][VALIDATION_META_KEY]
    assert payload["codes"] == ["tool-arguments-invalid"]
    assert {p["code"] for p in payload["problems"]} == {"missing-required", "too-small"}
    # structuredContent only where the revision has it and no outputSchema constrains it.
    free = revision.has_structured_output and not has_output_schema
    assert ("structuredContent" in result) is free
    if free:
        assert result["structuredContent"] == payload
    assert ("resultType" in result) is (revision is Revision.V2026_07_28)
    # Whatever was reported must not fail the tool's own result checks.
    assert check_result(checked_registry(checked, revision), "search_issues", result) == []


def checked_registry(checked: CallCheck, revision: Revision) -> ToolRegistry:
    assert checked.tool is not None
    return registry_with(revision, dict(checked.tool.definition))


@pytest.mark.parametrize("revision", ALL)
def test_secret_argument_values_never_leave(revision: Revision) -> None:
    schema = {
        "type": "object",
        "properties": {
            "token": {"type": "string", "pattern": "^ghp_", "maxLength": 8},
            "mode": {"enum": ["a", "b"]},
            "fixed": {"const": "x"},
            "count": {"type": "integer"},
            "nested": {"type": "object", "properties": {"deep": {"format": "email"}}},
            "list": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        },
        "required": ["absent"],
        "dependentRequired": {"token": ["absent2"]},
        "propertyNames": {"maxLength": 40},
    }
    registry = registry_with(revision, {"name": "leaky", "inputSchema": schema})
    arguments = {
        "token": SECRET,
        "mode": SECRET,
        "fixed": SECRET,
        "count": SECRET,
        "nested": {"deep": SECRET},
        "list": [SECRET, SECRET],
        "undeclared": SECRET,
    }
    checked = call(registry, arguments, strict=True)
    assert {v.rule for v in checked.violations} == {
        Rule.TOOL_ARGUMENTS_INVALID,
        Rule.TOOL_ARGUMENT_UNDECLARED,
    }
    everything = json.dumps(
        [
            checked.error_result,
            checked.jsonrpc_error,
            [v.to_dict() for v in checked.violations],
            [str(v) for v in checked.violations],
            [str(i) for v in checked.violations for i in v.issues],
        ]
    )
    assert SECRET not in everything
    assert "sk-live" not in everything


# --- strict mode ------------------------------------------------------------------------------


def strict_registry(schema: dict[str, Any], **options: Any) -> ToolRegistry:
    return registry_with(Revision.V2025_11_25, {"name": "t", "inputSchema": schema}, **options)


@pytest.mark.parametrize("revision", ALL)
def test_strict_mode_refuses_arguments_the_schema_forgot_to_close(revision: Revision) -> None:
    registry = search_registry(revision)
    arguments = {"query": "bug", "sudo": True, "dates": {"start": "2025-01-01", "x": 1}}
    assert call(registry, arguments).allowed  # what the schema itself says
    checked = call(registry, arguments, strict=True)
    (violation,) = checked.violations
    assert violation.rule is Rule.TOOL_ARGUMENT_UNDECLARED
    assert violation.pointer == "/params/arguments/sudo"
    assert violation.message == (
        'argument "sudo" is not declared by the inputSchema of tool "search_issues"'
    )
    text = text_of(checked)
    assert '- Argument "sudo" is not declared by the tool\'s inputSchema.' in text
    assert 'declares these arguments: "query", "limit", "state", "dates".' in text
    assert checked.error_result is not None
    assert checked.error_result["_meta"][VALIDATION_META_KEY]["codes"] == [
        "tool-argument-undeclared"
    ]


def test_strict_mode_reports_alongside_schema_failures() -> None:
    checked = call(search_registry(Revision.V2025_06_18), {"limit": "x", "y": 1}, strict=True)
    assert [v.rule for v in checked.violations] == [
        Rule.TOOL_ARGUMENTS_INVALID,
        Rule.TOOL_ARGUMENT_UNDECLARED,
    ]
    assert checked.error_result is not None
    assert checked.error_result["_meta"][VALIDATION_META_KEY]["codes"] == [
        "tool-arguments-invalid",
        "tool-argument-undeclared",
    ]


@pytest.mark.parametrize(
    ("schema", "declared", "refused"),
    [
        ({"type": "object", "properties": {"a": {}}}, ["a"], ["b"]),
        ({"type": "object"}, [], ["a"]),
        (
            {"type": "object", "properties": {"a": {}}, "patternProperties": {"^x-": {}}},
            ["a", "x-trace"],
            ["trace-x", "b"],
        ),
        (
            {
                "type": "object",
                "allOf": [{"$ref": "#/$defs/Base"}, {"properties": {"b": {}}}],
                "$defs": {"Base": {"properties": {"a": {}}, "$ref": "#/$defs/Root"}, "Root": {}},
            },
            ["a", "b"],
            ["c"],
        ),
        (
            {
                "type": "object",
                "anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}],
                "oneOf": [{"properties": {"c": {}}}],
            },
            ["a", "b", "c"],
            ["d"],
        ),
        (
            {
                "type": "object",
                "properties": {"kind": {}},
                "if": {"properties": {"kind": {"const": "x"}}},
                "then": {"properties": {"x": {}}},
                "else": {"properties": {"y": {}}},
                "dependentSchemas": {"kind": {"properties": {"z": {}}}},
            },
            ["kind", "x", "y", "z"],
            ["w"],
        ),
        # A recursive root: the cycle is followed once.
        ({"type": "object", "$ref": "#", "properties": {"a": {}}}, ["a"], ["b"]),
    ],
)
def test_strict_mode_counts_names_declared_on_any_applicable_branch(
    schema: dict[str, Any], declared: list[str], refused: list[str]
) -> None:
    registry = strict_registry(schema)
    arguments = dict.fromkeys(declared + refused, 1)
    checked = call(registry, arguments, strict=True)
    assert [(v.rule, v.pointer) for v in checked.violations] == [
        (Rule.TOOL_ARGUMENT_UNDECLARED, f"/params/arguments/{name}") for name in refused
    ]


@pytest.mark.parametrize(
    "schema",
    [
        # The schema closes the object itself: the engine already reports extras.
        {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
        {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": False},
        # Open on purpose.
        {"type": "object", "additionalProperties": True},
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"type": "object", "allOf": [{"unevaluatedProperties": {"type": "integer"}}]},
        # Composition that cannot be followed with certainty.
        {"type": "object", "$ref": "#base", "$defs": {"B": {"$anchor": "base"}}},
        {"type": "object", "$dynamicRef": "#meta", "$dynamicAnchor": "meta"},
        {"type": "object", "allOf": [{"$id": "https://example.com/inner", "properties": {}}]},
    ],
)
def test_strict_mode_adds_nothing_where_the_schema_decides(schema: dict[str, Any]) -> None:
    registry = strict_registry(schema)
    tool = registry.get("t")
    assert tool is not None
    assert tool.input_validator is not None
    assert declared_arguments(tool.input_validator) is None
    checked = call(registry, {"a": "s", "extra": "s"}, strict=True)
    assert Rule.TOOL_ARGUMENT_UNDECLARED not in {v.rule for v in checked.violations}


def test_undeclared_names_are_escaped_in_messages_and_exact_in_pointers() -> None:
    registry = strict_registry({"type": "object", "properties": {"a": {}}})
    name = "a/b~\u202e" + "z" * 500
    checked = call(registry, {name: 1}, strict=True)
    (violation,) = checked.violations
    assert violation.pointer == "/params/arguments/a~1b~0\u202e" + "z" * 500
    assert violation.message.isascii()
    assert len(violation.message) < 200
    assert text_of(checked).isascii()


def test_undeclared_arguments_are_capped_at_the_issue_limit() -> None:
    registry = strict_registry({"type": "object"}, limits=Limits(max_issues=3))
    checked = call(registry, {f"x{i}": 1 for i in range(10)}, strict=True)
    assert [v.pointer for v in checked.violations] == [
        "/params/arguments/x0",
        "/params/arguments/x1",
        "/params/arguments/x2",
        "/params/arguments",
    ]
    assert checked.violations[-1].message.startswith("and 7 more undeclared arguments")


def test_strict_mode_leaves_non_object_arguments_to_the_schema() -> None:
    checked = call(strict_registry({"type": "object"}), ["a"], strict=True)
    assert [v.rule for v in checked.violations] == [Rule.TOOL_ARGUMENTS_INVALID]
    assert "The arguments object must be of type object." in text_of(checked)


# --- json_size and the fast path --------------------------------------------------------------

RECURSIVE_ARGS = {
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/Node"}},
    "$defs": {
        "Node": {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/Node"}}}}
    },
}


@pytest.mark.parametrize("schema", [SEARCH_ISSUES, RECURSIVE_ARGS])
@pytest.mark.parametrize(
    "arguments",
    [{"query": "q"}, {"limit": "x"}, {"tree": {"kids": [{"kids": [{}]}]}}, {"tree": {"kids": 1}}],
)
def test_json_size_changes_nothing_but_speed(schema: dict[str, Any], arguments: Any) -> None:
    registry = registry_with(Revision.V2025_11_25, {"name": "t", "inputSchema": schema})
    measured = call(registry, arguments)
    size = len(json.dumps({"params": {"name": "t", "arguments": arguments}}))
    assert call(registry, arguments, json_size=size) == measured
    # A size over the engine's bound is not trusted as the arguments' size: they are measured.
    assert call(registry, arguments, json_size=10**9) == measured


def test_too_deep_arguments_are_refused_even_with_json_size() -> None:
    registry = registry_with(Revision.V2025_11_25, {"name": "t", "inputSchema": RECURSIVE_ARGS})
    tree: dict[str, Any] = {}
    for _ in range(100):
        tree = {"kids": [tree]}
    checked = call(registry, {"tree": tree}, json_size=2000)
    (violation,) = checked.violations
    assert violation.issues[0].code is IssueCode.INSTANCE_TOO_DEEP


# --- tools that cannot be called --------------------------------------------------------------


@pytest.mark.parametrize("revision", ALL)
def test_a_listed_tool_with_an_invalid_definition_is_refused_as_a_tool_error(
    revision: Revision,
) -> None:
    registry = registry_with(
        revision,
        {"name": "ext", "inputSchema": {"type": "object", "$ref": "https://example.com/a"}},
        {"name": "dup", "inputSchema": {"type": "object"}},
        {"name": "dup", "inputSchema": {"type": "object", "properties": {"rm": {}}}},
    )
    for name, rule in (("ext", Rule.TOOL_INPUT_SCHEMA_INVALID), ("dup", Rule.TOOL_NAME_DUPLICATE)):
        checked = check_call(registry, {"name": name, "arguments": {"rm": SECRET}})
        assert checked.jsonrpc_error is None
        assert [(v.rule, v.pointer) for v in checked.violations] == [(rule, "/params/name")]
        assert checked.error_result is not None
        assert checked.error_result["_meta"][VALIDATION_META_KEY]["codes"] == [rule.value]
        assert f'Tool "{name}" cannot be called' in text_of(checked)
        assert spec_validator(revision, "CallToolResult").validate(checked.error_result).valid
        assert SECRET not in json.dumps(checked.error_result)


# --- results ----------------------------------------------------------------------------------


def time_registry(revision: Revision, output: Any = TIME_CONVERSION_RESULT) -> ToolRegistry:
    tool = {"name": "convert_time", "inputSchema": CONVERT_TIME, "outputSchema": output}
    return registry_with(revision, tool)


def result(structured: Any = None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"content": [{"type": "text", "text": "done"}], **fields}
    if structured is not None:
        out["structuredContent"] = structured
    return out


@pytest.mark.parametrize("revision", STRUCTURED)
def test_structured_content_matching_the_output_schema_passes(revision: Revision) -> None:
    registry = time_registry(revision)
    assert check_result(registry, "convert_time", result(CONVERSION)) == []
    assert check_result(registry, "convert_time", result(CONVERSION), json_size=900) == []


@pytest.mark.parametrize("revision", STRUCTURED)
def test_structured_content_is_required_with_an_output_schema(revision: Revision) -> None:
    (violation,) = check_result(time_registry(revision), "convert_time", result())
    assert (violation.rule, violation.severity) == (
        Rule.TOOL_STRUCTURED_CONTENT_MISSING,
        Severity.ERROR,
    )
    assert violation.pointer == "/structuredContent"


@pytest.mark.parametrize("revision", STRUCTURED)
def test_structured_content_not_matching_the_output_schema_fails(revision: Revision) -> None:
    wrong = {**CONVERSION, "source": {**CONVERSION["source"], "is_dst": SECRET}}
    for size in (None, 900):
        violations = check_result(
            time_registry(revision), "convert_time", result(wrong), json_size=size
        )
        (violation,) = violations
        assert violation.rule is Rule.TOOL_STRUCTURED_CONTENT_INVALID
        assert [(i.code, i.instance_path) for i in violation.issues] == [
            (IssueCode.WRONG_TYPE, "/source/is_dst")
        ]
        assert SECRET not in json.dumps([v.to_dict() for v in violations])


@pytest.mark.parametrize("revision", STRUCTURED)
def test_error_results_are_not_checked_against_the_output_schema(revision: Revision) -> None:
    registry = time_registry(revision)
    assert check_result(registry, "convert_time", result(isError=True)) == []
    assert check_result(registry, "convert_time", result({"error": "x"}, isError=True)) == []


@pytest.mark.parametrize("revision", OBJECT_OUTPUT)
@pytest.mark.parametrize("structured", [[1, 2], "text", 3, None])
def test_structured_content_is_an_object_before_2026_07_28(
    revision: Revision, structured: Any
) -> None:
    for registry in (
        time_registry(revision),
        registry_with(revision, {"name": "convert_time", "inputSchema": CONVERT_TIME}),
    ):
        for is_error in (False, True):
            shaped = {**result(), "structuredContent": structured, "isError": is_error}
            (violation,) = check_result(registry, "convert_time", shaped)
            assert violation.rule is Rule.TOOL_STRUCTURED_CONTENT_NOT_OBJECT


@pytest.mark.parametrize("revision", ANY_OUTPUT)
@pytest.mark.parametrize(
    ("output", "good", "bad"),
    [
        ({"type": "array", "items": {"type": "string"}}, ["a", "b"], ["a", 1]),
        ({"type": "string", "maxLength": 3}, "abc", "abcd"),
        ({"type": "null"}, None, 0),
        (TIME_CONVERSION_RESULT, CONVERSION, [CONVERSION]),
    ],
)
def test_structured_content_may_be_any_json_from_2026_07_28(
    revision: Revision, output: Any, good: Any, bad: Any
) -> None:
    registry = time_registry(revision, output)
    assert check_result(registry, "convert_time", {**result(), "structuredContent": good}) == []
    (violation,) = check_result(registry, "convert_time", {**result(), "structuredContent": bad})
    assert violation.rule is Rule.TOOL_STRUCTURED_CONTENT_INVALID
    (missing,) = check_result(registry, "convert_time", result())
    assert missing.rule is Rule.TOOL_STRUCTURED_CONTENT_MISSING


@pytest.mark.parametrize("revision", ANY_OUTPUT)
def test_any_structured_content_without_output_schema_from_2026_07_28(revision: Revision) -> None:
    registry = registry_with(revision, {"name": "t", "inputSchema": {"type": "object"}})
    for structured in ([1], "s", None, {"a": 1}):
        assert check_result(registry, "t", {**result(), "structuredContent": structured}) == []


@pytest.mark.parametrize("revision", UNSTRUCTURED)
def test_an_output_schema_before_2025_06_18_is_not_enforced(revision: Revision) -> None:
    assert check_result(time_registry(revision), "convert_time", result()) == []


@pytest.mark.parametrize("revision", STRUCTURED)
def test_a_tool_without_output_schema_needs_no_structured_content(revision: Revision) -> None:
    registry = registry_with(revision, {"name": "t", "inputSchema": {"type": "object"}})
    assert check_result(registry, "t", result()) == []
    assert check_result(registry, "t", result({"anything": [1]})) == []


def test_a_result_of_an_unlisted_tool_is_reported_unchecked() -> None:
    (violation,) = check_result(time_registry(Revision.V2025_06_18), "gone", result())
    assert (violation.rule, violation.severity) == (Rule.TOOL_UNKNOWN, Severity.WARNING)


def test_a_result_is_checked_against_the_listing_its_call_was_checked_against() -> None:
    registry = time_registry(Revision.V2025_11_25)
    checked = check_call(
        registry,
        {
            "name": "convert_time",
            "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "UTC"},
        },
    )
    assert checked.allowed
    # The server relists with a different output schema before the result arrives.
    relisted = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    registry.update(
        {"tools": [{"name": "convert_time", "inputSchema": CONVERT_TIME, "outputSchema": relisted}]}
    )
    answer = result(CONVERSION)
    assert check_result(registry, "convert_time", answer, tool=checked.tool) == []
    assert [v.rule for v in check_result(registry, "convert_time", answer)] == [
        Rule.TOOL_STRUCTURED_CONTENT_INVALID
    ]


def test_violations_are_value_free_dicts() -> None:
    violation = Violation(Rule.TOOL_UNKNOWN, "m", "/params/name")
    assert violation.to_dict() == {
        "code": "tool-unknown",
        "severity": "error",
        "message": "m",
        "pointer": "/params/name",
    }


@pytest.mark.parametrize(
    ("revision", "result", "expected"),
    [
        (
            Revision.V2025_06_18,
            {"content": [], "structuredContent": {"a": 1}},
            ["tool-output-schema-invalid"],
        ),
        (
            Revision.V2026_07_28,
            {"content": [], "structuredContent": [1]},
            ["tool-output-schema-invalid"],
        ),
        (Revision.V2025_06_18, {"content": [], "isError": True}, []),
    ],
)
def test_results_of_a_tool_whose_output_schema_was_refused_fail_closed(
    revision: Revision, result: dict[str, Any], expected: list[str]
) -> None:
    tools = ToolRegistry(revision)
    broken = {
        "name": "t",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"a": {"type": "strnig"}}},
    }
    tools.update({"tools": [broken]})
    assert [v.code for v in check_result(tools, "t", result)] == expected
