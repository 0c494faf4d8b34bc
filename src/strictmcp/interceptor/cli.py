"""``strictmcp interceptor``: the command line of the interceptor server."""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable

import click

from ..connect.tool_source import ToolSourceError, load_file
from ..enforce import PinError, PinFile, listing_option, listing_rules
from ..lint import UnknownRuleError
from ..policy import Policy, PolicyError, is_loopback
from .checks import StrictChecks
from .server import InterceptorServer


@click.command(
    epilog="""\b
Exit status: 0 when standard input ends (with --listen: 130 when interrupted); 2 for a
usage or configuration error (a policy, tools file or lock file that does not load, a port
in use), said in one line on stderr. Nothing a client sends ends the server: a malformed
request gets a JSON-RPC error.

\b
Interceptors (docs/interceptors.md):
  strictmcp/schema    validation  tools/call arguments and results against the tool's schemas
  strictmcp/guards    validation  the policy's guards and deep checks on arguments
  strictmcp/hygiene   mutation    the policy's [[result]] hygiene on tools/call results
  strictmcp/flow      validation  the policy's [[flow]] rules, per session
  strictmcp/listing   validation  the listing rules and pins on tools/list results"""
)
@click.option(
    "--policy",
    "policy_file",
    type=click.Path(dir_okay=False),
    help="TOML policy: its guards, [[result]] hygiene, [[flow]] rules and [listing] rules.",
)
@click.option(
    "--tools",
    "tools_file",
    type=click.Path(dir_okay=False),
    help="The tool definitions calls are judged against (a tools/list result); default: the "
    "latest tools/list result each session passed through strictmcp/schema or strictmcp/listing.",
)
@click.option(
    "--pin",
    "pin_file",
    type=click.Path(dir_okay=False),
    help="Lock file of tool definitions (strictmcp pin) that strictmcp/listing checks.",
)
@click.option(
    "--listing-rules",
    help="Lint rules strictmcp/listing runs (codes or prefixes, comma-separated, or none); "
    "default: the policy's [listing] rules, else SMT401 (hidden characters).",
)
@click.option(
    "--strict", is_flag=True, help="Also refuse arguments a tool's inputSchema does not declare."
)
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Serve over MCP streamable HTTP on this address (port 0: any free one) instead of stdio.",
)
@click.option(
    "--path", default="/mcp", show_default=True, help="The endpoint's path, with --listen."
)
@click.option(
    "--session-idle",
    type=click.FloatRange(min=0, min_open=True),
    default=1800.0,
    show_default=True,
    help="With --listen: seconds a session may go unused before it is ended.",
)
@click.option(
    "--allow-unauthenticated",
    is_flag=True,
    help="With --listen on an address other than loopback: serve anyway, to anyone who "
    "reaches the port (the interceptor server has no [auth] of its own).",
)
def interceptor(
    policy_file: str | None,
    tools_file: str | None,
    pin_file: str | None,
    listing_rules: str | None,
    strict: bool,
    listen: str | None,
    path: str,
    session_idle: float,
    allow_unauthenticated: bool,
) -> None:
    """Serve strictmcp's checks as MCP interceptors (SEP-2624) over stdio, or over
    streamable HTTP with --listen.

    A client or gateway running an interceptor chain lists them with interceptors/list and
    calls them with interceptor/invoke: the payload comes back judged (a validation result
    with strictmcp's value-free findings) or cleaned (a mutation result).
    """
    address = _address(listen, path, allow_unauthenticated) if listen is not None else None
    checks = _checks(policy_file, tools_file, pin_file, listing_rules, strict)
    if address is None:
        from .stdio import serve_stdio  # noqa: PLC0415 - only when it runs

        server = InterceptorServer(checks().registry())
        sys.exit(asyncio.run(serve_stdio(server, sys.stdin.fileno(), sys.stdout.buffer)))
    from . import http  # noqa: PLC0415 - only when it runs

    def new_server() -> InterceptorServer:
        return InterceptorServer(checks().registry())

    loopback = is_loopback(address[0])
    app = http.InterceptorApp(new_server, path=path, loopback=loopback, idle=session_idle)

    def announce(url: str) -> None:
        click.echo(f"strictmcp interceptor: listening on {url}", err=True)

    try:
        asyncio.run(http.serve(app, *address, announce))
    except KeyboardInterrupt:
        sys.exit(130)
    except OSError as error:
        click.echo(f"strictmcp interceptor: cannot listen: {error.strerror}", err=True)
        sys.exit(2)
    sys.exit(0)


def _address(listen: str, path: str, allow_unauthenticated: bool) -> tuple[str, int]:
    """The address to listen on; a usage error for a malformed one, and for one other than
    loopback unless ``--allow-unauthenticated`` (then a warning), as the proxy's --listen."""
    host, _, port = listen.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or int(port) > 65535:
        raise click.UsageError("--listen: HOST:PORT is expected, e.g. 127.0.0.1:8000")
    if not path.startswith("/"):
        raise click.UsageError("--path must start with /")
    if not is_loopback(host):
        if not allow_unauthenticated:
            raise click.UsageError(
                "--listen on an address other than loopback needs --allow-unauthenticated"
            )
        click.echo(
            "strictmcp interceptor: warning: listening on a network without authentication; "
            "anyone who reaches the port can invoke the interceptors",
            err=True,
        )
    return host, int(port)


def _checks(
    policy_file: str | None,
    tools_file: str | None,
    pin_file: str | None,
    selectors: str | None,
    strict: bool,
) -> Callable[[], StrictChecks]:
    """The interceptors' configuration, which makes each connection's (sessions keep state of
    their own); a usage error (status 2) for what does not load."""
    try:
        policy = Policy.load(policy_file) if policy_file is not None else None
    except PolicyError as error:
        raise click.UsageError(f"--policy: {error}") from None
    try:
        tools = load_file(tools_file).tools if tools_file is not None else None
    except ToolSourceError as error:
        raise click.UsageError(f"--tools: {error}") from None
    try:
        pins = PinFile.load(pin_file) if pin_file is not None else None
    except PinError as error:
        raise click.UsageError(f"--pin: {error} [{error.code}]") from None
    if selectors is not None:
        chosen: tuple[str, ...] | None = listing_option(selectors)
    else:
        chosen = policy.listing_rules if policy is not None else None
    try:
        rules = listing_rules(chosen)
    except UnknownRuleError as error:
        raise click.UsageError(f"--listing-rules: {error}") from None
    return functools.partial(
        StrictChecks,
        policy,
        tools={"tools": tools} if tools is not None else None,
        strict=strict,
        listing=rules,
        pins=pins,
    )
