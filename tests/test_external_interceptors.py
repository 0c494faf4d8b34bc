"""``[[interceptor]]``: external interceptor servers in the proxy's and the gateway's one
enforcement path, as real processes driven by the official client.

The interceptors are tests/proxy_fixtures/external_interceptor.py (allow, deny by rule,
mutate, hang, crash, garbage) and ``strictmcp interceptor`` itself; the server is
tests/proxy_fixtures/flow_server.py, whose record of the calls it got is the ground truth of
what reached it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

from auth_support import free_port
from strictmcp.policy import Policy, PolicyError

FIXTURES = Path(__file__).resolve().parent / "proxy_fixtures"
INTERCEPTOR = FIXTURES / "external_interceptor.py"
SERVER = FIXTURES / "flow_server.py"
_SECONDS = 60.0


def _toml(value: Any) -> str:
    return json.dumps(value)  # a JSON string, number or array of strings is TOML too


def interceptor(name: str, kind: str, command: list[str], **extra: Any) -> str:
    lines = [
        "[[interceptor]]",
        f"name = {_toml(name)}",
        f"type = {_toml(kind)}",
        f"command = {_toml(command)}",
    ]
    lines += [f"{key} = {_toml(value)}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def fixture(mode: str, record: Path | None = None) -> list[str]:
    return [sys.executable, str(INTERCEPTOR), mode, *([str(record)] if record else [])]


def guard(root: Path) -> str:
    return (
        f'[[guard]]\ntool = "*"\nargument = "/path"\nkind = "path"\nroots = {_toml([str(root)])}\n'
    )


def server_command(tmp_path: Path) -> list[str]:
    return [sys.executable, str(SERVER), "s", str(tmp_path), "read"]


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    record = tmp_path / "s.calls.jsonl"
    if not record.exists():
        return []
    lines = record.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def audit(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _policy(
    tmp_path: Path, command: str, *tables: str, guarded: bool = True
) -> tuple[Path, list[str], str]:
    """The policy file (with the path guard unless not ``guarded``), the options after it,
    and the tool's name as the client sees it."""
    path = tmp_path / "policy.toml"
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    (root / "notes.txt").write_text("notes\n", encoding="utf-8")
    body = "\n".join([guard(root) if guarded else "", *tables])
    if command == "gateway":
        body += f'[[server]]\nname = "s"\ncommand = {_toml(server_command(tmp_path))}\n'
        path.write_text(body, encoding="utf-8")
        return path, [], "s__read"
    path.write_text(body, encoding="utf-8")
    return path, ["--", *server_command(tmp_path)], "read"


@asynccontextmanager
async def session(
    tmp_path: Path, command: str, *tables: str, guarded: bool = True
) -> AsyncIterator[tuple[ClientSession, str]]:
    """An official client session with ``strictmcp proxy`` or ``gateway`` over stdio."""
    policy, rest, tool = _policy(tmp_path, command, *tables, guarded=guarded)
    args = ["-m", "strictmcp", command, "--policy", str(policy)]
    args += ["--audit-log", str(tmp_path / "audit.jsonl"), *rest]
    params = StdioServerParameters(
        command=sys.executable, args=args, cwd=str(tmp_path), env=dict(os.environ)
    )
    with (tmp_path / "stderr.log").open("a", encoding="utf-8") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            await client.list_tools()
            yield client, tool


