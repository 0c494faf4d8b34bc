"""The stdio proxy end to end: ``python -m strictmcp.proxy`` in front of real servers.

Two fixtures (tests/proxy_fixtures): a server on the official SDK's low-level ``Server``,
which records every call it receives, driven by the official client and by raw lines; and a
line-level server that records every byte it receives, for transparency and fault cases.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

from strictmcp.protocol import VALIDATION_META_KEY

FIXTURES = Path(__file__).resolve().parent / "proxy_fixtures"
SECRET = "sk-live-5ec12e7-do-not-echo"
"""Planted in arguments; no answer and no audit record may contain it."""
_LINE_SECONDS = 20.0


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A root with one file, and a sibling directory whose name extends the root's."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "hello.txt").write_text("hello", encoding="utf-8")
    (tmp_path / "data_secret").mkdir()
    (tmp_path / "data_secret" / f"{SECRET}.txt").write_text("private", encoding="utf-8")
    policy = (
        f'[[guard]]\ntool = "read_*"\nargument = "/path"\nkind = "path"\n'
        f"roots = [{json.dumps(str(tmp_path / 'data'))}]\n"
    )
    (tmp_path / "policy.toml").write_text(policy, encoding="utf-8")
    return tmp_path


def proxy_args(workspace: Path, *options: str, server: str = "sdk") -> list[str]:
    """The proxy's arguments, in front of a fixture server recording to workspace/calls."""
    script = FIXTURES / f"{server}_server.py"
    upstream = [sys.executable, str(script), str(workspace / "calls")]
    return ["-m", "strictmcp.proxy", *options, "--", *upstream]


def calls(workspace: Path) -> list[dict[str, Any]]:
    """The tools/call requests that reached the SDK fixture."""
    path = workspace / "calls"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------------------------------------
# Through the official client


@asynccontextmanager
async def client(workspace: Path, *options: str) -> AsyncIterator[ClientSession]:
    """An initialized official client session through the proxy; its stderr in workspace."""
    params = StdioServerParameters(
        command=sys.executable, args=proxy_args(workspace, *options), cwd=str(workspace)
    )
    with (workspace / "stderr").open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            yield session


def run(test: Callable[[], Any]) -> None:
    """Run an async test, bounded."""

    async def bounded() -> None:
        with anyio.fail_after(30):
            await test()

    anyio.run(bounded)


def text_of(result: types.CallToolResult) -> str:
    """The text of a result's content."""
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_tools_listed_with_validate_and_capability(workspace: Path) -> None:
    async def body() -> None:
        async with client(workspace) as session:
            initialized = await session.initialize()
            experimental = initialized.capabilities.experimental or {}
            assert experimental["toolValidation"] == {"tool": "validate"}
            listed = await session.list_tools()
            names = [tool.name for tool in listed.tools]
            # remote's inputSchema has an external $ref: withheld, since no call could be checked.
            assert names == ["read_file", "echo", "word_count", "crash", "hang", "validate"]

    run(body)
    stderr = (workspace / "stderr").read_text(encoding="utf-8")
    assert "tools/list withheld" in stderr
    assert "schema-external-ref" in stderr


def test_calls_checked_before_they_reach_the_server(workspace: Path) -> None:
    async def body() -> None:
        async with client(workspace) as session:
            await session.initialize()
            await session.list_tools()
            good = await session.call_tool("echo", {"text": "hi"})
            assert not good.is_error
            assert text_of(good) == "hi"
            bad = await session.call_tool("echo", {"text": 5, "token": SECRET})
            assert bad.is_error
            assert "Invalid arguments" in text_of(bad)
            assert SECRET not in bad.model_dump_json()
            codes = (bad.meta or {})[VALIDATION_META_KEY]["codes"]
            assert codes == ["tool-arguments-invalid"]
            with pytest.raises(MCPError) as unknown:
                await session.call_tool("nope", {})
            assert unknown.value.error.code == types.INVALID_PARAMS

    run(body)
    assert calls(workspace) == [{"name": "echo", "arguments": {"text": "hi"}}]


