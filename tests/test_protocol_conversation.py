"""Conversation: one session checked message by message, both directions, in order.

What it learns (the revision, the tools, prompts and client capabilities, the requests in
flight) and what it checks with it (calls against the listing, results against the request
they answer, elicitation and sampling, 2026-07-28 input requests and responses).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from mcp_schema_support import EXAMPLES
from strictmcp.protocol import (
    ASSUMED_REVISION,
    Conversation,
    Direction,
    Message,
    Revision,
    Rule,
    Severity,
    Violation,
    check_envelope,
    validate_capture,
)

Obj = dict[str, Any]
Found = list[tuple[str, str]]

V2024 = Revision.V2024_11_05
V2025_03 = Revision.V2025_03_26
V2025_06 = Revision.V2025_06_18
V2025_11 = Revision.V2025_11_25
V2026 = Revision.V2026_07_28
HANDSHAKE = [r for r in Revision if not r.stateless]
SECRET = "sk-live-0123456789abcdef"

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


def example(kind: str, name: str) -> Any:
    return json.loads((EXAMPLES / kind / name).read_text())


# --- building messages ---------------------------------------------------------------------


def message(obj: Obj) -> Message:
    decoded, problems = check_envelope(obj, None)
    assert decoded is not None, problems
    return decoded


def request(id_: int | str, method: str, params: Obj | None = None) -> Obj:
    out: Obj = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        out["params"] = params
    return out


def notification(method: str, params: Obj | None = None) -> Obj:
    out: Obj = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        out["params"] = params
    return out


def response(id_: int | str, result: Obj) -> Obj:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def error(id_: int | str | None, code: int = -32603) -> Obj:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": "failed"}}


def initialize(id_: int, version: str, capabilities: Obj | None = None) -> Obj:
    return request(
        id_,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "test-client", "version": "1.0"},
        },
    )


def initialize_result(id_: int, version: str, **extra: Any) -> Obj:
    info = {"name": "test-server", "version": "1.0", **extra}
    return response(id_, {"protocolVersion": version, "capabilities": {}, "serverInfo": info})


def meta(version: str = "2026-07-28", capabilities: Obj | None = None) -> Obj:
    return {
        META_VERSION: version,
        "io.modelcontextprotocol/clientInfo": {"name": "test-client", "version": "1.0"},
        META_CAPABILITIES: capabilities or {},
    }


def tool(
    name: str,
    properties: Obj | None = None,
    *,
    required: tuple[str, ...] = (),
    output: Obj | None = None,
    **schema: Any,
) -> Obj:
    input_schema: Obj = {"type": "object", "properties": properties or {}, **schema}
    if required:
        input_schema["required"] = list(required)
    out: Obj = {"name": name, "inputSchema": input_schema}
    if output is not None:
        out["outputSchema"] = output
    return out


def found(violations: list[Violation]) -> Found:
    return [(v.code, v.pointer) for v in violations]


def observe(conversation: Conversation, obj: Obj, direction: Direction) -> list[Violation]:
    return conversation.observe(message(obj), direction)


class Session:
    """A conversation in one revision, with the handshake done (or, in 2026-07-28, with every
    client request carrying its own ``_meta``), and helpers that write valid messages."""

    def __init__(
        self,
        revision: Revision,
        *,
        capabilities: Obj | None = None,
        strict: bool = False,
        max_tracked: int = 10_000,
    ) -> None:
        self.revision = revision
        self.capabilities = capabilities or {}
        self.conversation = Conversation(strict=strict, max_tracked=max_tracked)
        self._id = 0
        if not revision.stateless:
            assert self.client(initialize(0, revision.value, self.capabilities)) == []
            assert self.server(initialize_result(0, revision.value)) == []
            assert self.client(notification("notifications/initialized")) == []
            assert self.conversation.revision is revision

    def next_id(self) -> int:
        self._id += 1
        return self._id

    def client(self, obj: Obj) -> list[Violation]:
        return observe(self.conversation, obj, "c2s")

    def server(self, obj: Obj) -> list[Violation]:
        return observe(self.conversation, obj, "s2c")

    def params(self, params: Obj | None = None) -> Obj | None:
        """A client request's params; from 2026-07-28 with the metadata each must carry."""
        if not self.revision.stateless:
            return params
        return {"_meta": meta(capabilities=self.capabilities), **(params or {})}

    def result(self, result: Obj) -> Obj:
        """A result; from 2026-07-28 with ``resultType`` unless it has one."""
        if self.revision.stateless:
            return {"resultType": "complete", **result}
        return result

    def ask(self, method: str, params: Obj | None = None) -> tuple[int, list[Violation]]:
        """A client request: its id and what checking it found."""
        id_ = self.next_id()
        return id_, self.client(request(id_, method, self.params(params)))

    def exchange(
        self, method: str, params: Obj | None, result: Obj
    ) -> tuple[list[Violation], list[Violation]]:
        """A client request and the server's result: what checking each found."""
        id_, asked = self.ask(method, params)
        return asked, self.server(response(id_, self.result(result)))

    def list_tools(
        self, tools: list[Obj], *, cursor: str | None = None, next_cursor: str | None = None
    ) -> list[Violation]:
        result: Obj = {"tools": tools}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        if self.revision.stateless:
            result.update(ttlMs=0, cacheScope="private")
        asked, answered = self.exchange(
            "tools/list", None if cursor is None else {"cursor": cursor}, result
        )
        assert asked == []
        return answered

    def call(self, name: str, arguments: Obj | None = None) -> list[Violation]:
        params: Obj = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return self.ask("tools/call", params)[1]

    def call_result(self, name: str, result: Obj) -> list[Violation]:
        """A call that passes its checks, answered with ``result``."""
        id_, asked = self.ask("tools/call", {"name": name, "arguments": {}})
        assert asked == []
        return self.server(response(id_, self.result(result)))


# --- the revision: from the initialize exchange ----------------------------------------------


