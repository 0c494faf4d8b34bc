"""The ``strictmcp`` command: one group, each layer bringing its own subcommands."""

from __future__ import annotations

import click

from . import __version__
from .check.cli import check
from .lint.cli import lint
from .pin.cli import pin
from .policy_cmd.cli import policy
from .protocol.cli import messages
from .proxy.cli import proxy
from .schema.cli import schema


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="strictmcp")
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
    """


main.add_command(schema)
main.add_command(messages)
main.add_command(proxy)
main.add_command(lint)
main.add_command(check)
main.add_command(policy)
main.add_command(pin)
