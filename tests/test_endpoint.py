"""What is offered: the top-level ``tools``/``exclude_tools`` of ``strictmcp proxy``, and
``[[endpoint]]`` virtual servers of the HTTP proxy and gateway, each its own protected resource.

Real processes throughout: the gateway's line-level fixture servers (tests/proxy_fixtures/
gateway_server.py, whose ``crash`` tool ends the server: a call that reached it would show),
the official SDK's client over stdio and streamable HTTP, and real tokens of npm
``oidc-provider`` (tests/auth_support.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from auth_support import AuthorizationServer
from strictmcp.cli import main as strictmcp_main
from strictmcp.enforce import Enforcer
from strictmcp.policy import Policy, PolicyError, ToolOffer
from test_gateway import fixture, gateway_session, run, server_table, write_policy
from test_proxy_auth import (  # noqa: F401 - launch and provider are fixtures
    Caller,
    Launch,
    Protected,
    launch,
    provider,
)
from test_proxy_http import Process, processes  # noqa: F401 - processes is a fixture
from test_proxy_third_party import text_of

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

_CRASHED = "is crashing now"  # what a fixture server says when a crash call reached it

ENDPOINTS = """
[[endpoint]]
path = "/mcp/a"
servers = ["a"]
tools = ["a__e*", "a__crash"]
exclude_tools = ["a__crash"]

[[endpoint]]
path = "/mcp/echo"
tools = ["*__echo"]
"""


def _listen(
    tmp_path: Path, started: list[Process], command: str, *tables: str, args: tuple[str, ...]
) -> tuple[dict[str, str], Process]:
    """``strictmcp COMMAND --listen`` with a policy of ``tables``: each endpoint's URL by its
    path (as announced, the main one first), and the process."""
    policy = write_policy(tmp_path, *tables)
    argv = [sys.executable, "-m", "strictmcp", command, "--policy", str(policy)]
    process = Process([*argv, "--listen", "127.0.0.1:0", *args], tmp_path, "stderr")
    started.append(process)
    count = 1 + len(Policy.load(policy).endpoints)
    urls = [process.wait_for("listening on").rsplit(" ", 1)[1] for _ in range(count)]
    return {httpx2.URL(url).path: url for url in urls}, process


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def _names(session: ClientSession) -> list[str]:
    return sorted(tool.name for tool in (await session.list_tools()).tools)


async def _unknown(session: ClientSession, tool: str) -> str:
    """The error a call of ``tool`` is answered with (it must be -32602), the name taken out."""
    with pytest.raises(MCPError) as raised:
        await session.call_tool(tool, {"text": "x"})
    assert raised.value.error.code == -32602
    return raised.value.error.message.replace(tool, "?")


async def _dry_run(session: ClientSession, tool: str) -> dict[str, Any]:
    """The validate tool's verdict on ``tool``, the name taken out."""
    result = await session.call_tool("validate", {"tool": tool, "arguments": {"text": "x"}})
    assert result.structured_content is not None
    verdict: dict[str, Any] = json.loads(json.dumps(result.structured_content).replace(tool, "?"))
    return verdict


async def _not_offered(session: ClientSession, tool: str) -> None:
    """``tool`` is, to ``session``, exactly a tool that does not exist: call and dry run."""
    assert await _unknown(session, tool) == await _unknown(session, "no_such__tool")
    refused = await _dry_run(session, tool)
    assert refused["valid"] is False
    assert refused == await _dry_run(session, "no_such__tool")