def test_server_answer_settles_the_revision_the_client_offered() -> None:
    conversation = Conversation()
    assert observe(conversation, initialize(1, "2025-06-18"), "c2s") == []
    assert conversation.revision is V2025_06  # the offer, until the server answers
    assert observe(conversation, initialize_result(1, "2025-03-26"), "s2c") == []
    assert conversation.revision is V2025_03
    assert conversation.tools.revision is V2025_03
    # Checked as 2025-03-26 from now on: it has no elicitation.
    elicit = request(
        2,
        "elicitation/create",
        {"message": "m", "requestedSchema": {"type": "object", "properties": {}}},
    )
    assert (Rule.METHOD_NOT_IN_REVISION.value, "/method") in found(
        observe(conversation, elicit, "s2c")
    )


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_every_handshake_revision_is_learned_without_a_warning(revision: Revision) -> None:
    conversation = Conversation()
    assert observe(conversation, initialize(0, revision.value), "c2s") == []
    assert observe(conversation, initialize_result(0, revision.value), "s2c") == []
    assert observe(conversation, notification("notifications/initialized"), "c2s") == []
    assert conversation.revision is revision


def test_unknown_offered_version_is_a_warning_and_checked_as_assumed() -> None:
    conversation = Conversation()
    violations = observe(conversation, initialize(1, "2099-01-01"), "c2s")
    assert violations
    assert {v.rule for v in violations} == {Rule.UNKNOWN_REVISION}
    assert {v.severity for v in violations} == {Severity.WARNING}
    # The version is the peer's value: it is pointed at, not quoted.
    assert all("2099-01-01" not in v.message for v in violations)
    assert [v.pointer for v in violations] == ["/params/protocolVersion"]
    assert all(ASSUMED_REVISION.value in v.message for v in violations)
    assert conversation.revision is None
    # The server's answer names a revision strictmcp knows: that settles it.
    answered = observe(conversation, initialize_result(1, "2025-06-18"), "s2c")
    assert all(v.severity is Severity.WARNING for v in answered)
    assert conversation.revision is V2025_06


def test_unknown_offered_version_is_warned_about_once() -> None:
    conversation = Conversation()
    violations = observe(conversation, initialize(1, "2099-01-01"), "c2s")
    violations += observe(conversation, initialize_result(1, "2025-06-18"), "s2c")
    assert [v.rule for v in violations] == [Rule.UNKNOWN_REVISION]


def test_unknown_answered_version_is_a_warning() -> None:
    conversation = Conversation()
    assert observe(conversation, initialize(1, "2025-06-18"), "c2s") == []
    violations = observe(conversation, initialize_result(1, "2099-01-01"), "s2c")
    assert [(v.rule, v.severity) for v in violations] == [(Rule.UNKNOWN_REVISION, Severity.WARNING)]


def test_initialize_result_is_checked_against_the_answered_revision() -> None:
    conversation = Conversation(strict=True)
    assert observe(conversation, initialize(1, "2025-06-18"), "c2s") == []
    # Implementation.title arrived in 2025-06-18: a 2024-11-05 answer must not carry it.
    answered = observe(conversation, initialize_result(1, "2024-11-05", title="S"), "s2c")
    assert found(answered) == [(Rule.UNKNOWN_FIELD.value, "/result/serverInfo/title")]


def test_same_title_in_a_fixed_2024_session_is_an_unknown_field_in_strict_mode() -> None:
    # The check the test above expects, where the revision is not in question.
    conversation = Conversation(V2024, strict=True)
    assert observe(conversation, initialize(1, "2024-11-05"), "c2s") == []
    answered = observe(conversation, initialize_result(1, "2024-11-05", title="S"), "s2c")
    assert found(answered) == [(Rule.UNKNOWN_FIELD.value, "/result/serverInfo/title")]


def test_no_initialize_warns_once_and_checks_as_assumed_revision() -> None:
    conversation = Conversation()
    first = observe(conversation, request(1, "tools/list"), "c2s")
    assert [(v.rule, v.severity) for v in first] == [(Rule.UNKNOWN_REVISION, Severity.WARNING)]
    assert "no initialize exchange seen" in first[0].message
    assert ASSUMED_REVISION.value in first[0].message
    # Tool names are enforced from 2025-11-25, the assumed revision: the listing is checked so.
    listed = observe(
        conversation, response(1, {"tools": [tool("ok_name"), tool("bad name")]}), "s2c"
    )
    # (an error from 2025-11-25, a warning before)
    assert [(v.code, v.severity) for v in listed if v.rule is Rule.TOOL_NAME_INVALID] == [
        (Rule.TOOL_NAME_INVALID.value, Severity.ERROR)
    ]
    assert {v.pointer for v in listed} == {"/result/tools/1/name"}
    assert observe(conversation, request(2, "tools/call", {"name": "ok_name"}), "c2s") == []
    assert conversation.revision is None
    assert conversation.tools.revision is ASSUMED_REVISION


def test_fixed_revision_ignores_the_initialize_exchange() -> None:
    conversation = Conversation(V2025_03)
    assert observe(conversation, initialize(1, "2025-06-18"), "c2s") == []
    assert observe(conversation, initialize_result(1, "2025-06-18"), "s2c") == []
    assert conversation.revision is V2025_03
    elicit = request(
        2,
        "elicitation/create",
        {"message": "m", "requestedSchema": {"type": "object", "properties": {}}},
    )
    assert (Rule.METHOD_NOT_IN_REVISION.value, "/method") in found(
        observe(conversation, elicit, "s2c")
    )
    # An unknown offer is no concern of a session whose revision is fixed.
    fixed = Conversation(V2025_06)
    assert observe(fixed, initialize(1, "2099-01-01"), "c2s") == []
    assert fixed.revision is V2025_06
    assert observe(fixed, elicit, "s2c") == []


# --- the revision: 2026-07-28 request metadata -----------------------------------------------


