"""A 2026-07-28 (stateless) request missing what it must carry is told what, by name: the
MCP-Protocol-Version header, Mcp-Method, Mcp-Name (the streamable HTTP proxy, for real)."""

from __future__ import annotations

import httpx2
import pytest

from test_proxy_http import (  # noqa: F401 - launch and processes are fixtures
    StartProxy,
    launch,
    modern,
    processes,
    run,
)


@pytest.mark.parametrize(
    ("dropped", "said"),
    [
        (
            "mcp-protocol-version",
            "a 2026-07-28 request needs the MCP-Protocol-Version header: a stateless request "
            "carries MCP-Protocol-Version (the revision), Mcp-Method (the method)",
        ),
        ("mcp-method", "the Mcp-Method header is missing: a stateless request carries its method"),
        ("mcp-name", "the Mcp-Name header is missing: a stateless request carries its name"),
    ],
)
def test_a_stateless_request_is_told_which_header_it_lacks(
    launch: StartProxy,  # noqa: F811
    dropped: str,
    said: str,
) -> None:
    proxy = launch()

    async def body() -> None:
        call, headers = modern("tools/call", 1, {"name": "echo", "arguments": {"text": "x"}})
        del headers[dropped]
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(proxy.url, json=call, headers=headers)
        assert response.status_code == 400
        assert said in response.json()["error"]["message"]

    run(body)


def test_a_request_of_no_session_and_no_revision_is_told_both_ways(
    launch: StartProxy,  # noqa: F811
) -> None:
    proxy = launch()

    async def body() -> None:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"accept": "application/json, text/event-stream"}
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(proxy.url, json=ping, headers=headers)
        assert response.status_code == 400
        message = response.json()["error"]["message"]
        assert "Mcp-Session-Id header is required" in message
        assert "a 2026-07-28 request carries MCP-Protocol-Version" in message

    run(body)
