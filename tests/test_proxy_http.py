"""The streamable HTTP proxy end to end: ``strictmcp proxy --listen`` in front of real servers.

Upstreams: the stdio fixture ``proxy_fixtures/sdk_server.py`` (one process per session), and
the same server on the official SDK's streamable HTTP (``proxy_fixtures/http_server.py``),
reached with ``--upstream URL``. Clients: the official SDK's (handshake and 2026-07-28), and
raw HTTP for what a client library would never send. Every process listens on a free
loopback port, says which, and is stopped when its test ends.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import anyio
import click
import httpx2
import mcp_types as types
import pytest
from mcp import Client, ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from strictmcp.proxy.cli import proxy as proxy_command

FIXTURES = Path(__file__).resolve().parent / "proxy_fixtures"
SECRET = "sk-live-5ec12e7-do-not-echo"
"""Planted in arguments; no answer may contain it."""
_START_SECONDS = 30.0
_MODERN = "2026-07-28"
_LEGACY_INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}
_ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class Process:
    """A subprocess whose output lines are collected as they come, and which is always stopped."""

    def __init__(
        self,
        args: list[str],
        cwd: Path,
        stream: str,
        *,
        stdin: bool = False,
        env: dict[str, str] | None = None,
    ) -> None:
        self.popen = subprocess.Popen(
            args,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stream == "stdout" else subprocess.DEVNULL,
            stderr=subprocess.PIPE if stream == "stderr" else None,
            text=True,
        )
        self.lines: list[str] = []
        self._new: queue.Queue[str | None] = queue.Queue()
        pipe = self.popen.stdout if stream == "stdout" else self.popen.stderr
        assert pipe is not None
        self._reader = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._reader.start()

    def _read(self, pipe: IO[str]) -> None:
        for line in pipe:
            self.lines.append(line)
            self._new.put(line)
        self._new.put(None)

    def wait_for(self, marker: str) -> str:
        """The first line (from now) containing ``marker``; fails if the process ends first."""
        while marker not in (line := self.next_line()):
            pass
        return line.strip()

    def next_line(self) -> str:
        """The next line; fails if the process ends first, or takes too long."""
        line = self._new.get(timeout=_START_SECONDS)
        assert line is not None, f"the process ended: {''.join(self.lines)}"
        return line

    def send(self, message: dict[str, Any]) -> None:
        """Write one message as a line to the process's stdin."""
        assert self.popen.stdin is not None
        self.popen.stdin.write(json.dumps(message) + "\n")
        self.popen.stdin.flush()

    def output(self) -> str:
        """Everything read so far."""
        return "".join(self.lines)

    def stop(self) -> None:
        """Terminate, then kill if need be; its output is read to the end."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)
        self._reader.join(timeout=10)


@dataclass
class Proxy:
    """A running proxy: its URL, its stderr, and where its fixture server records calls."""

    url: str
    process: Process
    workspace: Path

    def stderr(self) -> str:
        return self.process.output()

    def calls(self) -> list[dict[str, Any]]:
        path = self.workspace / "calls"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


StartProxy = Callable[..., Proxy]


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    """Every process a test starts, stopped at its end (last started, first stopped)."""
    started: list[Process] = []
    yield started
    for process in reversed(started):
        process.stop()


def sdk_http_server(workspace: Path, processes: list[Process]) -> str:
    """The official SDK's HTTP server fixture, running; its URL."""
    script = FIXTURES / "http_server.py"
    process = Process([sys.executable, str(script), str(workspace / "calls")], workspace, "stdout")
    processes.append(process)
    return process.wait_for("http://127.0.0.1:")


# ``python -m strictmcp.proxy`` with the modules named in its first argument unimportable.
_WITHOUT = """
import runpy, sys
for name in sys.argv.pop(1).split(","):
    sys.modules[name] = None
runpy.run_module("strictmcp.proxy", run_name="__main__", alter_sys=True)
"""


@pytest.fixture
def launch(tmp_path: Path, processes: list[Process]) -> StartProxy:
    """Starts ``strictmcp proxy --listen`` in front of the stdio fixture (``upstream="stdio"``,
    the default) or the HTTP one (``"http"``)."""

    def start(*options: str, upstream: str = "stdio", without: Sequence[str] = ()) -> Proxy:
        if upstream == "http":
            where = ["--upstream", sdk_http_server(tmp_path, processes)]
        else:
            script = FIXTURES / "sdk_server.py"
            where = ["--", sys.executable, str(script), str(tmp_path / "calls")]
        proxy = ["-m", "strictmcp.proxy"] if not without else ["-c", _WITHOUT, ",".join(without)]
        args = [sys.executable, *proxy, "--listen", "127.0.0.1:0"]
        process = Process([*args, *options, *where], tmp_path, "stderr")
        processes.append(process)
        url = process.wait_for("listening on").rsplit(" ", 1)[1]
        assert url.startswith("http://127.0.0.1:")
        return Proxy(url, process, tmp_path)

    return start


