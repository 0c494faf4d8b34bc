"""The ``strictmcp`` command: one group, each layer bringing its own subcommands.

A subcommand's module is imported only when that subcommand runs: between them they pull in
every revision's protocol models, Hypothesis and the HTTP stack, which cost far more than the
answer to ``strictmcp --help``. The group's help lists the subcommands from :data:`_SUBCOMMANDS`
instead; tests/test_cli.py holds each summary there equal to its command's own help.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import click

from . import __version__, build
from .extras import MissingExtra


def _schema() -> click.Command:
    from .schema.cli import schema  # noqa: PLC0415 - only when it runs

    return schema


def _messages() -> click.Command:
    from .protocol.cli import messages  # noqa: PLC0415 - only when it runs

    return messages


def _proxy() -> click.Command:
    from .proxy.cli import proxy  # noqa: PLC0415 - only when it runs

    return proxy


def _gateway() -> click.Command:
    from .proxy.cli import gateway  # noqa: PLC0415 - only when it runs

    return gateway


def _interceptor() -> click.Command:
    from .interceptor.cli import interceptor  # noqa: PLC0415 - only when it runs

    return interceptor


def _lint() -> click.Command:
    from .lint.cli import lint  # noqa: PLC0415 - only when it runs

    return lint


def _check() -> click.Command:
    from .check.cli import check  # noqa: PLC0415 - only when it runs

    return check


def _policy() -> click.Command:
    from .policy_cmd.cli import policy  # noqa: PLC0415 - only when it runs

    return policy


def _install() -> click.Command:
    from .install.cli import install  # noqa: PLC0415 - only when it runs

    return install


def _pin() -> click.Command:
    from .pin.cli import pin  # noqa: PLC0415 - only when it runs

    return pin


def _audit() -> click.Command:
    from .audit_cmd.cli import audit  # noqa: PLC0415 - only when it runs

    return audit


@dataclass(frozen=True)
class _Subcommand:
    """A subcommand as the group knows it before its module is imported."""

    summary: str
    """The first paragraph of the command's help, words joined by single spaces."""
    load: Callable[[], click.Command]


_SUBCOMMANDS = {
    "schema": _Subcommand(
        "Validate JSON against a JSON Schema, or check that a schema is valid and safe.",
        _schema,
    ),
    "messages": _Subcommand(
        "Check captured MCP traffic against the protocol, message by message.", _messages
    ),
    "proxy": _Subcommand(
        "Validate every MCP message between a client and the server COMMAND (or --upstream URL).",
        _proxy,
    ),
    "gateway": _Subcommand(
        "One endpoint for every server of the policy's [[server]] tables.", _gateway
    ),
    "interceptor": _Subcommand(
        "Serve strictmcp's checks as MCP interceptors (SEP-2624) over stdio, or over "
        "streamable HTTP with --listen.",
        _interceptor,
    ),
    "lint": _Subcommand(
        "Lint the tools of an MCP server: names, schemas, bounds, guards, descriptions.", _lint
    ),
    "check": _Subcommand(
        "Check an MCP server's tools with generated inputs: `strictmcp check -- COMMAND"
        " [ARGS]` for a stdio server, `strictmcp check --url URL` for an HTTP one.",
        _check,
    ),
    "audit": _Subcommand(
        "Read the proxy's audit log (--audit-log): what it refused, and whom.", _audit
    ),
    "install": _Subcommand(
        "Put strictmcp in front of every MCP server of an assistant (Claude Desktop, Claude"
        " Code, Cursor, VS Code, Windsurf, or --client-config FILE).",
        _install,
    ),
    "policy": _Subcommand("Write and check policy files (docs/policy.md).", _policy),
    "pin": _Subcommand(
        "Pin the tools of an MCP server: each definition (name, title, description, schemas,"
        " annotations, execution) and its SHA-256 over RFC 8785 canonical JSON, in a lock file"
        " for `strictmcp proxy --pin`; and its prompts (name, title, description, arguments)."
        " strictmcp's own validate tool is not pinned.",
        _pin,
    ),
}
"""Every subcommand by name: its one-line help and how to import it."""


class _LazyGroup(click.Group):
    """A group that imports a subcommand's module only when that subcommand is wanted."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in _SUBCOMMANDS:
            try:
                command = _SUBCOMMANDS[cmd_name].load()
            except MissingExtra as error:
                _missing(cmd_name, error)
            self.add_command(command, cmd_name)
        return command

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except MissingExtra as error:
            # A feature the command's options or policy asked for, found missing as it starts.
            _missing(ctx.invoked_subcommand or "", error)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # A stand-in command with the summary as its help, so that click shortens it to the
        # terminal's width exactly as it would shorten the real command's help.
        rows = [
            (name, click.Command(name, help=_SUBCOMMANDS[name].summary))
            for name in self.list_commands(ctx)
        ]
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section("Commands"):
            formatter.write_dl(
                [(name, stand_in.get_short_help_str(limit)) for name, stand_in in rows]
            )


def _missing(command: str, error: MissingExtra) -> NoReturn:
    """One line naming the extra to install (docs/cli.md: a configuration error, status 2)."""
    click.echo(f"strictmcp {command}: {error}", err=True)
    sys.exit(2)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__,
    "-V",
    "--version",
    prog_name="strictmcp",
    # Which build answers: the per-message path compiled, or pure Python (docs/install.md).
    message=f"%(prog)s, version %(version)s ({build()})",
)
def main() -> None:
    """strictmcp: every Model Context Protocol message checked, strict and safe.

    \b
    Start with:
      strictmcp schema check SCHEMA              is this schema valid, safe, self-contained?
      strictmcp schema validate SCHEMA FILE...   do these JSON files match it?
      strictmcp messages validate CAPTURE.jsonl  does this captured MCP traffic follow the spec?
      strictmcp proxy -- COMMAND [ARGS...]       put strictmcp in front of any MCP server
      strictmcp lint -- COMMAND [ARGS...]        judge a server's tool definitions (or a file)
      strictmcp check -- COMMAND [ARGS...]       drive a server with valid and invalid inputs
      strictmcp pin -- COMMAND [ARGS...]         lock a server's tool definitions
      strictmcp audit report AUDIT.jsonl         what did the proxy refuse, and whom?
    """
