"""``strictmcp schema``: validate instances against a schema, or check a schema itself."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .dialects import DEFAULT_DIALECT, Dialect
from .errors import SchemaError
from .jsonio import JSONInputError, load_json
from .limits import Limits
from .validator import Validator, compile_schema

EXIT_VALID, EXIT_INVALID, EXIT_UNREADABLE = 0, 1, 2
_LIMITS = Limits()
_DIALECTS = [d.short_name for d in Dialect]


def _read(path: str) -> Any:
    """Load a JSON file, or raise JSONInputError; the message never includes file contents."""
    try:
        data = Path(path).read_bytes() if path != "-" else sys.stdin.buffer.read()
    except OSError as error:
        raise JSONInputError("unreadable", f"cannot read: {error.strerror}") from None
    return load_json(data, max_size=_LIMITS.max_instance_size), len(data)


def _compile(path: str, dialect: str, formats: bool, backtracking: bool) -> Validator:
    schema, _ = _read(path)
    return compile_schema(
        schema,
        default_dialect=Dialect.from_name(dialect),
        formats=formats,
        backtracking=backtracking,
    )


def _emit(fmt: str, report: dict[str, Any], lines: list[str]) -> None:
    if fmt == "json":
        click.echo(json.dumps(report, indent=2, ensure_ascii=False, default=str))
    else:
        for line in lines:
            click.echo(line)


format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Human-readable text, or one JSON document.",
)
_dialect_option = click.option(
    "--dialect",
    type=click.Choice(_DIALECTS),
    default=DEFAULT_DIALECT.short_name,
    show_default=True,
    help="Dialect for a schema without $schema.",
)
_formats_option = click.option(
    "--formats/--no-formats",
    default=True,
    show_default=True,
    help="Assert `format` (email, uri, date-time, ...) or treat it as an annotation.",
)
_backtracking_option = click.option(
    "--backtracking",
    is_flag=True,
    help="Allow lookaround and backreferences in patterns (bounded backtracking).",
)


@click.group()
def schema() -> None:
    """Validate JSON against a JSON Schema, or check that a schema is valid and safe."""


@schema.command()
@click.argument("schema_file", metavar="SCHEMA")
@click.argument("instances", metavar="INSTANCE...", nargs=-1, required=True)
@format_option
@_dialect_option
@_formats_option
@_backtracking_option
@click.option("--show-values", is_flag=True, help="Include failing values (may print secrets).")
def validate(
    schema_file: str,
    instances: tuple[str, ...],
    fmt: str,
    dialect: str,
    formats: bool,
    backtracking: bool,
    show_values: bool,
) -> None:
    """Validate each INSTANCE file against SCHEMA.

    Exit status: 0 all valid, 1 some invalid, 2 a file could not be read or the schema was
    refused. Use - to read one document from standard input.
    """
    try:
        validator = _compile(schema_file, dialect, formats, backtracking)
    except (JSONInputError, SchemaError) as error:
        _refused(fmt, schema_file, error)
        sys.exit(EXIT_UNREADABLE)
    status = EXIT_VALID
    results: list[dict[str, Any]] = []
    lines: list[str] = []
    for path in instances:
        try:
            instance, size = _read(path)
        except JSONInputError as error:
            status = EXIT_UNREADABLE
            results.append({"instance": path, "error": {"code": error.code, "message": str(error)}})
            lines.append(f"{path}: unreadable: {error} [{error.code}]")
            continue
        result = validator.validate(instance, json_size=size, show_values=show_values)
        results.append({"instance": path, **result.to_dict()})
        if result.valid:
            lines.append(f"{path}: valid")
            continue
        status = max(status, EXIT_INVALID)
        count = f"{len(result.issues)}{'+' if result.truncated else ''}"
        lines.append(f"{path}: invalid ({count} issue{'s' if count != '1' else ''})")
        for issue in result.issues:
            value = f" (value: {json.dumps(issue.value)})" if show_values else ""
            lines.append(f"  {issue}{value}")
    _emit(
        fmt,
        {"schema": schema_file, "dialect": validator.dialect.short_name, "results": results},
        lines,
    )
    sys.exit(status)


@schema.command()
@click.argument("schema_file", metavar="SCHEMA")
@format_option
@_dialect_option
@_backtracking_option
def check(schema_file: str, fmt: str, dialect: str, backtracking: bool) -> None:
    """Check that SCHEMA is valid, safe and self-contained.

    It must be valid against its meta-schema, declare a known dialect, reach no reference
    outside itself, stay within the engine's bounds, and use only linear-time patterns (unless
    --backtracking). Exit status: 0 ok, 1 refused, 2 unreadable.
    """
    try:
        validator = _compile(schema_file, dialect, True, backtracking)
    except JSONInputError as error:
        _refused(fmt, schema_file, error)
        sys.exit(EXIT_UNREADABLE)
    except SchemaError as error:
        _refused(fmt, schema_file, error)
        sys.exit(EXIT_INVALID)
    profile = validator.profile
    notes = []
    if profile.recursive:
        notes.append("recursive: every instance's depth is checked before validation")
    if profile.fanout > 1:
        notes.append(
            f"recursion branches {profile.fanout} ways: failures deeper than the explain budget "
            "are reported without details"
        )
    report = {
        "schema": schema_file,
        "ok": True,
        "dialect": validator.dialect.short_name,
        "depth": profile.depth,
        "subschemas": profile.subschemas,
        "references": profile.refs,
        "recursive": profile.recursive,
        "notes": notes,
    }
    summary = (
        f"{schema_file}: ok ({validator.dialect.short_name}, depth {profile.depth}, "
        f"{profile.subschemas} subschemas, {profile.refs} references"
        f"{', recursive' if profile.recursive else ''})"
    )
    _emit(fmt, report, [summary, *(f"  note: {note}" for note in notes)])


def _refused(fmt: str, path: str, error: JSONInputError | SchemaError) -> None:
    if isinstance(error, SchemaError):
        detail: dict[str, Any] = error.to_dict()
        text = f"{path}: schema refused: {error}"
    else:
        detail = {"code": error.code, "message": error.message}
        text = f"{path}: unreadable: {error.message} [{error.code}]"
    _emit(fmt, {"schema": path, "ok": False, "error": detail}, [text])
