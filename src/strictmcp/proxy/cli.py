"""``strictmcp proxy``: the validating proxy as a command, over stdio or streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import os
import re
import secrets
import socket
import sys
from collections.abc import Callable, Coroutine
from typing import IO, TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

import click

from ..enforce import (
    Auditor,
    PinError,
    PinFile,
    SharedRateLimiter,
    listing_option,
    listing_rules,
    logs,
)
from ..lint import LintRule, UnknownRuleError
from ..policy import AUDIT_RECORDS, Policy, PolicyError, ToolOffer, is_loopback
from ..protocol.tasks import DEFAULT_MAX_TASKS
from .bridge import bridged
from .http_connections import (
    DEFAULT_CONNECTIONS,
    DEFAULT_CONNECTIONS_PER_CLIENT,
    DEFAULT_HEADER_SECONDS,
    ConnectionLimits,
    ListenError,
    Network,
    descriptor_problem,
)
from .reload import Policies, records_calls
from .session import ProxySession
from .stdio import TransportError, hold_standard_streams, run, through

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from ..connect.upstream import Upstream
    from .http_auth import Gate
    from .http_main import Endpoint
    from .http_server import Limits
    from .observe import Telemetry

_EPILOG = """\b
In an MCP client's configuration (Claude Desktop, VS Code and others), put strictmcp in
front of the server's own command, every path absolute (assistants start servers from /;
`command -v strictmcp` gives the command's):
\b
  {
    "mcpServers": {
      "files": {
        "command": "/home/me/.local/bin/strictmcp",
        "args": ["proxy", "--policy", "/home/me/mcp/policy.toml",
                 "--audit-log", "/home/me/mcp/audit.jsonl",
                 "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
      }
    }
  }
\b
Over HTTP (--listen), the client is given the proxy's URL instead:
\b
  strictmcp proxy --listen 127.0.0.1:8000 -- python /home/me/mcp/server.py
  {
    "mcpServers": {
      "files": { "type": "http", "url": "http://127.0.0.1:8000/mcp" }
    }
  }
\b
With --upstream URL (or --url URL) the server is itself reached over streamable HTTP, from a stdio
client or (with --listen too) from HTTP clients. Over HTTP each session (from initialize to
DELETE) gets its own server process or upstream session; 2026-07-28 requests, which have no
session, share one, or, in front of a server that speaks only an earlier revision, one per
caller that the proxy opens and holds itself (up to --max-sessions, closed after --session-idle).
\b
Errors the proxy answers with itself: -32000 the server exited before answering, -32001 it
did not answer within --timeout, -32002 its answer was not a valid message, -32003 too many
requests are waiting for it (over HTTP, also: too many sessions, with status 503). Exit
status: the server's, or 1 when it left requests unanswered; 2 a usage or configuration
error (a --listen port in use, an --audit-log it cannot write), 127 the server cannot
start (docs/cli.md). Over HTTP: 403 for a foreign
Origin, 404 for an unknown or ended session, 413 for a body over --max-size.
\b
With an [auth] section in the policy (docs/policy.md), every HTTP request needs an OAuth
access token for the proxy's resource URL: 401 without a valid one (WWW-Authenticate names
the metadata document at /.well-known/oauth-protected-resource), 403 when it lacks a scope.
Listening on an address other than loopback without one is refused, unless
--allow-unauthenticated says so.
"""


_GATEWAY_EPILOG = """\b
The servers are the policy's [[server]] tables (docs/policy.md):
\b
  [[server]]
  name = "files"
  command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/data"]
  [[server]]
  name = "tickets"
  url = "https://tickets.internal/mcp"
  upstream = { bearer_env = "TICKETS_TOKEN" }
\b
In an MCP client's configuration, one entry for all of them:
\b
  {
    "mcpServers": {
      "gateway": {
        "command": "strictmcp",
        "args": ["gateway", "--policy", "/etc/strictmcp/gateway.toml"]
      }
    }
  }