def test_stateless_request_metadata_sets_the_revision() -> None:
    conversation = Conversation()
    listed = request(1, "tools/list", {"_meta": meta()})
    assert observe(conversation, listed, "c2s") == []  # no "no initialize" warning
    assert conversation.revision is V2026
    result = {"resultType": "complete", "tools": [], "ttlMs": 0, "cacheScope": "public"}
    assert observe(conversation, response(1, result), "s2c") == []
    # 2026-07-28's ListToolsResult requires its cache fields.
    assert observe(conversation, request(2, "tools/list", {"_meta": meta()}), "c2s") == []
    uncached = observe(conversation, response(2, {"resultType": "complete", "tools": []}), "s2c")
    assert found(uncached) == [
        (Rule.INVALID_RESULT.value, "/result"),
        (Rule.INVALID_RESULT.value, "/result"),
    ]
    assert sorted(v.message for v in uncached) == [
        'is missing the required field "cacheScope"',
        'is missing the required field "ttlMs"',
    ]


def test_stateless_request_without_metadata_is_invalid_params() -> None:
    conversation = Conversation(V2026)
    violations = observe(conversation, request(1, "tools/call", {"name": "x"}), "c2s")
    assert (Rule.INVALID_PARAMS.value, "/params") in found(violations)
    assert any('"_meta"' in v.message for v in violations)


def test_unknown_stateless_version_is_a_warning_and_keeps_the_revision() -> None:
    conversation = Conversation()
    assert observe(conversation, request(1, "tools/list", {"_meta": meta()}), "c2s") == []
    later = request(2, "tools/list", {"_meta": meta("2030-01-01")})
    violations = observe(conversation, later, "c2s")
    assert [(v.rule, v.severity) for v in violations] == [(Rule.UNKNOWN_REVISION, Severity.WARNING)]
    assert violations[0].pointer == "/params/_meta/io.modelcontextprotocol~1protocolVersion"
    assert "2030-01-01" not in violations[0].message
    assert conversation.revision is V2026


@pytest.mark.parametrize(
    ("revision", "direction", "obj", "valid_in"),
    [
        (V2026, "c2s", initialize(1, "2026-07-28"), V2025_11),
        (V2026, "c2s", notification("notifications/initialized"), V2025_11),
        (
            V2024,
            "s2c",
            request(
                1,
                "elicitation/create",
                {"message": "m", "requestedSchema": {"type": "object", "properties": {}}},
            ),
            V2025_06,
        ),
    ],
    ids=["initialize-in-2026", "initialized-in-2026", "elicitation-in-2024"],
)
def test_method_not_in_revision(
    revision: Revision, direction: Direction, obj: Obj, valid_in: Revision
) -> None:
    violations = observe(Conversation(revision), obj, direction)
    assert violations
    assert {v.rule for v in violations} == {Rule.METHOD_NOT_IN_REVISION}
    assert {v.severity for v in violations} == {Severity.ERROR}
    assert "/method" in [v.pointer for v in violations]
    assert observe(Conversation(valid_in), obj, direction) == []


def test_method_sent_by_the_wrong_side() -> None:
    conversation = Conversation(V2025_06)
    assert found(observe(conversation, request(1, "tools/list"), "s2c")) == [
        (Rule.WRONG_DIRECTION.value, "/method")
    ]
    assert observe(conversation, request(2, "tools/list"), "c2s") == []


# --- pairing responses with requests ---------------------------------------------------------


def test_responses_are_paired_by_id_in_any_order() -> None:
    conversation = Conversation(V2025_06)
    assert observe(conversation, request("a", "tools/list"), "c2s") == []
    assert observe(conversation, request(7, "prompts/list"), "c2s") == []
    answer = message(response(7, {"prompts": []}))
    assert conversation.response_direction(answer) == "s2c"
    paired = conversation.request_answered_by(answer, "s2c")
    assert paired is not None
    assert paired.method == "prompts/list"
    assert conversation.request_answered_by(answer, "c2s") is None
    assert conversation.observe(answer, "s2c") == []
    assert conversation.response_direction(answer) is None  # answered: no longer in flight
    assert observe(conversation, response("a", {"tools": []}), "s2c") == []
    # The result is checked as the paired request's: a tools/list result needs tools.
    assert observe(conversation, request(8, "tools/list"), "c2s") == []
    assert found(observe(conversation, response(8, {"prompts": []}), "s2c")) == [
        (Rule.INVALID_RESULT.value, "/result"),
        (Rule.INVALID_RESULT.value, "/result/tools"),
    ]


def test_unmatched_response_is_an_error() -> None:
    conversation = Conversation(V2025_06)
    assert found(observe(conversation, response(9, {}), "s2c")) == [
        (Rule.UNMATCHED_RESPONSE.value, "/id")
    ]
    # A string id never answers an integer id.
    assert observe(conversation, request(1, "tools/list"), "c2s") == []
    assert found(observe(conversation, response("1", {"tools": []}), "s2c")) == [
        (Rule.UNMATCHED_RESPONSE.value, "/id")
    ]
    assert observe(conversation, response(1, {"tools": []}), "s2c") == []
    # Answered once: a second answer is unmatched.
    assert found(observe(conversation, response(1, {"tools": []}), "s2c")) == [
        (Rule.UNMATCHED_RESPONSE.value, "/id")
    ]


def test_error_responses_answer_requests() -> None:
    conversation = Conversation(V2025_06)
    assert observe(conversation, request(1, "tools/list"), "c2s") == []
    assert observe(conversation, error(1), "s2c") == []
    assert found(observe(conversation, error(1), "s2c")) == [(Rule.UNMATCHED_RESPONSE.value, "/id")]
    # An error for a request whose id could not be read answers nothing, and is no violation.
    assert observe(conversation, error(None, -32700), "s2c") == []


def test_duplicate_id_in_flight_keeps_the_first_request() -> None:
    conversation = Conversation(V2025_06)
    assert observe(conversation, request(1, "tools/list"), "c2s") == []
    assert found(observe(conversation, request(1, "prompts/list"), "c2s")) == [
        (Rule.DUPLICATE_ID.value, "/id")
    ]
    # The one response is the first request's: a tools/list result.
    assert observe(conversation, response(1, {"tools": []}), "s2c") == []
    assert found(observe(conversation, response(1, {"prompts": []}), "s2c")) == [
        (Rule.UNMATCHED_RESPONSE.value, "/id")
    ]
    # Answered, the id is free again.
    assert observe(conversation, request(1, "prompts/list"), "c2s") == []
    assert observe(conversation, response(1, {"prompts": []}), "s2c") == []


