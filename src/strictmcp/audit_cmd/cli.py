"""``strictmcp audit report``: what an audit log says strictmcp refused, by time, rule, tool,
server and identity, for a terminal or as one HTML page."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import IO, NoReturn

import click

from ..lint.model import printable
from .report_html import render_html
from .report_text import render_text
from .summary import NEWEST, AuditSummary, summarize

EXIT_DONE, EXIT_USAGE = 0, 2
_RENDERERS: dict[str, Callable[[AuditSummary, str, int], str]] = {
    "text": render_text,
    "html": render_html,
}
_EPILOG = """\b
Refusals are the records whose action is refused, withheld or replaced; audit mode's
"would deny" is counted beside them, never in them. A line that is not an audit record
is skipped and counted, never shown. The log is read once, in bounded memory.
\b
Exit status: 0 report written, 2 usage error or a log or output that cannot be used.
"""


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def audit() -> None:
    """Read the proxy's audit log (--audit-log): what it refused, and whom."""


@audit.command(epilog=_EPILOG)
@click.argument("log", metavar="AUDIT.jsonl", type=click.Path(dir_okay=False, allow_dash=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(_RENDERERS)),
    default="text",
    show_default=True,
    help="A terminal summary, or one self-contained HTML page with charts.",
)
@click.option(
    "--output", type=click.Path(dir_okay=False), help="Write the report here (default stdout)."
)
@click.option(
    "--top",
    type=click.IntRange(1, 100),
    default=10,
    show_default=True,
    help="Rules, tools, servers and identities shown, each.",
)
@click.option(
    "--newest",
    type=click.IntRange(0, 1000),
    default=NEWEST,
    show_default=True,
    help="The newest refusals shown.",
)
def report(log: str, fmt: str, output: str | None, top: int, newest: int) -> None:
    """Summarize AUDIT.jsonl: refusals over time, by rule, tool, server and identity, and the
    newest ones (- reads stdin)."""
    name = "stdin" if log == "-" else Path(log).name
    with ExitStack() as stack:
        try:
            stream: IO[bytes] = (
                sys.stdin.buffer if log == "-" else stack.enter_context(Path(log).open("rb"))
            )
            summary = summarize(stream, keep=newest)
        except OSError as error:
            _fail(f"cannot read {log}: {error.strerror or 'read error'}")
    text = _RENDERERS[fmt](summary, name, top)
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as error:
        _fail(f"cannot write {output}: {error.strerror or 'write error'}")
    if fmt != "text":
        click.echo(render_text(summary, name, top), nl=False, err=True)


def _fail(text: str) -> NoReturn:
    click.echo(printable(f"strictmcp audit report: {text}"), err=True)
    sys.exit(EXIT_USAGE)
