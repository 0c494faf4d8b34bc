"""StrictClientSession, StrictClient and validate_call through real transports.

The servers are this file run as a script (``python test_integration_client.py stdio none``,
``... http good PORT``): mcp's low-level ``Server``, written by hand, so that nothing of
strictmcp's own server side is under test here. Every server lists its tools two to a page.
Validation modes: ``none`` advertises no validate tool (but has a decoy tool named
``validate`` that approves everything); ``good`` advertises ``check_args``, a hand-written
Validation Protocol tool; ``garbage`` advertises one that answers malformed verdicts.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client import IncomingMessage, Transport
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged, listen
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp_types.jsonrpc import INVALID_PARAMS

from strictmcp.integrations.client import (
    StrictClient,
    StrictClientSession,
    ToolResultError,
    open_http_session,
    open_stdio_session,
)
from strictmcp.integrations.client_validate import ValidationAnswer, validate_call

# A value the server puts in results that break their outputSchema: it must reach no message.
CANARY = "canary-7f3a9c"
PAGE_SIZE = 2
VALIDATOR = "check_args"
SERVER_NOTE = "answered by the test server"
LEGACY, MODERN = "2025-11-25", "2026-07-28"
INPUT = {
    "type": "object",
    "properties": {"a": {"type": "integer"}},
    "required": ["a"],
    "additionalProperties": False,
}
PROTOCOL_INPUT = {
    "type": "object",
    "properties": {"tool": {"type": "string"}, "arguments": {"type": "object"}},
    "required": ["tool", "arguments"],
}
PROTOCOL_OUTPUT = {
    "type": "object",
    "properties": {
        "valid": {"type": "boolean"},
        "errors": {"type": "array", "items": {"type": "string"}},
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["valid", "errors", "warnings"],
}


# ---------------------------------------------------------------------------------------------
# The server


def _shape_schema(key: str) -> dict[str, Any]:
    return {"type": "object", "properties": {key: {"type": "integer"}}, "required": [key]}


def _tools(shape: str, validation: str) -> list[types.Tool]:
    anything = {"type": "object"}
    tools = [
        types.Tool(name="double", input_schema=INPUT, output_schema=_shape_schema("r")),
        types.Tool(name="validate", input_schema=anything),  # the decoy
        types.Tool(name="shape", input_schema=anything, output_schema=_shape_schema(shape)),
        types.Tool(name="mutate", input_schema=anything),
        types.Tool(
            name="broken",
            input_schema=anything,
            output_schema={"type": "object", "properties": {"x": {"type": "nonsense"}}},
        ),
        types.Tool(
            name="late",
            input_schema=anything,
            output_schema={"type": "object", "properties": {"z": {"const": 1}}},
        ),
    ]
    if validation != "none":
        tools.append(
            types.Tool(name=VALIDATOR, input_schema=PROTOCOL_INPUT, output_schema=PROTOCOL_OUTPUT)
        )
    return tools


def _judge(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The Validation Protocol's verdict on a call, written by hand for the tool "double"."""
    if tool != "double":
        return {"valid": False, "errors": ["(tool): unknown tool [tool-unknown]"], "warnings": []}
    errors = []
    a = arguments.get("a")
    if "a" not in arguments:
        errors.append(": is missing required property a [missing-required]")
    elif not isinstance(a, int) or isinstance(a, bool):
        errors.append("/a: must be of type integer [wrong-type]")
    errors += [
        f"/{key}: is not declared [tool-argument-undeclared]" for key in arguments if key != "a"
    ]
    return {"valid": not errors, "errors": errors, "warnings": [SERVER_NOTE]}


def _result(structured: Any, *, is_error: bool = False) -> types.CallToolResult:
    text = types.TextContent(type="text", text="done")
    return types.CallToolResult(content=[text], structured_content=structured, is_error=is_error)