WEATHER_OUTPUT = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}},
    "required": ["temperature"],
}


def test_duplicate_id_does_not_replace_what_the_first_request_expects() -> None:
    session = Session(V2025_06)
    assert session.list_tools([tool("a", output=WEATHER_OUTPUT), tool("b")]) == []
    assert session.client(request(7, "tools/call", {"name": "a"})) == []
    assert found(session.client(request(7, "tools/call", {"name": "b"}))) == [
        (Rule.DUPLICATE_ID.value, "/id")
    ]
    bad = {"content": [], "structuredContent": {"temperature": "warm"}}
    assert found(session.server(response(7, bad))) == [
        (Rule.TOOL_STRUCTURED_CONTENT_INVALID.value, "/result/structuredContent")
    ]


def test_the_same_id_in_each_direction_is_two_requests() -> None:
    session = Session(V2025_06, capabilities={"elicitation": {}})
    assert session.client(request(5, "tools/list")) == []
    elicit = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
    assert session.server(request(5, "elicitation/create", elicit)) == []
    assert session.client(response(5, {"action": "cancel"})) == []
    assert session.server(response(5, {"tools": []})) == []


def test_cancelled_request_frees_its_id_in_its_own_direction() -> None:
    session = Session(V2025_06, capabilities={"elicitation": {}})
    assert session.client(request(5, "tools/list")) == []
    elicit = {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}
    assert session.server(request(5, "elicitation/create", elicit)) == []
    # The server cancels its own request 5; the client's request 5 is still in flight.
    assert session.server(notification("notifications/cancelled", {"requestId": 5})) == []
    assert session.server(request(5, "elicitation/create", elicit)) == []  # no duplicate id
    assert session.server(response(5, {"tools": []})) == []
    assert session.client(request(5, "tools/list")) == []  # answered: free again


def test_late_response_to_a_cancelled_request_is_not_an_error() -> None:
    session = Session(V2025_06)
    id_, asked = session.ask("tools/list")
    assert asked == []
    assert session.client(notification("notifications/cancelled", {"requestId": id_})) == []
    late = session.server(response(id_, {"tools": []}))
    assert all(v.severity is Severity.WARNING for v in late), found(late)


# --- tools: calls against the listing --------------------------------------------------------

SEARCH = tool(
    "search",
    {"query": {"type": "string"}, "limit": {"type": "integer", "maximum": 100}},
    required=("query",),
)


@pytest.mark.parametrize("revision", [V2024, V2025_06, V2025_11, V2026])
def test_tools_call_is_checked_against_the_listed_schema(revision: Revision) -> None:
    session = Session(revision)
    assert session.call("search", {"query": "x"}) == [
        Violation(
            Rule.TOOL_UNKNOWN,
            'unknown tool "search": no tools/list result has been seen yet',
            "/params/name",
        )
    ]
    assert session.list_tools([SEARCH]) == []
    assert session.call("search", {"query": "mcp", "limit": 5}) == []
    invalid = session.call("search", {"limit": 1000})
    assert found(invalid) == [(Rule.TOOL_ARGUMENTS_INVALID.value, "/params/arguments")]
    assert sorted((i.code.value, i.instance_path) for i in invalid[0].issues) == [
        ("missing-required", ""),
        ("too-large", "/limit"),
    ]
    # No arguments at all are checked as {}.
    assert [i.code.value for i in session.call("search")[0].issues] == ["missing-required"]
    assert found(session.call("missing", {})) == [(Rule.TOOL_UNKNOWN.value, "/params/name")]


def test_strict_mode_refuses_undeclared_arguments() -> None:
    lenient, strict = Session(V2025_06), Session(V2025_06, strict=True)
    for session in (lenient, strict):
        assert session.list_tools([SEARCH]) == []
        assert session.call("search", {"query": "x", "limit": 1}) == []
    assert lenient.call("search", {"query": "x", "extra": 1}) == []
    assert found(strict.call("search", {"query": "x", "extra": 1, "a/b": 2})) == [
        (Rule.TOOL_ARGUMENT_UNDECLARED.value, "/params/arguments/extra"),
        (Rule.TOOL_ARGUMENT_UNDECLARED.value, "/params/arguments/a~1b"),
    ]


def test_tools_list_pages_are_swapped_in_when_the_last_arrives() -> None:
    session = Session(V2025_06)
    page_one = [tool("alpha", {"q": {"type": "string"}}, required=("q",))]
    assert session.list_tools(page_one, next_cursor="page-2") == []
    # The listing is incomplete: nothing is usable yet.
    assert found(session.call("alpha", {"q": "x"})) == [(Rule.TOOL_UNKNOWN.value, "/params/name")]
    page_two = [tool("beta", {"n": {"type": "integer"}})]
    assert session.list_tools(page_two, cursor="page-2") == []
    assert session.conversation.tools.names() == ["alpha", "beta"]
    assert session.call("alpha", {"q": "x"}) == []
    assert session.call("beta", {"n": 1}) == []
    assert found(session.call("alpha", {"q": 1})) == [
        (Rule.TOOL_ARGUMENTS_INVALID.value, "/params/arguments")
    ]
    assert found(session.call("beta", {"n": "1"})) == [
        (Rule.TOOL_ARGUMENTS_INVALID.value, "/params/arguments")
    ]
    # A name already listed on an earlier page is a duplicate.
    assert session.list_tools(page_one, next_cursor="page-2") == []
    assert found(session.list_tools(page_one, cursor="page-2")) == [
        (Rule.TOOL_NAME_DUPLICATE.value, "/result/tools/0/name")
    ]
    # A request without cursor starts a fresh listing: the earlier one is replaced whole.
    assert session.list_tools([tool("gamma")]) == []
    assert session.conversation.tools.names() == ["gamma"]
    assert found(session.call("beta", {"n": 1})) == [(Rule.TOOL_UNKNOWN.value, "/params/name")]