@pytest.fixture(params=["stdio", "http"])
def start_proxy(request: pytest.FixtureRequest, launch: StartProxy) -> StartProxy:
    """``launch``, once in front of each upstream."""
    return functools.partial(launch, upstream=request.param)


def run(test: Callable[[], Any]) -> None:
    """Run an async test, bounded."""

    async def bounded() -> None:
        with anyio.fail_after(60):
            await test()

    anyio.run(bounded)


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@asynccontextmanager
async def legacy(url: str) -> AsyncIterator[ClientSession]:
    """An initialized official client session (2025-11-25) through the proxy."""
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


# ---------------------------------------------------------------------------------------------
# Raw HTTP


def request(method: str, id: int | str = 1, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def modern(
    method: str, id: int | str, params: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request and the headers that go with it."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": _MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    headers = {**_ACCEPT, "mcp-protocol-version": _MODERN, "mcp-method": method}
    if method == "tools/call":
        headers["mcp-name"] = params["name"]
    return request(method, id, {**params, "_meta": meta}), headers


def answer(response: httpx2.Response) -> Any:
    """The JSON-RPC answer of a POST, read from JSON or from the last event of a stream."""
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        return response.json()
    assert kind.startswith("text/event-stream"), kind
    events = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(events[-1])


async def handshake(http: httpx2.AsyncClient, url: str, version: str = "2025-11-25") -> str:
    """initialize and initialized on a new session; its id."""
    init = request("initialize", 0, {**_LEGACY_INIT, "protocolVersion": version})
    response = await http.post(url, json=init, headers=_ACCEPT)
    assert response.status_code == 200
    session_id = response.headers["mcp-session-id"]
    assert answer(response)["result"]["protocolVersion"] == version
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = in_session(session_id, version)
    assert (await http.post(url, json=initialized, headers=headers)).status_code == 202
    return session_id


def in_session(session_id: str, version: str = "2025-11-25") -> dict[str, str]:
    return {**_ACCEPT, "mcp-session-id": session_id, "mcp-protocol-version": version}


# ---------------------------------------------------------------------------------------------
# Through the official clients, in front of both upstreams


def test_handshake_client_calls_are_checked(start_proxy: StartProxy) -> None:
    proxy = start_proxy()

    async def body() -> None:
        async with legacy(proxy.url) as session:
            listed = await session.list_tools()
            names = [tool.name for tool in listed.tools]
            assert names == ["read_file", "echo", "word_count", "crash", "hang", "validate"]
            good = await session.call_tool("echo", {"text": "hi"})
            assert not good.is_error
            assert text_of(good) == "hi"
            bad = await session.call_tool("echo", {"text": 5, "token": SECRET})
            assert bad.is_error
            assert "Invalid arguments" in text_of(bad)
            assert SECRET not in bad.model_dump_json()
            verdict = await session.call_tool("validate", {"tool": "echo", "arguments": {"x": 1}})
            assert verdict.structured_content is not None
            assert verdict.structured_content["valid"] is False

    run(body)
    assert proxy.calls() == [{"name": "echo", "arguments": {"text": "hi"}}]
    assert 'c2s tools/call "echo" refused' in proxy.stderr()


def test_stateless_client_calls_are_checked(start_proxy: StartProxy) -> None:
    proxy = start_proxy()

    async def body() -> None:
        async with Client(proxy.url) as client:
            good = await client.call_tool("echo", {"text": "modern"})
            assert not good.is_error
            assert text_of(good) == "modern"
            bad = await client.call_tool("echo", {"text": 5})
            assert bad.is_error
            assert "Invalid arguments" in text_of(bad)
            listed = await client.list_tools()
            assert "validate" in [tool.name for tool in listed.tools]

    run(body)
    assert proxy.calls() == [{"name": "echo", "arguments": {"text": "modern"}}]


def test_calls_are_checked_without_httptools_and_uvloop(launch: StartProxy) -> None:
    # Both are dependencies only where they have a build: elsewhere uvicorn's h11 and
    # asyncio's loop serve the same answers.
    proxy = launch(without=("httptools", "uvloop"))

    async def body() -> None:
        async with legacy(proxy.url) as session:
            assert text_of(await session.call_tool("echo", {"text": "h11"})) == "h11"
            assert (await session.call_tool("echo", {"text": 5})).is_error
        async with Client(proxy.url) as client:
            assert text_of(await client.call_tool("echo", {"text": "asyncio"})) == "asyncio"
            assert (await client.call_tool("echo", {"text": 6})).is_error

    run(body)
    texts = [call["arguments"]["text"] for call in proxy.calls()]
    assert texts == ["h11", "asyncio"]


def test_header_values_are_read_without_surrounding_whitespace(launch: StartProxy) -> None:
    # RFC 9110 5.5: whitespace around a field value is not part of it. h11 strips it,
    # httptools (the parser where installed) keeps what trails: the proxy strips it itself.
    # Raw HTTP: the client libraries refuse to send such a value.
    proxy = launch()
    address = proxy.url.split("/")[2]
    host, port = address.rsplit(":", 1)

    def post(name: str) -> tuple[int, Any]:
        call, _ = modern("tools/call", 1, {"name": "echo", "arguments": {"text": "ws"}})
        body = json.dumps(call).encode()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nConnection: close\r\n"
            f"Mcp-Protocol-Version: {_MODERN}\r\nMcp-Method: tools/call \t\r\n"
            f"Mcp-Name:{name}\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        with socket.create_connection((host, int(port)), timeout=30) as connection:
            connection.sendall(head.encode() + body)
            answer = b""
            while chunk := connection.recv(65536):
                answer += chunk
        status_line, _, rest = answer.partition(b"\r\n")
        return int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2])

    status, passed = post(" \techo \t ")
    assert status == 200
    assert passed["result"]["content"][0]["text"] == "ws"
    status, refused = post(" ec ho ")
    assert status == 400
    assert refused["error"]["code"] == -32020