def _server(validation: str) -> Server[Any]:
    state = {"shape": "n"}
    bus = InMemorySubscriptionBus()

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = _tools(state["shape"], validation)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE_SIZE
        cursor = str(end) if end < len(tools) else None
        return types.ListToolsResult(tools=tools[start:end], next_cursor=cursor)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "double":
            a = args["a"]
            return _result({"r": CANARY if a == 13 else 2 * a})
        if params.name in ("shape", "late", "broken"):
            return _result(args.get("sc"))
        if params.name == "mutate":
            state["shape"] = "m"
            if ctx.protocol_version == MODERN:
                await bus.publish(ToolsListChanged())
            else:
                await ctx.session.send_tool_list_changed()
            return _result(None)
        if params.name == "validate":
            return _result({"valid": True, "errors": [], "warnings": []})
        if params.name == VALIDATOR and validation == "good":
            return _result(_judge(args["tool"], args["arguments"]))
        if params.name == VALIDATOR and validation == "garbage":
            if args["tool"] == "explode":
                raise MCPError(code=INVALID_PARAMS, message="validator exploded")
            if args["tool"] == "fail":
                return _result(None, is_error=True)
            return _result({"valid": "yes", "errors": "none"})
        raise MCPError(code=INVALID_PARAMS, message=f"unknown tool {params.name}")

    class TestServer(Server[Any]):
        # get_capabilities feeds both initialize and server/discover: the one place to
        # advertise the validate tool to both eras.
        def get_capabilities(
            self,
            notification_options: Any = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
            *,
            protocol_version: str | None = None,
        ) -> types.ServerCapabilities:
            if validation != "none":
                experimental_capabilities = {"toolValidation": {"tool": VALIDATOR}}
            return super().get_capabilities(
                notification_options,
                experimental_capabilities,
                extensions,
                protocol_version=protocol_version,
            )

    return TestServer(
        "client-test",
        version="1",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )


def _serve(transport: str, validation: str, port: str | None) -> None:
    server = _server(validation)
    if transport == "http":
        import uvicorn  # noqa: PLC0415  (only the HTTP server needs it)

        app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=int(port or 0), log_level="warning")
        return
    from mcp.server.stdio import stdio_server  # noqa: PLC0415

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


# ---------------------------------------------------------------------------------------------
# Starting servers


def stdio_params(validation: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[__file__, "stdio", validation])


@contextmanager
def http_server(validation: str) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, __file__, "http", validation, str(port)], stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            if process.poll() is not None:
                pytest.fail(f"HTTP test server exited: {process.stderr.read()!r}")  # type: ignore[union-attr]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("HTTP test server did not start listening within 20 s")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def http_good() -> Iterator[str]:
    with http_server("good") as url:
        yield url


@pytest.fixture(scope="module")
def http_garbage() -> Iterator[str]:
    with http_server("garbage") as url:
        yield url


@asynccontextmanager
async def stock_session(transport: Transport) -> AsyncIterator[ClientSession]:
    """mcp's own ClientSession, past initialize."""
    async with transport as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def run(test: Callable[[], Awaitable[None]]) -> None:
    async def bounded() -> None:
        with anyio.fail_after(30):
            await test()

    anyio.run(bounded)


def assert_refused(error: ToolResultError, code: str, *where: str) -> None:
    assert isinstance(error, RuntimeError)
    assert CANARY not in str(error)
    assert CANARY not in repr(error.violations)
    assert code in {v.code for v in error.violations}, error.violations
    for text in where:
        assert text in str(error), str(error)


# ---------------------------------------------------------------------------------------------
# Results


async def check_results(session: StrictClientSession) -> None:
    """What every transport and era must do: the calls come before any tools/list."""
    assert session.tools is None
    good = await session.call_tool("double", {"a": 2})
    assert good.structured_content == {"r": 4}
    # The first check listed every page (6 or 7 tools, 2 to a page).
    tools = session.tools
    assert tools is not None
    assert tools.names()[:6] == ["double", "validate", "shape", "mutate", "broken", "late"]
    with pytest.raises(ToolResultError) as refused:
        await session.call_tool("double", {"a": 13})
    assert_refused(
        refused.value,
        "tool-structured-content-invalid",
        "/structuredContent/r",
        "[wrong-type]",
        '"double"',
    )
    # "late" is on the last page; its schema is checked like any other.
    assert (await session.call_tool("late", {"sc": {"z": 1}})).structured_content == {"z": 1}
    with pytest.raises(ToolResultError) as late:
        await session.call_tool("late", {"sc": {"z": 2}})
    assert_refused(late.value, "tool-structured-content-invalid", "[const-mismatch]")
    with pytest.raises(ToolResultError) as missing:
        await session.call_tool("shape", {})
    assert_refused(missing.value, "tool-structured-content-missing", "/structuredContent")
    # An outputSchema refused when listed leaves nothing to check the result against.
    with pytest.raises(ToolResultError) as broken:
        await session.call_tool("broken", {"sc": {}})
    assert_refused(broken.value, "tool-output-schema-invalid", "cannot be checked")