def test_list_changed_then_a_call_to_a_removed_tool() -> None:
    session = Session(V2025_06)
    assert session.list_tools([SEARCH, tool("old")]) == []
    assert session.server(notification("notifications/tools/list_changed")) == []
    assert session.conversation.tools.stale
    # Until the client lists again, calls are checked against the last listing.
    assert session.call("old", {}) == []
    new = session.call("new", {})
    assert found(new) == [(Rule.TOOL_UNKNOWN.value, "/params/name")]
    assert "tools changed since they were listed" in new[0].message
    assert session.list_tools([SEARCH, tool("new")]) == []
    assert not session.conversation.tools.stale
    removed = session.call("old", {})
    assert found(removed) == [(Rule.TOOL_UNKNOWN.value, "/params/name")]
    assert "the server did not list it" in removed[0].message
    assert session.call("new", {}) == []
    # Only the server says its tools changed; a client's list_changed is the wrong direction.
    assert found(session.client(notification("notifications/tools/list_changed"))) == [
        (Rule.WRONG_DIRECTION.value, "/method")
    ]


# --- tools: results against outputSchema -----------------------------------------------------


@pytest.mark.parametrize("revision", [V2025_06, V2025_11, V2026])
def test_call_results_are_checked_against_output_schema(revision: Revision) -> None:
    session = Session(revision)
    assert session.list_tools([tool("weather", output=WEATHER_OUTPUT)]) == []
    text = [{"type": "text", "text": "18 C"}]
    ok = {"content": text, "structuredContent": {"temperature": 18}}
    assert session.call_result("weather", ok) == []
    wrong = session.call_result(
        "weather", {"content": text, "structuredContent": {"temperature": "warm"}}
    )
    assert found(wrong) == [
        (Rule.TOOL_STRUCTURED_CONTENT_INVALID.value, "/result/structuredContent")
    ]
    assert [(i.code.value, i.instance_path) for i in wrong[0].issues] == [
        ("wrong-type", "/temperature")
    ]
    assert found(session.call_result("weather", {"content": text})) == [
        (Rule.TOOL_STRUCTURED_CONTENT_MISSING.value, "/result/structuredContent")
    ]
    # An error result is not held to the schema.
    assert session.call_result("weather", {"content": text, "isError": True}) == []


def test_output_schema_is_ignored_before_structured_output() -> None:
    session = Session(V2025_03)
    listed = session.list_tools([tool("weather", output=WEATHER_OUTPUT)])
    assert [(v.code, v.pointer, v.severity) for v in listed] == [
        (
            Rule.TOOL_OUTPUT_SCHEMA_NOT_IN_REVISION.value,
            "/result/tools/0/outputSchema",
            Severity.WARNING,
        )
    ]
    assert session.call_result("weather", {"content": [], "structuredContent": {"x": 1}}) == []


@pytest.mark.parametrize("revision", [V2025_06, V2025_11])
def test_non_object_structured_content_before_2026(revision: Revision) -> None:
    session = Session(revision)
    assert session.list_tools([tool("plain")]) == []
    assert session.call_result("plain", {"content": [], "structuredContent": {"a": 1}}) == []
    assert sorted(
        found(session.call_result("plain", {"content": [], "structuredContent": [1, 2]}))
    ) == [
        (Rule.INVALID_RESULT.value, "/result/structuredContent"),
        (Rule.TOOL_STRUCTURED_CONTENT_NOT_OBJECT.value, "/result/structuredContent"),
    ]


def test_any_json_structured_content_in_2026() -> None:
    session = Session(V2026)
    listing = [tool("plain"), tool("ids", output={"type": "array", "items": {"type": "integer"}})]
    assert session.list_tools(listing) == []
    assert session.call_result("plain", {"content": [], "structuredContent": [1, 2]}) == []
    assert session.call_result("ids", {"content": [], "structuredContent": [1, 2]}) == []
    assert found(session.call_result("ids", {"content": [], "structuredContent": ["a"]})) == [
        (Rule.TOOL_STRUCTURED_CONTENT_INVALID.value, "/result/structuredContent")
    ]
    # The spec's own example of an array result.
    users = example("CallToolResult", "result-with-array-structured-content.json")
    assert session.call_result("plain", users) == []