def test_stateless_call_is_checked_without_any_listing(start_proxy: StartProxy) -> None:
    proxy = start_proxy()

    async def body() -> None:
        async with httpx2.AsyncClient() as http:
            bad, headers = modern("tools/call", 1, {"name": "echo", "arguments": {"text": 5}})
            refused = answer(await http.post(proxy.url, json=bad, headers=headers))
            assert refused["id"] == 1
            assert refused["result"]["isError"] is True
            good, headers = modern("tools/call", 2, {"name": "echo", "arguments": {"text": "ok"}})
            passed = answer(await http.post(proxy.url, json=good, headers=headers))
            assert passed["result"]["content"][0]["text"] == "ok"

    run(body)
    assert proxy.calls() == [{"name": "echo", "arguments": {"text": "ok"}}]


def test_concurrent_stateless_clients_with_the_same_ids_do_not_collide(
    start_proxy: StartProxy,
) -> None:
    proxy = start_proxy()
    texts = [f"client-{n}" for n in range(6)]

    async def one(http: httpx2.AsyncClient, text: str, got: dict[str, Any]) -> None:
        call, headers = modern("tools/call", 1, {"name": "echo", "arguments": {"text": text}})
        got[text] = answer(await http.post(proxy.url, json=call, headers=headers))

    async def body() -> None:
        got: dict[str, Any] = {}
        async with httpx2.AsyncClient() as http, anyio.create_task_group() as group:
            for text in texts:
                group.start_soon(one, http, text, got)
        for text in texts:
            assert got[text]["id"] == 1
            assert got[text]["result"]["content"][0]["text"] == text

    run(body)
    assert sorted(call["arguments"]["text"] for call in proxy.calls()) == texts


def test_header_mismatch_is_refused(start_proxy: StartProxy) -> None:
    proxy = start_proxy()

    async def body() -> None:
        async with httpx2.AsyncClient() as http:
            call, headers = modern("tools/call", 3, {"name": "echo", "arguments": {"text": "x"}})
            headers["mcp-name"] = "read_file"
            response = await http.post(proxy.url, json=call, headers=headers)
            assert response.status_code == 400
            refused = response.json()
            assert refused["id"] == 3
            assert refused["error"]["code"] == -32020
            assert "read_file" not in refused["error"]["message"]

    run(body)
    assert proxy.calls() == []


def test_upstream_hang_times_out_and_the_session_goes_on(start_proxy: StartProxy) -> None:
    proxy = start_proxy("--timeout", "6")

    async def body() -> None:
        async with legacy(proxy.url) as session:
            await session.list_tools()
            with pytest.raises(MCPError) as late:
                await session.call_tool("hang", {})
            assert late.value.error.code == -32001
            assert text_of(await session.call_tool("echo", {"text": "after"})) == "after"

    run(body)
    assert "did not answer a tools/call request in time" in proxy.stderr()


