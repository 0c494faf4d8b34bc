"""The example servers of examples/integrations, driven end to end by the official MCP client.

Each server is started with ``sys.executable``: over stdio by the client itself, or over
streamable HTTP on a free 127.0.0.1 port by :func:`http_server`, which waits until it
listens and always stops it. :func:`observe` makes the same calls on every server and keeps
what came back; :class:`ProtectedServerContract` is what every protected server must show,
subclassed once per framework beside an :func:`observed_fixture` of its transports and modes.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp_types.jsonrpc import INVALID_PARAMS

from strictmcp.protocol import VALIDATION_META_KEY

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "integrations"
SECRET = "sk-live-5ec12e7-do-not-echo"
"""Planted in arguments; no response and no audit record may contain it."""

Transport = Literal["stdio", "http"]
ClientMode = Literal["legacy", "auto"]
VERSIONS: dict[ClientMode, str] = {"legacy": "2025-11-25", "auto": "2026-07-28"}
_STARTUP_SECONDS = 20.0


@dataclass(frozen=True)
class Workspace:
    """A server's root with one file, and a sibling directory whose name extends the root's."""

    root: Path
    hello: Path
    sibling_file: Path
    notes: Path
    audit_log: Path

    @classmethod
    def create(cls, base: Path) -> Workspace:
        """Lay the workspace out under ``base``."""
        root = base / "data"
        root.mkdir()
        (root / "hello.txt").write_text("hello", encoding="utf-8")
        sibling = base / "data_private"
        sibling.mkdir()
        (sibling / f"{SECRET}.txt").write_text("private", encoding="utf-8")
        return cls(
            root, root / "hello.txt", sibling / f"{SECRET}.txt", root / "notes.txt", base / "audit"
        )

    def notes_text(self) -> str:
        """What ``append_note`` has written so far."""
        return self.notes.read_text(encoding="utf-8") if self.notes.exists() else ""


def calls(workspace: Workspace) -> dict[str, tuple[str, dict[str, Any]]]:
    """The calls :func:`observe` makes, by name: tool and arguments."""
    hello, outside = str(workspace.hello), f"/etc/{SECRET}"
    return {
        "valid": ("read_file", {"path": hello}),
        "wrong_type": ("read_file", {"path": [SECRET]}),
        "undeclared": ("read_file", {"path": hello, "token": SECRET}),
        "outside": ("read_file", {"path": outside}),
        "sibling": ("read_file", {"path": str(workspace.sibling_file)}),
        "dry_run_ok": ("validate", {"tool": "append_note", "arguments": {"text": SECRET}}),
        "dry_run_bad": ("validate", {"tool": "read_file", "arguments": {"path": outside}}),
        "broken_output": ("word_count", {"text": f"{SECRET} two three"}),
    }


@dataclass
class Observed:
    """What one connection to a protected example server saw."""

    mode: ClientMode
    protocol_version: str
    tools: list[str]
    experimental: dict[str, Any] | None
    results: dict[str, types.CallToolResult] = field(default_factory=dict)
    unknown_tool: MCPError | None = None
    notes_after_dry_runs: str = ""
    notes_after_real_call: str = ""


async def observe(client: Client, workspace: Workspace, mode: ClientMode) -> Observed:
    """Make every call of :func:`calls`, then a real ``append_note``, then an unknown tool."""
    listed = await client.list_tools()
    seen = Observed(
        mode,
        client.protocol_version,
        [tool.name for tool in listed.tools],
        client.server_capabilities.experimental,
    )
    for key, (tool, arguments) in calls(workspace).items():
        seen.results[key] = await client.call_tool(tool, arguments)
    seen.notes_after_dry_runs = workspace.notes_text()
    seen.results["real_note"] = await client.call_tool("append_note", {"text": "real note"})
    seen.notes_after_real_call = workspace.notes_text()
    try:
        await client.call_tool("no_such_tool", {"token": SECRET})
    except MCPError as error:
        seen.unknown_tool = error
    return seen


def observe_example(script: str, transport: Transport, mode: ClientMode, base: Path) -> Observed:
    """Start ``script`` on a fresh workspace and observe it over ``transport`` in ``mode``."""
    workspace = Workspace.create(base)

    async def run(server: StdioServerParameters | str) -> Observed:
        async with Client(server, mode=mode) as client:
            return await observe(client, workspace, mode)

    if transport == "stdio":
        return anyio.run(run, stdio(script, workspace))
    with http_server(script, workspace) as url:
        return anyio.run(run, url)


def observed_fixture(script: str, configurations: list[tuple[Transport, ClientMode]]) -> object:
    """A module's ``observed`` fixture: ``script`` observed once per transport and mode.

    Assign it to a module-level ``observed``; pytest finds fixtures among module attributes.
    """

    @pytest.fixture(scope="module", params=configurations, ids="-".join)
    def observed(
        request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
    ) -> Observed:
        transport, mode = request.param
        return observe_example(script, transport, mode, tmp_path_factory.mktemp("example"))

    return observed


def stdio(script: str, workspace: Workspace, *options: str) -> StdioServerParameters:
    """How the client starts ``script`` over stdio; its audit records go to the workspace."""
    return StdioServerParameters(
        command=sys.executable,
        args=[str(EXAMPLES / script), str(workspace.root), *options],
        env={"STRICTMCP_AUDIT_LOG": str(workspace.audit_log)},
    )


@contextmanager
def http_server(script: str, workspace: Workspace) -> Iterator[str]:
    """``script`` serving streamable HTTP on a free loopback port; yields its URL."""
    port = _free_port()
    errors = workspace.root.parent / "server-stderr.txt"
    with errors.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(EXAMPLES / script), str(workspace.root), "--http", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            _wait_until_listening(process, port, errors)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_until_listening(process: subprocess.Popen[bytes], port: int, errors: Path) -> None:
    deadline = time.monotonic() + _STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            output = errors.read_text(encoding="utf-8", errors="replace")
            raise RuntimeError(f"the server exited with {process.returncode}:\n{output}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the server did not listen on port {port} within {_STARTUP_SECONDS} s")


class HasContent(Protocol):
    """A tool result of either client: the official one's or FastMCP's."""

    @property
    def content(self) -> Sequence[types.ContentBlock]:
        """The result's content blocks."""


