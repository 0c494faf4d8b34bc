"""``strictmcp messages``: check captured MCP traffic."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import click

from ..schema.cli import format_option
from .capture import CaptureFormatError, CaptureReport, validate_capture
from .revisions import Revision

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_UNREADABLE = 0, 1, 2


@click.group()
def messages() -> None:
    """Check captured MCP traffic against the protocol, message by message."""


@messages.command()
@click.argument("capture", metavar="CAPTURE.jsonl")
@click.option(
    "--revision",
    type=click.Choice([r.value for r in Revision]),
    help="The MCP revision to check against (default: from the capture's initialize exchange).",
)
@format_option
@click.option(
    "--strict", is_flag=True, help="Also refuse unknown methods, fields and tool arguments."
)
def validate(capture: str, revision: str | None, fmt: str, strict: bool) -> None:
    """Check a capture: one JSON-RPC message per line in the order seen, or
    {"direction": "c2s"|"s2c", "message": {...}} per line.

    Requests and responses are paired by id, the revision comes from the initialize
    exchange unless --revision is given, and tool calls and results are checked against
    the tools listed earlier in the same capture. Each violation is reported with its line
    number, rule code and JSON Pointer. Exit status: 0 clean (warnings allowed), 1
    violations, 2 unreadable.
    """
    try:
        with _open(capture) as stream:
            report = validate_capture(
                stream, revision=Revision(revision) if revision else None, strict=strict
            )
    except CaptureFormatError as error:
        _unreadable(fmt, capture, str(error))
        sys.exit(EXIT_UNREADABLE)
    except OSError as error:
        _unreadable(fmt, capture, f"cannot read: {error.strerror}")
        sys.exit(EXIT_UNREADABLE)
    if fmt == "json":
        click.echo(json.dumps(_as_json(capture, report), indent=2, ensure_ascii=False))
    else:
        for line in _as_text(capture, report):
            click.echo(line)
    sys.exit(EXIT_CLEAN if report.clean else EXIT_VIOLATIONS)


@contextmanager
def _open(path: str) -> Iterator[IO[bytes]]:
    # Streamed line by line: captures can be large, and every line is bounded by the message
    # size limit. "-" is standard input.
    if path == "-":
        yield sys.stdin.buffer
        return
    with open(path, "rb") as stream:
        yield stream


def _as_json(name: str, report: CaptureReport) -> dict[str, Any]:
    return {
        "capture": name,
        "revision": report.revision.value if report.revision else None,
        "messages": report.messages,
        "clean": report.clean,
        "findings": [finding.to_dict() for finding in report.findings],
    }


def _as_text(name: str, report: CaptureReport) -> list[str]:
    errors = sum(1 for f in report.findings if f.violation.severity.value == "error")
    warnings = len(report.findings) - errors
    revision = report.revision.value if report.revision else "unknown"
    lines = [
        f"{name}: {report.messages} messages, revision {revision}: "
        f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
    ]
    for finding in report.findings:
        where = " ".join(str(p) for p in (finding.line, finding.direction, finding.method) if p)
        violation = finding.violation
        level = "" if violation.severity.value == "error" else " (warning)"
        lines.append(f"  line {where}: {violation}{level}")
        for issue in violation.issues:
            lines.append(f"      {issue}")
    return lines


def _unreadable(fmt: str, name: str, message: str) -> None:
    if fmt == "json":
        click.echo(json.dumps({"capture": name, "error": message}))
    else:
        click.echo(f"{name}: unreadable: {message}")