# ---------------------------------------------------------------------------------------------
# Faults and refusals, raw


def test_upstream_exit_fails_pending_requests_and_ends_the_session(
    launch: StartProxy,
) -> None:
    proxy = launch()

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, proxy.url)
            headers = in_session(session_id)
            await http.post(proxy.url, json=request("tools/list", 1), headers=headers)
            crash = request("tools/call", 2, {"name": "crash", "arguments": {}})
            failed = answer(await http.post(proxy.url, json=crash, headers=headers))
            assert failed["id"] == 2
            assert failed["error"]["code"] == -32000
            later = await http.post(proxy.url, json=request("ping", 3), headers=headers)
            assert later.status_code == 404
            # The proxy itself is still up: a new session works.
            await handshake(http, proxy.url)

    run(body)
    assert "the server exited with status 3" in proxy.stderr()


def test_http_upstream_gone_fails_each_request_and_the_proxy_stays_up(launch: StartProxy) -> None:
    proxy = launch(upstream="http")

    async def body() -> None:
        async with legacy(proxy.url) as session:
            await session.list_tools()
            for _ in range(2):  # the crash, then a call to a server that is no longer there
                with pytest.raises(MCPError) as failed:
                    await session.call_tool("crash", {})
                assert failed.value.error.code == -32000
            verdict = await session.call_tool("validate", {"tool": "echo", "arguments": {}})
            assert verdict.structured_content is not None  # the proxy still answers

    run(body)
    assert [call["name"] for call in proxy.calls()] == ["crash"]


def test_malformed_body_is_answered_and_never_reaches_the_server(
    launch: StartProxy,
) -> None:
    proxy = launch()

    async def body() -> None:
        async with httpx2.AsyncClient() as http:
            session_id = await handshake(http, proxy.url)
            headers = in_session(session_id)
            for content in (b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call",', b"\xff\xfe"):
                response = await http.post(proxy.url, content=content, headers=headers)
                assert response.status_code == 400
                assert response.json()["error"]["code"] == -32700
            no_session = await http.post(proxy.url, content=b"{nope", headers=_ACCEPT)
            assert no_session.status_code == 400
            assert no_session.json()["error"]["code"] == -32700
            ping = answer(await http.post(proxy.url, json=request("ping", 5), headers=headers))
            assert ping == {"jsonrpc": "2.0", "id": 5, "result": {}}

    run(body)
    assert proxy.calls() == []


def test_http_guards(launch: StartProxy) -> None:
    proxy = launch("--max-size", "4096")

    async def body() -> None:
        async with httpx2.AsyncClient() as http:
            init = request("initialize", 0, _LEGACY_INIT)
            big = request("initialize", 0, {**_LEGACY_INIT, "pad": SECRET * 1000})
            oversized = await http.post(proxy.url, json=big, headers=_ACCEPT)
            assert oversized.status_code == 413
            foreign = {**_ACCEPT, "origin": "http://evil.example"}
            assert (await http.post(proxy.url, json=init, headers=foreign)).status_code == 403
            unknown = {**_ACCEPT, "mcp-session-id": "not-a-session"}
            assert (await http.post(proxy.url, json=init, headers=unknown)).status_code == 404
            missing = await http.post(proxy.url, json=request("ping", 1), headers=_ACCEPT)
            assert missing.status_code == 400
            plain = {**_ACCEPT, "content-type": "text/plain"}
            assert (await http.post(proxy.url, json=init, headers=plain)).status_code == 415
            html = {**_ACCEPT, "accept": "text/html"}
            assert (await http.post(proxy.url, json=init, headers=html)).status_code == 406
            assert (await http.put(proxy.url, json=init)).status_code == 405
            local = {**_ACCEPT, "origin": "http://localhost:3000"}
            accepted = await http.post(proxy.url, json=init, headers=local)
            assert accepted.status_code == 200

    run(body)
    assert proxy.calls() == []
    assert SECRET not in proxy.stderr()


def test_get_stream_and_delete(launch: StartProxy) -> None:
    proxy = launch()

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, proxy.url)
            headers = {**in_session(session_id), "accept": "text/event-stream"}
            async with http.stream("GET", proxy.url, headers=headers) as stream:
                assert stream.status_code == 200
                assert stream.headers["content-type"].startswith("text/event-stream")
                second = await http.get(proxy.url, headers=headers)
                assert second.status_code == 409
            ended = await http.delete(proxy.url, headers=in_session(session_id))
            assert ended.status_code == 200
            after = await http.post(
                proxy.url, json=request("ping", 1), headers=in_session(session_id)
            )
            assert after.status_code == 404
            again = await http.delete(proxy.url, headers=in_session(session_id))
            assert again.status_code == 404

    run(body)


