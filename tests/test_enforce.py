"""One enforcement, wherever a call is checked: the proxy and the SDK integrations refuse,
withhold and audit a call alike, through :class:`strictmcp.enforce.Enforcer`."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.server.lowlevel import Server

from strictmcp.enforce import AUDIT_LOGGER, Auditor, Enforcer
from strictmcp.enforce.hygiene import HYGIENE_META_KEY
from strictmcp.guards.text import TextGuard
from strictmcp.integrations._server_core import ServerCore
from strictmcp.integrations.lowlevel import protect
from strictmcp.policy import GuardRule, Mode, Policy
from strictmcp.protocol import Conversation, Revision, ToolRegistry, decode, own_message
from strictmcp.proxy import ProxySession, Routed

REVISION = "2025-11-25"
TOOL = {
    "name": "read_file",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    "outputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}
POLICY = Policy(rules=(GuardRule("read_file", "/path", TextGuard(max_length=3)),))
GOOD = {"path": "a"}
GUARDED = {"path": "abcdef"}
INVALID = {"path": 1}
BAD_RESULT = {"content": [{"type": "text", "text": "1"}], "structuredContent": {"text": 1}}
GOOD_RESULT = {"content": [{"type": "text", "text": "a"}], "structuredContent": {"text": "a"}}


def decide(proxy: ProxySession, message: dict[str, Any], direction: Any) -> Routed:
    routed = proxy.decide(json.dumps(message).encode(), direction)
    assert isinstance(routed, Routed)  # nothing here needs awaiting
    return routed


def through_proxy(log: io.StringIO, arguments: dict[str, Any], result: dict[str, Any]) -> Any:
    """The ``CallToolResult`` a client gets for one call of TOOL through a proxy enforcing
    POLICY: the proxy's own, or ``result`` as the proxy hands it on."""
    proxy = ProxySession(Auditor(log), policy=POLICY)
    params = {"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "c"}}
    server = {"protocolVersion": REVISION, "capabilities": {}, "serverInfo": {"name": "s"}}
    decide(proxy, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, "c2s")
    decide(proxy, {"jsonrpc": "2.0", "id": 0, "result": server}, "s2c")
    decide(proxy, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, "c2s")
    decide(proxy, {"jsonrpc": "2.0", "id": 1, "result": {"tools": [TOOL]}}, "s2c")
    call = {"name": "read_file", "arguments": arguments}
    routed = decide(
        proxy, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}, "c2s"
    )
    if routed.reply:
        return json.loads(routed.reply[0])["result"]
    routed = decide(proxy, {"jsonrpc": "2.0", "id": 2, "result": result}, "s2c")
    return json.loads(routed.forward[0])["result"]


def in_server(arguments: dict[str, Any], result: dict[str, Any]) -> Any:
    """The same call answered by an SDK integration's core, the tool answering ``result``."""
    core = ServerCore(policy=POLICY)
    listing = core.listing(REVISION, [TOOL])

    async def proceed() -> dict[str, Any]:
        return result

    async def call() -> Any:
        return await core.call(listing, "read_file", arguments, proceed, lambda r: r, request_id=2)

    return anyio.run(call)


@pytest.mark.parametrize(
    ("arguments", "result"),
    [(INVALID, GOOD_RESULT), (GUARDED, GOOD_RESULT), (GOOD, BAD_RESULT), (GOOD, GOOD_RESULT)],
    ids=["schema", "policy", "result", "allowed"],
)
def test_the_proxy_and_a_server_give_the_same_answer(
    arguments: dict[str, Any], result: dict[str, Any]
) -> None:
    answer = through_proxy(io.StringIO(), arguments, result)
    assert answer == in_server(arguments, result)
    assert answer.get("isError", False) is (result is BAD_RESULT or arguments is not GOOD)


@pytest.mark.parametrize(
    ("arguments", "result", "stage", "action"),
    [
        (INVALID, GOOD_RESULT, "arguments", "refused"),
        (GUARDED, GOOD_RESULT, "policy", "refused"),
        (GOOD, BAD_RESULT, "result", "replaced"),
    ],
)
def test_the_proxy_and_a_server_audit_alike(
    caplog: pytest.LogCaptureFixture,
    arguments: dict[str, Any],
    result: dict[str, Any],
    stage: str,
    action: str,
) -> None:
    log = io.StringIO()
    through_proxy(log, arguments, result)
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)
    in_server(arguments, result)
    logged = [r.__dict__["strictmcp"] for r in caplog.records if r.name == AUDIT_LOGGER]
    written = [json.loads(entry) for entry in log.getvalue().splitlines()]
    written = [r for r in written if r["method"] == "tools/call"]
    for records in (logged, written):
        for record in records:
            assert isinstance(record.pop("time"), str)
    assert written == logged
    assert [(r["stage"], r["action"]) for r in written] == [(stage, action)]


