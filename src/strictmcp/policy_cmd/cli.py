"""``strictmcp policy``: write a starting policy, and check one, against a server's tools."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypeVar

import click

from ..connect.client import failure_text
from ..connect.command_line import credential_options
from ..connect.tool_source import ToolSource, ToolSourceError, read_tools
from ..identity.command import CredentialsProblem, command_auth
from ..lint.model import printable
from ..policy import Policy, PolicyError
from ..protocol import LATEST
from .draft import draft
from .review import review

if TYPE_CHECKING:
    import httpx2

EXIT_CLEAN, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2

_SERVER = """\b
The tools come from a tools file (--tools FILE: a tools/list result, a JSON-RPC response to
one, or a list), a live stdio server (-- COMMAND [ARGS]...) or a streamable HTTP server
(--url URL, with --header NAME:VALUE or --bearer-env VAR when it wants credentials;
policy check also sends the bearer token of the policy's [upstream] section)."""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def policy() -> None:
    """Write and check policy files (docs/policy.md)."""


_Command = TypeVar("_Command", bound=Callable[..., None])


def _server_options(command: _Command) -> _Command:
    """The options naming where the tools come from, shared by both subcommands."""
    for option in reversed(
        [
            click.option(
                "--tools",
                "tools_file",
                type=click.Path(dir_okay=False),
                help="A tools file (a tools/list result).",
            ),
            click.option("--url", help="A live server over streamable HTTP at this URL."),
            click.option(
                "--timeout",
                type=click.FloatRange(min=0, min_open=True),
                default=30.0,
                show_default=True,
                help="Seconds to wait for a live server.",
            ),
        ]
    ):
        command = option(command)
    return credential_options(command)


@policy.command(
    "init",
    epilog=_SERVER
    + """
\b
Examples:
  strictmcp policy init --tools tools.json -o policy.toml
  strictmcp policy init --root /srv/data -- npx -y @modelcontextprotocol/server-filesystem /srv/data
\b
Exit status: 0 written, 2 usage error (no tools, unwritable output, credentials that
cannot be read or that the server refuses), 127 the server cannot start (docs/cli.md).""",
)
@click.argument("command", nargs=-1, metavar="[-- COMMAND [ARGS]...]")
@_server_options
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write here, not stdout.")
@click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True),
    help="The directory path guards start with (default: the working directory).",
)
def init(
    command: tuple[str, ...],
    tools_file: str | None,
    url: str | None,
    timeout: float,
    header: tuple[str, ...],
    bearer_env: str | None,
    output: str | None,
    root: str | None,
) -> None:
    """Write a commented starting policy: a guard for every argument that looks like a path,
    URL, command or SQL (lint's SMT3xx detection), deep checks commented out."""
    source = _tools(tools_file, command, url, timeout, _auth(url, header, bearer_env, None))
    text, found = draft(
        source.tools,
        source.revision or LATEST,
        server=source.name,
        root=os.path.realpath(root or os.getcwd()),
        hints=_hints(source, command, url),
    )
    if output is None:
        click.echo(text, nl=False)
    else:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as error:
            _fail(f"cannot write {output}: {error.strerror}")
    click.echo(f"strictmcp policy: {len(found)} arguments guarded", err=True)


@policy.command(
    "check",
    epilog=_SERVER
    + """
\b
Exit status: 0 no problem, 1 problems, 2 usage error (the policy does not load, no tools,
credentials that cannot be read or that the server refuses), 127 the server cannot start
(docs/cli.md).""",
)
@click.argument("policy_file", metavar="POLICY", type=click.Path(dir_okay=False))
@click.argument("command", nargs=-1, metavar="[-- COMMAND [ARGS]...]")
@_server_options
def check(
    policy_file: str,
    command: tuple[str, ...],
    tools_file: str | None,
    url: str | None,
    timeout: float,
    header: tuple[str, ...],
    bearer_env: str | None,
) -> None:
    """Say what is wrong with a policy: tool globs that match no tool, argument pointers
    that match no argument, kinds that do not fit the argument's type."""
    try:
        loaded = Policy.load(policy_file)
    except PolicyError as error:
        _fail(f"{policy_file}: {error}")
    source = _tools(tools_file, command, url, timeout, _auth(url, header, bearer_env, loaded))
    problems = review(loaded, source.tools, source.revision or LATEST)
    for problem in problems:
        click.echo(f"{policy_file}: {printable(problem)}")
    if not problems:
        click.echo(f"{policy_file}: no problems with the tools of {source.name}")
    sys.exit(EXIT_PROBLEMS if problems else EXIT_CLEAN)


def _hints(source: ToolSource, command: tuple[str, ...], url: str | None) -> list[str]:
    """What may name the server's database: its command line or URL, and its name."""
    info = source.server_info or {}
    named = [info.get(key) for key in ("name", "title")]
    return [*command, *([url] if url else []), *(name for name in named if isinstance(name, str))]


def _tools(
    tools_file: str | None,
    command: tuple[str, ...],
    url: str | None,
    timeout: float,
    auth: httpx2.Auth | None,
) -> ToolSource:
    given = [tools_file is not None, bool(command), url is not None]
    if sum(given) != 1:
        _fail("give exactly one of --tools FILE, --url URL or -- COMMAND")
    try:
        return read_tools(tools_file, command, url, timeout=timeout, auth=auth)
    except ToolSourceError as error:
        _fail(str(error), error.exit_status, error.stderr)


def _auth(
    url: str | None, header: tuple[str, ...], bearer_env: str | None, policy: Policy | None
) -> httpx2.Auth | None:
    try:
        return command_auth(url, header, bearer_env, policy.upstream if policy else None)
    except CredentialsProblem as error:
        _fail(str(error))


def _fail(message: str, status: int = EXIT_USAGE, stderr: Sequence[str] = ()) -> NoReturn:
    # Escaped line by line: the reason may quote the server (its JSON-RPC error message).
    click.echo(f"strictmcp policy: {failure_text(message, stderr)}", err=True)
    sys.exit(status)