def test_two_handshake_sessions_are_separate(start_proxy: StartProxy) -> None:
    proxy = start_proxy()

    async def body() -> None:
        async with legacy(proxy.url) as first, legacy(proxy.url) as second:
            await first.list_tools()
            await second.list_tools()
            one, two = (
                await first.call_tool("echo", {"text": "1"}),
                await second.call_tool("echo", {"text": "2"}),
            )
            assert (text_of(one), text_of(two)) == ("1", "2")

    run(body)
    assert sorted(call["arguments"]["text"] for call in proxy.calls()) == ["1", "2"]


def test_batches_in_2025_03_26(launch: StartProxy) -> None:
    proxy = launch()

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, proxy.url, "2025-03-26")
            json_only = {**in_session(session_id, "2025-03-26"), "accept": "application/json"}
            listing = [request("ping", 1), request("tools/list", 2)]
            response = await http.post(proxy.url, json=listing, headers=json_only)
            assert response.headers["content-type"] == "application/json"
            answers = {a["id"]: a for a in response.json()}
            assert answers[1]["result"] == {}
            assert "validate" in [tool["name"] for tool in answers[2]["result"]["tools"]]
            calls = [
                request("tools/call", 3, {"name": "echo", "arguments": {"text": 3}}),
                request("tools/call", 4, {"name": "echo", "arguments": {"text": "four"}}),
            ]
            response = await http.post(proxy.url, json=calls, headers=json_only)
            answers = {a["id"]: a for a in response.json()}
            assert answers[3]["result"]["isError"] is True
            assert answers[4]["result"]["content"][0]["text"] == "four"
            notes = [{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]
            response = await http.post(proxy.url, json=notes, headers=json_only)
            assert response.status_code == 202

    run(body)
    assert proxy.calls() == [{"name": "echo", "arguments": {"text": "four"}}]


def test_sessions_are_bounded_and_idle_ones_closed(launch: StartProxy) -> None:
    proxy = launch("--max-sessions", "1", "--session-idle", "1")

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, proxy.url)
            init = request("initialize", 0, _LEGACY_INIT)
            full = await http.post(proxy.url, json=init, headers=_ACCEPT)
            assert full.status_code == 503
            assert full.json()["error"]["code"] == -32003
            await anyio.to_thread.run_sync(proxy.process.wait_for, "closed an idle session")
            later = await http.post(
                proxy.url, json=request("ping", 1), headers=in_session(session_id)
            )
            assert later.status_code == 404
            await handshake(http, proxy.url)  # room again

    run(body)


# ---------------------------------------------------------------------------------------------
# stdio in front of HTTP


def test_stdio_client_in_front_of_an_http_server(tmp_path: Path, processes: list[Process]) -> None:
    url = sdk_http_server(tmp_path, processes)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "strictmcp.proxy", "--upstream", url], cwd=str(tmp_path)
    )

    async def body() -> None:
        with (tmp_path / "stderr").open("w", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                names = [tool.name for tool in (await session.list_tools()).tools]
                assert "validate" in names
                assert text_of(await session.call_tool("echo", {"text": "s"})) == "s"
                assert (await session.call_tool("echo", {"text": 1})).is_error
            async with Client(params) as client:
                assert text_of(await client.call_tool("echo", {"text": "m"})) == "m"
                assert (await client.call_tool("echo", {"text": 2})).is_error

    run(body)
    recorded = (tmp_path / "calls").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["arguments"]["text"] for line in recorded] == ["s", "m"]


def test_url_is_the_proxy_upstream_as_in_every_command(
    tmp_path: Path, processes: list[Process]
) -> None:
    """``--url URL`` says where the server is, as it does for lint and check: it is
    ``--upstream URL``."""
    assert proxy_command.make_context("proxy", ["--url", "http://h/mcp"]).params["upstream"] == (
        "http://h/mcp"
    )
    for wrong in (["--url", "ftp://h/mcp"], ["--url", "http://h/mcp", "--", "true"]):
        with pytest.raises(click.UsageError):
            proxy_command.main(wrong, standalone_mode=False)
    url = sdk_http_server(tmp_path, processes)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "strictmcp.proxy", "--url", url],
        cwd=str(tmp_path),
        # The SDK gives a server a minimal environment: this one needs our PYTHONPATH, if any,
        # to run the strictmcp under test.
        env=dict(os.environ),
    )

    async def body() -> None:
        async with Client(params) as client:
            assert text_of(await client.call_tool("echo", {"text": "u"})) == "u"
            assert (await client.call_tool("echo", {"text": 3})).is_error

    run(body)
    recorded = (tmp_path / "calls").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["arguments"]["text"] for line in recorded] == ["u"]


