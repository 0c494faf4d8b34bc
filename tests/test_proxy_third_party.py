"""The stdio proxy end to end in front of real third-party servers, with the official client.

Three servers nobody here wrote, each run as its users run it:

- npm ``@modelcontextprotocol/server-everything`` (stdio): every tool it lists is called
  through the proxy with arguments generated from its own ``inputSchema``;
- npm ``@modelcontextprotocol/server-filesystem`` rooted in a temporary directory, behind a
  policy with a path guard on every path argument its tools declare: escapes are refused by
  the proxy before the server sees them;
- PyPI ``mcp-server-time``: its ``$ref``/``$defs`` output schema is checked by the proxy.

The servers are pinned in tests/third_party/package.json (with its lock file) and in the
``test`` extra; ``make install-test`` installs them. A missing one fails these tests: they are
never skipped.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

from strictmcp.protocol import VALIDATION_META_KEY

THIRD_PARTY = Path(__file__).resolve().parent / "third_party"
_SCOPE = THIRD_PARTY / "node_modules" / "@modelcontextprotocol"
EVERYTHING = _SCOPE / "server-everything" / "dist" / "index.js"
FILESYSTEM = _SCOPE / "server-filesystem" / "dist" / "index.js"
_SECONDS = 40.0
_INSTALL = "run `make install-test` (it installs the pinned third-party MCP servers)"


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail(f"node is not on PATH; install Node.js 20 or later, then {_INSTALL}")
    return node


def _script(path: Path) -> str:
    if not path.is_file():
        pytest.fail(f"{path.relative_to(THIRD_PARTY)} is missing: {_INSTALL}")
    return str(path)


def everything_command() -> list[str]:
    return [_node(), _script(EVERYTHING), "stdio"]


def filesystem_command(root: Path) -> list[str]:
    return [_node(), _script(FILESYSTEM), str(root)]


def time_command() -> list[str]:
    if importlib.util.find_spec("mcp_server_time") is None:
        pytest.fail(f"the Python package mcp-server-time is missing: {_INSTALL}")
    return [sys.executable, "-m", "mcp_server_time", "--local-timezone", "Etc/UTC"]


@asynccontextmanager
async def session_with(
    command: list[str], errlog: Path, *proxy_options: str, proxied: bool = True
) -> AsyncIterator[ClientSession]:
    """An initialized official client session with ``command``, through the proxy by default.

    ``stdio_client`` ends the process it started when the block exits, however it exits.
    """
    args = ["-m", "strictmcp.proxy", *proxy_options, "--", *command] if proxied else command[1:]
    executable = sys.executable if proxied else command[0]
    # The SDK's client passes the server only a few variables: without PYTHONPATH the proxy
    # run would be whichever strictmcp is installed, not the one under test.
    params = StdioServerParameters(
        command=executable, args=args, cwd=str(errlog.parent), env=dict(os.environ)
    )
    with errlog.open("a", encoding="utf-8") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def run(test: Callable[[], Awaitable[None]]) -> None:
    """Run an async test, bounded."""

    async def bounded() -> None:
        with anyio.fail_after(_SECONDS):
            await test()

    anyio.run(bounded)


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def audit(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _is_refusal(result: types.CallToolResult) -> bool:
    """Whether a result is one strictmcp made up instead of the server's: it carries the
    codes of what strictmcp found under its ``_meta`` key."""
    return result.is_error is True and VALIDATION_META_KEY in (result.meta or {})


def codes_of(result: types.CallToolResult) -> list[str]:
    codes: list[str] = (result.meta or {}).get(VALIDATION_META_KEY, {}).get("codes", [])
    return codes


# ---------------------------------------------------------------------------------------------
# Arguments from a schema


_DATA_URI = "data:text/plain;base64,aGVsbG8gc3RyaWN0bWNw"


def example(schema: Any) -> Any:
    """A small instance of ``schema``, for the keywords these servers' tools use.

    Every declared property is filled in, optional ones too, so that no tool falls back on a
    default that reaches the network (URL formats get a data: URI). Numbers are small: the
    servers' numeric arguments are counts and durations.
    """
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return example(schema[key][0])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {name: example(sub) for name, sub in properties.items()}
    if kind == "array":
        return [example(schema.get("items", {})) for _ in range(schema.get("minItems", 0))]
    if kind in ("number", "integer"):
        low = schema.get("minimum", 1)
        return max(low, 1) if schema.get("maximum", 1) >= 1 else low
    if kind == "boolean":
        return False
    if kind == "string":
        if schema.get("format") in ("uri", "url", "iri"):
            return _DATA_URI
        return "x" * schema.get("minLength", 3)
    return None


# ---------------------------------------------------------------------------------------------
# server-everything


def test_everything_every_tool_listed_and_callable(tmp_path: Path) -> None:
    command = everything_command()

    async def body() -> None:
        async with session_with(command, tmp_path / "direct.stderr", proxied=False) as direct:
            upstream = (await direct.list_tools()).tools
        async with session_with(command, tmp_path / "proxy.stderr") as session:
            listed = (await session.list_tools()).tools
            # Nothing withheld, and the validate tool added last.
            assert [t.name for t in listed] == [*(t.name for t in upstream), "validate"]
            assert len(upstream) >= 10
            # Tools that need sampling, elicitation or roots are registered by the server only
            # for clients that declare those capabilities; this client declares none.
            needs_client = ("sampling", "elicitation", "roots")
            assert not [t.name for t in listed if any(n in t.name for n in needs_client)]
            called: list[str] = []
            skipped: list[str] = []
            for tool in upstream:
                if tool.execution is not None and tool.execution.task_support == "required":
                    # It runs only as a task (SEP-1686), which this client does not ask for:
                    # a plain call breaks its taskSupport, and strictmcp answers it as the
                    # spec has the server do (-32601), without passing it on.
                    with pytest.raises(MCPError) as plain:
                        await session.call_tool(tool.name, example(tool.input_schema))
                    assert plain.value.code == -32601
                    assert "must be called as a task" in plain.value.message
                    skipped.append(tool.name)
                    continue
                arguments = example(tool.input_schema)
                result = await session.call_tool(tool.name, arguments)
                assert not result.is_error, (tool.name, arguments, text_of(result))
                assert result.content or result.structured_content is not None, tool.name
                called.append(tool.name)
            assert {"echo", "get-sum", "get-structured-content"} <= set(called)
            assert len(skipped) <= 1, skipped  # only simulate-research-query, at this pin

            # The structured-output tool: its result, checked against its outputSchema,
            # arrives whole.
            structured = next(t for t in listed if t.name == "get-structured-content")
            assert structured.output_schema is not None
            result = await session.call_tool("get-structured-content", {"location": "Chicago"})
            assert not result.is_error
            assert result.structured_content is not None
            assert set(structured.output_schema["required"]) <= set(result.structured_content)

            # The proxy's own validate tool knows the server's tools.
            dry = await session.call_tool(
                "validate", {"tool": "get-sum", "arguments": {"a": "one", "b": 2}}
            )
            assert dry.structured_content is not None
            assert dry.structured_content["valid"] is False
            # And a call that breaks the schema never reaches the server.
            refused = await session.call_tool("get-sum", {"a": "one", "b": 2})
            assert refused.is_error
            assert _is_refusal(refused), text_of(refused)

    run(body)


# ---------------------------------------------------------------------------------------------
# server-filesystem behind a path policy

_PATH_NAMES = ("path", "paths", "source", "destination")


def path_arguments(tools: list[types.Tool]) -> set[str]:
    """JSON Pointers to every path-like argument the tools declare: strings named like paths,
    and arrays of them (``/paths/*``)."""
    found: set[str] = set()
    for tool in tools:
        for name, sub in tool.input_schema.get("properties", {}).items():
            if name not in _PATH_NAMES:
                continue
            if sub.get("type") == "string":
                found.add(f"/{name}")
            elif sub.get("type") == "array" and sub.get("items", {}).get("type") == "string":
                found.add(f"/{name}/*")
    return found


def make_tree(base: Path) -> tuple[Path, Path]:
    """The server's root with a file and a link out of it, and a sibling whose name starts
    with the root's; the files outside hold secrets."""
    root = base / "data"
    root.mkdir()
    (root / "hello.txt").write_text("hello from inside", encoding="utf-8")
    sibling = base / "data_secret"
    sibling.mkdir()
    (sibling / "key.txt").write_text("sibling secret", encoding="utf-8")
    outside = base / "outside"
    outside.mkdir()
    (outside / "key.txt").write_text("outside secret", encoding="utf-8")
    (root / "link").symlink_to(outside, target_is_directory=True)
    return root, sibling


async def assert_blocked(
    session: ClientSession, log: Path, tool: str, arguments: dict[str, Any], code: str
) -> None:
    """The proxy answers the call itself with ``code``, and audits it as refused."""
    before = len(audit(log))
    result = await session.call_tool(tool, arguments)
    text = text_of(result)
    assert result.is_error, (tool, arguments)
    assert _is_refusal(result), text
    assert code in codes_of(result)
    assert code in text, text
    assert "the tool was not run" in text
    assert "secret" not in text
    records = audit(log)[before:]
    assert records, (tool, arguments)
    assert {r["action"] for r in records} == {"refused"}
    assert {r["tool"] for r in records} == {tool}
    assert code in {r["code"] for r in records}


def test_filesystem_path_policy_blocks_escapes_before_the_server(tmp_path: Path) -> None:
    root, sibling = make_tree(tmp_path.resolve())
    log = tmp_path / "audit.jsonl"
    command = filesystem_command(root)

    async def body() -> None:
        # What the server says about the same paths on its own, and which arguments are paths.
        async with session_with(command, tmp_path / "direct.stderr", proxied=False) as direct:
            tools = (await direct.list_tools()).tools
            own = await direct.call_tool("read_text_file", {"path": str(sibling / "key.txt")})
            assert own.is_error
            assert not _is_refusal(own)
            assert "path-outside-roots" not in text_of(own)
        pointers = path_arguments(tools)
        assert {"/path", "/paths/*", "/source", "/destination"} <= pointers
        policy = "".join(
            f'[[guard]]\ntool = "*"\nargument = "{pointer}"\nkind = "path"\n'
            f"roots = [{json.dumps(str(root))}]\n\n"
            for pointer in sorted(pointers)
        )
        (tmp_path / "policy.toml").write_text(policy, encoding="utf-8")
        options = ("--policy", str(tmp_path / "policy.toml"), "--audit-log", str(log))

        async with session_with(command, tmp_path / "proxy.stderr", *options) as session:
            listed = [t.name for t in (await session.list_tools()).tools]
            assert listed == [*(t.name for t in tools), "validate"]

            inside = await session.call_tool("read_text_file", {"path": str(root / "hello.txt")})
            assert not inside.is_error, text_of(inside)
            assert "hello from inside" in text_of(inside)
            assert inside.structured_content == {"content": "hello from inside"}
            both = await session.call_tool(
                "read_multiple_files", {"paths": [str(root / "hello.txt")]}
            )
            assert not both.is_error
            assert "hello from inside" in text_of(both)
            assert audit(log) == []

            cases: list[tuple[str, dict[str, Any], str]] = [
                ("read_text_file", {"path": str(sibling / "key.txt")}, "path-outside-roots"),
                ("read_text_file", {"path": str(root / "link" / "key.txt")}, "path-symlink-escape"),
                (
                    "read_multiple_files",
                    {"paths": [str(root / "hello.txt"), str(root / "link" / "key.txt")]},
                    "path-symlink-escape",
                ),
                (
                    "move_file",
                    {"source": str(root / "hello.txt"), "destination": str(sibling / "moved")},
                    "path-outside-roots",
                ),
            ]
            for tool, arguments, code in cases:
                await assert_blocked(session, log, tool, arguments, code)
            # The move never ran.
            assert (root / "hello.txt").is_file()
            assert not (sibling / "moved").exists()

    run(body)
    # Codes and pointers only: no path reached the audit log.
    assert "secret" not in log.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# mcp-server-time: an output schema with $ref/$defs


def test_time_ref_output_schema_checked_and_result_passed(tmp_path: Path) -> None:
    command = time_command()
    log = tmp_path / "audit.jsonl"

    async def body() -> None:
        async with session_with(command, tmp_path / "proxy.stderr", "--audit-log", str(log)) as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert {"get_current_time", "convert_time", "validate"} <= set(listed)
            schema = listed["convert_time"].output_schema
            assert schema is not None
            assert schema["properties"]["source"] == {"$ref": "#/$defs/TimeResult"}
            assert "TimeResult" in schema["$defs"]

            arguments = {
                "source_timezone": "Europe/London",
                "time": "12:30",
                "target_timezone": "Asia/Tokyo",
            }
            result = await s.call_tool("convert_time", arguments)
            assert not result.is_error, text_of(result)
            structured = result.structured_content
            assert structured is not None  # the server's own result, not a replacement
            assert structured["source"]["timezone"] == "Europe/London"
            assert structured["target"]["timezone"] == "Asia/Tokyo"
            assert structured["time_difference"].startswith("+")

            now = await s.call_tool("get_current_time", {"timezone": "Etc/UTC"})
            assert not now.is_error
            assert now.structured_content is not None
            assert now.structured_content["timezone"] == "Etc/UTC"

            # A call that breaks the input schema is answered by the proxy itself.
            bad = await s.call_tool("convert_time", {**arguments, "time": 1230})
            assert _is_refusal(bad), text_of(bad)
        records = audit(log)
        assert all(r["action"] != "replaced" for r in records), records
        assert [r["action"] for r in records if r["method"] == "tools/call"] == ["refused"]

    run(body)


def test_everything_results_unchanged_with_hygiene_on(tmp_path: Path) -> None:
    """Result hygiene set to strip, with secrets redacted, for every tool of a real server:
    every clean result arrives exactly as the server sent it (issue 15)."""
    command = everything_command()
    policy = tmp_path / "hygiene.toml"
    policy.write_text(
        '[[result]]\ntool = "*"\nhygiene = "strip"\nredact = true\n'
        '[server_requests]\nhygiene = "strip"\n',
        encoding="utf-8",
    )
    log = tmp_path / "audit.jsonl"
    calls: dict[str, dict[str, Any]] = {
        "echo": {
            "message": "héllo 世界 👨\u200d👩\u200d👧 "
            "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"
        },
        "get-sum": {"a": 2, "b": 3},
        "get-structured-content": {"location": "Chicago"},
        "get-tiny-image": {},
        "get-annotated-message": {"messageType": "error", "includeImage": True},
    }

    async def body() -> None:
        direct_results: dict[str, types.CallToolResult] = {}
        async with session_with(command, tmp_path / "direct.stderr", proxied=False) as direct:
            for name, arguments in calls.items():
                direct_results[name] = await direct.call_tool(name, arguments)
        options = ("--policy", str(policy), "--audit-log", str(log))
        async with session_with(command, tmp_path / "proxy.stderr", *options) as session:
            for name, arguments in calls.items():
                proxied = await session.call_tool(name, arguments)
                assert proxied.model_dump() == direct_results[name].model_dump(), name

    run(body)
    assert [r for r in audit(log) if r["stage"] == "result"] == []


def test_everything_pinned_then_proxied_with_the_pin_lists_every_tool(tmp_path: Path) -> None:
    """`strictmcp pin` on a real server, then `proxy --pin`: nothing changed, nothing withheld
    (issue 15)."""
    command = everything_command()
    lock = tmp_path / "tools.lock.json"
    pinned = subprocess.run(
        [sys.executable, "-m", "strictmcp", "pin", "--lock", str(lock), "--", *command],
        capture_output=True,
        text=True,
        timeout=_SECONDS,
        check=False,
    )
    assert pinned.returncode == 0, pinned.stderr
    names = sorted(json.loads(lock.read_text(encoding="utf-8"))["tools"])
    assert "validate" not in names

    async def body() -> None:
        async with session_with(command, tmp_path / "proxy.stderr", "--pin", str(lock)) as session:
            listed = (await session.list_tools()).tools
            assert sorted(t.name for t in listed if t.name != "validate") == names

    run(body)
