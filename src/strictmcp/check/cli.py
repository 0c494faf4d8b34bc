"""``strictmcp check``: test a running MCP server with generated valid and invalid inputs."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ..connect.client import EXIT_CANNOT_START, ClientError, failure_text, open_client
from ..connect.command_line import credential_options
from ..extras import needs
from ..identity.command import CredentialsProblem, command_auth
from ..lint.model import printable
from ..lint.selection import chosen_rules, selector_options
from ..policy import Policy, PolicyError
from ..protocol import Revision
from .generate import TIME_BUDGET
from .redact import redact_argv, redact_url
from .report_html import render_html
from .report_json import render_json
from .report_sarif import render_sarif
from .report_text import render_text
from .results import CheckReport
from .runner import CheckOptions, run_check

if TYPE_CHECKING:
    import httpx2

with needs("check"):
    from hypothesis.configuration import set_hypothesis_home_dir

EXIT_PASSED, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
_RENDERERS: dict[str, Callable[[CheckReport], str]] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "html": render_html,
}
_EPILOG = """\b
Without --call no tool runs: invalid inputs (and valid ones) go to the server's
Validation Protocol `validate` tool if it lists one, and every input is checked locally.
With --call every case is a real tools/call: invalid inputs must be refused (isError or
JSON-RPC -32602), nothing may crash the server, results must match their outputSchema.
\b
Exit status: 0 no failures (warnings allowed), 1 failures, 2 usage or connection error
(credentials that cannot be read or that the server refuses included), 127 the server
cannot start (docs/cli.md).
"""


class _Progress:
    """A progress bar per tool on a terminal, plain lines elsewhere, all on stderr."""

    def __init__(self) -> None:
        self._tty = sys.stderr.isatty()
        self._bar: Any = None

    def start(self, tool: str, total: int) -> None:
        tool = printable(tool)  # the server's name for it
        if self._tty and total:
            self._bar = click.progressbar(length=total, label=tool, file=sys.stderr)
            self._bar.__enter__()
        else:
            click.echo(f"checking {tool}: {total} cases", err=True)

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


@click.command(context_settings={"help_option_names": ["-h", "--help"]}, epilog=_EPILOG)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(_RENDERERS)),
    default="text",
    show_default=True,
    help="Report format.",
)
@click.option(
    "--output", type=click.Path(dir_okay=False, writable=True), help="Write the report here."
)
@click.option(
    "--cases",
    "per_kind",
    type=click.IntRange(min=1, max=1000),
    default=20,
    show_default=True,
    help="Cases per tool per kind.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Same seed, same cases.")
@click.option(
    "--budget",
    type=click.FloatRange(min=0, min_open=True),
    default=TIME_BUDGET,
    show_default=True,
    help="Seconds to spend generating each tool's valid inputs; a tool whose schema makes "
    "them too slow to draw gets fewer, and a note.",
)
@click.option("--call", is_flag=True, help="Really call the tools (they may have side effects).")
@click.option(
    "--tool",
    "tools",
    multiple=True,
    help="Check only this tool (repeatable; default: every tool listed); lint reports only its "
    "findings too.",
)
@click.option(
    "--policy",
    "policy_file",
    type=click.Path(exists=True, dir_okay=False),
    help="TOML policy: lint reads its guards, a fault is planted for each of its guards "
    "and deep checks, which the server (or the proxy in front of it) must refuse, and tools "
    "its top-level tools/exclude_tools do not offer are not checked.",
)
@selector_options
@click.option("--url", help="A streamable HTTP server, instead of a command.")
@click.option(
    "--revision",
    type=click.Choice([r.value for r in Revision]),
    help="Protocol revision to ask for (default: offer 2025-11-25, take what the server says).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds to wait for each answer.",
)
@credential_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def check(
    fmt: str,
    output: str | None,
    per_kind: int,
    seed: int,
    budget: float,
    call: bool,
    tools: tuple[str, ...],
    policy_file: str | None,
    select: tuple[str, ...],
    extend_select: tuple[str, ...],
    ignore: tuple[str, ...],
    url: str | None,
    revision: str | None,
    timeout: float,
    header: tuple[str, ...],
    bearer_env: str | None,
    command: tuple[str, ...],
) -> None:
    """Check an MCP server's tools with generated inputs: `strictmcp check -- COMMAND [ARGS]`
    for a stdio server, `strictmcp check --url URL` for an HTTP one."""
    if bool(command) == bool(url):
        raise click.UsageError("give either -- COMMAND [ARGS...] or --url URL")
    lint_rules = chosen_rules(select, extend_select, ignore)
    try:
        policy = Policy.load(policy_file) if policy_file is not None else None
    except PolicyError as error:
        raise click.UsageError(f"--policy: {error}") from None
    auth = _auth(url, header, bearer_env, policy)
    if call:
        click.echo(
            "warning: --call runs every tool checked, for real, with generated inputs: "
            "they may change files, send messages or spend money. Point it at a sandbox.",
            err=True,
        )
    report = CheckReport(
        target=[redact_url(url)] if url else redact_argv(command),
        via_url=url is not None,
        mode="call" if call else "validate",
        seed=seed,
        per_kind=per_kind,
        selected=tools,
    )
    options = CheckOptions(
        per_kind=per_kind,
        seed=seed,
        call=call,
        tools=tools,
        policy=policy,
        lint_rules=lint_rules,
        budget=budget,
    )
    _hypothesis_home()
    try:
        asyncio.run(_run(report, options, list(command) or None, url, revision, timeout, auth))
    except ClientError as error:
        # Escaped line by line: the reason may quote the server (its JSON-RPC error message).
        click.echo(f"strictmcp check: {failure_text(str(error), error.stderr)}", err=True)
        sys.exit(EXIT_CANNOT_START if error.starting else EXIT_ERROR)
    text = _RENDERERS[fmt](report)
    if output is not None:
        try:
            Path(output).write_text(text, encoding="utf-8")
        except OSError as error:
            click.echo(f"strictmcp check: cannot write {output}: {error.strerror}", err=True)
            sys.exit(EXIT_ERROR)
        if fmt != "text":
            click.echo(render_text(report), nl=False, err=True)
    else:
        click.echo(text, nl=False)
    sys.exit(EXIT_FAILED if report.verdict == "fail" else EXIT_PASSED)


async def _run(
    report: CheckReport,
    options: CheckOptions,
    command: list[str] | None,
    url: str | None,
    revision: str | None,
    timeout: float,
    auth: httpx2.Auth | None,
) -> None:
    async with open_client(command, url, revision=revision, timeout=timeout, auth=auth) as client:
        await run_check(client, options, report, _Progress())


def _auth(
    url: str | None, header: tuple[str, ...], bearer_env: str | None, policy: Policy | None
) -> httpx2.Auth | None:
    try:
        return command_auth(url, header, bearer_env, policy.upstream if policy else None)
    except CredentialsProblem as error:
        _fail(str(error))


def _fail(message: str) -> NoReturn:
    click.echo(f"strictmcp check: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _hypothesis_home() -> None:
    # Hypothesis caches its Unicode tables under .hypothesis/ in the working directory: a
    # checker run from anywhere must not leave that behind. (Library callers keep theirs.)
    if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        set_hypothesis_home_dir(Path(base) / "strictmcp" / "hypothesis")
