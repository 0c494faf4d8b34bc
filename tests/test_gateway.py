"""``strictmcp gateway``: many real servers behind one endpoint, driven by the official client.

npm ``server-everything`` and ``server-filesystem`` and PyPI ``mcp-server-time`` together,
over stdio and streamable HTTP; and line-level fixture servers (tests/proxy_fixtures/
gateway_server.py) for what no third-party server does on demand: crash, hang, change its
listing, ask the client for a sampling message with the id another server uses too.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from strictmcp.connect.lines import Backlog, Handoff
from strictmcp.protocol import LATEST, decode
from strictmcp.protocol.jsonrpc import answer_with_id
from test_proxy_http import Process, processes, sdk_http_server  # noqa: F401 - a fixture
from test_proxy_third_party import (
    everything_command,
    filesystem_command,
    text_of,
    time_command,
)

FIXTURE = Path(__file__).resolve().parent / "proxy_fixtures" / "gateway_server.py"
_SECONDS = 60.0


def _toml(value: Any) -> str:
    return json.dumps(value)  # a JSON string or array of strings is TOML too


FLOOD_HTTP = Path(__file__).resolve().parent / "proxy_fixtures" / "flood_http_server.py"


def fixture(name: str, *mode: str) -> list[str]:
    return [sys.executable, str(FIXTURE), name, *mode]


def server_table(name: str, command: list[str], **extra: str) -> str:
    lines = ["[[server]]", f"name = {_toml(name)}", f"command = {_toml(command)}"]
    lines += [f"{key} = {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def _two() -> tuple[str, str]:
    return server_table("a", fixture("a")), server_table("b", fixture("b"))


def _tools_changed() -> tuple[anyio.Event, Any]:
    """An event set by the client's first ``notifications/tools/list_changed``, and the
    message handler that sets it."""
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    return changed, on_message


def write_policy(tmp_path: Path, *tables: str) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text("\n".join(tables), encoding="utf-8")
    return path


@asynccontextmanager
async def gateway_session(
    policy: Path, errlog: Path, *options: str, **callbacks: Any
) -> AsyncIterator[ClientSession]:
    """An initialized official client session with ``strictmcp gateway`` over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "strictmcp", "gateway", "--policy", str(policy), *options],
        cwd=str(errlog.parent),
        env=dict(os.environ),
    )
    with errlog.open("a", encoding="utf-8") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write, **callbacks) as session,
        ):
            await session.initialize()
            yield session


def raw_gateway(
    policy: Path, cwd: Path
) -> tuple[Process, Callable[[str, dict[str, Any]], dict[str, Any]]]:
    """``strictmcp gateway`` over stdio with line-level access, and a function asking it one
    request at a time (the answer; what comes between is read past)."""
    args = [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)]
    gateway = Process(args, cwd, "stdout", stdin=True)
    asked = iter(range(1, 1000))

    def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(asked)
        gateway.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            reply: dict[str, Any] = json.loads(gateway.next_line())
            if reply.get("id") == request_id:
                return reply

    return gateway, ask