def run(test: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(_SECONDS):
            await test()

    anyio.run(bounded)


def notes(tmp_path: Path) -> dict[str, str]:
    return {"path": str(tmp_path / "root" / "notes.txt")}


COMMANDS = pytest.mark.parametrize("command", ["proxy", "gateway"])


@COMMANDS
def test_an_allow_all_interceptor_lets_calls_through_and_sees_each(
    tmp_path: Path, command: str
) -> None:
    record = tmp_path / "invoked.jsonl"
    table = interceptor("allow", "validation", fixture("allow", record))

    async def test() -> None:
        async with session(tmp_path, command, table) as (client, tool):
            for _ in range(3):
                result = await client.call_tool(tool, notes(tmp_path))
                assert not result.is_error

    run(test)
    assert len(calls(tmp_path)) == 3
    invoked = [json.loads(line) for line in record.read_text().splitlines()]
    # On the request and on the response (phase "both" by default), of each call.
    assert [i["phase"] for i in invoked] == ["request", "response"] * 3
    assert {i["event"] for i in invoked} == {"tools/call"}


@COMMANDS
def test_a_validation_refuses_and_the_server_never_sees_the_call(
    tmp_path: Path, command: str
) -> None:
    table = interceptor("rule", "validation", fixture("deny"), phase="request")

    async def test() -> None:
        async with session(tmp_path, command, table) as (client, tool):
            for text in ("forbidden", "a forbidden word", "FORBIDDEN? forbidden!"):
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(tool, {**notes(tmp_path), "text": text})
                data = refused.value.error.data
                assert data == {
                    "code": "interceptor-denied",
                    "interceptor": "rule",
                    "codes": ["fixture-deny"],
                }
            allowed = await client.call_tool(tool, {**notes(tmp_path), "text": "fine"})
            assert not allowed.is_error

    run(test)
    assert [c["params"]["arguments"]["text"] for c in calls(tmp_path)] == ["fine"]
    denied = [r for r in audit(tmp_path) if r["code"] == "interceptor-denied"]
    assert len(denied) == 3
    assert {(r["stage"], r["action"]) for r in denied} == {("interceptor", "refused")}


@COMMANDS
def test_a_mutation_is_checked_by_strictmcp_after_it(tmp_path: Path, command: str) -> None:
    """The order: a mutation that introduces a traversal is refused by the path guard, so
    nothing a mutator writes reaches the server unchecked."""
    table = interceptor("rewrite", "mutation", fixture("mutate"), phase="request")

    async def test() -> None:
        async with session(tmp_path, command, table) as (client, tool):
            result = await client.call_tool(tool, notes(tmp_path))
            assert result.is_error  # the path guard's refusal of the mutated arguments

    run(test)
    assert calls(tmp_path) == []
    records = audit(tmp_path)
    assert [r["code"] for r in records if r["stage"] == "interceptor"] == ["interceptor-modified"]
    assert any(r["stage"] == "policy" and r["action"] == "refused" for r in records)


@COMMANDS
def test_a_validation_sees_the_arguments_strictmcp_checked(tmp_path: Path, command: str) -> None:
    """Mutation first, then strictmcp, then validation: the validator gets the mutated
    arguments."""
    record = tmp_path / "invoked.jsonl"
    tables = (
        interceptor("z-check", "validation", fixture("allow", record), phase="request"),
        interceptor("a-clean", "mutation", fixture("clean"), phase="request"),
    )

    async def test() -> None:
        async with session(tmp_path, command, *tables) as (client, tool):
            result = await client.call_tool(tool, {"path": "anything", "text": "x"})
            assert result.is_error  # "notes.txt" is relative: the path guard refuses it

    run(test)
    assert calls(tmp_path) == []
    assert not record.exists()  # strictmcp refused before any validation ran


@pytest.mark.parametrize("mode", ["hang", "crash", "garbage"])
@COMMANDS
def test_a_failing_interceptor_fails_the_call_closed(
    tmp_path: Path, command: str, mode: str
) -> None:
    table = interceptor("bad", "validation", fixture(mode), phase="request", timeout_ms=300)

    async def test() -> None:
        async with session(tmp_path, command, table) as (client, tool):
            for _ in range(2):  # the crashed one is started again, and fails again
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(tool, notes(tmp_path))
                assert refused.value.error.data == {
                    "code": "interceptor-unavailable",
                    "interceptor": "bad",
                }

    run(test)
    assert calls(tmp_path) == []


@COMMANDS
def test_invocations_for_different_calls_run_at_once(tmp_path: Path, command: str) -> None:
    """A call waiting for its interceptor holds no other: the second call's invocation is
    what releases the first's (a relay deciding in turn never sends it, and the first times
    out)."""
    record = tmp_path / "invoked.jsonl"
    table = interceptor(
        "pair", "validation", fixture("hold", record), phase="request", timeout_ms=10_000
    )
    results: dict[str, bool] = {}

    async def test() -> None:
        async with session(tmp_path, command, table) as (client, tool):

            async def call(text: str) -> None:
                result = await client.call_tool(tool, {**notes(tmp_path), "text": text})
                results[text] = result.is_error

            async with anyio.create_task_group() as group:
                group.start_soon(call, "hold")
                # The second call only once the first's invocation is held (a loaded machine
                # may take any time to get it there): in the other order nothing is tested.
                with anyio.fail_after(_SECONDS):
                    while not record.exists() or '"hold"' not in record.read_text("utf-8"):
                        await anyio.sleep(0.05)
                group.start_soon(call, "release")

    run(test)
    assert results == {"hold": False, "release": False}
    assert sorted(c["params"]["arguments"]["text"] for c in calls(tmp_path)) == [
        "hold",
        "release",
    ]


@pytest.mark.parametrize("mode", ["hang", "crash"])
def test_fail_open_lets_the_call_through_and_records_it(tmp_path: Path, mode: str) -> None:
    table = interceptor(
        "bad", "validation", fixture(mode), phase="request", timeout_ms=300, fail_open=True
    )

    async def test() -> None:
        async with session(tmp_path, "gateway", table) as (client, tool):
            result = await client.call_tool(tool, notes(tmp_path))
            assert not result.is_error

    run(test)
    assert len(calls(tmp_path)) == 1
    failed = [r for r in audit(tmp_path) if r["code"] == "interceptor-unavailable"]
    assert [r["action"] for r in failed] == ["allowed"]


@COMMANDS
def test_audit_mode_records_and_never_blocks(tmp_path: Path, command: str) -> None:
    tables = (
        interceptor("rule", "validation", fixture("deny"), mode="audit"),
        interceptor("rewrite", "mutation", fixture("mutate"), mode="audit", phase="request"),
        interceptor("gone", "validation", fixture("crash"), mode="audit", phase="request"),
    )

    async def test() -> None:
        async with session(tmp_path, command, *tables) as (client, tool):
            result = await client.call_tool(tool, {**notes(tmp_path), "text": "forbidden"})
            assert not result.is_error

    run(test)
    (call,) = calls(tmp_path)
    assert call["params"]["arguments"] == {**notes(tmp_path), "text": "forbidden"}
    records = [r for r in audit(tmp_path) if r["stage"] == "interceptor"]
    assert {r["code"] for r in records} >= {
        "interceptor-denied",
        "interceptor-modified",
        "interceptor-unavailable",
    }
    assert {r["action"] for r in records} == {"would deny"}


def test_a_response_mutation_is_cleaned_by_strictmcp_last(tmp_path: Path) -> None:
    table = interceptor("rewrite", "mutation", fixture("mutate"), phase="response")

    async def test() -> None:
        async with session(tmp_path, "gateway", table) as (client, tool):
            result = await client.call_tool(tool, notes(tmp_path))
            assert [c.text for c in result.content] == ["mutated"]  # type: ignore[union-attr]

    run(test)
    assert len(calls(tmp_path)) == 1


def test_a_response_validation_refuses_the_answer(tmp_path: Path) -> None:
    (tmp_path / "s.next.json").write_text(
        json.dumps({"content": [{"type": "text", "text": "a forbidden answer"}]}),
        encoding="utf-8",
    )
    table = interceptor("rule", "validation", fixture("deny"), phase="response")

    async def test() -> None:
        async with session(tmp_path, "gateway", table) as (client, tool):
            with pytest.raises(MCPError) as refused:
                await client.call_tool(tool, notes(tmp_path))
            assert refused.value.error.data["code"] == "interceptor-denied"

    run(test)
    assert len(calls(tmp_path)) == 1


def test_the_gateway_calling_strictmcp_interceptor_refuses_as_the_proxy(tmp_path: Path) -> None:
    """End to end: ``strictmcp interceptor`` as an external interceptor of the gateway
    refuses what strictmcp's own guard refuses, with the same codes."""
    root = tmp_path / "root"
    root.mkdir()
    own = tmp_path / "own.toml"
    own.write_text(guard(root), encoding="utf-8")
    tools = tmp_path / "tools.json"
    listed = {"tools": [{"name": "s__read", "inputSchema": {"type": "object"}}]}
    tools.write_text(json.dumps(listed), encoding="utf-8")
    command = [sys.executable, "-m", "strictmcp", "interceptor", "--policy", str(own)]
    command += ["--tools", str(tools)]
    table = interceptor("strictmcp/guards", "validation", command, phase="request")
    outside = {"path": "/etc/passwd"}
    proxied = tmp_path / "proxied"
    proxied.mkdir()

    async def through_proxy() -> list[str]:
        async with session(proxied, "proxy") as (client, tool):
            refused = await client.call_tool(tool, outside)
        assert refused.is_error
        return sorted({r["code"] for r in audit(proxied) if r["action"] == "refused"})

    async def through_gateway() -> list[str]:
        # The gateway's own guard is off here: the interceptor alone refuses.
        path = tmp_path / "gateway.toml"
        body = table + f'[[server]]\nname = "s"\ncommand = {_toml(server_command(tmp_path))}\n'
        path.write_text(body, encoding="utf-8")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "strictmcp", "gateway", "--policy", str(path)],
            cwd=str(tmp_path),
            env=dict(os.environ),
        )
        with (tmp_path / "stderr.log").open("a", encoding="utf-8") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                await client.list_tools()
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("s__read", outside)
        data = refused.value.error.data
        assert data["code"] == "interceptor-denied"
        return sorted(data["codes"])

    async def test() -> None:
        expected = await through_proxy()
        assert expected
        assert await through_gateway() == expected

    run(test)
    assert calls(tmp_path) == []


