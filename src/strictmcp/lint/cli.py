"""``strictmcp lint``: lint the tools an MCP server lists, from a file or a live server."""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, NoReturn
from urllib.parse import quote

import click

from ..connect.client import failure_text
from ..connect.command_line import ServerCommand, credential_options, server_command
from ..connect.tool_source import ToolSource, ToolSourceError, read_tools
from ..enforce import hidden_tools
from ..identity.command import CredentialsProblem, command_auth
from ..policy import Policy, PolicyError
from ..protocol import LATEST, Revision, Severity
from ..schema import quote_name
from .engine import lint_tools
from .locate import PointerIndex
from .model import LintFinding, render_json
from .report import LintReport, render_text
from .rules import RULES, UnknownRuleError, find_rule
from .sarif import to_sarif
from .selection import chosen_rules, selector_options

if TYPE_CHECKING:
    import httpx2

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
_LIST_WORD = "rules"

_EPILOG = """\b
Examples:
  strictmcp lint tools.json
  strictmcp lint --select ALL tools.json
  strictmcp lint --extend-select SMT2 --policy policy.toml tools.json
  strictmcp lint --format sarif --output lint.sarif tools.json
  strictmcp lint -- npx -y @modelcontextprotocol/server-everything
  strictmcp lint --url http://127.0.0.1:8000/mcp
  strictmcp lint --url https://mcp.example.com/mcp --bearer-env MCP_TOKEN
  strictmcp lint --explain SMT201
  strictmcp lint rules
\b
Exit status: 0 no finding at or above --fail-on, 1 some, 2 usage error (unreadable input,
unknown rule code, bad policy, credentials that cannot be read or that the server refuses),
127 the server cannot start (docs/cli.md).
"""


@click.command(
    cls=ServerCommand,
    usage="(TOOLS.json | -- COMMAND [ARGS]... | --url URL)",
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=_EPILOG,
)
@click.argument("target", metavar="TOOLS.json", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif"]),
    default="text",
    show_default=True,
    help="Text grouped by tool, one JSON document, or SARIF 2.1.0 (GitHub code scanning).",
)
@selector_options
@click.option(
    "--fail-on",
    type=click.Choice([level.value for level in Severity]),
    default=Severity.ERROR.value,
    show_default=True,
    help="Exit 1 when a finding has this severity or a higher one.",
)
@click.option(
    "--policy",
    "policy_file",
    type=click.Path(dir_okay=False),
    help=(
        "TOML guard policy: arguments it guards are not reported as unguarded, and tools its "
        "top-level tools/exclude_tools do not offer are not linted."
    ),
)
@click.option(
    "--revision",
    type=click.Choice([r.value for r in Revision]),
    help=f"MCP revision the server speaks (default: the live server's, else {LATEST.value}).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False),
    help="Write the report to this file instead of standard output.",
)
@click.option("--url", help="Lint a live server over streamable HTTP at this URL.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds to wait for a live server.",
)
@credential_options
@click.option("--explain", metavar="CODE", help="Explain one rule (code or name) and exit.")
@click.option("--list", "list_rules", is_flag=True, help="List every rule and exit.")
@click.pass_context
def lint(
    ctx: click.Context,
    target: str | None,
    fmt: str,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    fail_on: str,
    policy_file: str | None,
    revision: str | None,
    output: str | None,
    url: str | None,
    timeout: float,
    header: tuple[str, ...],
    bearer_env: str | None,
    explain: str | None,
    list_rules: bool,
) -> None:
    """Lint the tools of an MCP server: names, schemas, bounds, guards, descriptions.

    TOOLS.json holds a tools/list result ({"tools": [...]}), a JSON-RPC response to
    tools/list, or a list of tools (- reads standard input). Or lint a live server: the
    stdio server after --, or --url. `strictmcp lint rules` lists the rules (to lint a
    file named rules, write ./rules).
    """
    command = server_command(ctx)
    if explain is not None:
        _explain(explain, fmt)
        return
    if list_rules or (target == _LIST_WORD and not command and url is None):
        _list(fmt)
        return
    sources = sum(1 for given in (target, command, url) if given)
    if sources != 1:
        raise click.UsageError("give exactly one of TOOLS.json, -- COMMAND [ARGS...] or --url")
    rules = chosen_rules(select, extend_select, ignore)
    policy = _policy(policy_file)
    asked = Revision(revision) if revision else None
    auth = _auth(url, header, bearer_env, policy)
    source = _source(target, command, url, asked, timeout, auth)
    chosen = asked or source.revision or LATEST
    source = _offered(source, policy)
    report = lint_tools(source.tools, revision=chosen, policy=policy, rules=rules)
    if policy is not None:
        _warn_hidden(policy, source, chosen)
    with _destination(output) as stream:
        _emit(report, source, fmt, stream)
    sys.exit(EXIT_FINDINGS if report.fails(Severity(fail_on)) else EXIT_CLEAN)


