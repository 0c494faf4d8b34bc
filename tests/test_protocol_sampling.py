"""Sampling with tools (SEP-1577): capability, tool-use/tool-result pairing, results."""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import Enum
from typing import Any

import pytest

from mcp_schema_support import EXAMPLES
from mcp_schema_support import validator as spec_validator
from strictmcp.protocol import (
    Revision,
    Rule,
    Severity,
    Violation,
    check_create_message,
    check_create_message_result,
)
from strictmcp.schema import IssueCode

WITH_TOOLS = [Revision.V2025_11_25, Revision.V2026_07_28]
WITHOUT_TOOLS = [Revision.V2024_11_05, Revision.V2025_03_26, Revision.V2025_06_18]
DECLARED: dict[str, Any] = {"sampling": {"tools": {}}}


def example(kind: str, name: str) -> Any:
    return json.loads((EXAMPLES / kind / name).read_text())


def text(words: str = "hello") -> dict[str, Any]:
    return {"type": "text", "text": words}


def use(use_id: Any, name: str = "get_weather") -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": {"city": "Paris"}}


def answer(use_id: Any) -> dict[str, Any]:
    return {"type": "tool_result", "toolUseId": use_id, "content": [text("18°C")]}


def user(*content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": content[0] if len(content) == 1 else list(content)}


def assistant(*content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": content[0] if len(content) == 1 else list(content)}


WEATHER = example("CreateMessageRequestParams", "request-with-tools.json")["tools"]


def params(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"messages": list(messages), "maxTokens": 100, "tools": WEATHER, **extra}


def found(
    request: dict[str, Any], revision: Revision = Revision.V2025_11_25
) -> list[tuple[Rule | Enum, str]]:
    return [(v.rule, v.pointer) for v in check_create_message(request, revision, DECLARED)]


def assert_valid(request: dict[str, Any], revision: Revision = Revision.V2025_11_25) -> None:
    assert check_create_message(request, revision, DECLARED) == []
    # What passes here is also valid by the specification's own schema.
    assert spec_validator(revision, "CreateMessageRequestParams").is_valid(request)


# --- the specification's examples are valid ---------------------------------------------------


@pytest.mark.parametrize("revision", WITH_TOOLS)
@pytest.mark.parametrize(
    "name", ["basic-request.json", "request-with-tools.json", "follow-up-with-tool-results.json"]
)
def test_example_params_are_valid(name: str, revision: Revision) -> None:
    assert_valid(example("CreateMessageRequestParams", name), revision)


@pytest.mark.parametrize("revision", [*WITHOUT_TOOLS, *WITH_TOOLS])
def test_example_requests_without_tools_are_valid_everywhere(revision: Revision) -> None:
    request = example("CreateMessageRequest", "sampling-request.json")
    assert check_create_message(request["params"], revision, {}) == []
    assert check_create_message(request["params"], revision, None) == []


def test_input_requests_sampling_entry_is_valid() -> None:
    requests = example("InputRequests", "elicitation-and-sampling-input-requests.json")
    request = requests["capital_of_france"]["params"]
    at = "/result/inputRequests/capital_of_france/params"
    assert check_create_message(request, Revision.V2026_07_28, {"sampling": {}}, at=at) == []


def test_example_sampling_messages_and_blocks_in_a_conversation() -> None:
    single = example("SamplingMessage", "single-content-block.json")
    results = example("SamplingMessage", "multiple-content-blocks.json")
    tool_use = example("ToolUseContent", "get-weather-tool-use.json")
    tool_result = example("ToolResultContent", "get-weather-tool-result.json")
    assert_valid(params(single))
    assert_valid(params(single, assistant(use("call_123"), use("call_456")), results))
    assert_valid(params(single, assistant(tool_use), user(tool_result), assistant(text())))


# --- tools need the capability and the revision -----------------------------------------------


@pytest.mark.parametrize("revision", WITH_TOOLS)
@pytest.mark.parametrize("capabilities", [{}, {"sampling": {}}, {"sampling": {"tools": True}}])
def test_tools_need_the_declared_capability(
    capabilities: dict[str, Any], revision: Revision
) -> None:
    request = example("CreateMessageRequestParams", "request-with-tools.json")
    violations = check_create_message(request, revision, capabilities)
    assert [(v.rule, v.pointer, v.severity) for v in violations] == [
        (Rule.SAMPLING_TOOLS_NOT_DECLARED, "/params/tools", Severity.ERROR),
        (Rule.SAMPLING_TOOLS_NOT_DECLARED, "/params/toolChoice", Severity.ERROR),
    ]
    assert "sampling.tools" in violations[0].message


@pytest.mark.parametrize("revision", WITH_TOOLS)
def test_tool_choice_alone_needs_the_capability_too(revision: Revision) -> None:
    request = {"messages": [user(text())], "maxTokens": 1, "toolChoice": {"mode": "none"}}
    violations = check_create_message(request, revision, {"sampling": {}})
    assert [(v.rule, v.pointer) for v in violations] == [
        (Rule.SAMPLING_TOOLS_NOT_DECLARED, "/params/toolChoice")
    ]
    assert check_create_message(request, revision, DECLARED) == []


def test_unknown_capabilities_are_not_held_against_the_request() -> None:
    request = example("CreateMessageRequestParams", "request-with-tools.json")
    assert check_create_message(request, Revision.V2025_11_25, None) == []


@pytest.mark.parametrize("revision", WITHOUT_TOOLS)
def test_no_tools_in_sampling_before_2025_11_25(revision: Revision) -> None:
    request = example("CreateMessageRequestParams", "request-with-tools.json")
    for capabilities in (DECLARED, None):
        violations = check_create_message(request, revision, capabilities)
        assert [(v.rule, v.pointer) for v in violations] == [
            (Rule.SAMPLING_TOOLS_NOT_DECLARED, "/params/tools"),
            (Rule.SAMPLING_TOOLS_NOT_DECLARED, "/params/toolChoice"),
        ]
        assert "2025-11-25" in violations[0].message


@pytest.mark.parametrize("revision", WITHOUT_TOOLS)
def test_tool_blocks_before_2025_11_25_are_left_to_the_method_schema(revision: Revision) -> None:
    conversation = [user(text()), assistant(use("a"))]
    assert check_create_message({"messages": conversation, "maxTokens": 1}, revision, {}) == []
    # ... which refuses them: those revisions have no tool content blocks.
    assert not spec_validator(revision, "SamplingMessage").is_valid(conversation[1])


# --- tool definitions -------------------------------------------------------------------------


def test_offered_tools_are_checked_like_listed_tools() -> None:
    tools = [
        {"name": "a", "inputSchema": {"type": "object", "properties": {"x": {"$ref": "#/no"}}}},
        {"name": "b", "inputSchema": {"type": "string"}},
        {"name": "a", "inputSchema": {"type": "object"}},
        "not a tool",  # the method schema's to report
    ]
    request = {"messages": [user(text())], "maxTokens": 1, "tools": tools}
    assert found(request) == [
        (Rule.TOOL_INPUT_SCHEMA_INVALID, "/params/tools/0/inputSchema/properties/x/$ref"),
        (Rule.TOOL_INPUT_SCHEMA_NOT_OBJECT, "/params/tools/1/inputSchema"),
        (Rule.TOOL_NAME_DUPLICATE, "/params/tools/2/name"),
    ]
    at = "/result/inputRequests/k/params"
    relocated = check_create_message(request, Revision.V2026_07_28, DECLARED, at=at)
    assert [v.pointer for v in relocated] == [
        f"{at}/tools/0/inputSchema/properties/x/$ref",
        f"{at}/tools/1/inputSchema",
        f"{at}/tools/2/name",
    ]


# --- tool results are alone in their message ----------------------------------------------------


@pytest.mark.parametrize("revision", WITH_TOOLS)
def test_tool_results_are_not_mixed_with_other_content(revision: Revision) -> None:
    mixed = params(user(text()), assistant(use("a")), user(text("here:"), answer("a"), text()))
    assert found(mixed, revision) == [
        (Rule.SAMPLING_TOOL_RESULT_MIXED, "/params/messages/2/content/0"),
        (Rule.SAMPLING_TOOL_RESULT_MIXED, "/params/messages/2/content/2"),
    ]
    assert_valid(params(user(text()), assistant(use("a")), user(answer("a"))), revision)


def test_tool_uses_may_come_with_text() -> None:
    assert_valid(params(user(text()), assistant(text("let me look"), use("a")), user(answer("a"))))


# --- every tool use is answered -------------------------------------------------------------


@pytest.mark.parametrize(
    ("conversation", "unanswered"),
    [
        # the conversation ends with the tool use
        ([user(text()), assistant(use("a"))], ["/params/messages/1/content"]),
        # followed by something other than a user message
        (
            [user(text()), assistant(use("a")), assistant(text())],
            ["/params/messages/1/content"],
        ),
        # followed by a user message that answers nothing
        ([user(text()), assistant(use("a")), user(text())], ["/params/messages/1/content"]),
        # one of two answered
        (
            [user(text()), assistant(use("a"), use("b")), user(answer("a"))],
            ["/params/messages/1/content/1"],
        ),
        # a tool use whose id is not a string can never be answered
        ([user(text()), assistant(use(7)), user(answer(7))], ["/params/messages/1/content"]),
    ],
)
def test_every_tool_use_is_answered(conversation: list[Any], unanswered: list[str]) -> None:
    violations = found(params(*conversation))
    assert [p for r, p in violations if r is Rule.SAMPLING_TOOL_USE_UNANSWERED] == unanswered


def test_the_whole_history_is_checked_not_only_the_last_pair() -> None:
    # The official Python SDK looks at the last two messages only; this breaks earlier.
    conversation = [
        user(text()),
        assistant(use("a"), use("b")),
        user(answer("a")),
        assistant(use("c")),
        user(answer("c")),
    ]
    assert found(params(*conversation)) == [
        (Rule.SAMPLING_TOOL_USE_UNANSWERED, "/params/messages/1/content/1")
    ]


# --- every tool result answers a tool use, once ---------------------------------------------


@pytest.mark.parametrize(
    ("conversation", "unmatched"),
    [
        # nothing before it
        ([user(answer("a"))], ["/params/messages/0/content"]),
        # no tool use in the previous message
        ([user(text()), assistant(text()), user(answer("a"))], ["/params/messages/2/content"]),
        # a different id
        (
            [user(text()), assistant(use("a")), user(answer("a"), answer("z"))],
            ["/params/messages/2/content/1"],
        ),
        # answered twice
        (
            [user(text()), assistant(use("a")), user(answer("a"), answer("a"))],
            ["/params/messages/2/content/1"],
        ),
        # the tool use two messages back does not count
        (
            [assistant(use("a")), user(answer("a")), assistant(text()), user(answer("a"))],
            ["/params/messages/3/content"],
        ),
    ],
)
def test_every_tool_result_answers_one_tool_use(
    conversation: list[Any], unmatched: list[str]
) -> None:
    violations = found(params(*conversation))
    assert [p for r, p in violations if r is Rule.SAMPLING_TOOL_RESULT_UNMATCHED] == unmatched


def test_tool_results_belong_in_a_user_message() -> None:
    conversation = [user(text()), assistant(use("a")), assistant(answer("a"))]
    assert found(params(*conversation)) == [
        (Rule.SAMPLING_TOOL_USE_UNANSWERED, "/params/messages/1/content"),
        (Rule.SAMPLING_TOOL_RESULT_UNMATCHED, "/params/messages/2/content"),
    ]


@pytest.mark.parametrize(
    "messages",
    [None, {}, [None, 3, {"role": "user"}, {"role": "user", "content": [1, None]}]],
)
def test_malformed_messages_are_left_to_the_method_schema(messages: Any) -> None:
    request = {"messages": messages, "maxTokens": 1}
    assert check_create_message(request, Revision.V2025_11_25, DECLARED) == []


# --- results --------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", WITH_TOOLS)
@pytest.mark.parametrize(
    ("request_file", "result_file"),
    [
        ("basic-request.json", "text-response.json"),
        ("request-with-tools.json", "tool-use-response.json"),
        ("follow-up-with-tool-results.json", "final-response.json"),
    ],
)
def test_example_results_match_their_requests(
    request_file: str, result_file: str, revision: Revision
) -> None:
    request = example("CreateMessageRequestParams", request_file)
    result = example("CreateMessageResult", result_file)
    assert check_create_message_result(result, request, revision) == []


def tool_use_result(*content: dict[str, Any], stop: str | None = "toolUse") -> dict[str, Any]:
    result = {"role": "assistant", "content": content[0] if len(content) == 1 else list(content)}
    return {**result, "model": "m", **({"stopReason": stop} if stop else {})}


@pytest.mark.parametrize(
    ("request_params", "pointers"),
    [
        ({"messages": [user(text())], "maxTokens": 1}, ["/result/content/0", "/result/content/1"]),
        (params(user(text()), tools=[]), ["/result/content/0", "/result/content/1"]),
        (
            params(user(text()), toolChoice={"mode": "none"}),
            ["/result/content/0", "/result/content/1"],
        ),
        (
            params(user(text()), tools=[{"name": "other", "inputSchema": {"type": "object"}}]),
            ["/result/content/0", "/result/content/1"],
        ),
        (params(user(text())), []),
        (params(user(text()), toolChoice={"mode": "required"}), []),
    ],
)
def test_tool_use_only_where_the_request_offered_it(
    request_params: dict[str, Any], pointers: list[str]
) -> None:
    result = tool_use_result(use("a"), use("b"))
    violations = check_create_message_result(result, request_params, Revision.V2025_11_25)
    assert all(v.rule is Rule.SAMPLING_TOOL_USE_NOT_OFFERED for v in violations)
    assert [v.pointer for v in violations] == pointers


def test_tool_use_input_must_match_the_offered_schema() -> None:
    bad_input = {**use("a"), "input": {"town": "Paris"}}
    violations = check_create_message_result(
        tool_use_result(bad_input), params(user(text())), Revision.V2026_07_28
    )
    (violation,) = violations
    assert (violation.rule, violation.pointer) == (
        Rule.TOOL_ARGUMENTS_INVALID,
        "/result/content/input",
    )
    assert [issue.code for issue in violation.issues] == [IssueCode.MISSING_REQUIRED]


@pytest.mark.parametrize(
    ("content", "stop", "inconsistent"),
    [
        ([text()], "toolUse", True),
        ([use("a")], "endTurn", True),
        ([use("a")], "toolUse", False),
        ([use("a")], "maxTokens", False),
        ([use("a")], "provider_specific", False),
        ([use("a")], None, False),
        ([text()], "endTurn", False),
    ],
)
def test_stop_reason_tool_use_means_tool_use(
    content: list[dict[str, Any]], stop: str | None, inconsistent: bool
) -> None:
    result = tool_use_result(*content, stop=stop)
    violations = check_create_message_result(result, params(user(text())), Revision.V2025_11_25)
    expected = [(Rule.SAMPLING_STOP_REASON_INCONSISTENT, "/result/stopReason", Severity.WARNING)]
    assert [(v.rule, v.pointer, v.severity) for v in violations] == (
        expected if inconsistent else []
    )


@pytest.mark.parametrize("revision", WITHOUT_TOOLS)
def test_results_before_2025_11_25_have_no_tool_use_to_check(revision: Revision) -> None:
    result = tool_use_result(use("a"), stop="endTurn")
    assert check_create_message_result(result, {"messages": [], "maxTokens": 1}, revision) == []


def test_result_pointers_follow_at() -> None:
    at = "/params/inputResponses/k"
    result = tool_use_result(use("a"))
    violations = check_create_message_result(
        result, {"messages": [], "maxTokens": 1}, Revision.V2026_07_28, at=at
    )
    assert [v.pointer for v in violations] == [f"{at}/content"]


# --- no value from the message is echoed --------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    [
        lambda: check_create_message(
            params(
                user(answer("SECRET-1")),
                assistant(use("SECRET-2", "SECRET-tool")),
                user(text("SECRET-3"), answer("SECRET-4")),
            ),
            Revision.V2025_11_25,
            {},
        ),
        lambda: check_create_message_result(
            tool_use_result({**use("SECRET-id", "SECRET-tool"), "input": {"SECRET": 1}}),
            params(user(text())),
            Revision.V2025_11_25,
        ),
        lambda: check_create_message_result(
            tool_use_result({**use("SECRET-id"), "input": {"city": ["SECRET"]}}, stop="endTurn"),
            params(user(text())),
            Revision.V2025_11_25,
        ),
    ],
)
def test_no_value_from_the_message_is_echoed(check: Callable[[], list[Violation]]) -> None:
    violations = check()
    assert violations
    assert "SECRET" not in json.dumps([v.to_dict() for v in violations])