def url_interceptor(name: str, kind: str, url: str, **extra: Any) -> str:
    lines = ["[[interceptor]]", f"name = {_toml(name)}", f"type = {_toml(kind)}"]
    lines += [f"url = {_toml(url)}", *(f"{key} = {_toml(value)}" for key, value in extra.items())]
    return "\n".join(lines) + "\n"


@contextmanager
def listening(args: list[str], tmp_path: Path, *, stderr: bool) -> Iterator[str]:
    """The URL of a server started with ``args`` that says where it listens on its first
    line (of stderr, or of stdout); ended when done."""
    log = (tmp_path / "listener.log").open("a", encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE if not stderr else log,
        stderr=subprocess.PIPE if stderr else log,
        text=True,
        cwd=str(tmp_path),
    )
    try:
        said = process.stderr if stderr else process.stdout
        assert said is not None
        line = said.readline()
        match = re.search(r"http://\S+", line)
        assert match is not None, line
        yield match.group(0)
    finally:
        process.kill()
        process.wait()
        log.close()


def strictmcp_interceptor(tmp_path: Path, tool: str) -> list[str]:
    """``strictmcp interceptor`` with the path guard of the proxy's own policy, judging
    calls of ``tool``, over HTTP on a free loopback port."""
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    own = tmp_path / "own.toml"
    own.write_text(guard(root), encoding="utf-8")
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps({"tools": [{"name": tool, "inputSchema": {"type": "object"}}]}))
    args = ["-m", "strictmcp", "interceptor", "--policy", str(own), "--tools", str(tools)]
    return [*args, "--listen", "127.0.0.1:0"]