def test_stdio_proxy_lists_the_tools_for_a_stateless_call(
    tmp_path: Path, processes: list[Process]
) -> None:
    script = FIXTURES / "sdk_server.py"
    upstream = ["--", sys.executable, str(script), str(tmp_path / "calls")]
    args = [sys.executable, "-m", "strictmcp.proxy", *upstream]
    proxy = Process(args, tmp_path, "stdout", stdin=True)
    processes.append(proxy)
    answers = []
    for number, text in ((1, 5), (2, "fine")):
        call, _ = modern("tools/call", number, {"name": "echo", "arguments": {"text": text}})
        proxy.send(call)
        answers.append(json.loads(proxy.next_line()))
    assert answers[0]["id"] == 1
    assert answers[0]["result"]["isError"] is True  # checked: the proxy listed the tools itself
    assert answers[1]["result"]["content"][0]["text"] == "fine"
    recorded = (tmp_path / "calls").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["arguments"] for line in recorded] == [{"text": "fine"}]


def test_handshake_call_is_checked_without_any_listing(start_proxy: StartProxy) -> None:
    proxy = start_proxy()

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            headers = in_session(await handshake(http, proxy.url))
            bad = request("tools/call", 1, {"name": "echo", "arguments": {"text": 5}})
            refused = answer(await http.post(proxy.url, json=bad, headers=headers))
            assert refused["result"]["isError"] is True  # checked: the proxy listed the tools
            good = request("tools/call", 2, {"name": "echo", "arguments": {"text": "ok"}})
            passed = answer(await http.post(proxy.url, json=good, headers=headers))
            assert passed["result"]["content"][0]["text"] == "ok"

    run(body)
    assert proxy.calls() == [{"name": "echo", "arguments": {"text": "ok"}}]


# ---------------------------------------------------------------------------------------------
# The conformance suite's fixture server behind the proxy, for what only it does


@pytest.fixture(params=["stdio", "http"])
def conformance_proxy(
    request: pytest.FixtureRequest, tmp_path: Path, processes: list[Process]
) -> Proxy:
    """``strictmcp proxy --listen`` in front of tests/proxy_fixtures/conformance_server.py,
    over stdio and over HTTP. Its ``--timeout`` is long: over stdio each session's server
    starts (imports the SDK) within its first request's time, which on a loaded machine
    takes seconds."""
    return _conformance_proxy(request.param, tmp_path, processes, timeout=30)


@pytest.fixture(params=["stdio", "http"])
def short_timeout_proxy(
    request: pytest.FixtureRequest, tmp_path: Path, processes: list[Process]
) -> Proxy:
    """:func:`conformance_proxy` with ``--timeout 4``, for a test to outlast: warm it up
    (:func:`_until_answered`) before timing anything."""
    return _conformance_proxy(request.param, tmp_path, processes, timeout=4)


async def _until_answered(http: httpx2.AsyncClient, url: str) -> None:
    """Ask until the server behind the proxy answers (its start is not the test's to time)."""
    listing, headers = modern("tools/list", "warm", {})
    with anyio.fail_after(120):
        while "result" not in (await http.post(url, json=listing, headers=headers)).json():
            await anyio.sleep(0.2)


def _conformance_proxy(
    kind: str, tmp_path: Path, processes: list[Process], *, timeout: int
) -> Proxy:
    script = str(FIXTURES / "conformance_server.py")
    if kind == "http":
        port = _free_port()
        server = Process([sys.executable, script, "http", str(port)], tmp_path, "stdout")
        processes.append(server)
        _wait_for_port(port)
        where = ["--upstream", f"http://127.0.0.1:{port}/mcp"]
    else:
        where = ["--", sys.executable, script, "stdio"]
    args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0"]
    args += ["--timeout", str(timeout)]
    process = Process([*args, *where], tmp_path, "stderr")
    processes.append(process)
    return Proxy(process.wait_for("listening on").rsplit(" ", 1)[1], process, tmp_path)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_for_port(port: int) -> None:
    deadline = time.monotonic() + _START_SECONDS
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    pytest.fail(f"nothing listens on port {port}")