def run(test: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(_SECONDS):
            await test()

    anyio.run(bounded)


def _third_party_policy(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / "notes.txt").write_text("hello gateway\n", encoding="utf-8")
    guard = (
        '[[guard]]\ntool = "files__*"\nargument = "/path"\nkind = "path"\n'
        f"roots = {_toml([str(root)])}\n"
    )
    return write_policy(
        tmp_path,
        server_table("time", time_command()),
        server_table("everything", everything_command()),
        server_table("files", filesystem_command(root)),
        guard,
    )


async def _use_three_servers(session: ClientSession, root: Path) -> None:
    listed = await session.list_tools()
    names = [tool.name for tool in listed.tools]
    # Every server's tools, each named after its server, and one validate tool in all.
    assert {"time__get_current_time", "everything__echo", "files__read_text_file"} <= set(names)
    assert names.count("validate") == 1
    assert all(name == "validate" or "__" in name for name in names)
    now = await session.call_tool("time__get_current_time", {"timezone": "Etc/UTC"})
    assert "Etc/UTC" in text_of(now)
    echoed = await session.call_tool("everything__echo", {"message": "through the gateway"})
    assert "through the gateway" in text_of(echoed)
    read = await session.call_tool("files__read_text_file", {"path": str(root / "notes.txt")})
    assert text_of(read).strip() == "hello gateway"
    # The one policy's glob over the full name guards the filesystem server's arguments.
    escape = await session.call_tool("files__read_text_file", {"path": "/etc/passwd"})
    assert escape.is_error
    assert "root:" not in text_of(escape)
    dry = await session.call_tool(
        "validate", {"tool": "files__read_text_file", "arguments": {"path": "/etc/passwd"}}
    )
    assert dry.structured_content is not None
    assert dry.structured_content["valid"] is False
    prompts = await session.list_prompts()
    assert "everything__simple-prompt" in [prompt.name for prompt in prompts.prompts]
    got = await session.get_prompt("everything__simple-prompt")
    assert got.messages
    resources = await session.list_resources()
    assert resources.resources
    content = await session.read_resource(resources.resources[0].uri)
    assert content.contents


def test_three_real_servers_behind_one_stdio_gateway(tmp_path: Path) -> None:
    policy = _third_party_policy(tmp_path)
    errlog = tmp_path / "stderr.log"
    audit_log = tmp_path / "audit.jsonl"

    async def test() -> None:
        async with gateway_session(policy, errlog, "--audit-log", str(audit_log)) as session:
            await _use_three_servers(session, tmp_path / "root")

    run(test)
    records = [json.loads(line) for line in audit_log.read_text().splitlines()]
    refused = [r for r in records if r["action"] == "refused"]
    assert refused
    assert {(r["tool"], r["server"]) for r in refused} == {("files__read_text_file", "files")}
    # One session: one random id on each of its records, never anything from the wire.
    (session,) = {r["session"] for r in records}
    assert re.fullmatch("[0-9a-f]{12}", session)
    said = errlog.read_text(encoding="utf-8")
    assert 'strictmcp gateway: c2s tools/call "files__read_text_file" refused' in said
    assert "refused" in said
    assert "files__read_text_file" in said
    # Each server's stderr reaches ours after its name.
    assert "[files] " in said


def test_three_real_servers_behind_one_http_gateway(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    policy = _third_party_policy(tmp_path)
    args = [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)]
    process = Process([*args, "--listen", "127.0.0.1:0"], tmp_path, "stderr")
    processes.append(process)
    url = process.wait_for("listening on").rsplit(" ", 1)[1]
    assert "strictmcp gateway: listening on" in process.output()

    async def test() -> None:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await _use_three_servers(session, tmp_path / "root")

    run(test)


def test_initialize_unites_the_servers(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, *_two())
    errlog = tmp_path / "stderr.log"

    async def test() -> None:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "strictmcp", "gateway", "--policy", str(policy)],
            env=dict(os.environ),
        )
        with errlog.open("a") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as session,
            ):
                result = await session.initialize()
                assert result.server_info.name == "strictmcp-gateway"
                assert result.instructions is not None
                assert "[a] Use a for tests." in result.instructions
                assert "[b] Use b for tests." in result.instructions
                assert result.capabilities.tools is not None
                assert result.capabilities.tools.list_changed
                assert result.capabilities.logging is not None
                # Same tool names on both servers, told apart by their server's name.
                a = await session.call_tool("a__echo", {"text": "x"})
                b = await session.call_tool("b__echo", {"text": "y"})
                assert (text_of(a), text_of(b)) == ("a: x", "b: y")
                with pytest.raises(MCPError):
                    await session.call_tool("c__echo", {"text": "z"})

    run(test)


def test_a_crashing_server_leaves_the_others_and_comes_back(tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path,
        "[gateway]\nrestart_delay = 0.2\n",
        server_table("steady", fixture("steady")),
        server_table("fragile", fixture("fragile")),
    )
    errlog = tmp_path / "stderr.log"
    changed, on_message = _tools_changed()

    async def test() -> None:
        async with gateway_session(policy, errlog, message_handler=on_message) as session:
            await session.list_tools()
            with pytest.raises(MCPError):
                await session.call_tool("fragile__crash", {})  # answered, not hung
            steady = await session.call_tool("steady__echo", {"text": "still here"})
            assert text_of(steady) == "steady: still here"
            await changed.wait()
            # Back after its restart: its tools are listed and answer again.
            with anyio.fail_after(20):
                while True:
                    names = [tool.name for tool in (await session.list_tools()).tools]
                    if "fragile__echo" in names:
                        break
                    await anyio.sleep(0.1)
            again = await session.call_tool("fragile__echo", {"text": "back"})
            assert text_of(again) == "fragile: back"

    run(test)
    said = errlog.read_text(encoding="utf-8")
    assert "[fragile] fragile is crashing now" in said
    assert "server 'fragile' exited (status 3)" in said