# --- elicitation -----------------------------------------------------------------------------

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
    },
    "required": ["name"],
}
NESTED = {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}
MULTI_SELECT = {
    "type": "object",
    "properties": {"tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}},
}


def elicit(session: Session, schema: Obj, **extra: Any) -> tuple[int, list[Violation]]:
    id_ = session.next_id()
    params = {"message": "Tell me", "requestedSchema": schema, **extra}
    return id_, session.server(request(id_, "elicitation/create", params))


@pytest.mark.parametrize("revision", [V2025_06, V2025_11])
def test_elicitation_requested_schema(revision: Revision) -> None:
    session = Session(revision, capabilities={"elicitation": {}})
    assert elicit(session, FORM)[1] == []
    assert found(elicit(session, NESTED)[1]) == [
        (
            Rule.ELICITATION_SCHEMA_UNSUPPORTED.value,
            "/params/requestedSchema/properties/address/type",
        )
    ]
    multi = elicit(session, MULTI_SELECT)[1]
    if revision is V2025_06:  # multi-select enums arrived in 2025-11-25
        assert found(multi) == [
            (Rule.ELICITATION_SCHEMA_UNSUPPORTED.value, "/params/requestedSchema/properties/tags")
        ]
        assert "needs revision 2025-11-25" in multi[0].message
    else:
        assert multi == []


@pytest.mark.parametrize("revision", [V2025_06, V2025_11])
def test_elicitation_answer_is_checked_against_the_requested_schema(revision: Revision) -> None:
    session = Session(revision, capabilities={"elicitation": {}})

    def answer(result: Obj, schema: Obj = FORM) -> list[Violation]:
        id_, asked = elicit(session, schema)
        assert asked == []
        return session.client(response(id_, result))

    assert answer({"action": "accept", "content": {"name": "Ada", "age": 36}}) == []
    invalid = answer({"action": "accept", "content": {"age": -1}})
    assert found(invalid) == [(Rule.ELICITATION_RESPONSE_INVALID.value, "/result/content")]
    assert sorted((i.code.value, i.instance_path) for i in invalid[0].issues) == [
        ("missing-required", ""),
        ("too-small", "/age"),
    ]
    assert answer({"action": "decline"}) == []
    declined = answer({"action": "decline", "content": {"name": "Ada"}})
    assert [(v.code, v.severity) for v in declined] == [
        (Rule.ELICITATION_RESPONSE_INVALID.value, Severity.WARNING)
    ]
    if revision is V2025_11:
        assert answer({"action": "accept", "content": {"tags": ["a", "b"]}}, MULTI_SELECT) == []
        assert found(answer({"action": "accept", "content": {"tags": ["c"]}}, MULTI_SELECT)) == [
            (Rule.ELICITATION_RESPONSE_INVALID.value, "/result/content")
        ]


URL_ELICITATION = {
    "mode": "url",
    "message": "Sign in",
    "url": "https://example.com/authorize",
    "elicitationId": "e-1",
}


def url_elicitation_answer(result: Obj) -> list[Violation]:
    session = Session(V2025_11, capabilities={"elicitation": {"url": {}}})
    session.server(request(1, "elicitation/create", URL_ELICITATION))
    return session.client(response(1, result))


def test_url_mode_elicitation_accepted_without_content() -> None:
    assert url_elicitation_answer({"action": "accept"}) == []
    assert url_elicitation_answer({"action": "cancel"}) == []


def test_url_mode_elicitation_answer_with_content_is_refused() -> None:
    assert found(url_elicitation_answer({"action": "accept", "content": {"name": "Ada"}})) == [
        (Rule.ELICITATION_RESPONSE_INVALID.value, "/result/content")
    ]


def test_url_mode_elicitation_request_is_valid() -> None:
    session = Session(V2025_11, capabilities={"elicitation": {"url": {}}})
    assert session.server(request(1, "elicitation/create", URL_ELICITATION)) == []


def test_url_mode_input_request_is_valid() -> None:
    session, id_ = input_required_session({"elicitation": {"url": {}}})
    asked = {
        "resultType": "input_required",
        "inputRequests": {"login": {"method": "elicitation/create", "params": URL_ELICITATION}},
    }
    assert session.server(response(id_, asked)) == []


# --- 2026-07-28: input requests in results, input responses in the retried request -----------

INPUT_REQUIRED = example(
    "InputRequiredResult",
    "input-required-result-with-elicitation-and-sampling-and-request-state.json",
)
INPUT_RESPONSES = example("InputResponses", "elicitation-and-sampling-input-responses.json")
WEATHER = tool("get_weather", {"location": {"type": "string"}}, required=("location",))


def input_required_session(capabilities: Obj | None = None) -> tuple[Session, int]:
    """A 2026 session whose client called get_weather; the call's id, still unanswered."""
    session = Session(V2026, capabilities=capabilities)
    assert session.list_tools([WEATHER]) == []
    id_, asked = session.ask("tools/call", {"name": "get_weather", "arguments": {"location": "NY"}})
    assert asked == []
    return session, id_


def retry(session: Session, responses: Obj) -> list[Violation]:
    params = {
        "name": "get_weather",
        "arguments": {"location": "NY"},
        "inputResponses": responses,
        "requestState": INPUT_REQUIRED["requestState"],
    }
    return session.ask("tools/call", params)[1]


def test_input_required_flow_with_valid_answers() -> None:
    session, id_ = input_required_session()
    assert session.server(response(id_, INPUT_REQUIRED)) == []
    retried_id, asked = session.ask(
        "tools/call",
        {
            "name": "get_weather",
            "arguments": {"location": "NY"},
            "inputResponses": INPUT_RESPONSES,
            "requestState": INPUT_REQUIRED["requestState"],
        },
    )
    assert asked == []
    done = {"resultType": "complete", "content": [{"type": "text", "text": "sunny"}]}
    assert session.server(response(retried_id, done)) == []


def test_input_responses_are_checked_against_the_input_requests() -> None:
    session, id_ = input_required_session()
    assert session.server(response(id_, INPUT_REQUIRED)) == []
    answers = copy.deepcopy(INPUT_RESPONSES)
    answers["github_login"]["content"] = {"name": 7}
    answers["capital_of_france"]["content"] = {
        "type": "tool_use",
        "id": "use-1",
        "name": "get_weather",
        "input": {},
    }
    answers["capital_of_france"]["stopReason"] = "toolUse"
    violations = retry(session, answers)
    assert found(violations) == [
        (Rule.ELICITATION_RESPONSE_INVALID.value, "/params/inputResponses/github_login/content"),
        (
            Rule.SAMPLING_TOOL_USE_NOT_OFFERED.value,
            "/params/inputResponses/capital_of_france/content",
        ),
    ]
    # Each input request is answered once: a replay is not checked against it again, and
    # answers to requests that were never made are not checked at all.
    assert retry(session, answers) == []
    assert retry(session, {"never_asked": {"action": "accept", "content": {"x": 1}}}) == []


def test_input_requests_in_a_result_are_checked() -> None:
    session, id_ = input_required_session()
    asked = copy.deepcopy(INPUT_REQUIRED)
    elicitation = asked["inputRequests"]["github_login"]["params"]
    elicitation["requestedSchema"]["properties"]["name"] = {"type": "object"}
    sampling = asked["inputRequests"]["capital_of_france"]["params"]
    sampling["tools"] = [{"name": "lookup", "inputSchema": {"type": "object"}}]
    assert found(session.server(response(id_, asked))) == [
        (
            Rule.ELICITATION_SCHEMA_UNSUPPORTED.value,
            "/result/inputRequests/github_login/params/requestedSchema/properties/name/type",
        ),
        (
            Rule.SAMPLING_TOOLS_NOT_DECLARED.value,
            "/result/inputRequests/capital_of_france/params/tools",
        ),
    ]
    # A client that declared sampling.tools in its request metadata may be offered tools.
    declared, id_ = input_required_session({"sampling": {"tools": {}}})
    sampling_only = copy.deepcopy(INPUT_REQUIRED)
    sampling_only["inputRequests"]["capital_of_france"]["params"]["tools"] = sampling["tools"]
    assert declared.server(response(id_, sampling_only)) == []


def test_input_requests_are_checked_against_the_answered_requests_capabilities() -> None:
    session, id_ = input_required_session({"sampling": {"tools": {}}})
    other = request(99, "tools/list", {"_meta": meta(capabilities={})})
    assert session.client(other) == []
    asked = copy.deepcopy(INPUT_REQUIRED)
    asked["inputRequests"]["capital_of_france"]["params"]["tools"] = [
        {"name": "lookup", "inputSchema": {"type": "object"}}
    ]
    assert session.server(response(id_, asked)) == []


# --- sampling --------------------------------------------------------------------------------

LOOKUP = {
    "name": "lookup",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
SAMPLING = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}}],
    "maxTokens": 100,
    "tools": [LOOKUP],
}


