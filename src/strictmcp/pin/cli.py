"""``strictmcp pin``: a lock file of a server's tools and prompts, and what changed since it was
written."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ..connect.client import failure_text
from ..connect.command_line import ServerCommand, credential_options, server_command
from ..connect.tool_source import ToolSource, ToolSourceError, read_tools
from ..enforce.pins import PinChange, PinError, PinFile, Pins
from ..identity.command import CredentialsProblem, command_auth

if TYPE_CHECKING:
    import httpx2

EXIT_SAME, EXIT_CHANGED, EXIT_USAGE = 0, 1, 2
DEFAULT_LOCK = "strictmcp-tools.lock.json"
# How much of a changed value pin --diff shows, escaped, before cutting it short.
_SHOWN = 160

_EPILOG = f"""\b
Examples:
  strictmcp pin -- npx -y @modelcontextprotocol/server-everything
  strictmcp pin --lock tools.lock.json --url http://127.0.0.1:8000/mcp
  strictmcp pin --diff -- npx -y @modelcontextprotocol/server-everything
  strictmcp proxy --pin {DEFAULT_LOCK} -- npx -y @modelcontextprotocol/server-everything
\b
Exit status: 0 written (or, with --diff, nothing changed), 1 --diff found changes, 2 usage
error (unreadable input or lock file, credentials that cannot be read or that the server
refuses), 127 the server cannot start (docs/cli.md).
"""


@click.command(
    cls=ServerCommand,
    usage="(TOOLS.json | -- COMMAND [ARGS]... | --url URL)",
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=_EPILOG,
)
@click.argument("target", metavar="TOOLS.json", required=False)
@click.option(
    "--lock",
    type=click.Path(dir_okay=False),
    default=DEFAULT_LOCK,
    show_default=True,
    help="The lock file to write (or, with --diff, to compare with).",
)
@click.option("--diff", is_flag=True, help="Show what changed since the lock file, field by field.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="With --diff: text, or one JSON document.",
)
@click.option("--url", help="Pin a live server over streamable HTTP at this URL.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds to wait for a live server.",
)
@credential_options
@click.pass_context
def pin(
    ctx: click.Context,
    target: str | None,
    lock: str,
    diff: bool,
    fmt: str,
    url: str | None,
    timeout: float,
    header: tuple[str, ...],
    bearer_env: str | None,
) -> None:
    """Pin the tools of an MCP server: each definition (name, title, description, schemas,
    annotations, execution) and its SHA-256 over RFC 8785 canonical JSON, in a lock file for
    `strictmcp proxy --pin`; and its prompts (name, title, description, arguments). strictmcp's
    own validate tool is not pinned.

    TOOLS.json holds a tools/list result (with a "prompts" array beside "tools" to pin
    prompts too), a JSON-RPC response to one, or a list of tools (- reads standard input); or
    give the stdio server after --, or --url.
    """
    command = server_command(ctx)
    if sum(1 for given in (target, command, url) if given) != 1:
        raise click.UsageError("give exactly one of TOOLS.json, -- COMMAND [ARGS...] or --url")
    source = _source(target, command, url, timeout, _auth(url, header, bearer_env))
    try:
        listed = PinFile.from_tools(source.tools, source.prompts)
        if not diff:
            with open(lock, "w", encoding="utf-8") as stream:
                stream.write(listed.dumps())
            prompts = f" and {len(listed.prompts)} prompts" if listed.prompts is not None else ""
            click.echo(
                f"strictmcp pin: {len(listed.tools)} tools{prompts} pinned in {lock}", err=True
            )
            return
        before = _lock_file(lock)
        changes = before.diff(source.tools, source.prompts)
    except PinError as error:
        _fail(f"{error} [{error.code}]")
    except OSError as error:
        _fail(f"cannot write {lock}: {error.strerror}")
    if fmt == "json":
        click.echo(json.dumps(_diff_document(changes, before, listed), indent=2, ensure_ascii=True))
    else:
        for line in _diff_lines(changes, before, listed):
            click.echo(line)
    sys.exit(EXIT_CHANGED if changes else EXIT_SAME)


def _lock_file(lock: str) -> PinFile:
    """The lock file ``--diff`` compares with; an error naming it, and for a missing one
    how to make it."""
    try:
        return PinFile.load(lock)
    except PinError as error:
        missing = not os.path.exists(lock)
        fix = "; write it first: strictmcp pin without --diff" if missing else ""
        _fail(f"--lock {lock}: {error} [{error.code}]{fix}")


def _source(
    target: str | None,
    command: tuple[str, ...],
    url: str | None,
    timeout: float,
    auth: httpx2.Auth | None,
) -> ToolSource:
    try:
        return read_tools(target, command, url, timeout=timeout, prompts=True, auth=auth)
    except ToolSourceError as error:
        _fail(str(error), error.exit_status, error.stderr)


def _auth(url: str | None, header: tuple[str, ...], bearer_env: str | None) -> httpx2.Auth | None:
    try:
        return command_auth(url, header, bearer_env, None)
    except CredentialsProblem as error:
        _fail(str(error))


def _fail(message: str, status: int = EXIT_USAGE, stderr: Sequence[str] = ()) -> NoReturn:
    # Escaped line by line: the reason may quote the server (its JSON-RPC error message).
    click.echo(f"strictmcp pin: {failure_text(message, stderr)}", err=True)
    sys.exit(status)


def _value(pins: PinFile, change: PinChange, field: str, pointer: str) -> Any:
    entries: Pins = (pins.prompts or {}) if change.entity == "prompt" else pins.tools
    value: Any = entries[change.name][1].get(field)
    for token in pointer.split("/")[1:] if pointer else []:
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def _shown(value: Any) -> str:
    """A value as escaped JSON, ASCII only (a tag character or bidi control shows as its
    escape, where a terminal would have shown nothing), cut short."""
    text = "(absent)" if value is None else json.dumps(value, ensure_ascii=True)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def _diff_lines(changes: list[PinChange], before: PinFile, after: PinFile) -> list[str]:
    if not changes:
        return ["no change since the tools were pinned"]
    lines = []
    for change in changes:
        name = f"{change.entity} {json.dumps(change.name, ensure_ascii=True)}"
        if change.kind == "new":
            lines.append(f"+ {name}: new since pinning")
            continue
        if change.kind == "gone":
            lines.append(f"- {name}: pinned, no longer listed")
            continue
        lines.append(f"~ {name}: changed")
        for field in change.fields:
            for pointer in field.where:
                lines.append(f"    {field.field}{pointer}:")
                lines.append(f"      - {_shown(_value(before, change, field.field, pointer))}")
                lines.append(f"      + {_shown(_value(after, change, field.field, pointer))}")
    return lines


def _diff_document(changes: list[PinChange], before: PinFile, after: PinFile) -> dict[str, Any]:
    return {
        "version": 1,
        "changes": [
            {
                change.entity: change.name,
                "kind": change.kind,
                "fields": [
                    {
                        "field": field.field,
                        "pointers": list(field.where),
                        "before": [_value(before, change, field.field, p) for p in field.where],
                        "after": [_value(after, change, field.field, p) for p in field.where],
                    }
                    for field in change.fields
                ],
            }
            for change in changes
        ],
    }
