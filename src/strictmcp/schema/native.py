"""The default backend: jsonschema-rs, configured so that it can never fetch."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jsonschema_rs

from .backend import CompileOptions, RawIssue
from .codes import SchemaErrorCode
from .dialects import Dialect
from .errors import SchemaError
from .pointer import to_pointer
from .registry import Registry

_CLASSES: dict[Dialect, type[jsonschema_rs.Validator]] = {
    Dialect.DRAFT4: jsonschema_rs.Draft4Validator,
    Dialect.DRAFT6: jsonschema_rs.Draft6Validator,
    Dialect.DRAFT7: jsonschema_rs.Draft7Validator,
    Dialect.DRAFT2019_09: jsonschema_rs.Draft201909Validator,
    Dialect.DRAFT2020_12: jsonschema_rs.Draft202012Validator,
}
_DRAFTS = {
    Dialect.DRAFT4: jsonschema_rs.Draft4,
    Dialect.DRAFT6: jsonschema_rs.Draft6,
    Dialect.DRAFT7: jsonschema_rs.Draft7,
    Dialect.DRAFT2019_09: jsonschema_rs.Draft201909,
    Dialect.DRAFT2020_12: jsonschema_rs.Draft202012,
}
# Keywords whose false subschema means "this item or property is not allowed".
_FALSE_SCHEMA_KEYWORDS = frozenset(
    {
        "additionalProperties",
        "unevaluatedProperties",
        "items",
        "additionalItems",
        "unevaluatedItems",
    }
)
_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "prefixItems"})


class _Refused(LookupError):
    """Raised by the retriever: strictmcp resolves references only from memory."""


class NativeBackend:
    """jsonschema-rs: compiled in Rust, linear-time regexes by default, no network, no files."""

    name = "jsonschema-rs"

    def compile(self, schema: Any, options: CompileOptions) -> NativeSchema:
        """Compile, turning every refusal into a :class:`SchemaError` with a stable code."""
        requested: list[str] = []

        def refuse(uri: str) -> Any:
            requested.append(uri)
            raise _Refused(uri)

        kwargs: dict[str, Any] = {
            "validate_formats": options.formats,
            "retriever": refuse,
            "pattern_options": _pattern_options(options),
        }
        if options.format_checkers:
            kwargs["formats"] = dict(options.format_checkers)
        if options.registry is not None:
            kwargs["registry"] = options.registry.native(self.name, _native_registry)
        try:
            if isinstance(schema, dict) and "$schema" in schema:
                # Also follows a custom meta-schema from the registry to its vocabularies.
                validator = jsonschema_rs.validator_for(schema, **kwargs)
            else:
                validator = _CLASSES[options.dialect](schema, **kwargs)
        except jsonschema_rs.ValidationError as error:
            raise _schema_error(error, requested) from None
        except ValueError as error:
            raise SchemaError(SchemaErrorCode.INVALID, str(error).splitlines()[0]) from None
        return NativeSchema(validator)


class NativeSchema:
    """A jsonschema-rs validator behind the :class:`CompiledSchema` protocol."""

    preemptible = False

    def __init__(self, validator: jsonschema_rs.Validator) -> None:
        # The bound method itself: the hot path calls straight into Rust.
        self.is_valid = validator.is_valid
        self._validator = validator

    def iter_raw(self, instance: Any, *, first_only: bool = False) -> Iterator[RawIssue]:
        """Every failure as a :class:`RawIssue`; ``first_only`` stops the backend early."""
        if first_only:
            try:
                self._validator.validate(instance)
            except jsonschema_rs.ValidationError as first:
                yield from _explained(first)
            return
        for error in self._validator.iter_errors(instance):
            yield from _explained(error)


def _explained(error: jsonschema_rs.ValidationError) -> Iterator[RawIssue]:
    """The issue, or, for a failed anyOf/oneOf with one branch of the right kind, that
    branch's own issues: ``Optional[Model]`` then says which field is wrong, not just that
    neither branch matched. Iterative: hostile schemas nest such branches deeply."""
    pending = [error]
    while pending:
        current = pending.pop()
        branch = _plausible_branch(current)
        if branch is None:
            yield _raw_issue(current)
        else:
            pending.extend(reversed(branch))


def _plausible_branch(
    error: jsonschema_rs.ValidationError,
) -> list[jsonschema_rs.ValidationError] | None:
    kind = error.kind
    if not isinstance(
        kind,
        (jsonschema_rs.ValidationErrorKind.AnyOf, jsonschema_rs.ValidationErrorKind.OneOfNotValid),
    ):
        return None
    here = list(error.instance_path)
    plausible = [
        branch
        for branch in kind.context
        if not any(e.kind.name == "type" and list(e.instance_path) == here for e in branch)
    ]
    return plausible[0] if len(plausible) == 1 and plausible[0] else None


def _pattern_options(options: CompileOptions) -> Any:
    if options.backtracking:
        return jsonschema_rs.FancyRegexOptions(backtrack_limit=options.limits.backtrack_limit)
    # The regex crate matches in linear time and rejects lookaround and backreferences, which
    # is what makes `pattern` safe against catastrophic backtracking.
    return jsonschema_rs.RegexOptions()


def _native_registry(registry: Registry) -> Any:
    requested: list[str] = []

    def refuse(uri: str) -> Any:
        requested.append(uri)
        raise _Refused(uri)

    try:
        return jsonschema_rs.Registry(
            list(registry.items()), draft=_DRAFTS[registry.dialect], retriever=refuse
        )
    except ValueError as error:
        # jsonschema-rs resolves every reference of every document up front, so this fails
        # every compile that uses the registry; it must still be a SchemaError, not a raw
        # ValueError carrying the backend's wording.
        message = str(error).splitlines()[0]
        if requested:
            # Earlier requests may have been tolerated (an unknown `$schema` is looked up and
            # then ignored): the one that failed is named in the message, else it is the last.
            found = _RESOURCE_RE.search(message)
            uri = found.group(1) if found else requested[-1]
            raise SchemaError(
                SchemaErrorCode.EXTERNAL_REF,
                f"a document in the registry references {uri!r}, which is not in the registry "
                f"when its documents are read as {registry.dialect.short_name}; "
                "strictmcp never fetches references",
                detail=uri,
            ) from None
        raise SchemaError(
            SchemaErrorCode.INVALID, f"the registry's documents cannot be loaded: {message}"
        ) from None


def _raw_issue(error: jsonschema_rs.ValidationError) -> RawIssue:
    kind = error.kind
    # The backend names a backtracking failure after the `pattern` keyword it happened in;
    # it is not a mismatch, and must not read like one.
    keyword = (
        "pattern:backtrack"
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.BacktrackLimitExceeded)
        else kind.name
    )
    schema_path = tuple(error.schema_path)
    detail: dict[str, Any] = {}
    if keyword == "falseSchema":
        keyword = _false_schema_keyword(schema_path)
    elif keyword == "propertyNames":
        inner = kind.as_dict()["error"]
        detail["reason"] = inner.kind.name
        schema_path = schema_path[:1] if schema_path else schema_path
    elif keyword in ("anyOf", "oneOf"):
        detail["branches"] = len(kind.as_dict()["context"])
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.OneOfMultipleValid):
            keyword = "oneOf:multiple"
    elif keyword == "referencing":
        keyword = "$ref"
    elif keyword not in ("not", "custom"):
        detail = kind.as_dict()
    if schema_path and isinstance(schema_path[-1], str) and keyword in ("contains", "required"):
        # minContains/maxContains and dependentRequired report under their parent keyword.
        keyword = schema_path[-1]
    return RawIssue(
        keyword=keyword,
        instance_path=tuple(error.instance_path),
        schema_path=schema_path,
        evaluation_path=tuple(error.evaluation_path),
        detail=detail,
        value=error.instance,
    )


def _false_schema_keyword(schema_path: tuple[str | int, ...]) -> str:
    if not schema_path:
        return "falseSchema"
    last = schema_path[-1]
    named = len(schema_path) >= 2 and schema_path[-2] in _NAME_MAPS
    if isinstance(last, str) and last in _FALSE_SCHEMA_KEYWORDS and not named:
        return last
    return "falseSchema"


_RESOURCE_RE = re.compile(r"Resource '([^']*)'")
_MISSING_RE = re.compile(r"(Pointer|Anchor) '([^']*)' does not exist")
# Lookaround, backreferences (numbered or named): what only a backtracking engine can run.
_BACKTRACKING_SYNTAX = re.compile(r"\(\?<?[=!]|\\[1-9]|\\k<")


def _schema_error(error: jsonschema_rs.ValidationError, requested: list[str]) -> SchemaError:
    message = str(error.message).splitlines()[0]
    location = to_pointer(error.instance_path)
    if requested:
        return SchemaError(
            SchemaErrorCode.EXTERNAL_REF,
            f"reference to {requested[0]!r} is outside this schema and its registry; "
            "strictmcp never fetches references",
            location=location,
            detail=requested[0],
        )
    kind = error.kind
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Referencing):
        if message.startswith("Unknown meta-schema"):
            return SchemaError(SchemaErrorCode.UNKNOWN_DIALECT, message, location="/$schema")
        found = _RESOURCE_RE.search(message)
        if found:
            # Only bundled meta-schemas resolve without the registry; anything else is outside.
            return SchemaError(
                SchemaErrorCode.EXTERNAL_REF,
                f"reference to {found.group(1)!r} cannot be resolved from memory; "
                "strictmcp never fetches references",
                location=location,
                detail=found.group(1),
            )
        missing = _MISSING_RE.search(message)
        return SchemaError(
            SchemaErrorCode.UNRESOLVABLE_REF,
            message,
            location=location,
            detail="#" + missing.group(2) if missing else None,
        )
    pattern = _failed_pattern(error)
    if pattern is not None:
        return _pattern_error(pattern, location)
    return SchemaError(SchemaErrorCode.INVALID, message, location=location)


def _failed_pattern(error: jsonschema_rs.ValidationError) -> str | None:
    kind = error.kind
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.PropertyNames):
        kind = kind.error.kind
        if isinstance(kind, jsonschema_rs.ValidationErrorKind.Format) and kind.format == "regex":
            path = error.instance_path
            return str(path[-1]) if path else None
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Format) and kind.format == "regex":
        return error.instance if isinstance(error.instance, str) else None
    return None


def _pattern_error(pattern: str, location: str) -> SchemaError:
    try:
        jsonschema_rs.validator_for(
            {"pattern": pattern}, pattern_options=jsonschema_rs.FancyRegexOptions()
        )
    except jsonschema_rs.ValidationError:
        return SchemaError(
            SchemaErrorCode.INVALID_PATTERN,
            f"pattern {pattern!r} is not a valid regular expression",
            location=location,
            detail=pattern,
        )
    if not _BACKTRACKING_SYNTAX.search(pattern):
        return SchemaError(
            SchemaErrorCode.PATTERN_TOO_COMPLEX,
            f"pattern {pattern!r} compiles to more states than the linear-time engine allows "
            "(nested counted repetitions multiply); write a smaller pattern",
            location=location,
            detail=pattern,
        )
    return SchemaError(
        SchemaErrorCode.PATTERN_NEEDS_BACKTRACKING,
        f"pattern {pattern!r} needs a backtracking regex engine (lookaround or backreferences); "
        "allow it explicitly with backtracking=True, which bounds its steps",
        location=location,
        detail=pattern,
    )
