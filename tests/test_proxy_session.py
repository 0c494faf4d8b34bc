"""The proxy's decisions in-process, on lines, with no transport: the cases the end-to-end
tests do not reach cheaply (strict mode, the in-flight bound, paginated listings, batches)."""

from __future__ import annotations

import io
import json
from typing import Any

import anyio

from strictmcp.proxy import TOO_MANY_IN_FLIGHT, Auditor, ProxySession, Routed

TOOL = {
    "name": "read_file",
    "description": "Read a file",
    "inputSchema": {
        "type": "object",
        "properties": {"path": {"type": "string", "maxLength": 100}},
        "required": ["path"],
    },
}
OTHER = {**TOOL, "name": "list_dir"}


def line(message: dict[str, Any] | list[dict[str, Any]]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def nested(value: Any, depth: int) -> Any:
    """``value`` ``depth`` levels down, in arrays and objects by turns (an attacker's nesting)."""
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


def messages(lines: list[bytes]) -> list[Any]:
    return [json.loads(item) for item in lines]


class Session:
    """A ProxySession driven line by line; its stderr kept."""

    def __init__(self, revision: str = "2025-11-25", **options: Any) -> None:
        self.stderr = io.StringIO()
        self.proxy = ProxySession(Auditor(None, stderr=self.stderr), **options)
        self.revision = revision

    def client(self, message: dict[str, Any] | list[dict[str, Any]]) -> Routed:
        return anyio.run(self.proxy.from_client, line(message))

    def server(self, message: dict[str, Any] | list[dict[str, Any]]) -> Routed:
        return anyio.run(self.proxy.from_server, line(message))

    def start(self) -> None:
        """initialize (answered), initialized."""
        params = {
            "protocolVersion": self.revision,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        self.client({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        result = {
            "protocolVersion": self.revision,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "s", "version": "1"},
        }
        self.server({"jsonrpc": "2.0", "id": 0, "result": result})
        self.client({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def list_tools(self, *pages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each page asked for and answered; the listings the client got."""
        seen = []
        for number, tools in enumerate(pages):
            request_id = f"list-{number}"
            params = {"cursor": str(number)} if number else {}
            request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
            self.client({**request, "params": params})
            result: dict[str, Any] = {"tools": tools}
            if number < len(pages) - 1:
                result["nextCursor"] = str(number + 1)
            routed = self.server({"jsonrpc": "2.0", "id": request_id, "result": result})
            seen.append(messages(routed.forward)[0]["result"])
        return seen

    def call(self, request_id: int, name: str, arguments: Any) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }


def test_strict_mode_refuses_undeclared_arguments_the_schema_allows() -> None:
    for strict in (False, True):
        session = Session(strict=strict)
        session.start()
        session.list_tools([TOOL])
        routed = session.client(session.call(1, "read_file", {"path": "a", "mode": "w"}))
        if not strict:
            assert routed.forward
            assert not routed.reply
            continue
        assert not routed.forward
        (answer,) = messages(routed.reply)
        assert answer["id"] == 1
        assert answer["result"]["isError"] is True
        assert "mode" in answer["result"]["content"][0]["text"]


def test_requests_beyond_the_in_flight_bound_are_answered_with_too_many() -> None:
    session = Session(max_in_flight=2)
    session.start()
    session.list_tools([TOOL])
    for request_id in (1, 2):
        assert session.client(session.call(request_id, "read_file", {"path": "a"})).forward
    routed = session.client(session.call(3, "read_file", {"path": "a"}))
    assert not routed.forward
    (busy,) = messages(routed.reply)
    assert busy["id"] == 3
    assert busy["error"]["code"] == TOO_MANY_IN_FLIGHT
    # An answer frees a place: the next request goes through again.
    result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    session.server({"jsonrpc": "2.0", "id": 1, "result": result})
    assert session.client(session.call(4, "read_file", {"path": "a"})).forward


def test_paginated_listing_gets_the_validate_tool_on_its_last_page_only() -> None:
    session = Session()
    session.start()
    first, last = session.list_tools([TOOL], [OTHER])
    assert [t["name"] for t in first["tools"]] == ["read_file"]
    assert [t["name"] for t in last["tools"]] == ["list_dir", "validate"]
    # Tools from both pages are known: a bad call of either is refused, a good one forwarded.
    for number, name in enumerate(("read_file", "list_dir"), start=1):
        refused = session.client(session.call(number, name, {"path": 5}))
        assert not refused.forward
        assert messages(refused.reply)[0]["result"]["isError"] is True
        assert session.client(session.call(10 + number, name, {"path": "a"})).forward


def test_a_batch_is_split_into_what_goes_on_and_what_is_answered() -> None:
    session = Session("2025-03-26")
    session.start()
    session.list_tools([TOOL])
    good = session.call(1, "read_file", {"path": "a"})
    bad = session.call(2, "read_file", {"path": 5})
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    routed = session.client([good, bad, ping])
    (forwarded,) = messages(routed.forward)
    assert [m["id"] for m in forwarded] == [1, 3]
    (answered,) = messages(routed.reply)
    assert [m["id"] for m in answered] == [2]
    assert answered[0]["result"]["isError"] is True
    assert sorted(routed.sent, key=str) == [1, 3]
    assert routed.settled == [2]


def test_a_line_nested_too_deeply_to_read_is_answered_not_a_crash() -> None:
    session = Session()
    session.start()
    deep = b'{"jsonrpc": "2.0", "id": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    routed = anyio.run(session.proxy.from_client, deep)
    assert not routed.forward
    (answer,) = messages(routed.reply)
    assert answer["error"]["code"] in (-32700, -32600)
    # From the server, the same is reported and the stream goes on.
    assert anyio.run(session.proxy.from_server, deep).forward == []
