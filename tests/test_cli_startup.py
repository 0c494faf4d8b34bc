"""What ``strictmcp`` imports before it is asked anything (issue 24, the first hour).

Structural, not timed: each test runs a fresh interpreter and reads its ``sys.modules``, since
what is imported at start-up is what makes ``strictmcp --help`` slow.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from strictmcp.cli import _SUBCOMMANDS, main

HEAVY = (
    "hypothesis",
    "mcp_types",
    "pydantic",
    "pydantic_core",
    "jsonschema_rs",
    "uvicorn",
    "starlette",
    "httpx2",
    "sqlglot",
    "strictmcp.schema",
    "strictmcp.protocol",
    "strictmcp.guards",
    "strictmcp.policy",
    "strictmcp.lint",
    "strictmcp.connect",
    "strictmcp.enforce",
    "strictmcp.proxy",
    "strictmcp.check",
    "strictmcp.pin",
    "strictmcp.policy_cmd",
)
"""Modules (and their submodules) that answering ``--help`` or ``--version`` has no use for."""

_IMPORTED_BY = """
import json, sys
from strictmcp.cli import _SUBCOMMANDS, main
try:
    main(sys.argv[1:], prog_name="strictmcp")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def imported_by(*args: str) -> tuple[str, list[str]]:
    """The output of ``strictmcp ARGS`` in a fresh interpreter, and every module it loaded."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED_BY, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    modules: list[str] = json.loads(done.stderr.strip().splitlines()[-1])
    return done.stdout, modules


def among(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    """The ``modules`` that are one of ``packages`` or inside one."""
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)]


@pytest.mark.parametrize("args", [("--help",), ("-h",), ("--version",)])
def test_help_and_version_import_no_subcommand(args: tuple[str, ...]) -> None:
    out, modules = imported_by(*args)
    assert out
    assert among(modules, HEAVY) == []


def test_help_lists_every_subcommand_with_its_help_line() -> None:
    out, _ = imported_by("--help")
    listed = out.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in listed] == sorted(_SUBCOMMANDS)
    for line in listed:
        name, summary = line.split(maxsplit=1)
        assert _SUBCOMMANDS[name].summary.startswith(summary.removesuffix("..."))


NOT_FOR_THE_PROXY = (
    "hypothesis",
    "strictmcp.check",
    "sqlglot",
    "pglast",
    "uvicorn",
    "starlette",
    "mcp_types",
    "croniter",
    "httpx2",
    "psycopg",
    "redis",
    "jwt",
)
"""What the stdio proxy with no SQL guard in its policy has no use for before its first
message: another leaf's dependencies, the SQL guard's parsers, the HTTP server and client
(the reach check imports it when it checks), the cron parser (likewise), the extras, and mcp-types
altogether (its models are imported by the first message of a revision that needs them; its
constants are strictmcp's own copies)."""


def test_the_proxy_command_imports_neither_check_nor_the_sql_parsers() -> None:
    out, modules = imported_by("proxy", "--help")
    assert "Usage: strictmcp proxy" in out
    assert "strictmcp.proxy.stdio" in modules
    assert among(modules, NOT_FOR_THE_PROXY) == []


def test_a_subcommand_imports_only_its_own_leaf() -> None:
    _, modules = imported_by("schema", "--help")
    heavy = among(modules, HEAVY)
    leaves = {m.split(".")[1] for m in heavy if m.startswith("strictmcp.")}
    assert "schema" in leaves
    assert not leaves & {"proxy", "check", "pin", "policy_cmd", "lint", "protocol"}
    assert not [m for m in heavy if m.split(".")[0] in ("hypothesis", "mcp_types", "uvicorn")]


@pytest.mark.parametrize("name", sorted(_SUBCOMMANDS))
def test_each_summary_is_the_first_paragraph_of_its_command_help(name: str) -> None:
    command = _SUBCOMMANDS[name].load()
    assert command.name == name
    assert command.help is not None
    assert _SUBCOMMANDS[name].summary == " ".join(command.help.split("\n\n")[0].split())


@pytest.mark.parametrize("width", [60, 80, 200])
def test_help_reads_as_a_group_with_every_command_loaded(width: int) -> None:
    eager = click.Group(
        name=main.name,
        commands=[entry.load() for entry in _SUBCOMMANDS.values()],
        params=main.params,
        help=main.help,
        context_settings=main.context_settings,
    )
    lazy = CliRunner().invoke(main, ["--help"], prog_name="strictmcp", terminal_width=width)
    plain = CliRunner().invoke(eager, ["--help"], prog_name="strictmcp", terminal_width=width)
    assert lazy.exit_code == plain.exit_code == 0
    assert lazy.output == plain.output


def test_a_subcommand_that_does_not_exist_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["nonesuch"], prog_name="strictmcp")
    assert result.exit_code == 2
    assert "No such command 'nonesuch'" in result.output


_FIRST_ANSWER = """
import atexit, json, sys
from strictmcp.cli import main
atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))
main(sys.argv[1:], prog_name="strictmcp")
"""
RAW_SERVER = Path(__file__).resolve().parent / "proxy_fixtures" / "raw_server.py"


def first_answer(params: dict[str, Any], tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
    """The proxy's answer to ``initialize`` with ``params``, in front of the raw fixture
    server, and every module the proxy had loaded when its input ended just after it."""
    line = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    command = [sys.executable, "-c", _FIRST_ANSWER, "proxy", "--"]
    command += [sys.executable, str(RAW_SERVER), str(tmp_path / "received.jsonl")]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proxy:
        assert proxy.stdin is not None
        assert proxy.stdout is not None
        proxy.stdin.write(json.dumps(line).encode() + b"\n")
        proxy.stdin.flush()
        answer = json.loads(proxy.stdout.readline())
        _, errors = proxy.communicate(timeout=60)
    modules: list[str] = json.loads(errors.decode().strip().splitlines()[-1])
    return answer, modules


PLAIN_HANDSHAKES = [
    {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
    {
        "protocolVersion": "2024-11-05",
        "capabilities": {"roots": {"listChanged": True}, "sampling": {}},
        "clientInfo": {"name": "c", "version": "1"},
    },
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}, "experimental": {"x": {}}},
        "clientInfo": {"name": "c", "version": "1", "title": "C"},
    },
]


@pytest.mark.parametrize("params", PLAIN_HANDSHAKES)
def test_the_proxy_answers_a_plain_initialize_without_the_models(
    params: dict[str, Any], tmp_path: Path
) -> None:
    # Any mcp_types module builds the models of mcp_types._types first; pydantic comes with
    # the first model checked.
    answer, modules = first_answer(params, tmp_path)
    assert answer["result"]["protocolVersion"] == params["protocolVersion"]
    assert "strictmcp.protocol.methods" in modules
    assert among(modules, ("mcp_types", "pydantic", "pydantic_core")) == []


@pytest.mark.parametrize(
    "params",
    [
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c"}},
        {"protocolVersion": "2025-06-18", "capabilities": [], "clientInfo": {"name": "c"}},
        {
            "protocolVersion": "2025-03-26",
            "capabilities": {"roots": {"listChanged": "yes"}},
            "clientInfo": {"name": "c", "version": "1"},
        },
    ],
)
def test_an_initialize_off_the_plain_shape_is_checked_with_the_models(
    params: dict[str, Any], tmp_path: Path
) -> None:
    answer, modules = first_answer(params, tmp_path)
    assert answer["error"]["code"] == -32602
    assert "mcp_types._v2025_11_25" in modules
    assert not (tmp_path / "received.jsonl").read_bytes()