@COMMANDS
def test_strictmcp_interceptor_over_http_refuses_as_the_proxy_itself(
    tmp_path: Path, command: str
) -> None:
    """End to end over streamable HTTP: ``strictmcp interceptor --listen`` as the only check
    of the proxy or gateway refuses what the proxy's own guard refuses, with its codes, and
    lets through what it lets through."""
    tool = "s__read" if command == "gateway" else "read"
    outside = [
        {"path": "/etc/passwd"},
        {"path": str(tmp_path / "root" / ".." / ".." / "etc" / "passwd")},
        {"path": "notes.txt"},
    ]
    proxied = tmp_path / "proxied"
    proxied.mkdir()
    behind = tmp_path / "behind"
    behind.mkdir()

    async def through_proxy() -> list[str]:
        async with session(proxied, command) as (client, name):
            for arguments in outside:
                assert (await client.call_tool(name, arguments)).is_error
        return sorted({r["code"] for r in audit(proxied) if r["action"] == "refused"})

    async def through_interceptor(url: str) -> list[str]:
        table = url_interceptor("strictmcp/guards", "validation", url, phase="request")
        codes: set[str] = set()
        async with session(behind, command, table, guarded=False) as (client, name):
            for arguments in outside:
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(name, arguments)
                data = refused.value.error.data
                assert (data["code"], data["interceptor"]) == (
                    "interceptor-denied",
                    "strictmcp/guards",
                )
                assert data["codes"]
                codes.update(data["codes"])
            inside = await client.call_tool(name, notes(behind))
            assert not inside.is_error
        return sorted(codes)

    with listening(strictmcp_interceptor(behind, tool), behind, stderr=True) as url:
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/mcp")

        async def test() -> None:
            expected = await through_proxy()
            assert expected
            assert await through_interceptor(url) == expected

        run(test)
    # Only the call inside the root reached the server behind the interceptor.
    assert [c["params"]["arguments"] for c in calls(behind)] == [notes(behind)]


