"""An answer shaped by who asked is private to the one who asked: a 2026-07-28 ``tools/list``
that shows a caller only the tools its ``[[access]]`` rules give it says
``cacheScope: "private"``, whatever scope the server gave the whole listing, so that no
shared cache (a gateway, a caching proxy) serves one caller's list to another. A listing
that is the same for everyone keeps the server's scope.

Through the real proxy (``strictmcp proxy``, stdio) in front of a server that calls its
listing public, and through the low-level SDK integration, with the SDK's own client.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server import CacheHint
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.caching import CacheableMethod
from mcp.server.lowlevel import Server

from strictmcp.integrations.lowlevel import protect
from strictmcp.policy import Policy
from test_proxy_http import Process, modern, processes  # noqa: F401 - processes is a fixture

# A 2026-07-28 server whose listing is public (the same for everyone, as it sees it).
_PUBLIC_LISTING = r"""
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "read_file")]
    if message["method"] == "tools/list":
        result = {"resultType": "complete", "ttlMs": 60000, "cacheScope": "public", "tools": tools}
    elif message["method"] == "server/discover":
        result = {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}}
    else:
        result = {"resultType": "complete", "content": []}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""
_ACCESS = '[identity]\nsubject = "ana"\n[[access]]\ntools = ["echo"]\nsubject = "ana"\n'


def _listed(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    policy: str,
    *options: str,
) -> dict[str, Any]:
    """The result of a stateless ``tools/list`` through the stdio proxy with ``policy``."""
    server = tmp_path / "server.py"
    server.write_text(_PUBLIC_LISTING, encoding="utf-8")
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy, encoding="utf-8")
    args = [sys.executable, "-m", "strictmcp.proxy", "--policy", str(policy_file), *options]
    proxy = Process([*args, "--", sys.executable, str(server)], tmp_path, "stdout", stdin=True)
    processes.append(proxy)
    listing, _ = modern("tools/list", 1, {})
    proxy.send(listing)
    answer = json.loads(proxy.next_line())
    assert answer["id"] == 1
    result: dict[str, Any] = answer["result"]
    return result


def test_a_listing_filtered_for_its_caller_is_private(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    result = _listed(tmp_path, processes, _ACCESS)
    assert [tool["name"] for tool in result["tools"]] == ["echo", "validate"]
    assert result["cacheScope"] == "private"
    assert result["ttlMs"] == 60000  # the rest as the server said


@pytest.mark.parametrize(
    ("policy", "options"),
    [
        ('[identity]\nsubject = "ana"\n', ()),  # no access rules: the same for everyone
        (_ACCESS, ("--mode", "audit")),  # audit mode filters nothing
        (_ACCESS.replace("[identity]", 'mode = "audit"\n[identity]'), ()),
    ],
)
def test_a_listing_the_same_for_everyone_keeps_the_servers_scope(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    policy: str,
    options: tuple[str, ...],
) -> None:
    result = _listed(tmp_path, processes, policy, *options)
    assert [tool["name"] for tool in result["tools"]] == ["echo", "read_file", "validate"]
    assert result["cacheScope"] == "public"


_SDK_ACCESS = Policy.from_dict({"access": [{"tools": ["echo"], "subject": "ana"}]})


@pytest.mark.parametrize(("policy", "scope"), [(_SDK_ACCESS, "private"), (None, "public")])
def test_the_sdk_integration_makes_a_filtered_listing_private(
    policy: Policy | None, scope: str
) -> None:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [types.Tool(name=n, input_schema={"type": "object"}) for n in ("echo", "other")]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[])

    public: dict[CacheableMethod, CacheHint] = {
        "tools/list": CacheHint(ttl_ms=60000, scope="public")
    }
    server = Server("t", on_list_tools=list_tools, on_call_tool=call_tool, cache_hints=public)
    protected = protect(server, policy=policy)
    listed: list[types.ListToolsResult] = []

    async def body() -> None:
        async with Client(protected) as client:  # 2026-07-28
            listed.append(await client.list_tools())

    caller = AccessToken(token="t-ana", client_id="app", scopes=[], subject="ana")
    reset = auth_context_var.set(AuthenticatedUser(caller))
    try:
        anyio.run(body)
    finally:
        auth_context_var.reset(reset)
    names = [tool.name for tool in listed[0].tools]
    assert names == (["echo", "validate"] if policy else ["echo", "other", "validate"])
    assert listed[0].cache_scope == scope
