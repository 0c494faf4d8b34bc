"""``ProxySession.cancel``: a request the client gave up on (an HTTP client that went away) is
cancelled upstream, answered to nobody, and its late answer dropped; and the relay's
deadlines: a request the server leaves unanswered times out, one it answers holds none."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any, cast

import anyio

from strictmcp.connect.alarms import alarms
from strictmcp.proxy import Auditor, ProxySession, Routed
from strictmcp.proxy.relay import Relay

TOOL = {
    "name": "read_file",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
RESULT = {"content": [{"type": "text", "text": "ok"}], "isError": False}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def started(*, listed: bool = True) -> tuple[ProxySession, io.StringIO]:
    """A session past initialize (answered unless ``listed`` is False, when the initialize
    request is left waiting), with one tool listed."""
    stderr = io.StringIO()
    session = ProxySession(Auditor(None, stderr=stderr))
    client = {"name": "t", "version": "1"}
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client}
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    anyio.run(session.from_client, line(initialize))
    if not listed:
        return session, stderr
    result = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    }
    anyio.run(session.from_server, line({"jsonrpc": "2.0", "id": 0, "result": result}))
    listing = {"jsonrpc": "2.0", "id": "list", "method": "tools/list", "params": {}}
    anyio.run(session.from_client, line(listing))
    answer = {"jsonrpc": "2.0", "id": "list", "result": {"tools": [TOOL]}}
    anyio.run(session.from_server, line(answer))
    return session, stderr


def test_a_request_the_client_cancels_is_cancelled_upstream_and_its_answer_dropped() -> None:
    session, stderr = started()
    params = {"name": "read_file", "arguments": {"path": "a"}}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    assert anyio.run(session.from_client, line(call)).sent == [1]
    routed = session.cancel(1, "the client went away")
    assert not routed.reply  # the client is gone: nothing is answered
    assert routed.settled == [1]
    assert [json.loads(item) for item in routed.forward] == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 1, "reason": "the client went away"},
        }
    ]
    assert "the client cancelled a tools/call request" in stderr.getvalue()
    assert "did not answer" not in stderr.getvalue()
    # The server's late answer goes nowhere, and is no unmatched response.
    late = anyio.run(session.from_server, line({"jsonrpc": "2.0", "id": 1, "result": RESULT}))
    assert not late.forward
    assert not late.reply
    assert "late answer to a request that was cancelled" in stderr.getvalue()
    assert "answers no request" not in stderr.getvalue()
    # A request no longer waiting, or never sent, is left alone.
    assert session.cancel(1, "again") == Routed()
    assert session.cancel(99, "never sent") == Routed()


def test_an_initialize_the_client_cancels_is_not_cancelled_upstream() -> None:
    session, stderr = started(listed=False)
    # The spec forbids cancelling initialize: the request is only no longer waited for.
    assert session.cancel(0, "the client went away") == Routed(settled=[0])
    assert "the client cancelled a initialize request" in stderr.getvalue()


def test_a_timeout_still_answers_the_client() -> None:
    session, stderr = started()
    params = {"name": "read_file", "arguments": {"path": "a"}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}
    anyio.run(session.from_client, line(call))
    routed = session.expire(2)
    (reply,) = [json.loads(item) for item in routed.reply]
    assert reply["id"] == 2
    assert reply["error"]["code"] == -32001
    (cancelled,) = [json.loads(item) for item in routed.forward]
    assert cancelled["params"] == {"requestId": 2, "reason": "timed out in strictmcp proxy"}
    assert "the server did not answer a tools/call request in time" in stderr.getvalue()
    anyio.run(session.from_server, line({"jsonrpc": "2.0", "id": 2, "result": RESULT}))
    assert "late answer to a request that timed out" in stderr.getvalue()


# --- the relay's deadlines ---------------------------------------------------------------------


class _Server:
    """An upstream that records what it is sent and answers when told to."""

    blocked = False
    waiting = False

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.answers: asyncio.Queue[bytes | None] = asyncio.Queue()

    def write(self, lines: list[bytes]) -> None:
        self.lines += lines

    async def drain(self) -> None:
        return None

    async def receive(self) -> bytes | None:
        return await self.answers.get()

    async def aclose(self) -> int:
        return 0


class _Client(_Server):
    pass


def test_the_relay_times_out_only_what_the_server_left_unanswered() -> None:
    session, _ = started()

    async def scenario() -> tuple[list[Any], list[Any], int]:
        server, client = _Server(), _Client()
        # Long enough for a loaded machine to relay the 99 answers before it runs out.
        relay = Relay(session, cast(Any, server), timeout=3.0, client=cast(Any, client))
        running = asyncio.create_task(relay.run())
        for request_id in range(1, 101):
            params = {"name": "read_file", "arguments": {"path": str(request_id)}}
            call = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
            await relay.from_client(line(call))
        for request_id in range(1, 100):  # all but the last are answered in time
            server.answers.put_nowait(line({"jsonrpc": "2.0", "id": request_id, "result": RESULT}))
        while len(client.lines) < 99:
            await asyncio.sleep(0.01)
        # Answered requests hold no deadline: one is left, for the unanswered call.
        left = len(alarms())
        while len(client.lines) < 100:  # the timeout's answer
            await asyncio.sleep(0.01)
        server.answers.put_nowait(None)
        await running
        answers = [json.loads(item) for item in client.lines]
        sent = [json.loads(item) for item in server.lines]
        return answers, sent, left

    answers, sent, left = asyncio.run(asyncio.wait_for(scenario(), 30))
    assert left == 1
    assert [a["id"] for a in answers if "result" in a] == list(range(1, 100))
    timed_out = [a for a in answers if "error" in a]
    assert [(a["id"], a["error"]["code"]) for a in timed_out] == [(100, -32001)]
    cancels = [m for m in sent if m.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [100]