@COMMANDS
def test_an_interceptor_url_that_is_down_fails_the_call_closed(
    tmp_path: Path, command: str
) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    table = url_interceptor("gone", "validation", url, phase="request", timeout_ms=2000)

    async def test() -> None:
        async with session(tmp_path, command, table) as (client, tool):
            for _ in range(3):  # tried again each time, and refused each time
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(tool, notes(tmp_path))
                assert refused.value.error.data == {
                    "code": "interceptor-unavailable",
                    "interceptor": "gone",
                }
                await anyio.sleep(0.25)  # past the delay between two attempts to connect

    run(test)
    assert calls(tmp_path) == []
    failed = [r for r in audit(tmp_path) if r["code"] == "interceptor-unavailable"]
    assert [r["action"] for r in failed] == ["refused"] * 3


@COMMANDS
def test_fail_open_lets_the_call_through_when_the_url_is_down(tmp_path: Path, command: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    table = url_interceptor("gone", "validation", url, timeout_ms=2000, fail_open=True)

    async def test() -> None:
        async with session(tmp_path, command, table) as (client, tool):
            result = await client.call_tool(tool, notes(tmp_path))
            assert not result.is_error

    run(test)
    assert len(calls(tmp_path)) == 1
    failed = [r for r in audit(tmp_path) if r["code"] == "interceptor-unavailable"]
    assert failed
    assert {r["action"] for r in failed} == {"allowed"}


@pytest.mark.parametrize(
    "mode",
    ["html", "badjson", "notrpc", "wrongid", "neither", "status", "events", "huge", "initialize"],
)
def test_a_garbage_http_answer_fails_the_call_closed(tmp_path: Path, mode: str) -> None:
    """Whatever the endpoint answers instead of a result, the call is refused with the one
    code, the proxy goes on serving (the same again, then a call with no interceptor on
    it), and the server never sees the call."""
    fixture_args = [str(FIXTURES / "http_garbage_interceptor.py"), mode]

    async def test(url: str) -> None:
        table = url_interceptor("bad", "validation", url, phase="request", timeout_ms=1000)
        async with session(tmp_path, "gateway", table) as (client, tool):
            for _ in range(2):
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(tool, notes(tmp_path))
                assert refused.value.error.data == {
                    "code": "interceptor-unavailable",
                    "interceptor": "bad",
                }
                await anyio.sleep(0.25)
            assert (await client.list_tools()).tools

    with listening(fixture_args, tmp_path, stderr=False) as url:
        run(lambda: test(url))
    assert calls(tmp_path) == []
    assert "Traceback" not in (tmp_path / "stderr.log").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("token", "allowed"), [("fixture-token", True), ("wrong-token-5f3a", False)]
)
def test_a_url_interceptor_gets_the_proxys_own_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str, allowed: bool
) -> None:
    """``upstream`` as ``[upstream]``: the token named is sent; refused (HTTP 401), the call
    fails closed."""
    monkeypatch.setenv("INTERCEPTOR_TOKEN", token)
    fixture_args = [str(FIXTURES / "http_garbage_interceptor.py"), "auth"]

    async def test(url: str) -> None:
        table = url_interceptor("rules", "validation", url, phase="request")
        table += '[interceptor.upstream]\nbearer_env = "INTERCEPTOR_TOKEN"\n'
        async with session(tmp_path, "gateway", table) as (client, tool):
            if allowed:
                assert not (await client.call_tool(tool, notes(tmp_path))).is_error
                return
            with pytest.raises(MCPError) as refused:
                await client.call_tool(tool, notes(tmp_path))
            assert refused.value.error.data["code"] == "interceptor-unavailable"

    with listening(fixture_args, tmp_path, stderr=False) as url:
        run(lambda: test(url))
    assert len(calls(tmp_path)) == (1 if allowed else 0)
    assert token not in (tmp_path / "stderr.log").read_text(encoding="utf-8")