def test_policy_guards_block_paths_outside_the_root(workspace: Path) -> None:
    inside = str(workspace / "data" / "hello.txt")
    sibling = str(workspace / "data_secret" / f"{SECRET}.txt")
    escape = str(workspace / "data" / ".." / "data_secret" / f"{SECRET}.txt")

    async def body() -> None:
        async with client(workspace, "--policy", "policy.toml") as session:
            await session.initialize()
            await session.list_tools()
            assert text_of(await session.call_tool("read_file", {"path": inside})) == "hello"
            for path in (sibling, escape):
                refused = await session.call_tool("read_file", {"path": path})
                assert refused.is_error
                assert "were refused" in text_of(refused)
                assert SECRET not in refused.model_dump_json()

    run(body)
    assert [call["arguments"]["path"] for call in calls(workspace)] == [inside]


def test_audit_mode_forwards_everything_and_logs_no_values(workspace: Path) -> None:
    sibling = str(workspace / "data_secret" / f"{SECRET}.txt")
    options = ("--policy", "policy.toml", "--mode", "audit", "--audit-log", "audit.jsonl")

    async def body() -> None:
        async with client(workspace, *options) as session:
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            assert "remote" in names  # nothing withheld
            assert "validate" in names  # but the validate tool is added
            assert text_of(await session.call_tool("read_file", {"path": sibling})) == "private"
            # Not replaced: the official client's own output check is what catches it here.
            with pytest.raises(RuntimeError, match="Invalid structured content"):
                await session.call_tool("word_count", {"text": "a b"})

    run(body)
    assert [call["name"] for call in calls(workspace)] == ["read_file", "word_count"]
    log = (workspace / "audit.jsonl").read_text(encoding="utf-8")
    assert SECRET not in log
    assert "/tmp" not in log
    records = [json.loads(line) for line in log.splitlines()]
    guarded = [r for r in records if r["tool"] == "read_file"]
    assert guarded
    assert {r["action"] for r in guarded} == {"would deny"}
    assert all(r["pointer"] == "/params/arguments/path" for r in guarded)
    assert all(r["code"].startswith("path-") for r in guarded)
    result = next(r for r in records if r["tool"] == "word_count")
    assert result["code"] == "tool-structured-content-invalid"
    assert result["direction"] == "s2c"
    assert set(result) >= {"time", "method", "severity", "pointer", "action"}


def test_validate_tool_answered_by_the_proxy(workspace: Path) -> None:
    async def body() -> None:
        async with client(workspace) as session:
            await session.initialize()
            await session.list_tools()
            verdict = await session.call_tool(
                "validate", {"tool": "echo", "arguments": {"text": SECRET, "extra": 1}}
            )
            assert not verdict.is_error
            assert verdict.structured_content is not None
            assert verdict.structured_content["valid"] is False
            assert SECRET not in verdict.model_dump_json()
            ok = await session.call_tool("validate", {"tool": "echo", "arguments": {"text": "x"}})
            assert ok.structured_content == {"valid": True, "errors": [], "warnings": []}

    run(body)
    assert calls(workspace) == []


def test_result_breaking_its_output_schema_is_replaced(workspace: Path) -> None:
    async def body() -> None:
        async with client(workspace) as session:
            await session.initialize()
            await session.list_tools()
            result = await session.call_tool("word_count", {"text": "a b"})
            assert result.is_error
            assert "does not match its outputSchema" in text_of(result)
            assert result.structured_content is None
            codes = (result.meta or {})[VALIDATION_META_KEY]["codes"]
            assert codes == ["tool-structured-content-invalid"]

    run(body)
    assert [call["name"] for call in calls(workspace)] == ["word_count"]


# ---------------------------------------------------------------------------------------------
# Raw lines