def sample(session: Session, params: Obj, result: Obj) -> tuple[list[Violation], list[Violation]]:
    id_ = session.next_id()
    asked = session.server(request(id_, "sampling/createMessage", params))
    return asked, session.client(response(id_, result))


def tool_use(name: str, input_: Obj) -> Obj:
    return {
        "role": "assistant",
        "model": "m",
        "stopReason": "toolUse",
        "content": [{"type": "tool_use", "id": "use-1", "name": name, "input": input_}],
    }


@pytest.mark.parametrize(
    ("capabilities", "expected"),
    [
        ({}, [(Rule.SAMPLING_TOOLS_NOT_DECLARED.value, "/params/tools")]),
        ({"sampling": {}}, [(Rule.SAMPLING_TOOLS_NOT_DECLARED.value, "/params/tools")]),
        ({"sampling": {"tools": {}}}, []),
    ],
    ids=["no-sampling", "sampling-without-tools", "sampling-tools"],
)
def test_sampling_tools_need_the_declared_capability(capabilities: Obj, expected: Found) -> None:
    session = Session(V2025_11, capabilities=capabilities)
    asked, answered = sample(session, SAMPLING, tool_use("lookup", {"city": "Paris"}))
    assert found(asked) == expected
    assert answered == []
    with_choice = {**SAMPLING, "toolChoice": {"mode": "auto"}}
    asked, _ = sample(session, with_choice, tool_use("lookup", {"city": "Paris"}))
    assert found(asked) == expected + [(code, "/params/toolChoice") for code, _ in expected]


def test_sampling_result_is_checked_against_the_offered_tools() -> None:
    session = Session(V2025_11, capabilities={"sampling": {"tools": {}}})
    _, invalid = sample(session, SAMPLING, tool_use("lookup", {}))
    assert found(invalid) == [(Rule.TOOL_ARGUMENTS_INVALID.value, "/result/content/0/input")]
    _, not_offered = sample(session, SAMPLING, tool_use("delete", {}))
    assert found(not_offered) == [(Rule.SAMPLING_TOOL_USE_NOT_OFFERED.value, "/result/content/0")]


def test_sampling_include_context_and_required_tool_use_in_a_conversation() -> None:
    session = Session(V2025_11, capabilities={"sampling": {"tools": {}}})
    with_context = {**SAMPLING, "includeContext": "thisServer"}
    asked, _ = sample(session, with_context, tool_use("lookup", {"city": "Paris"}))
    assert found(asked) == [(Rule.SAMPLING_CONTEXT_NOT_DECLARED.value, "/params/includeContext")]
    required = {**SAMPLING, "toolChoice": {"mode": "required"}}
    text_only = example("CreateMessageResult", "text-response.json")
    asked, answered = sample(session, required, text_only)
    assert found(asked) == []
    assert found(answered) == [(Rule.SAMPLING_TOOL_USE_REQUIRED.value, "/result/content")]


def test_sampling_tools_are_not_part_of_2025_06_18() -> None:
    session = Session(V2025_06, capabilities={"sampling": {}})
    asked, _ = sample(session, SAMPLING, example("CreateMessageResult", "text-response.json"))
    assert found(asked) == [(Rule.SAMPLING_TOOLS_NOT_DECLARED.value, "/params/tools")]
    assert "is not part of 2025-06-18" in asked[0].message
    plain = {key: value for key, value in SAMPLING.items() if key != "tools"}
    asked, answered = sample(session, plain, example("CreateMessageResult", "text-response.json"))
    assert (asked, answered) == ([], [])


# --- prompts ---------------------------------------------------------------------------------

REVIEW = {
    "name": "review",
    "arguments": [{"name": "code", "required": True}, {"name": "style"}],
}


@pytest.mark.parametrize("revision", [V2024, V2025_11])
def test_prompts_get_is_checked_against_prompts_list(revision: Revision) -> None:
    session = Session(revision)

    def get(arguments: Obj | None, name: str = "review") -> list[Violation]:
        params: Obj = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return session.ask("prompts/get", params)[1]

    # Before prompts/list, nothing is known about the prompt.
    assert get({}) == []
    assert session.exchange("prompts/list", None, {"prompts": [REVIEW]}) == ([], [])
    assert get({"code": "x = 1"}) == []
    assert get({"code": "x", "style": "terse"}) == []
    assert found(get({"style": "terse"})) == [
        (Rule.PROMPT_ARGUMENT_MISSING.value, "/params/arguments")
    ]
    assert found(get(None)) == [(Rule.PROMPT_ARGUMENT_MISSING.value, "/params")]
    unknown = get({"code": "x", "tone": "dry"})
    assert [(v.code, v.pointer, v.severity) for v in unknown] == [
        (Rule.PROMPT_ARGUMENT_UNKNOWN.value, "/params/arguments/tone", Severity.WARNING)
    ]
    # A prompt the listing does not have is not checked here.
    assert get({}, name="other") == []