def test_stateless_refusals_have_the_statuses_of_their_errors(conformance_proxy: Proxy) -> None:
    url = conformance_proxy.url

    async def post(message: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any, Any]:
        """The HTTP status, the id and the error code of the answer."""
        async with httpx2.AsyncClient(timeout=30) as http:
            refused = await http.post(url, json=message, headers=headers)
            error = refused.json()
            return refused.status_code, error["id"], error["error"]["code"]

    async def body() -> None:
        discover, headers = modern("server/discover", 1, {})
        no_meta = {k: v for k, v in discover.items() if k != "params"}
        assert await post(no_meta, headers) == (400, 1, -32602)
        future = {**discover["params"]["_meta"], "io.modelcontextprotocol/protocolVersion": "v9"}
        unsupported = {**discover, "params": {"_meta": future}}
        v9 = {**headers, "mcp-protocol-version": "v9"}
        assert await post(unsupported, v9) == (400, 1, -32022)
        async with httpx2.AsyncClient(timeout=30) as http:
            data = (await http.post(url, json=unsupported, headers=v9)).json()["error"]["data"]
        assert data == {"supported": [_MODERN], "requested": "v9"}
        for removed in ("initialize", "ping", "resources/subscribe", "unknown/method"):
            message, headers = modern(removed, 2, {})
            assert await post(message, headers) == (404, 2, -32601), removed
        missing, headers = modern("tools/call", 3, {"name": "test_missing_capability"})
        assert await post(missing, headers) == (400, 3, -32021)

    run(body)


def test_mcp_param_headers_are_checked(conformance_proxy: Proxy) -> None:
    url = conformance_proxy.url
    arguments = {"region": "Ré gion", "query": "q"}

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            call, headers = modern(
                "tools/call", 1, {"name": "test_custom_headers", "arguments": arguments}
            )
            for wrong in (
                {},
                {"mcp-param-region": "elsewhere"},
                {"mcp-param-region": "=?base64?UsOp?="},
            ):
                response = await http.post(url, json=call, headers={**headers, **wrong})
                assert response.status_code == 400, wrong
                assert response.json()["error"]["code"] == -32020
            encoded = base64.b64encode("Ré gion".encode()).decode()
            right = {**headers, "mcp-param-region": f"=?base64?{encoded}?="}
            passed = answer(await http.post(url, json=call, headers=right))
            assert passed["result"]["content"][0]["text"].startswith("Searched Ré gion")

    run(body)


def test_handshake_answers_are_json_unless_something_goes_first(
    conformance_proxy: Proxy,
) -> None:
    url = conformance_proxy.url
    logged = request("tools/call", 3, {"name": "test_tool_with_logging", "arguments": {}})

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            # 2025-06-18 has no priming events: an answer is JSON unless something goes first
            # (or 15 s pass), with no timing in between to race.
            session_id = await handshake(http, url, "2025-06-18")
            headers = in_session(session_id, "2025-06-18")
            # Only the response to send: one JSON body, with the session's id.
            listed = await http.post(url, json=request("tools/list", 1), headers=headers)
            assert listed.headers["content-type"] == "application/json"
            assert listed.headers["mcp-session-id"] == session_id
            assert any(
                t["name"] == "test_tool_with_logging" for t in listed.json()["result"]["tools"]
            )
            # Log messages come before the response: a stream.
            streamed = await http.post(url, json=logged, headers=headers)
            assert streamed.headers["content-type"].startswith("text/event-stream")
            kinds = [m.get("method", "response") for m in _data(streamed.text)]
            assert kinds == ["notifications/message"] * 3 + ["response"]
            # A client that takes only events gets them, even for a response alone.
            events_only = {**headers, "accept": "text/event-stream"}
            pinged = await http.post(url, json=request("ping", 4), headers=events_only)
            assert pinged.headers["content-type"].startswith("text/event-stream")
            assert [m["id"] for m in _data(pinged.text)] == [4]
            # One that takes only JSON gets the response; the log messages have no place.
            json_only = {**headers, "accept": "application/json"}
            whole = await http.post(url, json={**logged, "id": 5}, headers=json_only)
            assert whole.headers["content-type"] == "application/json"
            assert whole.json()["result"]["content"][0]["text"] == "Logged three messages."
            # From 2025-11-25 a stream starts with a priming event, for resumption.
            primed = in_session(await handshake(http, url))
            streamed = await http.post(url, json=logged, headers=primed)
            assert streamed.headers["content-type"].startswith("text/event-stream")
            head, _, rest = streamed.text.partition("\n\n")
            fields = dict(line.split(": ", 1) for line in head.splitlines())
            assert fields["id"]
            assert int(fields["retry"]) > 0
            assert fields["data"] == ""
            kinds = [m.get("method", "response") for m in _data(rest)]
            assert kinds == ["notifications/message"] * 3 + ["response"]

    run(body)


