"""``strictmcp proxy``: the validating stdio proxy as a command."""

from __future__ import annotations

import asyncio
import contextlib
import sys

import click

from ..guards.policy import Policy, PolicyError
from .audit import Auditor
from .session import ProxySession
from .stdio import TransportError, run

_EPILOG = """\b
In an MCP client's configuration (Claude Desktop, VS Code and others), put strictmcp in
front of the server's own command:
\b
  {
    "mcpServers": {
      "files": {
        "command": "strictmcp",
        "args": ["proxy", "--policy", "policy.toml", "--audit-log", "audit.jsonl",
                 "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
      }
    }
  }
\b
Errors the proxy answers with itself: -32000 the server exited before answering, -32001 it
did not answer within --timeout, -32002 its answer was not a valid message, -32003 too many
requests are waiting for it. Exit status: the server's, or 1 when it left requests unanswered.
"""


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=_EPILOG,
)
@click.option(
    "--policy",
    "policy_file",
    type=click.Path(exists=True, dir_okay=False),
    help="TOML policy of guards on tool arguments.",
)
@click.option(
    "--mode",
    type=click.Choice(["enforce", "audit"]),
    default="enforce",
    show_default=True,
    help="audit: block and change nothing (but add the validate tool), log every violation.",
)
@click.option(
    "--audit-log",
    type=click.Path(dir_okay=False, writable=True),
    help="Append one JSON line per violation (codes and pointers, never values) to this file.",
)
@click.option(
    "--strict", is_flag=True, help="Also refuse tool arguments the schema does not declare."
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=300.0,
    show_default=True,
    help="Seconds to wait for the server's answer to a request before answering with an error.",
)
@click.option(
    "--max-size",
    type=click.IntRange(min=1),
    default=4 * 1024 * 1024,
    show_default=True,
    help="Largest message in bytes, either way; longer lines are refused unread.",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def proxy(
    policy_file: str | None,
    mode: str,
    audit_log: str | None,
    strict: bool,
    timeout: float,
    max_size: int,
    command: tuple[str, ...],
) -> None:
    """Validate every MCP message between a client and the stdio server COMMAND.

    Run it as `strictmcp proxy [OPTIONS] -- COMMAND [ARGS]...`: the client talks to the proxy
    on stdin and stdout, the proxy to COMMAND on its pipes. Invalid tool calls and calls the
    policy blocks are answered by the proxy and never reach the server; a `validate` dry-run
    tool is added to the server's tools.
    """
    try:
        policy = Policy.load(policy_file) if policy_file is not None else None
    except PolicyError as error:
        raise click.UsageError(f"--policy: {error}") from None
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(open(audit_log, "a", encoding="utf-8")) if audit_log else None
        session = ProxySession(
            Auditor(log),
            policy=policy,
            mode="audit" if mode == "audit" else "enforce",
            strict=strict,
            max_size=max_size,
        )
        try:
            status = asyncio.run(run(session, command, timeout=timeout))
        except OSError as error:
            click.echo(f"strictmcp proxy: cannot start {command[0]}: {error.strerror}", err=True)
            status = 127
        except TransportError as error:
            click.echo(f"strictmcp proxy: {error}", err=True)
            status = 2
    sys.exit(status)