def test_results_over_stdio() -> None:
    async def test() -> None:
        async with open_stdio_session(stdio_params("none")) as session:
            assert session.protocol_version == LEGACY
            await check_results(session)

    run(test)


def test_results_over_http(http_good: str) -> None:
    async def test() -> None:
        async with open_http_session(http_good) as session:
            assert session.protocol_version == LEGACY
            await check_results(session)

    run(test)


def test_results_over_stdio_on_2026_07_28() -> None:
    async def test() -> None:
        async with open_stdio_session(stdio_params("none"), handshake="discover") as session:
            assert session.protocol_version == MODERN
            await check_results(session)

    run(test)


def test_results_over_http_on_2026_07_28(http_good: str) -> None:
    async def test() -> None:
        async with open_http_session(http_good, handshake="discover") as session:
            assert session.protocol_version == MODERN
            await check_results(session)

    run(test)


def test_concurrent_results_share_one_listing(http_good: str) -> None:
    class Counting(StrictClientSession):
        listings = 0

        async def list_tools(
            self, *, params: types.PaginatedRequestParams | None = None
        ) -> types.ListToolsResult:
            self.listings += params is None
            return await super().list_tools(params=params)

    async def test() -> None:
        async with (
            streamable_http_client(http_good) as (read, write),
            Counting(read, write) as session,
        ):
            await session.initialize()
            async with anyio.create_task_group() as group:
                for a in range(5):
                    group.start_soon(session.call_tool, "double", {"a": a})
            assert session.listings == 1

    run(test)


# ---------------------------------------------------------------------------------------------
# notifications/tools/list_changed


async def check_shape_changes(
    session: StrictClientSession, mutate: Callable[[], Awaitable[None]]
) -> None:
    assert (await session.call_tool("shape", {"sc": {"n": 1}})).structured_content == {"n": 1}
    await mutate()
    assert (await session.call_tool("shape", {"sc": {"m": 1}})).structured_content == {"m": 1}
    with pytest.raises(ToolResultError) as old:
        await session.call_tool("shape", {"sc": {"n": 1}})
    assert_refused(old.value, "tool-structured-content-invalid", "[missing-required]")


def test_list_changed_refreshes_the_schemas() -> None:
    seen: list[str] = []

    async def mine(message: IncomingMessage) -> None:
        seen.append(type(message).__name__)

    async def test() -> None:
        async with open_stdio_session(stdio_params("none"), message_handler=mine) as session:

            async def mutate() -> None:
                await session.call_tool("mutate", {})

            await check_shape_changes(session, mutate)
        assert "ToolListChangedNotification" in seen  # the application's handler still ran

    run(test)


def test_list_changed_on_2026_07_28_through_listen() -> None:
    async def test() -> None:
        async with (
            open_stdio_session(stdio_params("none"), handshake="discover") as session,
            listen(session, tools_list_changed=True) as subscription,
        ):

            async def mutate() -> None:
                await session.call_tool("mutate", {})
                assert isinstance(await subscription.__anext__(), ToolsListChanged)

            await check_shape_changes(session, mutate)

    run(test)


def test_the_stock_session_keeps_stale_schemas() -> None:
    """Why StrictClientSession exists: mcp 2.3.0's own session lists only the first page when
    it meets an unknown tool, and ignores list_changed."""

    async def test() -> None:
        async with stock_session(stdio_client(stdio_params("none"))) as session:
            # "shape" is on page 2: its results go unchecked until the application lists it.
            unchecked = await session.call_tool("shape", {"sc": {"m": "not an integer"}})
            assert unchecked.structured_content == {"m": "not an integer"}
            cursor = None
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                cursor = (await session.list_tools(params=params)).next_cursor
                if cursor is None:
                    break
            await session.call_tool("shape", {"sc": {"n": 1}})
            await session.call_tool("mutate", {})
            with pytest.raises(RuntimeError, match="Invalid structured content"):
                await session.call_tool("shape", {"sc": {"m": 1}})
            old = await session.call_tool("shape", {"sc": {"n": 1}})
            assert old.structured_content == {"n": 1}  # the old shape is still accepted

    run(test)


# ---------------------------------------------------------------------------------------------
# mcp.Client