# --- toolChoice "required" --------------------------------------------------------------------


@pytest.mark.parametrize("revision", WITH_TOOLS)
@pytest.mark.parametrize("tools", [None, []])
def test_tool_choice_required_needs_a_tool_offered(revision: Revision, tools: Any) -> None:
    request: dict[str, Any] = {
        "messages": [user(text())],
        "maxTokens": 1,
        "toolChoice": {"mode": "required"},
    }
    if tools is not None:
        request["tools"] = tools
    violations = check_create_message(request, revision, DECLARED)
    assert [(v.rule, v.pointer, v.severity) for v in violations] == [
        (Rule.SAMPLING_TOOL_CHOICE_WITHOUT_TOOLS, "/params/toolChoice/mode", Severity.ERROR)
    ]
    # With a tool offered it is a valid request; "auto" and "none" need no tool.
    assert_valid(params(user(text()), toolChoice={"mode": "required"}), revision)
    for mode in ("auto", "none"):
        alone = {**request, "toolChoice": {"mode": mode}}
        assert check_create_message(alone, revision, DECLARED) == []


@pytest.mark.parametrize("revision", WITH_TOOLS)
@pytest.mark.parametrize(
    ("result", "refused"),
    [
        (tool_use_result(text("sunny"), stop="endTurn"), True),
        (tool_use_result(text("sunny"), stop=None), True),
        (tool_use_result(text("sun"), stop="maxTokens"), False),  # cut short, not completed
        (tool_use_result(text("let me check"), use("a")), False),
    ],
)
def test_tool_choice_required_needs_a_tool_use_in_the_result(
    result: dict[str, Any], refused: bool, revision: Revision
) -> None:
    required = params(user(text()), toolChoice={"mode": "required"})
    violations = check_create_message_result(result, required, revision)
    expected = [(Rule.SAMPLING_TOOL_USE_REQUIRED, "/result/content")] if refused else []
    assert [(v.rule, v.pointer) for v in violations] == expected
    # The same result answers a request that only allowed tools.
    for mode in ("auto", None):
        allowed = params(user(text()), **({"toolChoice": {"mode": mode}} if mode else {}))
        assert check_create_message_result(result, allowed, revision) == []