\b
Exit status: 0 when the client ended; 2 a usage or configuration error.
"""

# A replica's name starts the task ids it hands out: what a balancer's rule can match on.
_REPLICA = re.compile(r"[A-Za-z0-9_-]{1,32}")


def _networks(
    _context: click.Context, _option: click.Parameter, values: tuple[str, ...]
) -> tuple[Network, ...]:
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            raise click.BadParameter(
                "an IP address or network (ADDRESS/BITS) is expected"
            ) from None
    return tuple(networks)


def _replica(_context: click.Context, _option: click.Parameter, value: str | None) -> str | None:
    if value is not None and _REPLICA.fullmatch(value) is None:
        raise click.BadParameter("1 to 32 letters, digits, - and _ are expected")
    return value


_SHARED_OPTIONS = (
    click.option(
        "--policy",
        "policy_file",
        type=click.Path(exists=True, dir_okay=False),
        help="TOML policy of guards on tool arguments.",
    ),
    click.option(
        "--mode",
        type=click.Choice(["enforce", "audit"]),
        default="enforce",
        show_default=True,
        help="audit: block and change nothing (but add the validate tool), log every violation.",
    ),
    click.option(
        "--audit-log",
        type=click.Path(dir_okay=False, writable=True),
        help="Append one JSON line per violation (codes and pointers, never values) to this file.",
    ),
    click.option(
        "--log-format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="json: each stderr line an object {time, level, event, command, message, "
        "session, server, code}.",
    ),
    click.option(
        "--audit",
        "audit_what",
        type=click.Choice(AUDIT_RECORDS),
        help="all: the audit log also gets a record of every call when it ends, allowed ones "
        "too (its outcome and latency). Default: the policy's [audit] record, else findings.",
    ),
    click.option(
        "--strict", is_flag=True, help="Also refuse tool arguments the schema does not declare."
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=300.0,
        show_default=True,
        help="Seconds to wait for the server's answer to a request before answering with an error.",
    ),
    click.option(
        "--max-size",
        type=click.IntRange(min=1),
        default=4 * 1024 * 1024,
        show_default=True,
        help="Largest message in bytes, either way; longer lines are refused unread.",
    ),
    click.option(
        "--listen",
        metavar="HOST:PORT",
        help="Serve streamable HTTP on this address (port 0: any free port) instead of stdio.",
    ),
    click.option(
        "--path", default="/mcp", show_default=True, help="The MCP endpoint's path, with --listen."
    ),
    click.option(
        "--max-sessions",
        type=click.IntRange(min=1),
        default=100,
        show_default=True,
        help="Sessions open at once: with --listen, each has its own server process; over "
        "stdio, those held for a stateless client (one per set of capabilities it declares).",
    ),
    click.option(
        "--workers",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help=(
            "With --listen: processes sharing the listening socket, the kernel spreading "
            "connections among them. For 2026-07-28 (stateless) clients only: with more than one, "
            "initialize is refused (a session's requests could reach another worker; run one "
            "worker per replica behind a balancer sticky on Mcp-Session-Id, see the README)."
        ),
    ),
    click.option(
        "--session-idle",
        type=click.FloatRange(min=0, min_open=True),
        default=1800.0,
        show_default=True,
        help="Seconds a session may go unused before it is closed (with --listen, or held "
        "for a stateless client over stdio).",
    ),
    click.option(
        "--session-init",
        type=click.FloatRange(min=0, min_open=True),
        default=10.0,
        show_default=True,
        help=(
            "With --listen: seconds a new session may wait, idle, for the client's "
            "notifications/initialized before it is closed with its server."
        ),
    ),
    click.option(
        "--listing-rules",
        metavar="CODES",
        help=(
            "Lint rules run on every tool listing (codes or prefixes, comma-separated; none to "
            "run none). A tool breaking an error-level rule is withheld and its calls refused. "
            "Default: the policy's [listing] rules, else SMT401 (hidden characters)."
        ),
    ),
    click.option(
        "--pin",
        "pin_file",
        type=click.Path(dir_okay=False),
        help=(
            "Lock file written by `strictmcp pin`: a tool (or prompt) whose definition changed, "
            "or that appeared, since pinning is withheld and its calls (prompts/get) refused "
            "(audit mode: reported)."
        ),
    ),
    click.option(
        "--allow-unauthenticated",
        is_flag=True,
        help=(
            "With --listen on an address other than loopback: serve without the policy's [auth] "
            "section (anyone who reaches the port can call every tool)."
        ),
    ),
    click.option(
        "--metrics",
        "metrics_address",
        metavar="HOST:PORT",
        help=(
            "Serve /metrics (Prometheus), /healthz and /readyz on HOST:PORT; with --listen "
            "they are on the listening port already (docs/observability.md)."
        ),
    ),
    click.option(
        "--max-tasks",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_TASKS,
        show_default=True,
        help=(
            "Tasks remembered per session (each until its time to live ends), to check their "
            "final results; the result of a task forgotten past this bound is refused."
        ),
    ),
    click.option(
        "--replica",
        metavar="NAME",
        callback=_replica,
        help=(
            "With --listen, this proxy's name among replicas behind one balancer (letters, "
            "digits, - and _): the task ids it hands 2026-07-28 clients start with NAME and a "
            "dot, so that the balancer can route a request naming a task (its Mcp-Name header) "
            "back to the replica that has it (examples/haproxy/haproxy.cfg)."
        ),
    ),
    click.option(
        "--max-connections",
        type=click.IntRange(min=1),
        default=DEFAULT_CONNECTIONS,
        show_default=True,
        help=(
            "With --listen: connections open at once (per worker); one more is answered 503 "
            "(Retry-After) and closed."
        ),
    ),
    click.option(
        "--max-connections-per-client",
        type=click.IntRange(min=1),
        default=DEFAULT_CONNECTIONS_PER_CLIENT,
        show_default=True,
        help=(
            "With --listen: connections open at once from one client address (per worker), "
            "but from a --trusted-proxy; one more is answered 503 and closed."
        ),
    ),
    click.option(
        "--header-timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=DEFAULT_HEADER_SECONDS,
        show_default=True,
        help=(
            "With --listen: seconds a request's line and headers may take to arrive, from the "
            "connection's start or the next request's first byte; the connection is closed after."
        ),
    ),
    click.option(
        "--trusted-proxy",
        "trusted_proxies",
        metavar="ADDRESS[/BITS]",
        multiple=True,
        callback=_networks,
        help=(
            "With --listen: a balancer's address or network (repeatable), whose connections "
            "carry many clients: --max-connections-per-client does not apply to them."
        ),
    ),
    click.option(
        "--watch",
        is_flag=True,
        help=(
            "Reload the --policy file when it changes (SIGHUP always reloads it): open "
            "sessions judge their next message by the new policy; one that does not load "
            "leaves the old in force (docs/policy.md, Reloading)."
        ),
    ),
    click.option(
        "--no-validate-tool",
        is_flag=True,
        help="Do not add the validate dry-run tool (as validate_tool = false in the policy).",
    ),
)
"""The options of ``proxy`` and ``gateway`` alike."""


def _shared_options(command: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(_SHARED_OPTIONS):
        command = option(command)
    return command


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=_EPILOG,
)
@_shared_options
@click.option(
    "--upstream",
    "--url",
    "upstream",
    metavar="URL",
    # --url as in lint and check: in every command it says where the server is.
    help="Reach the server over streamable HTTP at URL instead of running COMMAND.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def proxy(upstream: str | None, command: tuple[str, ...], **options: Any) -> None:
    """Validate every MCP message between a client and the server COMMAND (or --upstream URL).

    Run it as `strictmcp proxy [OPTIONS] -- COMMAND [ARGS]...`: the client talks to the proxy
    on stdin and stdout (or over HTTP with --listen), the proxy to COMMAND on its pipes (or to
    the HTTP server --upstream). Invalid tool calls and calls the policy blocks are answered by
    the proxy and never reach the server; a `validate` dry-run tool is added to the server's
    tools.
    """
    address = _where(command, upstream, options["listen"], options["path"])
    _serve(options, address, command=command, upstream=upstream)


@click.command(
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=_GATEWAY_EPILOG,
)
@_shared_options
def gateway(**options: Any) -> None:
    """One endpoint for every server of the policy's [[server]] tables.

    Run it as `strictmcp gateway --policy gateway.toml` (stdio, or --listen HOST:PORT): the
    client sees every server's tools and prompts named SERVER__NAME, each call checked by the
    one policy (whose globs match the full names) and routed to its server; resources are
    routed by URI. A server that cannot start or exits leaves the listing and is started again.
    """
    if options["policy_file"] is None:
        raise click.UsageError("--policy is required: its [[server]] tables name the servers")
    address = _address(options["listen"]) if options["listen"] is not None else None
    if not options["path"].startswith("/"):
        raise click.UsageError("--path must start with /")
    _serve(options, address, command=(), upstream=None, gateway=True)


def _serve(  # noqa: PLR0915 - one place puts the options together
    options: dict[str, Any],
    address: tuple[str, int] | None,
    *,
    command: tuple[str, ...],
    upstream: str | None,
    gateway: bool = False,
) -> None:
    """Run the proxy (or, with ``gateway``, the gateway) the options describe until it ends;
    exits with its status."""
    mode: str = options["mode"]
    max_size: int = options["max_size"]
    timeout: float = options["timeout"]
    logs.use_format(options["log_format"])
    _standard_streams(listening=address is not None)
    policy = _policy(options, address, upstream, gateway=gateway)
    listing = _listing(options["listing_rules"], policy)
    pins = _pins(options["pin_file"], policy, gateway=gateway)
    validate_tool = not options["no_validate_tool"] and (policy is None or policy.validate_tool)
    audit_log: str | None = options["audit_log"]
    metrics_address = _metrics_address(options, address)
    telemetry = _telemetry(policy, address is not None or metrics_address is not None)
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(_audit_file(audit_log)) if audit_log else None
        if telemetry is not None:
            stack.callback(telemetry.close)
        # One for every session: an identity's calls count together, whichever session
        # they use; and every session judged by the policy in force (reloaded).
        policies = _policies(
            options, policy, _auditor(log, policy, gateway=gateway, telemetry=None)
        )

        def new_session(offer: ToolOffer | None = None) -> ProxySession:
            # Reloaded, the policy's [audit] record applies to new sessions too.
            current = policies.current if policies is not None else policy
            calls = records_calls(options["audit_what"], current)
            session = ProxySession(
                _auditor(log, policy, gateway=gateway, telemetry=telemetry, calls=calls),
                policy=policies.current if policies is not None else None,
                mode="audit" if mode == "audit" else "enforce",
                strict=options["strict"],
                max_size=max_size,
                listing_rules=listing,
                pins=pins,
                limiter=policies.limiter if policies is not None else None,
                max_tasks=options["max_tasks"],
                replica=options["replica"],
                validate_tool=validate_tool,
                offer=offer,
            )
            if telemetry is not None:
                telemetry.attach(session, "pipe" if address is None else "tcp")
            return policies.joined(session) if policies is not None else session

        main: Coroutine[Any, Any, int]
        if gateway:
            assert policy is not None
            from .gateway import reach_gateway  # noqa: PLC0415

            try:
                reach = reach_gateway(
                    policy,
                    max_size=max_size,
                    timeout=timeout,
                    metrics=telemetry.metrics if telemetry is not None else None,
                )
            except PolicyError as error:
                raise click.UsageError(f"--policy: {error}") from None
        # A stateless client over stdio reaches a server of a handshake revision through
        # sessions held for it, as over HTTP (proxy/bridge.py).
        bridging = functools.partial(
            bridged,
            max_held=options["max_sessions"],
            idle=options["session_idle"],
            timeout=timeout,
        )
        if address is None and upstream is None and not gateway:
            main = run(new_session(), command, timeout=timeout, bridging=bridging)
        elif address is None and gateway:
            main = through(new_session(), reach, timeout=timeout, bridging=bridging)
        else:
            # Imported only here: the HTTP client and server take a while to load, and the
            # stdio proxy, which starts with its client, needs neither.
            from ..identity import CredentialsError  # noqa: PLC0415
            from . import http_main  # noqa: PLC0415

            try:
                if not gateway:
                    reach = http_main.upstreams(
                        command,
                        upstream,
                        max_size=max_size,
                        timeout=timeout,
                        credentials=policy.upstream if policy is not None else None,
                    )
                    if telemetry is not None:
                        reach = _watched(reach, telemetry)
                auth = policy.auth if policy is not None else None
                gate = (
                    http_main.gate(auth, _auditor(log, policy, gateway=gateway, telemetry=None))
                    if auth is not None
                    else None
                )
                endpoints = [http_main.Endpoint(options["path"], new_session, reach, gate)]
                endpoints += _endpoints(
                    policy, new_session, reach, gate, max_size, timeout, telemetry
                )
            except CredentialsError as error:
                raise click.UsageError(f"--policy: {error}") from None
            if address is None:
                main = through(new_session(), reach, timeout=timeout, bridging=bridging)
            else:
                main = _listening(
                    options,
                    address,
                    endpoints,
                    policies,
                    command,
                    "gateway" if gateway else "proxy",
                    telemetry,
                )
        if metrics_address is not None and telemetry is not None:
            name = "gateway" if gateway else "proxy"
            main = _with_metrics(main, telemetry, metrics_address, name)
        sys.exit(_status(_closing(main, policies, watch=options["watch"]), command))


def _endpoints(
    policy: Policy | None,
    new_session: Callable[[ToolOffer | None], ProxySession],
    reach: Callable[[ProxySession], Awaitable[Upstream]],
    gate: Gate | None,
    max_size: int,
    timeout: float,
    telemetry: Telemetry | None,
) -> list[Endpoint]:
    """The policy's ``[[endpoint]]`` tables as endpoints: each session offers what the
    endpoint and the top level both offer, reaches the endpoint's servers (in the gateway;
    the proxy's one server otherwise), and is reached with a token for the endpoint's own
    resource under ``[auth]``."""
    if policy is None or not policy.endpoints:
        return []
    from . import http_main  # noqa: PLC0415 - loaded by the caller already
    from .gateway import reach_gateway  # noqa: PLC0415

    endpoints = []
    for endpoint in policy.endpoints:
        reached = reach
        if endpoint.servers is not None:
            try:
                reached = reach_gateway(
                    policy,
                    max_size=max_size,
                    timeout=timeout,
                    only=endpoint.servers,
                    metrics=telemetry.metrics if telemetry is not None else None,
                )
            except PolicyError as error:
                raise click.UsageError(f"--policy: {error}") from None
        endpoints.append(
            http_main.Endpoint(
                endpoint.path,
                functools.partial(new_session, endpoint.offer),
                reached,
                gate.at(endpoint.path) if gate is not None else None,
            )
        )
    return endpoints


def _listening(
    options: dict[str, Any],
    address: tuple[str, int],
    endpoints: list[Endpoint],
    policies: Policies | None,
    command: tuple[str, ...],
    name: str,
    telemetry: Telemetry | None = None,
) -> Coroutine[Any, Any, int]:
    """Streamable HTTP on ``address`` at each of ``endpoints``, as the options say
    (``name``: the command's, for what it says); with ``--workers``, the workers run (and
    the process exits) here."""
    from . import http_main  # noqa: PLC0415 - loaded by the caller already

    max_size: int = options["max_size"]
    timeout: float = options["timeout"]
    workers: int = options["workers"]
    limits = _http_limits(
        http_main.Limits(
            max_size,
            max_sessions=options["max_sessions"],
            idle=options["session_idle"],
            init=options["session_init"],
        ),
        ConnectionLimits(
            options["max_connections"],
            options["max_connections_per_client"],
            options["header_timeout"],
            options["trusted_proxies"],
        ),
        len(endpoints),
    )

    def announce(url: str) -> None:
        logs.say(name, f"listening on {url}", event="listening")

    def served(
        sock: socket.socket | None, peers: http_main.Peers | None = None
    ) -> Coroutine[Any, Any, int]:
        return http_main.listen(
            endpoints,
            address,
            limits=limits,
            timeout=timeout,
            # Workers are silent: the process that forked them says it once.
            announce=announce if sock is None else _silent,
            sock=sock,
            telemetry=telemetry,
            open_metrics=is_loopback(address[0]),
            peers=peers,
        )

    if workers > 1:
        try:
            status = http_main.workers(
                workers,
                address,
                # Each worker reloads on SIGHUP; the supervisor sends it one once it has
                # read the new policy itself, so that none takes a policy that does not load.
                lambda sock, peers: _status(
                    _closing(served(sock, peers), policies, watch=False), command
                ),
                announce,
                paths=[endpoint.path for endpoint in endpoints],
                reload=policies.reload if policies is not None else None,
                watch=options["watch"],
                telemetry=telemetry,
            )
        except ListenError as error:
            _exit_usage(str(error))
        sys.exit(status)
    return served(None)


def _pins(pin_file: str | None, policy: Policy | None, *, gateway: bool) -> PinFile | None:
    """The lock file ``--pin`` names, or the gateway's servers' own lock files as one."""
    if gateway and policy is not None and any(s.pin for s in policy.servers):
        if pin_file is not None:
            raise click.UsageError(
                "--pin: the policy's [[server]] tables name their own lock files; give either"
            )
        from .gateway import gateway_pins  # noqa: PLC0415

        try:
            return gateway_pins(policy)
        except PinError as error:
            raise click.UsageError(f"--policy: [[server]] pin: {error} [{error.code}]") from None
    try:
        return PinFile.load(pin_file) if pin_file is not None else None
    except PinError as error:
        raise click.UsageError(f"--pin: {error} [{error.code}]") from None


def _auditor(
    log: IO[str] | None,
    policy: Policy | None,
    *,
    gateway: bool,
    telemetry: Telemetry | None,
    calls: bool = False,
) -> Auditor:
    """A session's auditor: its records name their session (a random id of its own) and the
    gateway's server of a tool, and are counted when metrics are on; with ``calls``, the log
    gets a record of every call (``--audit all``, or the policy's ``[audit] record``)."""
    metrics = telemetry.metrics if telemetry is not None else None
    session = secrets.token_hex(6)
    if not gateway or policy is None:
        return Auditor(log, stderr=sys.stderr, metrics=metrics, session=session, calls=calls)
    return Auditor(
        log,
        stderr=sys.stderr,
        command="gateway",
        servers=frozenset(server.name for server in policy.servers),
        separator=policy.gateway.separator if policy.gateway else "__",
        metrics=metrics,
        session=session,
        calls=calls,
    )


def _metrics_address(
    options: dict[str, Any], address: tuple[str, int] | None
) -> tuple[str, int] | None:
    """Where ``--metrics`` serves, refused with ``--listen`` (which serves them already) and,
    without ``--allow-unauthenticated``, on an address other than loopback (nothing
    authenticates a scrape there)."""
    given: str | None = options["metrics_address"]
    if given is None:
        return None
    if address is not None:
        raise click.UsageError("--metrics: with --listen, /metrics is on the listening port")
    where = _address(given, "--metrics")
    if not is_loopback(where[0]) and not options["allow_unauthenticated"]:
        raise click.UsageError(
            "--metrics on an address other than loopback needs --allow-unauthenticated "
            "(anyone who reaches the port reads the counters)"
        )
    return where


def _telemetry(policy: Policy | None, serving: bool) -> Telemetry | None:
    """What the process measures: metrics when they are served (``--listen``, ``--metrics``)
    or exported, spans when the environment asks for OTLP; None when nothing is (and nothing
    is measured). A missing [otel] extra is a usage error."""
    from .otel import configured  # noqa: PLC0415 - plain Python; the SDK only when asked

    traces, export = configured()
    if not (serving or traces or export):
        return None
    from ..extras import MissingExtra  # noqa: PLC0415
    from .observe import Telemetry  # noqa: PLC0415

    try:
        telemetry = Telemetry(traces=traces, export=export)
    except MissingExtra as error:
        raise click.UsageError(f"OTEL_EXPORTER_OTLP_ENDPOINT: {error}") from None
    if policy is not None:
        telemetry.metrics.health.required = frozenset(s.name for s in policy.servers if s.required)
    return telemetry


def _watched(
    reach: Callable[[ProxySession], Awaitable[Upstream]], telemetry: Telemetry
) -> Callable[[ProxySession], Awaitable[Upstream]]:
    """``reach``, the proxy's server counted up or down for ``/readyz`` as each start
    succeeds or fails."""
    health = telemetry.metrics.health

    async def watched(session: ProxySession) -> Upstream:
        try:
            upstream = await reach(session)
        except OSError:
            health.down("", was_up=False)
            raise
        health.started("")
        return upstream

    return watched


async def _with_metrics(
    main: Coroutine[Any, Any, int], telemetry: Telemetry, address: tuple[str, int], name: str
) -> int:
    """Run ``main`` with ``--metrics`` served beside it."""
    from .http_observe import serve_metrics  # noqa: PLC0415

    def announce(url: str) -> None:
        logs.say(name, f"metrics on {url}", event="listening")

    try:
        server = await serve_metrics(telemetry.metrics, *address, announce)
    except OSError as error:
        main.close()
        raise ListenError(f"--metrics {address[0]}:{address[1]}: {error.strerror}") from None
    try:
        return await main
    finally:
        server.close()


def _policy(
    options: dict[str, Any],
    address: tuple[str, int] | None,
    upstream: str | None,
    *,
    gateway: bool,
) -> Policy | None:
    """The policy ``--policy`` names, refused (a usage error) where it does not fit how the
    proxy or gateway runs."""
    try:
        policy = Policy.load(options["policy_file"]) if options["policy_file"] else None
    except PolicyError as error:
        raise click.UsageError(f"--policy: {error}") from None
    if gateway and (policy is None or not policy.servers):
        raise click.UsageError("--policy: the gateway needs [[server]] tables (docs/policy.md)")
    if not gateway and policy is not None and (policy.servers or policy.gateway):
        raise click.UsageError(
            "--policy: [[server]] and [gateway] are for `strictmcp gateway`, not the proxy"
        )
    _check_identity(policy, address, upstream, options["mode"], options["allow_unauthenticated"])
    if policy is not None and policy.endpoints:
        _check_endpoints(policy, address, options["path"])
    if options["workers"] > 1:
        _check_workers(policy, address)
        if gateway:
            # Each worker would start every stdio server of its own: say so by refusing.
            raise click.UsageError(
                "--workers: the gateway runs in one process (its servers are its children); "
                "run one gateway per replica behind a balancer"
            )
    return policy


async def _closing(
    main: Coroutine[Any, Any, int], policies: Policies | None, *, watch: bool
) -> int:
    """Run ``main``, reloading the policy on SIGHUP (and, with ``watch``, when its file
    changes); then close the limiter's connections to Redis, if it has any."""
    watching: asyncio.Task[None] | None = None
    if policies is not None:
        policies.on_hangup()
        if watch:
            watching = asyncio.create_task(policies.watch())
    try:
        return await main
    finally:
        if watching is not None:
            watching.cancel()
        limiter = policies.limiter if policies is not None else None
        if isinstance(limiter, SharedRateLimiter):
            await limiter.aclose()


def _policies(options: dict[str, Any], policy: Policy | None, auditor: Auditor) -> Policies | None:
    """The policy in force for every session, reloadable; None without ``--policy``."""
    if policy is None:
        return None
    fixed = options["listing_rules"] is not None  # --listing-rules holds for good

    def listing_of(reloaded: Policy) -> tuple[LintRule, ...]:
        try:
            return listing_rules(reloaded.listing_rules)
        except UnknownRuleError as error:
            raise PolicyError(f"[listing] rules: {error}") from None

    try:
        return Policies.of(
            options["policy_file"],
            policy,
            auditor,
            None if fixed else listing_of,
            record=options["audit_what"],
        )
    except PolicyError as error:
        raise click.UsageError(f"--policy: {error}") from None


def _audit_file(path: str) -> IO[str]:
    """The audit log, opened to append; a two-line error naming it when it cannot be (a
    missing directory, a read-only file), before the server starts."""
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as error:
        _exit_usage(
            f"--audit-log {path}: cannot append to it: {error.strerror}\n"
            "  create its directory, or give a file this user can write"
        )


def _exit_usage(message: str) -> NoReturn:
    logs.say("proxy", message, level="error", event="usage")
    sys.exit(2)


def _standard_streams(*, listening: bool) -> None:
    """Hold the numbers of closed standard streams; over stdio, a closed stdout ends the
    proxy (status 2) before the server starts: nothing it says could reach the client."""
    closed = hold_standard_streams()
    if not listening and 1 in closed:
        closed_out = "standard output is closed: no answer could be given"
        logs.say("proxy", closed_out, level="error", event="usage")
        sys.exit(2)


def _http_limits(limits: Limits, connections: ConnectionLimits, endpoints: int) -> Limits:
    """``limits`` with ``connections``; a usage error when the file descriptor limit cannot
    hold them, with ``limits.max_sessions`` at each of ``endpoints`` (past it, every client's
    connection would fail, not only those over a bound)."""
    problem = descriptor_problem(connections, limits.max_sessions, endpoints)
    if problem is not None:
        raise click.UsageError(problem)
    limits.connections = connections
    return limits


def _silent(url: str) -> None:
    return None


def _check_workers(policy: Policy | None, address: tuple[str, int] | None) -> None:
    """Refuse ``--workers`` where several processes cannot do what one does."""
    if address is None:
        raise click.UsageError("--workers applies to --listen only")
    if not hasattr(os, "fork"):
        raise click.UsageError("--workers needs a platform with fork(); run one process each")
    if policy is not None and policy.rate_limits and policy.rate_store is None:
        # Each worker would count on its own: N workers, N times the limit (with a
        # [rate_store] they count together in Redis).
        raise click.UsageError(
            "--workers: the policy's [[rate_limit]] tables are counted in one process; "
            "run one worker, or share the count through Redis with [rate_store] (docs/policy.md)"
        )


def _check_identity(
    policy: Policy | None,
    address: tuple[str, int] | None,
    upstream: str | None,
    mode: str,
    allow_unauthenticated: bool,
) -> None:
    """Refuse, before anything starts, identity settings that cannot apply to how the proxy
    runs, and a network listener nobody authenticates unless that was asked for."""
    if policy is not None and policy.auth is not None and address is None:
        raise click.UsageError("--policy: the [auth] section applies to --listen only")
    if policy is not None and policy.upstream is not None and upstream is None:
        raise click.UsageError("--policy: the [upstream] section applies to --upstream URL only")
    if policy is not None and policy.access:
        _check_access(policy, listening=address is not None)
        if mode == "audit" or policy.mode == "audit":
            click.echo(
                "strictmcp proxy: warning: audit mode: calls the [[access]] rules deny are "
                'logged as "would deny" and go through',
                err=True,
            )
    authenticated = policy is not None and policy.auth is not None
    if address is not None and not authenticated and not is_loopback(address[0]):
        if not allow_unauthenticated:
            raise click.UsageError(
                "--listen on an address other than loopback needs the policy's [auth] section "
                "(or --allow-unauthenticated)"
            )
        click.echo(
            "strictmcp proxy: warning: listening on a network without authentication; "
            "anyone who reaches the port can call every tool",
            err=True,
        )


def _check_endpoints(policy: Policy, address: tuple[str, int] | None, path: str) -> None:
    """Refuse ``[[endpoint]]`` tables that cannot be served beside the main ``--path``."""
    if address is None:
        raise click.UsageError("--policy: [[endpoint]] tables apply to --listen only")
    auth = policy.auth
    for endpoint in policy.endpoints:
        if endpoint.path == path:
            raise click.UsageError(
                f"--policy: [[endpoint]] {endpoint.path!r} is the main --path; give it another"
            )
        if auth is not None and urlsplit(auth.resource).path.rstrip("/") == endpoint.path:
            raise click.UsageError(
                f"--policy: [[endpoint]] {endpoint.path!r} is the path of the [auth] resource, "
                "the main endpoint's; give it another"
            )


def _status(main: Coroutine[Any, Any, int], command: tuple[str, ...]) -> int:
    """Run the proxy; its exit status, or that of a failure to start."""
    try:
        return run_loop(main)
    except OSError as error:
        what = command[0] if command else "to listen"
        logs.say("proxy", f"cannot start {what}: {error.strerror}", level="error", event="start")
        return 127
    except (TransportError, ListenError) as error:
        logs.say("proxy", str(error), level="error", event="start")
        return 2
    except KeyboardInterrupt:
        return 130


def run_loop(main: Coroutine[Any, Any, int]) -> int:
    """Run ``main`` on uvloop's event loop where it is installed (a dependency wherever it
    has a build), else on asyncio's own: the proxy behaves the same on both."""
    try:
        import uvloop  # noqa: PLC0415
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)


