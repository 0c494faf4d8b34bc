"""One enforcement, wherever a call is checked: the proxy and the SDK integrations refuse,
withhold and audit a call alike, through :class:`strictmcp.enforce.Enforcer`."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import anyio
import pytest

from strictmcp.enforce import AUDIT_LOGGER, Auditor, Enforcer
from strictmcp.guards.policy import GuardRule, Mode, Policy
from strictmcp.guards.text import TextGuard
from strictmcp.integrations._server_core import ServerCore
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
        return await core.call(listing, "read_file", arguments, proceed, lambda r: r)

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
    assert observed.call is not None
    assert observed.call.jsonrpc_error is not None
    assert list(observed) == list(observed.call.violations)
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert conversation.observe(decode(json.dumps(ping)).messages[0], "c2s").call is None


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