# --- includeContext ---------------------------------------------------------------------------


@pytest.mark.parametrize("revision", WITH_TOOLS)
@pytest.mark.parametrize("included", ["thisServer", "allServers"])
def test_include_context_needs_the_context_capability(revision: Revision, included: str) -> None:
    request = {"messages": [user(text())], "maxTokens": 1, "includeContext": included}
    undeclared: list[dict[str, Any]] = [{}, {"sampling": {}}, {"sampling": {"tools": {}}}]
    for capabilities in undeclared:
        violations = check_create_message(request, revision, capabilities)
        assert [(v.rule, v.pointer, v.severity) for v in violations] == [
            (Rule.SAMPLING_CONTEXT_NOT_DECLARED, "/params/includeContext", Severity.WARNING)
        ]
        assert "sampling.context" in violations[0].message
    assert check_create_message(request, revision, {"sampling": {"context": {}}}) == []
    assert check_create_message(request, revision, None) == []  # capabilities unknown
    none = {**request, "includeContext": "none"}
    assert check_create_message(none, revision, {"sampling": {}}) == []


@pytest.mark.parametrize("revision", WITHOUT_TOOLS)
def test_include_context_before_2025_11_25_needs_no_capability(revision: Revision) -> None:
    # No sampling.context capability existed yet: every value was the client's to honour.
    request = {"messages": [user(text())], "maxTokens": 1, "includeContext": "allServers"}
    assert check_create_message(request, revision, {"sampling": {}}) == []