def _data(text: str) -> list[dict[str, Any]]:
    """The messages of an event stream's ``data`` fields."""
    lines = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return [json.loads(line) for line in lines if line]


def test_subscription_stream_is_relayed_never_timed_out_and_relisted_after(
    short_timeout_proxy: Proxy,
) -> None:
    conformance_proxy = short_timeout_proxy
    url = conformance_proxy.url

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            await _until_answered(http, url)
        listen, headers = modern(
            "subscriptions/listen", "sub", {"notifications": {"toolsListChanged": True}}
        )
        trigger, trigger_headers = modern("tools/call", 2, {"name": "test_trigger_tool_change"})
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            http.stream("POST", url, json=listen, headers=headers) as stream,
        ):
            assert stream.headers["content-type"].startswith("text/event-stream")
            events = _events(stream.aiter_lines())
            first = await anext(events)
            assert first["method"] == "notifications/subscriptions/acknowledged"
            assert first["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub"
            await anyio.sleep(5)  # past the proxy's --timeout
            await http.post(url, json=trigger, headers=trigger_headers)
            changed = await anext(events)
            assert changed["method"] == "notifications/tools/list_changed"
            # Closing the stream is the client's to do: only then is the request over.
            assert "subscriptions/listen" not in conformance_proxy.stderr()
            # The listing the proxy made is out of date now: it lists the tools again.
            added, added_headers = modern("tools/call", 3, {"name": "test_dynamic_tool"})
            ran = answer(await http.post(url, json=added, headers=added_headers))
            assert ran["result"]["content"][0]["text"] == "The dynamic tool ran."
        # The client closed the stream: the proxy cancels the request upstream and says so,
        # not that the server was late.
        with anyio.fail_after(10):
            while "cancelled a subscriptions/listen" not in conformance_proxy.stderr():
                await anyio.sleep(0.05)
        assert "did not answer a subscriptions/listen" not in conformance_proxy.stderr()

    run(body)


async def _events(lines: AsyncIterator[str]) -> AsyncIterator[Any]:
    async for line in lines:
        if line.startswith("data:") and line[5:].strip():
            yield json.loads(line[5:])


def test_http_upstream_stream_closed_mid_call_is_resumed(
    tmp_path: Path, processes: list[Process]
) -> None:
    port = _free_port()
    script = str(FIXTURES / "conformance_server.py")
    processes.append(Process([sys.executable, script, "http", str(port)], tmp_path, "stdout"))
    _wait_for_port(port)
    args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0"]
    proxy = Process([*args, "--upstream", f"http://127.0.0.1:{port}/mcp"], tmp_path, "stderr")
    processes.append(proxy)
    url = proxy.wait_for("listening on").rsplit(" ", 1)[1]

    async def body() -> None:
        async with legacy(url) as session:
            result = await session.call_tool("test_reconnection", {})
            assert text_of(result) == "Answered after the stream was closed."

    run(body)


def test_stdio_proxy_never_times_a_subscription_out(
    tmp_path: Path, processes: list[Process]
) -> None:
    server = [sys.executable, str(FIXTURES / "conformance_server.py"), "stdio"]
    args = [sys.executable, "-m", "strictmcp.proxy", "--timeout", "3", "--", *server]
    proxy = Process(args, tmp_path, "stdout", stdin=True)
    processes.append(proxy)
    listen, _ = modern("subscriptions/listen", "sub", {"notifications": {"toolsListChanged": True}})
    proxy.send(listen)
    acknowledged = json.loads(proxy.next_line())
    assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
    time.sleep(4)  # past --timeout
    trigger, _ = modern("tools/call", 2, {"name": "test_trigger_tool_change"})
    proxy.send(trigger)
    got = [json.loads(proxy.next_line()) for _ in range(2)]
    assert {message.get("method") for message in got} == {
        "notifications/tools/list_changed",
        None,  # the call's result
    }
    assert all(message.get("id") != "sub" for message in got)


def test_usage_errors() -> None:
    def status(*args: str) -> int:
        command = [sys.executable, "-m", "strictmcp.proxy", *args]
        return subprocess.run(command, capture_output=True, check=False, timeout=60).returncode

    assert status() == 2  # neither COMMAND nor --upstream
    assert status("--upstream", "http://127.0.0.1:1/mcp", "--", "true") == 2
    assert status("--upstream", "ftp://127.0.0.1/mcp") == 2
    assert status("--listen", "nowhere", "--", "true") == 2