def test_a_crash_answers_the_waiting_call_with_an_error_naming_the_server(
    tmp_path: Path,
) -> None:
    policy = write_policy(
        tmp_path,
        "[gateway]\nrestart_delay = 0.2\n",
        server_table("steady", fixture("steady")),
        server_table("fragile", fixture("fragile")),
    )

    async def test() -> None:
        async with gateway_session(policy, tmp_path / "stderr.log") as session:
            await session.list_tools()
            with pytest.raises(MCPError) as raised:
                await session.call_tool("fragile__crash", {})
            assert "fragile" in str(raised.value)
            assert raised.value.error.code == -32000

    run(test)


def test_a_hanging_and_a_missing_server_touch_no_other(tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path,
        "[gateway]\nstart_timeout = 1.0\nmax_restarts = 0\n",
        server_table("steady", fixture("steady")),
        server_table("stuck", fixture("stuck", "hang")),
        server_table("absent", ["/nonexistent/strictmcp-test-server"]),
    )
    errlog = tmp_path / "stderr.log"

    async def test() -> None:
        async with gateway_session(policy, errlog, "--timeout", "2") as session:
            names = [tool.name for tool in (await session.list_tools()).tools]
            assert "steady__echo" in names
            assert not any(name.startswith(("stuck__", "absent__")) for name in names)
            steady = await session.call_tool("steady__echo", {"text": "fine"})
            assert text_of(steady) == "steady: fine"

    run(test)
    said = errlog.read_text(encoding="utf-8")
    assert "server 'absent' cannot start: its command was not found" in said
    assert "server 'stuck' did not list its tools; left out" in said
    assert "/nonexistent" not in said


def test_list_changed_from_one_server_reaches_the_client(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, *_two())
    changed, on_message = _tools_changed()

    async def test() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", message_handler=on_message
        ) as session:
            before = {tool.name for tool in (await session.list_tools()).tools}
            assert "b__extra" not in before
            await session.call_tool("b__grow", {})
            await changed.wait()
            after = {tool.name for tool in (await session.list_tools()).tools}
            assert after - before == {"b__extra"}

    run(test)


def test_sampling_from_two_servers_with_one_id_reaches_each_its_answer(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, *_two())
    seen: list[str] = []

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
        asked = params.messages[0].content
        text = asked.text if isinstance(asked, types.TextContent) else "?"
        seen.append(text)
        await anyio.sleep(0.2 if text == "first" else 0)  # answers out of order
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"re {text}"),
            model="test",
        )

    async def test() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", sampling_callback=sample
        ) as session:
            await session.list_tools()
            results: dict[str, str] = {}

            async def ask(tool: str, text: str) -> None:
                results[tool] = text_of(await session.call_tool(tool, {"text": text}))

            async with anyio.create_task_group() as group:
                group.start_soon(ask, "a__ask", "first")
                group.start_soon(ask, "b__ask", "second")
            assert results == {"a__ask": "a was told: re first", "b__ask": "b was told: re second"}
            assert sorted(seen) == ["first", "second"]

    run(test)


def test_log_messages_name_their_server(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, server_table("a", fixture("a")))
    loggers: list[str | None] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        loggers.append(params.logger)

    async def test() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", logging_callback=on_log
        ) as session:
            await session.set_logging_level("debug")
            await session.call_tool("a__log", {})
            with anyio.fail_after(10):
                while not loggers:
                    await anyio.sleep(0.05)
            assert loggers == ["a/core"]

    run(test)


def test_offered_tools_and_env_from(tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path,
        "validate_tool = false\n",
        server_table(
            "a",
            fixture("a"),
            tools='["e*", "crash"]',
            exclude_tools='["crash"]',
            env='{ GW_PLAIN = "plain" }',
            env_from='{ GW_SECRET = "STRICTMCP_TEST_SECRET" }',
        ),
    )
    os.environ["STRICTMCP_TEST_SECRET"] = "s3cret"

    async def test() -> None:
        async with gateway_session(policy, tmp_path / "stderr.log") as session:
            names = sorted(tool.name for tool in (await session.list_tools()).tools)
            assert names == ["a__echo", "a__env"]  # no validate tool, no crash, no ask
            env = await session.call_tool("a__env", {})
            assert text_of(env) == "plain=plain secret=s3cret seen="
            # Not offered: answered as an unknown tool, as the spec has servers answer one.
            with pytest.raises(MCPError) as raised:
                await session.call_tool("a__crash", {})
            assert raised.value.error.code == -32602

    try:
        run(test)
    finally:
        del os.environ["STRICTMCP_TEST_SECRET"]