# --- batches ---------------------------------------------------------------------------------


def capture(*items: Any, **options: Any) -> list[tuple[int, str | None, str, str]]:
    report = validate_capture([json.dumps(item).encode() for item in items], **options)
    return [(f.line, f.direction, f.violation.code, f.violation.pointer) for f in report.findings]


def handshake(revision: Revision) -> list[Obj]:
    return [
        initialize(0, revision.value),
        initialize_result(0, revision.value),
        notification("notifications/initialized"),
    ]


BATCH = [request(1, "tools/list"), request(2, "prompts/list")]
BATCH_ANSWER = [response(1, {"tools": []}), response(2, {"prompts": []})]


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_batches_only_in_2025_03_26(revision: Revision) -> None:
    findings = capture(*handshake(revision), BATCH, BATCH_ANSWER)
    if revision.allows_batches:
        assert findings == []
    else:
        # Refused, but every message in them is still checked and paired: nothing unmatched.
        assert findings == [
            (4, None, Rule.BATCH_NOT_ALLOWED.value, ""),
            (5, None, Rule.BATCH_NOT_ALLOWED.value, ""),
        ]


def test_batch_contents_are_checked_one_by_one() -> None:
    bad = [request(1, "tools/list"), request(2, "tools/call", {"name": "nothing"})]
    assert capture(*handshake(V2025_03), bad, [response(1, {"tools": []}), response(3, {})]) == [
        (4, "c2s", Rule.TOOL_UNKNOWN.value, "/params/name"),
        (5, "s2c", Rule.UNMATCHED_RESPONSE.value, "/id"),
    ]
    assert capture(*handshake(V2025_03), [])[0] == (4, None, Rule.EMPTY_BATCH.value, "")


def test_initialize_must_not_be_batched() -> None:
    batch = [initialize(0, "2025-03-26"), request(1, "tools/list")]
    findings = capture(batch, initialize_result(0, "2025-03-26"), response(1, {"tools": []}))
    assert any(line == 1 and code != Rule.UNKNOWN_REVISION.value for line, _, code, _ in findings)


# --- memory bound ----------------------------------------------------------------------------


def test_requests_in_flight_are_bounded_by_max_tracked() -> None:
    conversation = Conversation(V2025_06, max_tracked=50)
    for id_ in range(1, 1001):
        assert observe(conversation, request(id_, "tools/list"), "c2s") == []
    answers = [message(response(id_, {"tools": []})) for id_ in range(1, 1001)]
    # Only the newest 50 are remembered; the others' answers are unmatched.
    assert [a.id for a in answers if conversation.response_direction(a) == "s2c"] == list(
        range(951, 1001)
    )
    assert found(conversation.observe(answers[0], "s2c")) == [
        (Rule.UNMATCHED_RESPONSE.value, "/id")
    ]
    assert conversation.observe(answers[-1], "s2c") == []


def test_remembered_prompts_are_bounded_by_max_tracked() -> None:
    session = Session(V2025_06, max_tracked=2)
    prompts = [{**REVIEW, "name": name} for name in ("first", "second", "third")]
    assert session.exchange("prompts/list", None, {"prompts": prompts}) == ([], [])
    assert session.ask("prompts/get", {"name": "first", "arguments": {}})[1] == []  # forgotten
    assert found(session.ask("prompts/get", {"name": "third", "arguments": {}})[1]) == [
        (Rule.PROMPT_ARGUMENT_MISSING.value, "/params/arguments")
    ]


def test_max_tracked_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Conversation(max_tracked=0)


# --- no value from a message in any violation ------------------------------------------------


def test_secrets_in_values_never_appear_in_violations() -> None:
    session = Session(
        V2025_11, capabilities={"elicitation": {}, "sampling": {"tools": {}}}, strict=True
    )
    token = tool(
        "login",
        {
            "user": {"type": "string", "maxLength": 3},
            "token": {"type": "string", "pattern": "^ghp_", "format": "email"},
            "mode": {"enum": ["a", "b"]},
            "pin": {"const": 1234},
        },
        required=("user",),
        output={"type": "object", "properties": {"ok": {"type": "boolean"}}},
    )
    violations = session.list_tools([token])
    violations += session.call(
        "login", {"user": SECRET, "token": SECRET, "mode": SECRET, "pin": SECRET, "extra": SECRET}
    )
    id_, asked = session.ask("tools/call", {"name": "login", "arguments": {"user": "ab"}})
    violations += asked
    violations += session.server(
        response(id_, {"content": [], "structuredContent": {"ok": SECRET}})
    )
    assert session.exchange("prompts/list", None, {"prompts": [REVIEW]}) == ([], [])
    violations += session.ask(
        "prompts/get", {"name": "review", "arguments": {"code": [SECRET], "tone": SECRET}}
    )[1]
    id_, asked = elicit(session, FORM)
    violations += asked
    violations += session.client(
        response(id_, {"action": "accept", "content": {"name": SECRET, "age": SECRET}})
    )
    sampled = {**SAMPLING, "tools": [LOOKUP]}
    violations += sample(session, sampled, tool_use("lookup", {"city": [SECRET]}))[1]
    codes = {v.code for v in violations}
    assert codes >= {
        Rule.TOOL_ARGUMENTS_INVALID.value,
        Rule.TOOL_ARGUMENT_UNDECLARED.value,
        Rule.TOOL_STRUCTURED_CONTENT_INVALID.value,
        Rule.INVALID_PARAMS.value,
        Rule.PROMPT_ARGUMENT_NOT_STRING.value,
        Rule.PROMPT_ARGUMENT_UNKNOWN.value,
        Rule.ELICITATION_RESPONSE_INVALID.value,
    }
    assert sum(len(v.issues) for v in violations) >= 8
    for violation in violations:
        assert SECRET not in str(violation)
        assert SECRET not in json.dumps(violation.to_dict())
        assert all(SECRET not in str(issue.to_dict()) for issue in violation.issues)