def test_strict_client_over_stdio() -> None:
    seen: list[str] = []

    async def mine(message: IncomingMessage) -> None:
        seen.append(type(message).__name__)

    async def test() -> None:
        client = StrictClient(stdio_params("none"), mode="legacy", message_handler=mine)
        async with client:
            assert type(client.session) is StrictClientSession
            assert (await client.call_tool("double", {"a": 3})).structured_content == {"r": 6}
            with pytest.raises(ToolResultError) as refused:
                await client.call_tool("double", {"a": 13})
            assert_refused(refused.value, "tool-structured-content-invalid", "[wrong-type]")

            async def mutate() -> None:
                await client.call_tool("mutate", {})

            await check_shape_changes(client.session, mutate)
        assert "ToolListChangedNotification" in seen

    run(test)


def test_strict_client_over_http_on_2026_07_28(http_good: str) -> None:
    async def test() -> None:
        async with StrictClient(http_good) as client:
            assert client.protocol_version == MODERN
            assert type(client.session) is StrictClientSession
            await client.list_tools()
            with pytest.raises(ToolResultError) as refused:
                await client.call_tool("double", {"a": 13})
            assert_refused(refused.value, "tool-structured-content-invalid", "[wrong-type]")
            answer = await validate_call(client.session, "double", {"a": 1})
            assert answer.source == "server"

    run(test)


# ---------------------------------------------------------------------------------------------
# validate_call


BAD = {"a": "x-" + CANARY, "extra": 1}


def assert_no_leak(answer: ValidationAnswer) -> None:
    assert CANARY not in repr(answer)


async def check_local(session: ClientSession, *, expected_warnings: tuple[str, ...] = ()) -> None:
    good = await validate_call(session, "double", {"a": 2})
    assert good == ValidationAnswer(True, (), expected_warnings, "local")
    bad = await validate_call(session, "double", BAD)
    assert bad.source == "local"
    assert not bad.valid
    assert any(e.startswith("/a:") and "[wrong-type]" in e for e in bad.errors), bad.errors
    assert any('"extra"' in e and "[unexpected-property]" in e for e in bad.errors), bad.errors
    assert_no_leak(bad)
    unknown = await validate_call(session, "nope", {})
    assert not unknown.valid
    assert unknown.source == "local"
    assert any("[tool-unknown]" in e for e in unknown.errors), unknown.errors


async def check_server(session: ClientSession) -> None:
    good = await validate_call(session, "double", {"a": 2})
    assert good == ValidationAnswer(True, (), (SERVER_NOTE,), "server")
    bad = await validate_call(session, "double", BAD)
    # The decoy "validate" approves everything: a refusal proves the advertised tool answered.
    assert bad == ValidationAnswer(
        False,
        (
            "/a: must be of type integer [wrong-type]",
            "/extra: is not declared [tool-argument-undeclared]",
        ),
        (SERVER_NOTE,),
        "server",
    )


def test_validate_call_without_a_validate_tool_checks_locally() -> None:
    async def test() -> None:
        async with open_stdio_session(stdio_params("none")) as session:
            await check_local(session)
        async with stock_session(stdio_client(stdio_params("none"))) as plain:
            await check_local(plain)

    run(test)


def test_validate_call_asks_the_advertised_tool(http_good: str) -> None:
    async def test() -> None:
        async with open_http_session(http_good) as session:
            capabilities = session.server_capabilities
            assert capabilities is not None
            assert capabilities.experimental == {"toolValidation": {"tool": VALIDATOR}}
            await check_server(session)
        async with open_http_session(http_good, handshake="discover") as modern:
            await check_server(modern)
        async with stock_session(streamable_http_client(http_good)) as plain:
            await check_server(plain)

    run(test)


def test_validate_call_falls_back_when_the_server_answers_garbage(http_garbage: str) -> None:
    async def test() -> None:
        async with open_http_session(http_garbage) as session:
            malformed = await validate_call(session, "double", BAD)
            assert malformed.source == "local"
            assert not malformed.valid
            assert_no_leak(malformed)
            (note,) = malformed.warnings
            assert note.startswith("server validation not used:")
            assert f'"{VALIDATOR}"' in note
            assert "something other than {valid, errors, warnings}" in note
            assert "/valid" in note
            assert "[wrong-type]" in note

            exploded = await validate_call(session, "explode", {})
            assert exploded.source == "local"
            assert any("[tool-unknown]" in e for e in exploded.errors)
            assert any(f"JSON-RPC {INVALID_PARAMS}" in w for w in exploded.warnings)

            failed = await validate_call(session, "fail", {})
            assert any("error result" in w for w in failed.warnings)

            await check_local(session, expected_warnings=malformed.warnings)

    run(test)


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