def test_the_dry_run_tells_what_the_real_call_would_meet() -> None:
    registry = ToolRegistry(Revision(REVISION))
    registry.update({"tools": [TOOL]})
    modes: list[tuple[Mode, bool]] = [("enforce", False), ("audit", True)]
    for mode, valid in modes:
        enforcer = Enforcer(policy=POLICY, mode=mode)
        verdict = anyio.run(enforcer.dry_run(registry).check, "read_file", GUARDED)
        assert verdict.valid is valid
        assert enforcer.check_call(registry, "read_file", GUARDED).allowed is valid


def test_observe_returns_the_verdict_on_a_call() -> None:
    conversation = Conversation(Revision(REVISION))
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
    observed = conversation.observe(decode(json.dumps(call)).messages[0], "c2s")
    verdict = conversation.call
    assert verdict is not None
    assert verdict.jsonrpc_error is not None
    assert observed == list(verdict.violations)
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    conversation.observe(decode(json.dumps(ping)).messages[0], "c2s")
    assert conversation.call is None


@pytest.mark.parametrize(
    "obj",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {"content": []}},
        {"jsonrpc": "2.0", "id": "a", "error": {"code": -32602, "message": "Unknown tool"}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {}},
    ],
)
def test_own_message_reads_as_decode_does(obj: dict[str, Any]) -> None:
    assert own_message(obj) == decode(json.dumps(obj)).messages[0]


ROUTES = Policy.from_dict(
    {
        "guard": [
            {"method": "resources/read", "argument": "/uri", "kind": "path", "roots": ["/srv"]}
        ],
        "result": [{"method": "resources/read", "hygiene": "strip"}],
    }
)
HIDDEN_TEXT = "file\u200b text\u202e"


def read_through_proxy(uri: str) -> dict[str, Any]:
    """What a client gets for a ``resources/read`` of ``uri`` through a proxy enforcing
    ROUTES, the server answering with HIDDEN_TEXT: the error, or the result."""
    proxy = ProxySession(Auditor(io.StringIO()), policy=ROUTES)
    params = {"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "c"}}
    server = {"protocolVersion": REVISION, "capabilities": {}, "serverInfo": {"name": "s"}}
    decide(proxy, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}, "c2s")
    decide(proxy, {"jsonrpc": "2.0", "id": 0, "result": server}, "s2c")
    read = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}
    routed = decide(proxy, read, "c2s")
    if routed.reply:
        return dict(json.loads(routed.reply[0])["error"])
    contents = [{"uri": uri, "text": HIDDEN_TEXT}]
    routed = decide(proxy, {"jsonrpc": "2.0", "id": 1, "result": {"contents": contents}}, "s2c")
    return dict(json.loads(routed.forward[0])["result"])


def read_in_server(uri: str) -> dict[str, Any]:
    """The same read of a low-level SDK server protected with ROUTES."""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[])

    async def read(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        text = types.TextResourceContents(uri=params.uri, text=HIDDEN_TEXT)
        return types.ReadResourceResult(contents=[text])

    server = Server("t", on_list_tools=list_tools, on_call_tool=call_tool, on_read_resource=read)
    protect(server, policy=ROUTES)

    async def run() -> dict[str, Any]:
        async with Client(server, mode="legacy") as client:
            try:
                result = await client.read_resource(uri)
            except MCPError as error:
                return error.error.model_dump(exclude_none=True)
            return result.model_dump(by_alias=True, exclude_none=True, mode="json")

    return anyio.run(run)


@pytest.mark.parametrize("uri", ["file:///etc/passwd", "file:///%65tc/passwd", "https://x/"])
def test_a_guarded_resource_read_is_refused_alike(uri: str) -> None:
    refused = read_through_proxy(uri)
    assert refused["code"] == -32602
    assert refused == read_in_server(uri)


def test_a_resource_read_is_cleaned_alike() -> None:
    cleaned = read_through_proxy("file:///srv/a.txt")
    assert cleaned["contents"][0]["text"] == "file text"
    served = read_in_server("file:///srv/a.txt")
    assert served["contents"][0]["text"] == "file text"
    assert served["_meta"][HYGIENE_META_KEY] == cleaned["_meta"][HYGIENE_META_KEY]