def test_each_endpoint_of_the_gateway_offers_its_servers_and_tools(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    urls, process = _listen(
        tmp_path,
        processes,
        "gateway",
        server_table("a", fixture("a")),
        server_table("b", fixture("b")),
        ENDPOINTS,
        args=(),
    )
    assert list(urls) == ["/mcp", "/mcp/a", "/mcp/echo"]

    async def test() -> None:
        async with http_session(urls["/mcp"]) as main:
            names = await _names(main)
            assert {"a__crash", "a__echo", "b__crash", "b__env", "validate"} <= set(names)
        async with http_session(urls["/mcp/a"]) as only_a:
            # One server, two of its tools, and the one validate tool.
            assert await _names(only_a) == ["a__echo", "a__env", "validate"]
            assert text_of(await only_a.call_tool("a__echo", {"text": "hi"})) == "a: hi"
            for tool in ("a__crash", "a__grow", "b__echo", "b__crash"):
                await _not_offered(only_a, tool)
            valid = await _dry_run(only_a, "a__echo")
            assert valid["valid"] is True
            # a__crash never reached the server: it still answers, in the same session.
            assert text_of(await only_a.call_tool("a__echo", {"text": "again"})) == "a: again"
            # Its servers only: b's prompts, resources and instructions are not there either.
            initialized = await only_a.initialize()
            assert "[b]" not in (initialized.instructions or "")
        async with http_session(urls["/mcp/echo"]) as echo:
            assert await _names(echo) == ["a__echo", "b__echo", "validate"]
            assert text_of(await echo.call_tool("b__echo", {"text": "hi"})) == "b: hi"
            await _not_offered(echo, "b__crash")
            await _not_offered(echo, "a__env")

    run(test)
    assert _CRASHED not in process.output()
    other = httpx2.post(urls["/mcp"] + "/other", json={}, timeout=10)
    assert other.status_code == 404


def test_access_rules_still_filter_per_caller_within_an_endpoint(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    access = (
        '[identity]\nsubject = "ops"\n\n'
        '[[access]]\nsubject = "ops"\ntools = ["a__echo", "b__env"]\n'
    )
    urls, process = _listen(
        tmp_path,
        processes,
        "gateway",
        server_table("a", fixture("a")),
        server_table("b", fixture("b")),
        ENDPOINTS,
        access,
        args=(),
    )

    async def test() -> None:
        async with http_session(urls["/mcp"]) as main:
            assert await _names(main) == ["a__echo", "b__env", "validate"]
        async with http_session(urls["/mcp/echo"]) as echo:
            # b__echo is offered here, but the caller may not call it; b__env it may call,
            # but it is not offered here.
            assert await _names(echo) == ["a__echo", "validate"]
            await _not_offered(echo, "b__echo")
            await _not_offered(echo, "b__env")
            assert text_of(await echo.call_tool("a__echo", {"text": "hi"})) == "a: hi"

    run(test)
    assert _CRASHED not in process.output()


@pytest.mark.parametrize("mode", ["enforce", "audit"])
def test_the_proxy_offers_what_the_top_level_keys_say(tmp_path: Path, mode: str) -> None:
    policy = write_policy(tmp_path, 'tools = ["e*", "crash"]\nexclude_tools = ["crash"]\n')
    command = ["proxy", "--mode", mode, "--policy", str(policy), "--", *fixture("a")]
    errlog = tmp_path / "stderr.log"

    async def test() -> None:
        async with _stdio(command, errlog) as session:
            # What is offered is the shape of the server, not a finding: audit mode too.
            assert await _names(session) == ["echo", "env", "validate"]
            for tool in ("crash", "grow", "log"):
                await _not_offered(session, tool)
            assert text_of(await session.call_tool("echo", {"text": "hi"})) == "a: hi"

    run(test)
    assert _CRASHED not in errlog.read_text(encoding="utf-8")


def test_the_top_level_keys_match_the_gateways_namespaced_names(tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path,
        'exclude_tools = ["*__crash", "*__dup", "*__listings", "*__tail", "*__lone", "*__flood",'
        ' "b__*"]\n',
        server_table("a", fixture("a")),
        server_table("b", fixture("b")),
    )
    errlog = tmp_path / "stderr.log"

    async def test() -> None:
        async with gateway_session(policy, errlog) as session:
            names = await _names(session)
            assert names == ["a__ask", "a__echo", "a__env", "a__grow", "a__log", "validate"]
            for tool in ("a__crash", "b__echo", "b__crash"):
                await _not_offered(session, tool)
            assert text_of(await session.call_tool("a__echo", {"text": "hi"})) == "a: hi"

    run(test)
    assert _CRASHED not in errlog.read_text(encoding="utf-8")


def test_an_offer_within_another_offers_what_both_do() -> None:
    top = ToolOffer.of(["read_*", "search"], ["read_secret"])
    endpoint = ToolOffer.of(["read_*"])
    both = top.within(endpoint)
    names = ("read_a", "read_secret", "search", "write")
    assert [name for name in names if both.offers(name)] == ["read_a"]
    assert [name for name in names if top.offers(name)] == ["read_a", "search"]
    assert not ToolOffer.of([]).offers("read_a")  # tools = [] offers nothing
    assert ToolOffer().everything
    assert not endpoint.everything
    listed = [{"name": "read_a"}, {"name": "write"}, {"title": "nameless"}, "not a tool"]
    assert both.listed(listed) == [{"name": "read_a"}, {"title": "nameless"}, "not a tool"]


@asynccontextmanager
async def _stdio(args: list[str], errlog: Path) -> AsyncIterator[ClientSession]:
    """The official client over stdio with ``strictmcp ARGS``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "strictmcp", *args],
        cwd=str(errlog.parent),
        env=dict(os.environ),
    )
    with errlog.open("a", encoding="utf-8") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def test_an_endpoint_of_the_proxy_offers_some_of_its_servers_tools(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    endpoint = '[[endpoint]]\npath = "/tools/echo"\ntools = ["echo", "crash"]\n'
    urls, process = _listen(
        tmp_path,
        processes,
        "proxy",
        'exclude_tools = ["crash", "dup", "listings", "tail", "lone", "flood"]\n',
        endpoint,
        args=("--", *fixture("a")),
    )

    async def test() -> None:
        async with http_session(urls["/mcp"]) as main:
            assert await _names(main) == ["ask", "echo", "env", "grow", "log", "validate"]
        async with http_session(urls["/tools/echo"]) as echo:
            # Within what the top level offers: crash is offered by neither.
            assert await _names(echo) == ["echo", "validate"]
            await _not_offered(echo, "crash")
            await _not_offered(echo, "env")
            assert text_of(await echo.call_tool("echo", {"text": "hi"})) == "a: hi"

    run(test)
    assert _CRASHED not in process.output()


def test_each_endpoint_is_its_own_protected_resource(
    launch: Launch,  # noqa: F811
    provider: AuthorizationServer,  # noqa: F811
) -> None:
    roles = (
        '[[endpoint]]\npath = "/mcp/readonly"\ntools = ["echo", "read_file"]\n\n'
        '[[access]]\ntools = ["echo", "word_count"]\nclient_id = "reader"\n\n'
        '[[access]]\ntools = ["*"]\nclient_id = "admin"\n'
    )
    proxy = launch(tail=roles)
    readonly = Protected(proxy.url + "/readonly", proxy.process, proxy.workspace)
    for_main = provider.token("reader", proxy.url)
    for_readonly = provider.token("reader", readonly.url)
    # A token names one resource: refused at the other, either way.
    for where, token in ((readonly, for_main), (proxy, for_readonly)):
        refused = where.post(token)
        assert refused.status_code == 401
        assert refused.json()["code"] == "token-audience"
        challenge = refused.headers["www-authenticate"]
        path = httpx2.URL(where.url).path
        assert f'/.well-known/oauth-protected-resource{path}"' in challenge
    # Its own metadata document names it; the bare well-known path stays the main one's.
    base = proxy.url.removesuffix("/mcp")
    document = httpx2.get(f"{base}/.well-known/oauth-protected-resource/mcp/readonly").json()
    assert document["resource"] == readonly.url
    assert document["authorization_servers"] == [provider.issuer]
    bare = httpx2.get(f"{base}/.well-known/oauth-protected-resource").json()
    assert bare["resource"] == proxy.url
    # Within the endpoint, the access rules still decide per caller.
    reader = Caller(readonly, for_readonly)
    admin = Caller(readonly, provider.token("admin", readonly.url, scope="mcp:read mcp:admin"))
    reader.open()
    admin.open()
    assert reader.tools() == {"echo", "validate"}
    assert reader.tools(alone=True) == {"echo", "validate"}
    assert admin.tools() == {"echo", "read_file", "validate"}
    for caller in (reader, admin):
        assert caller.call("crash", {})["error"]["code"] == -32602
        assert caller.call("word_count", {"text": "a b"}, alone=True)["error"]["code"] == -32602
    assert reader.call("read_file", {"path": "/etc/hostname"})["error"]["code"] == -32602
    assert reader.call("echo", {"text": "hi"})["result"]["isError"] is False
    calls = (proxy.workspace / "calls").read_text(encoding="utf-8")
    names = [json.loads(line)["name"] for line in calls.splitlines()]
    assert names == ["echo"]  # nothing else reached the server
    main_reader = Caller(proxy, for_main)
    main_reader.open()
    assert main_reader.tools() == {"echo", "word_count", "validate"}


@pytest.mark.parametrize(
    ("tables", "said"),
    [
        ('[[endpoint]]\npath = "mcp/x"\n', "path must be / and up to 200"),
        ('[[endpoint]]\npath = "/.well-known/x"\n', "not under /.well-known/"),
        ('[[endpoint]]\npath = "/x?y"\n', "path must be / and up to 200"),
        ('[[endpoint]]\npath = "/x"\n[[endpoint]]\npath = "/x"\n', "paths must be unique: /x"),
        ('[[endpoint]]\npath = "/x"\nservers = ["a"]\n', "servers names [[server]] tables"),
        ('[[endpoint]]\npath = "/x"\ncolour = 1\n', "unknown keys: colour"),
        ('[[endpoint]]\ntools = ["x"]\n', "missing options: path"),
        ('tools = "read_*"\n', "tools must be an array of strings"),
        ("exclude_tools = [1]\n", "exclude_tools must be an array of strings"),
    ],
)
def test_bad_endpoints_and_offers_are_refused_when_loaded(tables: str, said: str) -> None:
    with pytest.raises(PolicyError) as refused:
        Policy.from_dict(tomllib.loads(tables))
    assert said in str(refused.value)


def test_an_endpoint_naming_an_unknown_server_is_refused() -> None:
    tables = server_table("a", ["x"]) + '[[endpoint]]\npath = "/x"\nservers = ["a", "c"]\n'
    with pytest.raises(PolicyError, match="servers names no \\[\\[server\\]\\] table 'c'"):
        Policy.from_dict(tomllib.loads(tables))


@pytest.mark.parametrize(
    ("command", "tables", "args", "said"),
    [
        (
            "proxy",
            '[[endpoint]]\npath = "/x"\n',
            ("--", *fixture("a")),
            "[[endpoint]] tables apply to --listen only",
        ),
        (
            "gateway",
            server_table("a", fixture("a")) + '[[endpoint]]\npath = "/x"\n',
            (),
            "[[endpoint]] tables apply to --listen only",
        ),
        (
            "proxy",
            '[[endpoint]]\npath = "/mcp"\n',
            ("--listen", "127.0.0.1:0", "--", *fixture("a")),
            "[[endpoint]] '/mcp' is the main --path",
        ),
    ],
)
def test_endpoints_that_cannot_be_served_stop_the_command(
    tmp_path: Path, command: str, tables: str, args: tuple[str, ...], said: str
) -> None:
    policy = write_policy(tmp_path, tables)
    done = subprocess.run(
        [sys.executable, "-m", "strictmcp", command, "--policy", str(policy), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr


def test_lint_and_check_leave_out_what_the_policy_does_not_offer(tmp_path: Path) -> None:
    hidden = "\u200b"
    anything = {"type": "object"}
    tools = {
        "tools": [
            {"name": "hidden", "description": f"Hid{hidden}den.", "inputSchema": anything},
            {"name": "shown", "description": f"Shown{hidden}.", "inputSchema": anything},
        ]
    }
    listing = tmp_path / "tools.json"
    listing.write_text(json.dumps(tools, indent=2), encoding="utf-8")
    policy = write_policy(tmp_path, 'exclude_tools = ["hid*"]\n')

    def linted(*args: str) -> dict[str, int]:
        """Each tool with a finding, and the line of the file it is on."""
        result = CliRunner().invoke(
            strictmcp_main, ["lint", "--format", "json", "--select", "SMT401", *args, str(listing)]
        )
        assert result.exit_code in (0, 1), result.output
        return {f["tool"]: f["line"] for f in json.loads(result.stdout)["findings"]}

    everything = linted()
    assert set(everything) == {"shown", "hidden"}
    # The tool left out is not linted; the one kept is still found where it is in the file.
    assert linted("--policy", str(policy)) == {"shown": everything["shown"]}
    offered = write_policy(tmp_path, 'tools = ["e*"]\n')
    check = [sys.executable, "-m", "strictmcp", "check", "--format", "json", "--cases", "1"]
    done = subprocess.run(
        [*check, "--policy", str(offered), "--", *fixture("a")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    report = json.loads(done.stdout)
    assert sorted(tool["name"] for tool in report["tools"]) == ["echo", "env"]
    asked = subprocess.run(
        [*check, "--policy", str(offered), "--tool", "crash", "--", *fixture("a")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert asked.returncode == 2
    assert "the policy does not offer the tool crash" in asked.stderr


def test_a_reloaded_policy_offers_what_it_says_within_the_endpoints_offer() -> None:
    first = Policy.from_dict({"exclude_tools": ["write"]})
    enforcer = Enforcer(policy=first, offer=ToolOffer.of(["read", "write", "delete"]))
    assert [n for n in ("read", "write", "delete", "list") if enforcer.offer.offers(n)] == [
        "read",
        "delete",
    ]
    enforcer.use(Policy.from_dict({"exclude_tools": ["delete"]}), None)
    assert [n for n in ("read", "write", "delete", "list") if enforcer.offer.offers(n)] == [
        "read",
        "write",
    ]