@pytest.mark.parametrize(
    ("tables", "said"),
    [
        (
            server_table("a", ["x"]) + server_table("a", ["y"]),
            "names must be unique: a given twice",
        ),
        ('[[server]]\nname = "a b"\ncommand = ["x"]\n', "name must be 1 to 32 letters"),
        ('[[server]]\nname = "a"\n', "give one of command or url"),
        ('[[server]]\nname = "a"\nurl = "http://example.com/mcp"\n', "url must be an https://"),
        (server_table("a", ["x"]) + '[gateway]\nseparator = "-"\n', "separator must be"),
        (
            server_table("a", ["x"], env_from='{ K = "STRICTMCP_TEST_UNSET" }'),
            "STRICTMCP_TEST_UNSET",
        ),
        ("", "the gateway needs [[server]] tables"),
    ],
)
def test_configuration_errors_say_what_to_fix(tmp_path: Path, tables: str, said: str) -> None:
    policy = write_policy(tmp_path, tables)
    done = subprocess.run(
        [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr


def test_the_proxy_refuses_server_tables(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, server_table("a", fixture("a")))
    done = subprocess.run(
        [sys.executable, "-m", "strictmcp", "proxy", "--policy", str(policy), "--", *fixture("a")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "are for `strictmcp gateway`" in done.stderr


def test_a_servers_own_lock_file_pins_only_its_tools(tmp_path: Path) -> None:
    lock = tmp_path / "a.lock.json"
    pinned = subprocess.run(
        [sys.executable, "-m", "strictmcp", "pin", "--lock", str(lock), "--", *fixture("a")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert pinned.returncode == 0, pinned.stderr
    # The lock file holds the server's own names, as `strictmcp pin -- SERVER` wrote them.
    assert '"echo"' in lock.read_text()
    assert "a__echo" not in lock.read_text()
    policy = write_policy(
        tmp_path,
        server_table("a", fixture("a"), pin=_toml(lock.name)),
        server_table("b", fixture("b")),
    )
    changed, on_message = _tools_changed()

    async def test() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", message_handler=on_message
        ) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert {"a__echo", "b__echo"} <= names
            # A tool that appeared since pinning is withheld on the pinned server only.
            await session.call_tool("a__grow", {})
            await session.call_tool("b__grow", {})
            await changed.wait()
            after = {tool.name for tool in (await session.list_tools()).tools}
            assert "b__extra" in after
            assert "a__extra" not in after
            assert "a__echo" in after

    run(test)
    assert "was not listed when the tools were pinned" in (tmp_path / "stderr.log").read_text()


def test_pins_per_server_and_pin_together_are_refused(tmp_path: Path) -> None:
    lock = tmp_path / "a.lock.json"
    lock.write_text("{}")
    policy = write_policy(tmp_path, server_table("a", fixture("a"), pin=_toml(str(lock))))
    args = ["-m", "strictmcp", "gateway", "--policy", str(policy), "--pin", str(lock)]
    done = subprocess.run(
        [sys.executable, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "name their own lock files; give either" in done.stderr


def test_an_http_upstream_beside_a_stdio_one_with_its_own_credentials(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    url = sdk_http_server(tmp_path, processes)
    policy = write_policy(
        tmp_path,
        server_table("local", fixture("local")),
        '[[server]]\nname = "remote"\n'
        f"url = {_toml(url)}\n"
        'upstream = { bearer_env = "STRICTMCP_TEST_UPSTREAM_TOKEN" }\n',
    )
    os.environ["STRICTMCP_TEST_UPSTREAM_TOKEN"] = "gateway-own-token"

    async def test() -> None:
        async with gateway_session(policy, tmp_path / "stderr.log") as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert {"local__echo", "remote__echo", "remote__read_file"} <= names
            remote = await session.call_tool("remote__echo", {"text": "over http"})
            local = await session.call_tool("local__echo", {"text": "over stdio"})
            assert "over http" in text_of(remote)
            assert text_of(local) == "local: over stdio"

    try:
        run(test)
    finally:
        del os.environ["STRICTMCP_TEST_UPSTREAM_TOKEN"]
    calls = [json.loads(line) for line in (tmp_path / "calls").read_text().splitlines()]
    assert [call["name"] for call in calls] == ["echo"]  # its own name, not the gateway's
    sent = (tmp_path / "calls.authorization").read_text().splitlines()
    assert sent
    assert set(sent) == {json.dumps("Bearer gateway-own-token")}


def test_tasks_of_two_servers_with_the_same_ids_are_told_apart(tmp_path: Path) -> None:
    server = Path(__file__).resolve().parent / "proxy_fixtures" / "task_server.py"
    policy = write_policy(
        tmp_path,
        server_table("a", [sys.executable, str(server), str(tmp_path / "a-calls")]),
        server_table("b", [sys.executable, str(server), str(tmp_path / "b-calls")]),
    )
    gateway, ask = raw_gateway(policy, tmp_path)
    try:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        capabilities = ask("initialize", init)["result"]["capabilities"]
        assert capabilities["tasks"]["requests"]["tools"]["call"] == {}
        gateway.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ask("tools/list", {})
        created = {
            name: ask("tools/call", {"name": f"{name}__report", "arguments": {}, "task": {}})
            for name in ("a", "b")
        }
        ids = {name: reply["result"]["task"]["taskId"] for name, reply in created.items()}
        # Both servers call theirs task-1: the client sees each under its server's name.
        assert ids == {"a": "a__task-1", "b": "b__task-1"}
        status = ask("tasks/get", {"taskId": "b__task-1"})["result"]
        assert status["taskId"] == "b__task-1"
        assert status["status"] == "completed"
        final = ask("tasks/result", {"taskId": "a__task-1"})["result"]
        assert final["structuredContent"] == {"total": 3}
        assert final["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": "a__task-1"}
        unknown = ask("tasks/get", {"taskId": "c__task-1"})
        assert unknown["error"]["code"] == -32602
    finally:
        gateway.stop()
    a_calls = [json.loads(line) for line in (tmp_path / "a-calls").read_text().splitlines()]
    b_calls = [json.loads(line) for line in (tmp_path / "b-calls").read_text().splitlines()]
    # Each server was asked about its own task, by its own id.
    assert ("tasks/result", "task-1") in [(c["method"], c["params"].get("taskId")) for c in a_calls]
    assert ("tasks/get", "task-1") in [(c["method"], c["params"].get("taskId")) for c in b_calls]
    assert "tasks/get" not in [c["method"] for c in a_calls]


def test_a_server_in_audit_mode_reports_what_another_refuses(tmp_path: Path) -> None:
    audit_log = tmp_path / "audit.jsonl"
    guard = '[[guard]]\ntool = "*__echo"\nargument = "/text"\nkind = "schema"\n'
    policy = write_policy(
        tmp_path,
        server_table("trial", fixture("trial"), mode='"audit"'),
        server_table("live", fixture("live")),
        guard + "schema = { maxLength = 3 }\n",
    )

    async def test() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", "--audit-log", str(audit_log)
        ) as session:
            await session.list_tools()
            trial = await session.call_tool("trial__echo", {"text": "too long"})
            live = await session.call_tool("live__echo", {"text": "too long"})
            assert text_of(trial) == "trial: too long"  # reported, and it went through
            assert live.is_error
            assert "live: too long" not in text_of(live)

    run(test)
    records = [json.loads(line) for line in audit_log.read_text().splitlines()]
    actions = {(r["server"], r["action"], r["mode"]) for r in records if r["stage"] == "policy"}
    assert actions == {("trial", "would deny", "audit"), ("live", "refused", "enforce")}


def test_no_server_sees_the_secrets_env_from_reads(tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path,
        server_table("a", fixture("a"), env_from='{ GW_SECRET = "STRICTMCP_TEST_A" }'),
        server_table("b", fixture("b"), env_from='{ GW_SECRET = "STRICTMCP_TEST_B" }'),
        server_table("c", fixture("c")),
    )
    os.environ.update(STRICTMCP_TEST_A="for-a", STRICTMCP_TEST_B="for-b", STRICTMCP_TEST_X="x")

    async def test() -> None:
        async with gateway_session(policy, tmp_path / "stderr.log") as session:
            seen = {
                name: text_of(await session.call_tool(f"{name}__env", {}))
                for name in ("a", "b", "c")
            }
            # Each gets its own under the name it expects, and no server the others' (nor
            # its own under the gateway's name); what env_from does not name passes as ever.
            assert seen == {
                "a": "plain=None secret=for-a seen=STRICTMCP_TEST_X",
                "b": "plain=None secret=for-b seen=STRICTMCP_TEST_X",
                "c": "plain=None secret=None seen=STRICTMCP_TEST_X",
            }

    try:
        run(test)
    finally:
        for name in ("STRICTMCP_TEST_A", "STRICTMCP_TEST_B", "STRICTMCP_TEST_X"):
            del os.environ[name]


def test_a_servers_answer_is_read_as_strictly_as_the_proxy_reads_it(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, *_two())
    errlog = tmp_path / "stderr.log"

    async def test() -> None:
        async with gateway_session(policy, errlog) as session:
            await session.list_tools()
            # isError twice: the gateway must not pick one and write the message anew.
            with pytest.raises(MCPError) as raised:
                await session.call_tool("a__dup", {})
            assert raised.value.error.code == -32603
            assert "'a'" in str(raised.value)
            fine = await session.call_tool("b__echo", {"text": "after"})
            assert text_of(fine) == "b: after"

    run(test)
    assert "server 'a' sent a message that cannot be read [json-duplicate-key]" in (
        errlog.read_text()
    )


def test_a_listing_the_server_promised_to_say_changed_is_asked_once(tmp_path: Path) -> None:
    policy = write_policy(tmp_path, *_two())
    changed, on_message = _tools_changed()

    async def test() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", message_handler=on_message
        ) as session:
            for _ in range(3):
                await session.list_tools()
            # It declared tools.listChanged: asked once, then reused.
            count = await session.call_tool("b__listings", {})
            assert text_of(count) == "b listed its tools 1 times"
            await session.call_tool("b__grow", {})
            await changed.wait()
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert "b__extra" in names  # asked again once it said the list changed
            again = await session.call_tool("b__listings", {})
            assert text_of(again) == "b listed its tools 2 times"

    run(test)


QUIET = Path(__file__).resolve().parent / "proxy_fixtures" / "quiet_listing_server.py"


@pytest.mark.parametrize(
    ("how", "form"),
    [("schema", "first"), ("added", "last"), ("hidden", "first"), ("hidden", "last")],
)
def test_a_listing_changed_unannounced_after_identical_ones_is_checked_in_full(
    tmp_path: Path, how: str, form: str
) -> None:
    quiet = server_table("quiet", [sys.executable, str(QUIET), how, form])
    policy = write_policy(tmp_path, quiet, server_table("a", fixture("a")))

    async def names(session: ClientSession) -> set[str]:
        return {tool.name for tool in (await session.list_tools()).tools}

    async def goes_on(session: ClientSession, name: str, arguments: dict[str, Any]) -> bool:
        """Whether the call reaches the server (refused: an error result, or an unknown tool)."""
        try:
            answer = await session.call_tool(name, arguments)
        except MCPError:
            return False
        return not answer.is_error and text_of(answer) == "ok"

    async def test() -> None:
        async with gateway_session(policy, tmp_path / "stderr.log") as session:
            clean = await names(session)
            assert {"quiet__get_weather", "quiet__add_note", "validate"} <= clean
            # The same listing again: the pages, the merged text and the checks reused.
            assert await names(session) == clean
            assert await goes_on(session, "quiet__get_weather", {"city": "Oslo"})
            changed = await names(session)
            weather = await goes_on(session, "quiet__get_weather", {"city": "Oslo"})
            if how == "schema":
                assert changed == clean
                assert not weather  # checked against the new schema: a number
                assert await goes_on(session, "quiet__get_weather", {"city": 7})
            elif how == "added":
                assert changed == clean | {"quiet__get_tide"}
                assert weather
                assert await goes_on(session, "quiet__get_tide", {"harbour": "Brest"})
            else:
                assert changed == clean - {"quiet__get_weather"}  # withheld
                assert not weather
            # Clean again: as at first.
            assert await names(session) == clean
            assert await goes_on(session, "quiet__get_weather", {"city": "Oslo"})
            assert not await goes_on(session, "quiet__get_tide", {"harbour": "Brest"})

    run(test)


def _raw_gateway(policy: Path, errlog: Path) -> subprocess.Popen[bytes]:
    with errlog.open("ab") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=errlog.parent,
        )


def _exchange(gateway: subprocess.Popen[bytes], message: dict[str, Any]) -> bytes | None:
    """Write ``message`` to the gateway; its answer's line as it came (None: a notification)."""
    assert gateway.stdin is not None
    assert gateway.stdout is not None
    gateway.stdin.write(json.dumps(message).encode() + b"\n")
    gateway.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = gateway.stdout.readline()
        assert line, "the gateway ended before answering"
        if json.loads(line).get("id") == message["id"]:
            return line


@pytest.mark.parametrize("tool", ["echo", "tail"])
def test_a_servers_answer_reaches_the_client_as_it_wrote_it_but_for_the_id(
    tmp_path: Path, tool: str
) -> None:
    # The gateway renames the id in the server's own text (read strictly first) rather than
    # writing the answer anew, and the session reads what the gateway read: the client gets
    # the server's bytes, the id first (as Python writes it) or last (as TypeScript does).
    policy = write_policy(tmp_path, *_two())
    gateway = _raw_gateway(policy, tmp_path / "stderr.log")
    try:
        params = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        _exchange(gateway, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        _exchange(gateway, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": f"b__{tool}", "arguments": {"text": "hé \u2603"}}
        answer = _exchange(
            gateway, {"jsonrpc": "2.0", "id": "c-9", "method": "tools/call", "params": call}
        )
    finally:
        gateway.kill()
        gateway.wait(_SECONDS)
    body = {"content": [{"type": "text", "text": "b: hé \u2603"}]}
    head: dict[str, Any] = {"jsonrpc": "2.0", "id": "c-9"}
    written = {**head, "result": body} if tool == "echo" else {"result": body, **head}
    assert answer == json.dumps(written).encode() + b"\n"


def _rss(pid: int) -> int:
    """The resident memory of process ``pid``, in bytes."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    return int(re.search(r"VmRSS:\s+(\d+) kB", status)[1]) * 1024  # type: ignore[index]


def flooded_unread(
    args: list[str], cwd: Path, tool: str, arguments: Any, count: Path, many: int
) -> None:
    """Start ``args`` (a proxy or gateway over stdio), call ``tool``, which floods the client
    with ``many`` log messages of 2 KB and says in ``count`` how many it has written, and read
    nothing meanwhile: the proxy must take less than half from the server (which then waits)
    and grow by less than half of it; once the client reads, every message arrives, in order,
    then the answer."""
    proxy = subprocess.Popen(args, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    stdin, stdout = proxy.stdin, proxy.stdout
    assert stdin is not None
    assert stdout is not None

    def send(request_id: int | None, method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        stdin.write(
            json.dumps(message if request_id is None else {**message, "id": request_id}).encode()
            + b"\n"
        )
        stdin.flush()

    def answer(request_id: int) -> None:
        while json.loads(stdout.readline()).get("id") != request_id:
            pass

    def written() -> int:
        return int(count.read_text(encoding="utf-8") or 0) if count.exists() else 0

    try:
        client = {"name": "t", "version": "1"}
        send(
            1,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client},
        )
        answer(1)
        send(None, "notifications/initialized", {})
        send(2, "tools/list", {})
        answer(2)
        before = _rss(proxy.pid)
        send(3, "tools/call", {"name": tool, "arguments": arguments})
        # The client reads nothing now. Wait until the server stops getting further (or is
        # done): what it wrote by then is what the proxy and the pipes took from it.
        deadline, last, still = time.monotonic() + 60, -1, 0
        while still < 10 and written() < many and time.monotonic() < deadline:
            now = written()
            still, last = (still + 1 if now == last and now else 0), now
            time.sleep(0.1)
        held, grown = written(), _rss(proxy.pid) - before
        assert held < many // 2, f"{held} of {many} messages taken from the server"
        assert grown < many * 1024, f"the proxy grew by {grown // 2**20} MB"
        seen = 0
        while True:
            message = json.loads(stdout.readline())
            if message.get("method") == "notifications/message":
                assert message["params"]["data"].startswith(f"{seen} ")
                seen += 1
            elif message.get("id") == 3:
                assert message["result"]["content"][0]["text"] == "flooded"
                break
        assert seen == many
    finally:
        proxy.kill()
        proxy.wait(timeout=10)


def test_a_server_flooding_a_client_that_does_not_read_is_held_back(tmp_path: Path) -> None:
    # A server may write faster than the client reads: the gateway holds a bounded amount for
    # the client, as the single proxy does, and the server then waits on its own stdout.
    policy = write_policy(tmp_path, server_table("a", fixture("a")))
    count = tmp_path / "flood.count"
    args = [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)]
    flooded_unread(args, tmp_path, "a__flood", {"text": f"40000 {count}"}, count, 40_000)


@pytest.mark.parametrize("gateway", [False, True], ids=["proxy", "gateway"])
def test_an_http_server_flooding_a_client_that_does_not_read_is_held_back(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
    gateway: bool,
) -> None:
    # The same over HTTP: the server's event stream is not read on while the client is behind
    # (120 MB: the sockets' own buffers hold several).
    count = tmp_path / "flood.count"
    server = Process([sys.executable, str(FLOOD_HTTP), str(count)], tmp_path, "stdout")
    processes.append(server)
    url = server.wait_for("http://")
    if gateway:
        policy = write_policy(tmp_path, f'[[server]]\nname = "h"\nurl = "{url}"\n')
        args = ["gateway", "--policy", str(policy)]
    else:
        args = ["proxy", "--upstream", url]
    command = [sys.executable, "-m", "strictmcp", *args]
    tool = "h__flood" if gateway else "flood"
    flooded_unread(command, tmp_path, tool, {"n": 60_000}, count, 60_000)


def test_an_unpaired_surrogate_in_an_answer_is_refused_through_the_gateway(
    tmp_path: Path,
) -> None:
    policy = write_policy(tmp_path, *_two())
    errlog = tmp_path / "stderr.log"

    async def test() -> None:
        async with gateway_session(policy, errlog) as session:
            await session.list_tools()
            with pytest.raises(MCPError) as raised:
                await session.call_tool("a__lone", {})
            assert raised.value.error.code == -32603
            fine = await session.call_tool("a__echo", {"text": "after"})
            assert text_of(fine) == "a: after"

    run(test)
    assert "jsonrpc-unpaired-surrogate" in errlog.read_text()


_READ_ONCE = [
    b'{"jsonrpc": "2.0", "id": 7, "result": {"content": []}}\n',
    b'{"result": {"content": []}, "jsonrpc": "2.0", "id": "x"}\n',
    b'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"\\ud800"}]}}\n',
    b'{"jsonrpc":"2.0","id":7,"result":{"text":"\\u00e9\\t"}}\n',
    b'{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}\r\n',
    b'\xef\xbb\xbf{"jsonrpc":"2.0","id":7,"result":{}}\n',
    b'{"jsonrpc":"2.0","id":7,"result":{"big":"' + b"x" * 200 + b'"}}\n',
    b'{"jsonrpc":"2.0","id":7,"result":{},"extra":1}\n',
]


@pytest.mark.parametrize("line", _READ_ONCE)
def test_a_line_handed_over_with_its_value_is_decided_as_if_read(line: bytes) -> None:
    # The session reads what the gateway hands it without parsing it again: every check made
    # on the text (size, unpaired surrogates, plain text, envelope) still is.
    value = json.loads(line.removeprefix(b"\xef\xbb\xbf"))
    for max_size in (10_000, 100):
        read = decode(line, LATEST, max_size=max_size)
        handed = decode(line, LATEST, max_size=max_size, value=value)
        assert handed == read


def test_answer_with_id_renames_the_top_level_id_in_the_text() -> None:
    first = b'{"jsonrpc": "2.0", "id": 17, "result": {"id": 17}}\n'
    assert (
        answer_with_id(first, "c-1") == b'{"jsonrpc": "2.0", "id": "c-1", "result": {"id": 17}}\n'
    )
    last = b'{"result": {"id": 3}, "jsonrpc": "2.0", "id": 3}\n'
    assert answer_with_id(last, 'q"\u00e9') == (
        b'{"result": {"id": 3}, "jsonrpc": "2.0", "id": "q\\"\\u00e9"}\n'
    )
    assert json.loads(answer_with_id(last, 'q"\u00e9') or b"")["id"] == 'q"\u00e9'
    assert answer_with_id(b'{"result": {}, "id": 3, "jsonrpc": "2.0"}\n', 1) is None


def test_a_handoff_gives_a_value_once_and_only_for_its_own_line() -> None:
    handoff = Handoff(bound=2)
    one, same_text = b'{"a":1}\n', bytes(bytearray(b'{"a":1}\n'))
    handoff.give(one, {"a": 1})
    assert handoff.take(same_text) is None  # equal text, another line: read it
    assert handoff.take(one) == {"a": 1}
    assert handoff.take(one) is None  # taken once
    lines = [b"%d\n" % n for n in range(3)]
    for n, line in enumerate(lines):
        handoff.give(line, n)
    assert handoff.take(lines[0]) is None  # the oldest dropped past the bound
    assert [handoff.take(line) for line in lines[1:]] == [1, 2]
    # Bounded in bytes too: a value never taken holds no more than the bound.
    small = Handoff(bound=100, bound_bytes=10)
    big, last = b"x" * 8 + b"\n", b"y" * 4 + b"\n"
    small.give(big, "big")
    small.give(last, "last")
    assert small.take(big) is None
    assert small.take(last) == "last"


def test_a_backlog_holds_its_writers_back_past_its_bound_until_half_is_taken() -> None:
    async def body() -> None:
        backlog = Backlog(high=10)
        written: list[int] = []

        async def writer() -> None:
            for n in range(8):
                await backlog.room()
                backlog.put(b"%d\n" % n)  # 2 bytes each
                written.append(n)

        async def turns() -> None:
            for _ in range(20):
                await asyncio.sleep(0)

        task = asyncio.create_task(writer())
        await turns()
        assert written == [0, 1, 2, 3, 4, 5]  # 12 bytes wait: past the bound, it waits
        taken = [await backlog.get() for _ in range(3)]
        await turns()
        assert written == [0, 1, 2, 3, 4, 5]  # 6 bytes still wait: more than half
        taken.append(await backlog.get())
        await asyncio.wait_for(task, 5)  # 4 bytes wait now: it goes on
        backlog.put("oversized")  # what the proxy says itself is never held back
        backlog.put(None)
        taken += [await backlog.get() for _ in range(6)]
        lines = [b"%d\n" % n for n in range(8)]
        assert taken == [*lines, "oversized", None]
        assert not backlog.waiting

    asyncio.run(body())
