"""The translation between a stateless (2026-07-28) request and a request on a session of a
handshake revision (protocol/bridge.py), without any I/O."""

from __future__ import annotations

from typing import Any

from strictmcp.protocol import bridge

_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "extensions": {"x/y": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "app", "version": "2"},
    "progressToken": "p1",
    "com.example/trace": "t",
}


def test_a_request_goes_on_without_the_stateless_envelope() -> None:
    params = {"name": "ask", "arguments": {}, "_meta": _META, "requestState": "s"}
    sent = bridge.to_session(
        {"jsonrpc": "2.0", "id": "c1", "method": "tools/call", "params": params}
    )
    assert sent["params"] == {
        "name": "ask",
        "arguments": {},
        "_meta": {"progressToken": "p1", "com.example/trace": "t"},
    }
    bare = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {}}}
    assert bridge.to_session(bare)["params"] == {}


def test_the_session_is_opened_with_the_clients_name_and_capabilities() -> None:
    opening = bridge.opening("o", {"_meta": _META})
    assert opening["method"] == "initialize"
    assert opening["params"] == {
        "protocolVersion": "2025-11-25",
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "app", "version": "2"},
    }
    assert bridge.capability_names({"_meta": _META}) == frozenset({"sampling"})
    nameless: dict[str, Any] = {"_meta": {"io.modelcontextprotocol/clientInfo": {"name": 3}}}
    assert bridge.opening("o", nameless)["params"]["clientInfo"]["name"] == "strictmcp-bridge"


def test_results_are_marked_complete_and_not_cached_across_callers() -> None:
    listed = bridge.to_stateless({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}, "tools/list")
    assert listed["result"] == {
        "tools": [],
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
    }
    called = bridge.to_stateless({"id": 1, "result": {"content": []}}, "tools/call")
    assert called["result"] == {"content": [], "resultType": "complete"}
    error = {"id": 1, "error": {"code": -1, "message": "m"}}
    assert bridge.to_stateless(error, "tools/call") == error


def test_discovery_is_answered_from_the_initialize_result() -> None:
    initialized = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}, "tasks": {"list": {}}, "logging": {}},
        "serverInfo": {"name": "s", "version": "1"},
        "instructions": "use it",
    }
    result = bridge.discovered(7, initialized)["result"]
    assert result["supportedVersions"] == ["2026-07-28"]
    assert result["capabilities"] == {"tools": {}}
    assert result["_meta"] == {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
    assert result["instructions"] == "use it"


def test_server_requests_become_one_input_required_result() -> None:
    asked = {"r1": {"jsonrpc": "2.0", "method": "roots/list", "id": 4}}
    result = bridge.input_required("c3", asked, "state")
    assert result == {
        "jsonrpc": "2.0",
        "id": "c3",
        "result": {
            "resultType": "input_required",
            "inputRequests": {"r1": {"method": "roots/list"}},
            "requestState": "state",
        },
    }
    state, answers = bridge.responses_given(
        {"requestState": "state", "inputResponses": {"r1": {"roots": []}, "r2": "no"}}
    )
    assert (state, answers) == ("state", {"r1": {"roots": []}})