def _check_access(policy: Policy, *, listening: bool) -> None:
    """Access rules need to know who calls: from tokens over HTTP, else the policy's fixed
    ``[identity]``; without either every call would be denied, which is surely a mistake."""
    if policy.auth is None and policy.identity is None:
        where = "the [auth] section (or an [identity])" if listening else "an [identity]"
        raise click.UsageError(f"--policy: [[access]] rules need {where} to know who calls")
    if policy.auth is not None and policy.identity is not None:
        raise click.UsageError(
            "--policy: [identity] names the caller over stdio; with [auth] tokens name it"
        )


def _where(
    command: tuple[str, ...], upstream: str | None, listen: str | None, path: str
) -> tuple[str, int] | None:
    """Refuse a server named twice or not at all, or a malformed URL or path; the address to
    listen on, if any."""
    if bool(command) == bool(upstream):
        raise click.UsageError("give either COMMAND or --upstream URL (--url URL)")
    if upstream is not None and not upstream.startswith(("http://", "https://")):
        raise click.UsageError("--upstream/--url: an http:// or https:// URL is expected")
    if not path.startswith("/"):
        raise click.UsageError("--path must start with /")
    return _address(listen) if listen is not None else None


def _address(listen: str, option: str = "--listen") -> tuple[str, int]:
    host, _, port = listen.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or int(port) > 65535:
        raise click.UsageError(f"{option}: HOST:PORT is expected, e.g. 127.0.0.1:8000")
    return host, int(port)


def _listing(option: str | None, policy: Policy | None) -> tuple[LintRule, ...]:
    """The lint rules run on every listing: --listing-rules, else the policy's, else the
    default; a selector naming no rule is a usage error, found before the server starts."""
    if option is not None:
        selectors: tuple[str, ...] | None = listing_option(option)
    else:
        selectors = policy.listing_rules if policy is not None else None
    try:
        return listing_rules(selectors)
    except UnknownRuleError as error:
        where = "--listing-rules" if option is not None else "--policy [listing] rules"
        raise click.UsageError(f"{where}: {error}") from None