def text_of(result: HasContent) -> str:
    """The text blocks of a result, joined."""
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def problem_codes(result: types.CallToolResult) -> list[str]:
    """The codes strictmcp put in an ``isError`` result's ``_meta``."""
    payload = (result.meta or {}).get(VALIDATION_META_KEY, {})
    return [problem["code"] for problem in payload.get("problems", [])]


class ProtectedServerContract:
    """What every protected example server shows; subclasses name the script.

    A subclass's module provides the ``observed`` fixture (:func:`observed_fixture`): an
    :class:`Observed` per transport and client mode it covers.
    """

    script: ClassVar[str]
    # FastMCP's schemas forbid unknown arguments themselves; the SDK's need strict mode.
    undeclared_code: ClassVar[str] = "tool-argument-undeclared"

    def test_negotiates_the_revision_the_client_asked_for(self, observed: Observed) -> None:
        assert observed.protocol_version == VERSIONS[observed.mode]

    def test_lists_the_validate_tool_and_advertises_it(self, observed: Observed) -> None:
        assert observed.tools == ["read_file", "append_note", "word_count", "validate"]
        assert (observed.experimental or {}).get("toolValidation") == {"tool": "validate"}

    def test_a_valid_call_goes_through(self, observed: Observed) -> None:
        result = observed.results["valid"]
        assert not result.is_error
        assert text_of(result) == "hello"

    @pytest.mark.parametrize(
        ("call", "code"),
        [
            ("wrong_type", "wrong-type"),
            ("outside", "path-outside-roots"),
            ("sibling", "path-outside-roots"),
        ],
    )
    def test_a_bad_path_is_refused_without_echo(
        self, observed: Observed, call: str, code: str
    ) -> None:
        result = observed.results[call]
        assert result.is_error
        assert 'Argument "path"' in text_of(result)
        assert f"[{code}]" in text_of(result)
        assert code in problem_codes(result)
        assert SECRET not in result.model_dump_json()

    def test_an_undeclared_argument_is_refused(self, observed: Observed) -> None:
        result = observed.results["undeclared"]
        assert result.is_error
        assert '"token"' in text_of(result)
        assert f"[{self.undeclared_code}]" in text_of(result)
        assert SECRET not in result.model_dump_json()

    def test_an_unknown_tool_is_invalid_params(self, observed: Observed) -> None:
        assert observed.unknown_tool is not None
        assert observed.unknown_tool.code == INVALID_PARAMS
        assert SECRET not in str(observed.unknown_tool.error)

    def test_the_validate_tool_accepts_without_running_the_tool(self, observed: Observed) -> None:
        result = observed.results["dry_run_ok"]
        assert not result.is_error
        assert result.structured_content == {"valid": True, "errors": [], "warnings": []}
        assert observed.notes_after_dry_runs == ""
        assert SECRET not in result.model_dump_json()

    def test_the_validate_tool_reports_what_a_call_would_meet(self, observed: Observed) -> None:
        result = observed.results["dry_run_bad"]
        assert not result.is_error
        verdict = result.structured_content or {}
        assert verdict["valid"] is False
        assert any("[path-outside-roots]" in error for error in verdict["errors"])
        assert SECRET not in result.model_dump_json()

    def test_the_real_tool_still_runs(self, observed: Observed) -> None:
        assert not observed.results["real_note"].is_error
        assert observed.notes_after_real_call == "real note\n"

    def test_a_result_that_breaks_its_output_schema_is_withheld(self, observed: Observed) -> None:
        result = observed.results["broken_output"]
        assert result.is_error
        assert "[tool-structured-content-invalid]" in text_of(result)
        assert problem_codes(result) == ["tool-structured-content-invalid"]
        assert result.structured_content is None
        assert SECRET not in result.model_dump_json()

    def test_audit_mode_lets_calls_through_and_logs_them(self, tmp_path: Path) -> None:
        workspace = Workspace.create(tmp_path)
        arguments = calls(workspace)

        async def run() -> dict[str, types.CallToolResult]:
            async with Client(stdio(self.script, workspace, "--audit"), mode="legacy") as client:
                return {
                    key: await client.call_tool(*arguments[key])
                    for key in ("sibling", "undeclared")
                }

        results = anyio.run(run)
        # The guard would have refused it: in audit mode the tool reads the sibling's file.
        assert not results["sibling"].is_error
        assert text_of(results["sibling"]) == "private"
        log = workspace.audit_log.read_text(encoding="utf-8")
        assert 'tools/call "read_file" would deny at the policy stage' in log
        assert "path-outside-roots at /params/arguments/path" in log
        assert self.undeclared_code in log
        assert SECRET not in log
