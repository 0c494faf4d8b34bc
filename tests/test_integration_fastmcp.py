"""strictmcp.integrations.fastmcp: the example server end to end, then what StrictMiddleware
checks against, in process through FastMCP's own in-memory client."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as types
import pytest
from fastmcp import Client, FastMCP
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool
from pydantic import BaseModel

# Before the import below: its contract's asserts are rewritten only if registered first.
pytest.register_assert_rewrite("integration_support")

from integration_support import (  # noqa: E402
    ProtectedServerContract,
    observed_fixture,
    text_of,
)
from strictmcp.integrations.fastmcp import StrictMiddleware  # noqa: E402

SCRIPT = "fastmcp_server.py"


observed = observed_fixture(SCRIPT, [("stdio", "legacy"), ("http", "auto")])


class TestFastMCPServer(ProtectedServerContract):
    script = SCRIPT
    undeclared_code = "unexpected-property"


class ShortText(Middleware):
    """Advertises ``text`` arguments at most three characters long."""

    async def on_list_tools(
        self,
        context: MiddlewareContext[types.ListToolsRequest],
        call_next: CallNext[types.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        tools = await call_next(context)
        short = {"type": "string", "maxLength": 3}
        return [
            tool.model_copy(
                update={"parameters": {**tool.parameters, "properties": {"text": short}}}
            )
            if "text" in tool.parameters.get("properties", {})
            else tool
            for tool in tools
        ]


class CountListings(Middleware):
    def __init__(self) -> None:
        self.listings = 0

    async def on_list_tools(
        self,
        context: MiddlewareContext[types.ListToolsRequest],
        call_next: CallNext[types.ListToolsRequest, Sequence[Tool]],
    ) -> Sequence[Tool]:
        self.listings += 1
        return await call_next(context)


def _call(server: FastMCP, name: str, arguments: dict[str, Any]) -> Any:
    async def run() -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, arguments, raise_on_error=False)

    return anyio.run(run)


def test_calls_are_checked_against_what_the_middleware_inside_lists() -> None:
    outer = CountListings()
    server = FastMCP("test", middleware=[outer, StrictMiddleware(), ShortText()])
    echoed: list[str] = []

    @server.tool
    def echo(text: str) -> str:
        echoed.append(text)
        return text

    async def run() -> tuple[Any, Any, int]:
        async with Client(server) as client:
            short = await client.call_tool("echo", {"text": "abc"}, raise_on_error=False)
            seen = outer.listings
            long = await client.call_tool("echo", {"text": "abcdef"}, raise_on_error=False)
            return short, long, outer.listings - seen

    short, long, listings_seen_outside = anyio.run(run)
    assert not short.is_error
    assert long.is_error
    assert "[too-long]" in text_of(long)
    assert echoed == ["abc"]
    # Each check reads the listing from inside: the middleware outside sees no extra one.
    assert listings_seen_outside == 0


class Trip(BaseModel):
    days: int


def test_nested_arguments_are_checked_against_the_dereferenced_schema() -> None:
    server = FastMCP("test", middleware=[StrictMiddleware()])
    planned: list[Trip] = []

    @server.tool
    def plan(trip: Trip) -> str:
        planned.append(trip)
        return "planned"

    # FastMCP alone accepts "3" for an integer (pydantic's lax mode) and plans the trip.
    result = _call(server, "plan", {"trip": {"days": "3"}})
    assert result.is_error
    assert 'Argument "trip" (at "/trip/days") must be of type integer. [wrong-type]' in (
        text_of(result)
    )
    assert planned == []
