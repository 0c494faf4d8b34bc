"""Prompt arguments in ``prompts/get`` against the ``Prompt`` from ``prompts/list``."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import pytest

from mcp_schema_support import EXAMPLES, definitions
from strictmcp.protocol import Revision, Rule, Severity, check_prompt_arguments
from strictmcp.schema import Validator, compile_schema


def example(kind: str, name: str) -> Any:
    return json.loads((EXAMPLES / kind / name).read_text())


def spec_arguments(revision: Revision) -> Validator:
    """What each revision's ``GetPromptRequest`` allows as ``params.arguments``."""
    defs = definitions(revision)
    params = defs.get("GetPromptRequestParams") or defs["GetPromptRequest"]["properties"]["params"]
    return compile_schema(params["properties"]["arguments"])  # a node without references


CODE_REVIEW = example("ListPromptsResult", "prompts-list-with-cursor-and-ttl.json")["prompts"][0]
PROMPT = {
    "name": "p",
    "arguments": [
        {"name": "language", "required": True},
        {"name": "style", "required": False},
        {"name": "tone"},
    ],
}


def found(arguments: dict[str, Any] | None) -> list[tuple[Rule | Enum, str, Severity]]:
    return [(v.rule, v.pointer, v.severity) for v in check_prompt_arguments(PROMPT, arguments)]


@pytest.mark.parametrize(
    "params",
    [
        example("GetPromptRequestParams", "get-code-review-prompt.json"),
        example("GetPromptRequest", "get-prompt-request.json")["params"],
    ],
)
def test_example_request_matches_example_prompt(params: dict[str, Any]) -> None:
    assert params["name"] == CODE_REVIEW["name"]
    assert check_prompt_arguments(CODE_REVIEW, params["arguments"]) == []


@pytest.mark.parametrize(
    "arguments",
    [{"language": "py"}, {"language": "py", "style": "terse", "tone": ""}],
)
def test_declared_string_arguments_pass(arguments: dict[str, Any]) -> None:
    assert found(arguments) == []


@pytest.mark.parametrize("arguments", [None, {}, {"style": "terse"}])
def test_required_arguments_must_be_present(arguments: dict[str, Any] | None) -> None:
    pointer = "/params" if arguments is None else "/params/arguments"
    assert found(arguments) == [(Rule.PROMPT_ARGUMENT_MISSING, pointer, Severity.ERROR)]


def test_no_arguments_needed_when_none_are_required() -> None:
    for prompt in (
        {"name": "p"},
        {"name": "p", "arguments": []},
        {"name": "p", "arguments": [{"name": "x"}]},
    ):
        assert check_prompt_arguments(prompt, None) == []


@pytest.mark.parametrize("value", [1, 1.5, True, None, ["a"], {"a": "b"}])
def test_values_must_be_strings_in_every_revision(value: Any) -> None:
    assert found({"language": "py", "style": value}) == [
        (Rule.PROMPT_ARGUMENT_NOT_STRING, "/params/arguments/style", Severity.ERROR)
    ]
    # Every revision's GetPromptRequest agrees: arguments are strings.
    for revision in Revision:
        assert not spec_arguments(revision).is_valid({"style": value})
        assert spec_arguments(revision).is_valid({"style": "terse"})


def test_undeclared_arguments_are_a_warning() -> None:
    assert found({"language": "py", "colour": "red"}) == [
        (Rule.PROMPT_ARGUMENT_UNKNOWN, "/params/arguments/colour", Severity.WARNING)
    ]


def test_undeclared_non_string_gets_both() -> None:
    assert found({"language": "py", "n": 3}) == [
        (Rule.PROMPT_ARGUMENT_UNKNOWN, "/params/arguments/n", Severity.WARNING),
        (Rule.PROMPT_ARGUMENT_NOT_STRING, "/params/arguments/n", Severity.ERROR),
    ]


def test_malformed_declarations_are_skipped() -> None:
    prompt = {"name": "p", "arguments": [None, {"required": True}, {"name": 5, "required": True}]}
    assert check_prompt_arguments(prompt, {}) == []
    assert check_prompt_arguments({"name": "p", "arguments": "x"}, {}) == []


def test_names_are_escaped_and_values_never_echoed() -> None:
    name = "a/b\u0000" + "n" * 100
    violations = check_prompt_arguments(PROMPT, {"language": 1, name: {"SECRET": "SECRET"}})
    assert [v.pointer for v in violations] == [
        "/params/arguments/language",
        "/params/arguments/a~1b\u0000" + "n" * 100,
        "/params/arguments/a~1b\u0000" + "n" * 100,
    ]
    for violation in violations:
        assert "SECRET" not in violation.message
        assert "\u0000" not in violation.message
        assert "n" * 64 not in violation.message
    assert "\\u0000" in violations[1].message
