"""The MCP client over stdio: handshake, paging, answers to the server, faults, restarts."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from check_fixtures.support import http_sloppy
from strictmcp.connect.client import (
    ClientError,
    RpcError,
    Success,
    TransportFailure,
    open_client,
)
from strictmcp.connect.process import StderrTail
from strictmcp.protocol import Revision

FIXTURES = Path(__file__).resolve().parent / "check_fixtures"
RAW = [sys.executable, str(FIXTURES / "raw_server.py")]
SDK = [sys.executable, str(FIXTURES / "sloppy_server.py"), "--faults"]


def run(coroutine: object) -> None:
    asyncio.run(coroutine)  # type: ignore[arg-type]


def test_handshake_paging_and_answers_to_server_requests() -> None:
    async def main() -> None:
        async with open_client(RAW, timeout=10) as client:
            assert client.revision is Revision.V2025_06_18
            assert client.server_info == {"name": "raw", "version": "1"}
            tools = await client.list_tools()
            # The listing came only after both server requests were answered.
            assert [tool["name"] for tool in tools] == ["tool0", "tool1", "tool2"]
            stderr = "\n".join(client.stderr)
            assert '"id": "s-ping", "result": {}' in stderr
            assert '"id": "s-sample", "error": {"code": -32601' in stderr
            assert client.alive

    run(main())


def test_garbage_and_oversized_lines_are_skipped() -> None:
    async def main() -> None:
        async with open_client(RAW, timeout=10, max_size=1000) as client:
            assert await client.request("garbage") == Success({"ok": True})
            assert await client.request("big") == Success({"ok": True})
            outcome = await client.request("nothing/here")
            assert isinstance(outcome, RpcError)
            assert outcome.code == -32601

    run(main())


def test_timeout_is_an_outcome_and_the_client_goes_on() -> None:
    async def main() -> None:
        async with open_client(RAW, timeout=10) as client:
            outcome = await client.request("hang", timeout=0.3)
            assert isinstance(outcome, TransportFailure)
            assert outcome.reason == "timeout"
            assert await client.request("garbage") == Success({"ok": True})

    run(main())


def test_a_crash_is_an_outcome_with_stderr_and_a_restart_works() -> None:
    async def main() -> None:
        async with open_client(RAW, timeout=10) as client:
            outcome = await client.request("exit")
            assert isinstance(outcome, TransportFailure)
            assert outcome.reason == "gone"
            assert "exit status 7" in outcome.message
            assert any("about to fail" in line for line in outcome.stderr)
            assert not client.alive
            again = await client.request("garbage")
            assert isinstance(again, TransportFailure)
            await client.restart()
            assert client.alive
            assert client.restarts == 1
            assert await client.request("garbage") == Success({"ok": True})

    run(main())


def test_sdk_server_call_tool_outcomes() -> None:
    async def main() -> None:
        async with open_client(SDK, timeout=20) as client:
            assert client.revision is Revision.V2025_11_25
            names = [tool["name"] for tool in await client.list_tools()]
            assert "add" in names
            outcome = await client.call_tool("add", {"a": 1, "b": 2})
            assert isinstance(outcome, Success)
            assert outcome.result["structuredContent"] == {"sum": 3}
            refused = await client.call_tool("add", {"a": "one"})
            assert isinstance(refused, Success)
            assert refused.result["isError"] is True
            crashed = await client.call_tool("crash_long", {"name": "x" * 9})
            assert isinstance(crashed, TransportFailure)
            assert "name buffer overflow" in " ".join(crashed.stderr)

    run(main())


def test_stateless_revision_uses_discover_and_meta() -> None:
    async def main() -> None:
        async with open_client(SDK, revision="2026-07-28", timeout=20) as client:
            assert client.revision is Revision.V2026_07_28
            assert client.server_info.get("name") == "check-fixture"
            outcome = await client.call_tool("add", {"a": 2, "b": 2})
            assert isinstance(outcome, Success)
            assert outcome.result["structuredContent"] == {"sum": 4}
            assert outcome.result.get("resultType") == "complete"

    run(main())


def test_a_command_that_cannot_start_is_a_client_error() -> None:
    async def main() -> None:
        with pytest.raises(ClientError, match="cannot start"):
            async with open_client(["/nonexistent/server"]):
                pass

    run(main())


def test_exactly_one_of_command_and_url() -> None:
    async def main() -> None:
        with pytest.raises(ValueError, match="exactly one"):
            async with open_client():
                pass

    run(main())


def test_stderr_tail_is_bounded() -> None:
    tail = StderrTail(lines=3, chars=10)
    tail.feed(b"one\ntwo\nthree\nfour\n" + b"x" * 100 + b"\n")
    tail.feed(b"y" * 10_000)
    lines = tail.lines()
    assert lines[:3] == ["three", "four", "x" * 10 + "…"]
    assert lines[3] == "y" * 10


def test_http_client() -> None:
    async def main() -> None:
        with http_sloppy() as url:
            async with open_client(url=url, timeout=20) as client:
                assert client.server_info.get("name") == "check-fixture"
                assert [t["name"] for t in await client.list_tools()] == ["add", "greet"]
                outcome = await client.call_tool("add", {"a": 1, "b": 1})
                assert isinstance(outcome, Success)
                assert outcome.result["structuredContent"] == {"sum": 2}

    run(main())