def test_a_url_interceptor_is_reached_again_after_its_server_restarts(tmp_path: Path) -> None:
    """Supervision over HTTP: the interceptor server ends (calls refused meanwhile) and comes
    back on the same address with none of the old sessions; the gateway starts a new one."""
    port = free_port()
    args = strictmcp_interceptor(tmp_path, "s__read")
    args[-1] = f"127.0.0.1:{port}"
    url = f"http://127.0.0.1:{port}/mcp"
    table = url_interceptor("strictmcp/guards", "validation", url, phase="request")

    async def test() -> None:
        async with session(tmp_path, "gateway", table, guarded=False) as (client, tool):
            with listening(args, tmp_path, stderr=True):
                assert not (await client.call_tool(tool, notes(tmp_path))).is_error
            with pytest.raises(MCPError) as refused:
                await client.call_tool(tool, notes(tmp_path))
            assert refused.value.error.data["code"] == "interceptor-unavailable"
            with listening(args, tmp_path, stderr=True):
                outcomes = []
                for _ in range(4):  # the old session's 404 ends it; a new one is started
                    await anyio.sleep(0.25)
                    try:
                        outcomes.append((await client.call_tool(tool, notes(tmp_path))).is_error)
                    except MCPError as error:
                        outcomes.append(error.error.data["code"])
                assert outcomes[-1] is False, outcomes
                with pytest.raises(MCPError) as denied:
                    await client.call_tool(tool, {"path": "/etc/passwd"})
                assert denied.value.error.data["code"] == "interceptor-denied"

    run(test)
    assert all(c["params"]["arguments"] == notes(tmp_path) for c in calls(tmp_path))


def _loads(text: str) -> Policy:
    return Policy.from_dict(tomllib.loads(text))


def test_the_table_loads_with_its_defaults() -> None:
    policy = _loads(interceptor("x", "validation", ["python3", "x.py"]))
    (entry,) = policy.interceptors
    assert (entry.events, entry.phase, entry.mode, entry.fail_open) == (
        ("tools/call",),
        "both",
        "enforce",
        False,
    )
    assert (entry.priority, entry.timeout_ms, entry.kind) == (0, 1000, "validation")


@pytest.mark.parametrize(
    "table",
    [
        '[[interceptor]]\nname = "x"\ntype = "validation"\n',
        '[[interceptor]]\nname = "x"\ntype = "validation"\nurl = "https://i.example/mcp"\n'
        'command = ["a"]\n',
        '[[interceptor]]\nname = "x"\ntype = "validation"\nurl = "http://i.example/mcp"\n',
        '[[interceptor]]\nname = "x"\ntype = "validation"\nurl = "ftp://127.0.0.1/mcp"\n',
        '[[interceptor]]\nname = "x"\ntype = "validation"\ncommand = ["a"]\n'
        '[interceptor.upstream]\nbearer_env = "T"\n',
        '[[interceptor]]\nname = "x"\ntype = "validation"\nurl = "https://i.example/mcp"\n'
        "[interceptor.upstream]\n",
        '[[interceptor]]\nname = "x"\ntype = "other"\ncommand = ["a"]\n',
        '[[interceptor]]\nname = "x"\ntype = "mutation"\ncommand = ["a"]\ntimeout_ms = 0\n',
        '[[interceptor]]\nname = "x"\ntype = "mutation"\ncommand = ["a"]\nevents = []\n',
        '[[interceptor]]\nname = "x"\ntype = "mutation"\ncommand = ["a"]\nphase = "later"\n',
    ],
)
def test_a_bad_table_is_refused_at_load(table: str) -> None:
    with pytest.raises(PolicyError, match=r"\[\[interceptor\]\]"):
        _loads(table)