def _policy(path: str | None) -> Policy | None:
    if path is None:
        return None
    try:
        return Policy.load(path)
    except PolicyError as error:
        raise click.UsageError(f"--policy: {error}") from None


def _offered(source: ToolSource, policy: Policy | None) -> ToolSource:
    """``source`` without the tools the policy does not offer (no client sees them: nothing
    of them to lint), each tool kept with its place in the file."""
    if policy is None or policy.offer.everything:
        return source
    kept = [index for index, tool in enumerate(source.tools) if policy.offer.keeps(tool)]
    prefixes = [source.prefixes[index] for index in kept] if source.prefixes else []
    return replace(source, tools=[source.tools[index] for index in kept], prefixes=prefixes)


def _warn_hidden(policy: Policy, source: ToolSource, revision: Revision) -> None:
    """A warning on stderr for each tool the policy keeps from clients: linted here, it is
    never offered through the proxy."""
    try:
        hidden = hidden_tools(policy, source.tools, revision)
    except UnknownRuleError as error:
        raise click.UsageError(f"--policy [listing] rules: {error}") from None
    for tool in hidden:
        click.echo(
            f"strictmcp lint: warning: the policy hides tool {quote_name(tool.name)} from "
            f"every client ({tool.why}): it is linted here, but will not be offered",
            err=True,
        )


def _source(
    target: str | None,
    command: tuple[str, ...],
    url: str | None,
    revision: Revision | None,
    timeout: float,
    auth: httpx2.Auth | None,
) -> ToolSource:
    try:
        return read_tools(target, command, url, revision=revision, timeout=timeout, auth=auth)
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
    click.echo(f"strictmcp lint: {failure_text(message, stderr)}", err=True)
    sys.exit(status)


@contextmanager
def _destination(path: str | None) -> Iterator[IO[str] | None]:
    if path is None:
        yield None
        return
    try:
        stream = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as error:
        _fail(f"cannot write {path}: {error.strerror}")
    with stream:
        yield stream


def _emit(report: LintReport, source: ToolSource, fmt: str, stream: IO[str] | None) -> None:
    index = PointerIndex(source.text) if source.text is not None else None

    def line_of(finding: LintFinding) -> int | None:
        if index is None or finding.tool_index >= len(source.prefixes):
            return None
        return index.line(source.prefixes[finding.tool_index] + finding.pointer)

    if fmt == "text":
        for line in render_text(report, source.name, line_of, of_rules=len(RULES)):
            click.echo(line, file=stream)
        return
    if fmt == "json":
        document = report.to_dict(
            source={"kind": source.kind, "name": source.name}, line_of=line_of
        )
    else:
        uri = _artifact_uri(source.name) if source.kind == "file" and source.name != "-" else None
        document = to_sarif(report, artifact_uri=uri, index=index, prefixes=source.prefixes)
    # ASCII: names may hold lone surrogates (valid as JSON escapes, unencodable as UTF-8), and
    # bidirectional or control characters that would reorder or restyle a terminal.
    click.echo(json.dumps(document, indent=2, ensure_ascii=True), file=stream)


def _artifact_uri(path: str) -> str:
    """The file as a URI relative to the working directory (where CI checks out the
    repository), or an absolute file URI when it lies outside."""
    resolved = Path(path).resolve()
    try:
        return quote(resolved.relative_to(Path.cwd().resolve()).as_posix())
    except ValueError:
        return resolved.as_uri()


def _explain(code: str, fmt: str) -> None:
    try:
        rule = find_rule(code)
    except UnknownRuleError as error:
        raise click.UsageError(str(error)) from None
    if fmt == "json":
        click.echo(json.dumps(rule.to_dict(), indent=2))
        return
    click.echo(f"{rule.code} {rule.name} ({rule.severity.value}, {rule.family})")
    click.echo(f"\n{rule.summary}.\n")
    click.echo(textwrap.fill("Why: " + rule.why, width=88))
    click.echo()
    click.echo(textwrap.fill("Fix: " + rule.fix, width=88))
    for label, example in (("Bad", rule.bad), ("Good", rule.good)):
        click.echo(f"\n{label}:\n")
        click.echo(render_json(example.document()))


def _list(fmt: str) -> None:
    if fmt == "json":
        click.echo(json.dumps([rule.to_dict() for rule in RULES], indent=2))
        return
    # "default" marks the rules run without --select.
    width = max(len(rule.name) for rule in RULES)
    for rule in RULES:
        mark = "default" if rule.default else ""
        click.echo(
            f"{rule.code}  {rule.name:<{width}}  {rule.severity.value:<7}  {mark:<7}  "
            f"{rule.summary}"
        )