class Raw:
    """The proxy as a process we write lines to and read lines from."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self._lines: queue.Queue[bytes] = queue.Queue()
        assert process.stdout is not None
        threading.Thread(target=self._pump, args=(process.stdout,), daemon=True).start()

    def _pump(self, stream: IO[bytes]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(b"")

    def send(self, line: bytes | dict[str, Any]) -> None:
        """Write one line (a dict is serialized)."""
        data = line if isinstance(line, bytes) else json.dumps(line).encode() + b"\n"
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def line(self) -> bytes:
        """The next line the proxy writes."""
        line = self._lines.get(timeout=_LINE_SECONDS)
        assert line, "the proxy closed its output"
        return line

    def message(self) -> dict[str, Any]:
        """The next message the proxy writes."""
        message: dict[str, Any] = json.loads(self.line())
        return message

    def request(self, id: int | str, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and return the next message."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.message()

    def handshake(self) -> dict[str, Any]:
        """initialize, initialized; the initialize result."""
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        result = self.request(0, "initialize", params)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result


@contextmanager
def raw_proxy(workspace: Path, *options: str, server: str = "sdk") -> Iterator[Raw]:
    """The proxy started with pipes, always killed."""
    process = subprocess.Popen(
        [sys.executable, *proxy_args(workspace, *options, server=server)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(workspace / "stderr").open("wb"),
        cwd=workspace,
    )
    try:
        yield Raw(process)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def stderr_of(workspace: Path) -> str:
    """What the proxy (and its server) wrote on stderr."""
    return (workspace / "stderr").read_text(encoding="utf-8")


def test_everything_else_passes_through_byte_for_byte(workspace: Path) -> None:
    sent = [
        b'{"jsonrpc": "2.0", "id": 7,   "method": "custom/thing", "params": {"x": [1, 2]}}\n',
        b'{"method":"notifications/custom","jsonrpc":"2.0"}\n',
        b'{"jsonrpc":"2.0","id":"p","method":"ping"}\n',
        b'{"jsonrpc":"2.0","id":9,"method":"ask/client"}\n',
    ]
    with raw_proxy(workspace, server="raw") as proxy:
        initialized = proxy.handshake()
        assert initialized["result"]["capabilities"]["experimental"] == {
            "toolValidation": {"tool": "validate"}
        }
        for line in sent:
            proxy.send(line)
        received = [proxy.line() for _ in range(5)]
        # The server's own spelling, unchanged, in the server's order, ids included.
        assert received == [
            b'{"jsonrpc": "2.0",  "id": 7, "result": { "echo" :  "custom/thing" }}\n',
            b'{"jsonrpc": "2.0",  "id": "p", "result": { "echo" :  "ping" }}\n',
            b'{"jsonrpc":"2.0", "id":"srv-1", "method":"ping"}\n',
            b'{"jsonrpc":"2.0","method":"notifications/message",'
            b' "params":{"level":"info","data":"hi"}}\n',
            b'{"jsonrpc": "2.0",  "id": 9, "result": { "echo" :  "ask/client" }}\n',
        ]
        answer = b'{"jsonrpc":"2.0", "id":"srv-1", "result":{}}\n'
        proxy.send(answer)
        assert proxy.request(10, "ping")["id"] == 10
    recorded = (workspace / "calls").read_bytes().splitlines(keepends=True)
    assert recorded[2:7] == [*sent, answer]


def test_lines_that_arrive_with_the_end_of_input_are_all_delivered(workspace: Path) -> None:
    # The proxy decides every line of one read before it writes: lines that come in the same
    # read as the end of stdin must still reach the server, and their answers the client.
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    burst = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": n, "method": "custom/thing"} for n in range(1, 6)),
    ]
    data = b"".join(json.dumps(message).encode() + b"\n" for message in burst)
    process = subprocess.run(
        [sys.executable, *proxy_args(workspace, server="raw")],
        input=data,
        capture_output=True,
        cwd=workspace,
        timeout=60,
        check=False,
    )
    answers = [json.loads(line) for line in process.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [0, 1, 2, 3, 4, 5]
    assert process.returncode == 0
    recorded = (workspace / "calls").read_bytes().splitlines()
    assert [json.loads(line).get("id") for line in recorded] == [0, None, 1, 2, 3, 4, 5]


def test_malformed_client_lines_are_answered_and_the_stream_goes_on(workspace: Path) -> None:
    with raw_proxy(workspace, server="raw") as proxy:
        proxy.handshake()
        proxy.send(b"this is not json\n")
        parse = proxy.message()
        assert parse["id"] is None
        assert parse["error"]["code"] == -32700
        proxy.send(b'{"jsonrpc":"2.0","id":5,"params":[]}\n')
        invalid = proxy.message()
        assert invalid["id"] == 5
        assert invalid["error"]["code"] == -32600
        assert proxy.request(6, "ping")["result"] == {"echo": "ping"}
    recorded = (workspace / "calls").read_bytes()
    assert b"not json" not in recorded
    assert b'"id":5' not in recorded


def test_malformed_server_lines_are_reported_and_fail_only_their_request(
    workspace: Path,
) -> None:
    with raw_proxy(workspace, server="raw") as proxy:
        proxy.handshake()
        failed = proxy.request(3, "say/garbage")
        assert failed["id"] == 3
        assert failed["error"]["code"] == -32603
        assert proxy.request(4, "ping")["result"] == {"echo": "ping"}
    assert stderr_of(workspace).count("s2c message refused") == 2


def test_the_proxy_does_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys, strictmcp.proxy.cli; "
        "sys.exit(any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False, timeout=30).returncode == 0


def test_oversized_lines_are_refused_and_the_stream_goes_on(workspace: Path) -> None:
    with raw_proxy(workspace, "--max-size", "4096", server="raw") as proxy:
        proxy.handshake()
        big = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": SECRET * 40_000}}
        proxy.send(big)  # about a megabyte, against a bound of 4 KiB
        refused = proxy.message()
        assert refused["id"] is None
        assert refused["error"]["code"] == -32600
        assert refused["error"]["data"][0]["code"] == "jsonrpc-message-too-large"
        assert proxy.request(2, "ping")["result"] == {"echo": "ping"}
    assert SECRET.encode() not in (workspace / "calls").read_bytes()


def list_tools(proxy: Raw) -> None:
    """initialize and tools/list, so calls can be checked."""
    proxy.handshake()
    assert proxy.request(1, "tools/list")["id"] == 1


def test_upstream_crash_fails_the_request_and_the_proxy(workspace: Path) -> None:
    with raw_proxy(workspace) as proxy:
        list_tools(proxy)
        failed = proxy.request(2, "tools/call", {"name": "crash", "arguments": {}})
        assert failed["id"] == 2
        assert failed["error"]["code"] == -32000
        assert proxy.process.wait(timeout=10) != 0
    assert "the server exited with status 3" in stderr_of(workspace)


def test_upstream_hang_times_out_and_the_stream_goes_on(workspace: Path) -> None:
    # Long enough for the fixture server to start on a loaded machine.
    with raw_proxy(workspace, "--timeout", "4") as proxy:
        list_tools(proxy)
        late = proxy.request(2, "tools/call", {"name": "hang", "arguments": {}})
        assert late["id"] == 2
        assert late["error"]["code"] == -32001
        assert proxy.request(3, "ping") == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert "did not answer a tools/call request in time" in stderr_of(workspace)


def test_lines_after_one_decided_late_keep_their_order(workspace: Path) -> None:
    # A call before any listing (the proxy lists the tools first) and a call of the validate
    # tool (its dry run is awaited) are decided late; the lines that came with them in the
    # same write must still be sent, and answered, in the order they came.
    burst = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope"}},
        {"jsonrpc": "2.0", "id": 2, "method": "custom/thing"},
        {"jsonrpc": "2.0", "method": "notifications/custom"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "validate", "arguments": {"tool": "nope", "arguments": {}}},
        },
        {"jsonrpc": "2.0", "id": 4, "method": "custom/other"},
        {"jsonrpc": "2.0", "id": 5, "params": []},  # no method: answered by the proxy at once
        {"jsonrpc": "2.0", "id": 6, "method": "ping"},
    ]
    with raw_proxy(workspace, server="raw") as proxy:
        proxy.handshake()
        proxy.send(b"".join(json.dumps(message).encode() + b"\n" for message in burst))
        answers = [proxy.message() for _ in range(6)]
    # The proxy's own answers in order, each before the server's answers to later lines.
    assert [answer["id"] for answer in answers] == [1, 3, 5, 2, 4, 6]
    assert answers[0]["error"]["code"] == -32602  # the server lists no tool "nope"
    assert "result" in answers[1]
    assert answers[2]["error"]["code"] == -32600
    assert [answer["result"]["echo"] for answer in answers[3:]] == [
        "custom/thing",
        "custom/other",
        "ping",
    ]
    recorded = [json.loads(line) for line in (workspace / "calls").read_bytes().splitlines()]
    assert [message.get("method") for message in recorded[2:]] == [
        "tools/list",  # the proxy's own
        "custom/thing",
        "notifications/custom",
        "custom/other",
        "ping",
    ]
