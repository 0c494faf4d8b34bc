"""strictmcp.integrations.mcpserver: the example server end to end, then StrictExtension's
edges in process (``mcp.Client(app, mode="legacy")`` speaks real JSON-RPC over memory
streams)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.server.mcpserver import MCPServer
from mcp_types.jsonrpc import INTERNAL_ERROR

# Before the import below: its contract's asserts are rewritten only if registered first.
pytest.register_assert_rewrite("integration_support")

from integration_support import (  # noqa: E402
    ProtectedServerContract,
    observed_fixture,
    text_of,
)
from strictmcp.integrations.mcpserver import StrictExtension  # noqa: E402

SCRIPT = "mcpserver_server.py"


observed = observed_fixture(SCRIPT, [("stdio", "auto"), ("http", "legacy")])


class TestMCPServer(ProtectedServerContract):
    script = SCRIPT


def _app(strict: bool) -> tuple[MCPServer[Any], list[dict[str, Any]]]:
    extension = StrictExtension(strict=strict)
    app = MCPServer("test", extensions=[extension])
    received: list[dict[str, Any]] = []

    @app.tool()
    def rename(old: str, new: str) -> str:
        received.append({"old": old, "new": new})
        return "renamed"

    return extension.install(app), received


@pytest.mark.parametrize(("strict", "refused"), [(False, False), (True, True)])
def test_strict_mode_refuses_what_pydantic_would_drop_silently(strict: bool, refused: bool) -> None:
    app, received = _app(strict)

    async def run() -> Any:
        async with Client(app, mode="legacy") as client:
            # "dry_run" is no argument of the tool: without strict mode it vanishes, and the
            # rename the caller meant as a rehearsal happens.
            return await client.call_tool("rename", {"old": "a", "new": "b", "dry_run": True})

    result = anyio.run(run)
    assert result.is_error is refused
    assert received == ([] if refused else [{"old": "a", "new": "b"}])
    if refused:
        assert '"dry_run"' in text_of(result)


def test_install_needs_the_extension_in_the_server() -> None:
    with pytest.raises(ValueError, match="extensions="):
        StrictExtension().install(MCPServer("test"))
    extension = StrictExtension()
    app = MCPServer("test", extensions=[extension])
    extension.install(app)
    with pytest.raises(ValueError, match="installed already"):
        extension.install(app)


def test_calls_fail_rather_than_go_unchecked_before_install() -> None:
    ran: list[str] = []
    app = MCPServer("test", extensions=[StrictExtension()])

    @app.tool()
    def touch() -> str:
        ran.append("touch")
        return "touched"

    async def run() -> int:
        async with Client(app, mode="legacy") as client:
            try:
                await client.call_tool("touch", {})
            except MCPError as error:
                return error.code
        raise AssertionError("the call went through")

    assert anyio.run(run) == INTERNAL_ERROR
    assert ran == []
