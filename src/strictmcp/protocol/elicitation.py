"""Elicitation (``elicitation/create``): the restricted schemas a server may request, the
content a client sends back, and the defaults a client may fill in (SEP-1034).

Form-mode elicitation allows only a flat object whose properties are primitive fields, so
that any client can render it as a form. The keyword sets below are exactly those of each
revision's ``PrimitiveSchemaDefinition`` and ``requestedSchema`` in the specification's
``schema.json``. That schema does not forbid other keywords, but a client that renders a form
cannot honour them, so here they are refused: a keyword that constrains values (``pattern``,
``$ref``, nesting, ...) as an error, a mere annotation (``title`` where none is defined,
``examples``, ...) as a warning.

In 2026-07-28 an elicitation travels inside an ``InputRequiredResult``; every check takes
``at``, the JSON Pointer of the part it checks, so that violations point into that message.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeGuard

from ..schema import Issue, SchemaError, compile_schema, quote_name, to_pointer
from .revisions import Revision
from .rules import Rule
from .violations import Severity, Violation

_FIRST = Revision.V2025_06_18  # elicitation itself
# SEP-1034 (defaults on every field), SEP-1330 (titled and multi-select enums), `$schema`.
_RICHER = Revision.V2025_11_25

# Keywords that only describe a field: a client that ignores them still collects valid data.
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        # Every keyword allowed here means the same in every dialect.
        "$schema",
    }
)


def _is_string(value: Any) -> bool:
    return isinstance(value, str)


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _is_strings(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_object(value: Any) -> bool:
    return isinstance(value, Mapping)


@dataclass(frozen=True)
class _Keyword:
    """What one keyword may hold, and since which revision.

    A keyword holds either a plain value that ``accepts`` judges, or an object of ``shape``
    (an array of such objects when ``each``).
    """

    expected: str
    accepts: Callable[[Any], bool] = _is_object
    since: Revision = _FIRST
    shape: _Shape | None = None
    each: bool = False


@dataclass(frozen=True)
class _Shape:
    """An object with a closed set of keywords: one restricted form, or a part of one."""

    label: str
    keywords: Mapping[str, _Keyword]
    required: tuple[str, ...] = ()
    since: Revision = _FIRST


def _one_of(*allowed: str) -> _Keyword:
    quoted = ", ".join(f'"{value}"' for value in allowed)
    return _Keyword(
        quoted if len(allowed) == 1 else f"one of {quoted}",
        lambda value: isinstance(value, str) and value in allowed,
    )


_TEXT = _Keyword("a string", _is_string)
_COUNT = _Keyword("an integer", _is_integer)
_BOUND = _Keyword("a number", _is_number)
_STRINGS = _Keyword("an array of strings", _is_strings)
_TEXT_SINCE_RICHER = _Keyword("a string", _is_string, since=_RICHER)
_LABELS = {"title": _TEXT, "description": _TEXT}
_OPTIONS = _Keyword(
    "an array of options",
    shape=_Shape("an option", {"const": _TEXT, "title": _TEXT}, required=("const", "title")),
    each=True,
)

_STRING = _Shape(
    "a string field",
    {
        "type": _one_of("string"),
        **_LABELS,
        "minLength": _COUNT,
        "maxLength": _COUNT,
        "format": _one_of("date", "date-time", "email", "uri"),
        "default": _TEXT_SINCE_RICHER,
    },
    required=("type",),
)
_NUMBER = _Shape(
    "a number field",
    {
        "type": _one_of("integer", "number"),
        **_LABELS,
        "minimum": _BOUND,
        "maximum": _BOUND,
        "default": _Keyword("a number", _is_number, since=_RICHER),
    },
    required=("type",),
)
_BOOLEAN = _Shape(
    "a boolean field",
    {"type": _one_of("boolean"), **_LABELS, "default": _Keyword("a boolean", _is_boolean)},
    required=("type",),
)
# 2025-06-18's EnumSchema; from 2025-11-25 the untitled single-select enum, and with
# `enumNames` the legacy titled one. The untitled form's keywords are a subset of the legacy
# form's, so one shape accepts exactly their union.
_SINGLE_SELECT = _Shape(
    "a single-select enum",
    {
        "type": _one_of("string"),
        **_LABELS,
        "enum": _STRINGS,
        "enumNames": _STRINGS,
        "default": _TEXT_SINCE_RICHER,
    },
    required=("type", "enum"),
)
_TITLED_SINGLE_SELECT = _Shape(
    "a titled single-select enum",
    {"type": _one_of("string"), **_LABELS, "oneOf": _OPTIONS, "default": _TEXT},
    required=("type", "oneOf"),
    since=_RICHER,
)


def _multi_select(label: str, items: _Shape) -> _Shape:
    return _Shape(
        label,
        {
            "type": _one_of("array"),
            **_LABELS,
            "items": _Keyword("an object", shape=items),
            "minItems": _COUNT,
            "maxItems": _COUNT,
            "default": _STRINGS,
        },
        required=("type", "items"),
        since=_RICHER,
    )


_MULTI_SELECT = _multi_select(
    "a multi-select enum",
    _Shape(
        "the items of a multi-select enum",
        {"type": _one_of("string"), "enum": _STRINGS},
        required=("type", "enum"),
    ),
)
_TITLED_MULTI_SELECT = _multi_select(
    "a titled multi-select enum",
    _Shape("the items of a titled multi-select enum", {"anyOf": _OPTIONS}, required=("anyOf",)),
)

_REQUESTED_SCHEMA = _Shape(
    "a requested schema",
    {
        "type": _one_of("object"),
        "properties": _Keyword("an object", _is_object),
        "required": _STRINGS,
        "$schema": _TEXT_SINCE_RICHER,
    },
    required=("type", "properties"),
)


def _form_of(schema: Mapping[str, Any]) -> _Shape | None:
    """The restricted form a property claims to be, from its type and telltale keyword."""
    kind = schema.get("type")
    if kind == "string":
        if "enum" in schema:
            return _SINGLE_SELECT
        return _TITLED_SINGLE_SELECT if "oneOf" in schema else _STRING
    if kind in ("integer", "number"):
        return _NUMBER
    if kind == "boolean":
        return _BOOLEAN
    if kind == "array":
        items = schema.get("items")
        titled = isinstance(items, Mapping) and "anyOf" in items
        return _TITLED_MULTI_SELECT if titled else _MULTI_SELECT
    return None


def _unsupported(message: str, pointer: str, severity: Severity = Severity.ERROR) -> Violation:
    return Violation(Rule.ELICITATION_SCHEMA_UNSUPPORTED, message, pointer, severity)


def _check_shape(
    node: Any, shape: _Shape, prefix: str, pointer: str, revision: Revision
) -> list[Violation]:
    """Every way ``node`` strays from ``shape`` in ``revision``; messages start with ``prefix``."""
    if not isinstance(node, Mapping):
        return [_unsupported(f"{prefix}{shape.label} must be an object", pointer)]
    found: list[Violation] = []
    for key, value in node.items():
        keyword = shape.keywords.get(key)
        at = pointer + to_pointer([key])
        named = f"{prefix}{quote_name(key)} in {shape.label}"
        lenient = Severity.WARNING if key in _ANNOTATIONS else Severity.ERROR
        if keyword is None:
            found.append(_unsupported(f"{named} is not allowed", at, lenient))
        elif not revision.at_least(keyword.since):
            found.append(
                _unsupported(
                    f"{named} needs revision {keyword.since.value} or later, not {revision.value}",
                    at,
                    lenient,
                )
            )
        elif keyword.shape is None:
            if not keyword.accepts(value):
                found.append(_unsupported(f"{named} must be {keyword.expected}", at))
        elif not keyword.each:
            found += _check_shape(value, keyword.shape, prefix, at, revision)
        elif not isinstance(value, list):
            found.append(_unsupported(f"{named} must be {keyword.expected}", at))
        else:
            for index, item in enumerate(value):
                found += _check_shape(item, keyword.shape, prefix, f"{at}/{index}", revision)
    found.extend(
        _unsupported(f"{prefix}{shape.label} needs {quote_name(key)}", pointer)
        for key in shape.required
        if key not in node
    )
    return found


def _check_property(name: str, schema: Any, pointer: str, revision: Revision) -> list[Violation]:
    prefix = f"property {quote_name(name)}: "
    form = _form_of(schema) if isinstance(schema, Mapping) else None
    if form is None:
        has_type = isinstance(schema, Mapping) and "type" in schema
        kinds = (
            '"string", "number", "integer", "boolean" or "array" (a multi-select enum)'
            if revision.at_least(_MULTI_SELECT.since)
            else '"string", "number", "integer" or "boolean"'
        )
        return [
            _unsupported(
                f"property {quote_name(name)} must be a flat primitive field: its type must be "
                f"{kinds}",
                pointer + "/type" if has_type else pointer,
            )
        ]
    if not revision.at_least(form.since):
        return [
            _unsupported(
                f"{prefix}{form.label} needs revision {form.since.value} or later, "
                f"not {revision.value}",
                pointer,
            )
        ]
    found = _check_shape(schema, form, prefix, pointer, revision)
    if form is _SINGLE_SELECT:
        found += _check_enum_names(schema, prefix, pointer)
    return found


def _check_enum_names(schema: Mapping[str, Any], prefix: str, pointer: str) -> list[Violation]:
    """``enumNames`` are the display names of ``enum``'s values, one for each: a list of
    another length leaves values unnamed or names nothing, and a client that pairs them by
    position shows the user a wrong label."""
    values, names = schema.get("enum"), schema.get("enumNames")
    if not _is_strings(values) or not _is_strings(names) or len(values) == len(names):
        return []
    message = (
        f"{prefix}enumNames has {len(names)} names for {len(values)} enum values: "
        "it must name each value once, in order"
    )
    return [Violation(Rule.ELICITATION_ENUM_NAMES_MISMATCH, message, f"{pointer}/enumNames")]


def _not_in_revision(revision: Revision) -> Violation:
    return Violation(
        Rule.METHOD_NOT_IN_REVISION,
        f"revision {revision.value} has no elicitation; it came in {_FIRST.value}",
    )


def check_requested_schema(
    schema: Any, revision: Revision, *, at: str = "/params/requestedSchema"
) -> list[Violation]:
    """Check a form-mode ``requestedSchema`` against the restricted subset ``revision`` allows.

    Each property must be one of the primitive forms: a string (``minLength``, ``maxLength``,
    ``format`` of ``email``/``uri``/``date``/``date-time``), a number or integer (``minimum``,
    ``maximum``), a boolean, a single-select enum (``enum``, optionally ``enumNames``), and
    from 2025-11-25 a titled single-select enum (``oneOf`` of ``{const, title}``) and untitled
    or titled multi-select enums (``type: array``); all with ``title`` and ``description``.
    ``default`` is allowed on booleans from 2025-06-18 and on every form from 2025-11-25.

    ``enumNames`` of another length than ``enum`` is
    :attr:`Rule.ELICITATION_ENUM_NAMES_MISMATCH`.
    Anything else is :attr:`Rule.ELICITATION_SCHEMA_UNSUPPORTED` at the offending keyword, as
    is a ``required`` name that no property declares and a schema the engine cannot compile.
    A ``default`` its own field refuses is reported as a warning. ``at`` is where the schema
    sits in the message. In revisions without elicitation the request itself is refused with
    :attr:`Rule.METHOD_NOT_IN_REVISION`.
    """
    if not revision.has_elicitation:
        return [_not_in_revision(revision)]
    found = _check_shape(schema, _REQUESTED_SCHEMA, "", at, revision)
    if not isinstance(schema, Mapping):
        return found
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, subschema in properties.items():
            found += _check_property(
                name, subschema, at + to_pointer(["properties", name]), revision
            )
        required = schema.get("required")
        if _is_strings(required):
            found.extend(
                _unsupported(
                    f"required property {quote_name(name)} is not declared in the requested "
                    "schema, so no form could ever supply it",
                    f"{at}/required/{index}",
                )
                for index, name in enumerate(required)
                if name not in properties
            )
    if any(v.severity is Severity.ERROR for v in found):
        # One mistake is reported once: the engine would only refuse it again.
        return found
    try:
        compile_schema(schema)
    except SchemaError as error:
        return [
            *found,
            _unsupported(
                f"requested schema does not compile ({error.code.value})", at + error.location
            ),
        ]
    found.extend(
        _refused_default(name, issues, at) for name, issues in _refused_defaults(schema).items()
    )
    return found


def _refused_default(name: str, issues: tuple[Issue, ...], at: str) -> Violation:
    return Violation(
        Rule.ELICITATION_SCHEMA_UNSUPPORTED,
        f"property {quote_name(name)}: its default does not satisfy the field itself",
        at + to_pointer(["properties", name, "default"]),
        Severity.WARNING,
        issues,
    )


def _refused_defaults(schema: Mapping[str, Any]) -> dict[str, tuple[Issue, ...]]:
    """The declared defaults that their own field refuses, with the engine's issues.

    Raises :class:`SchemaError` when the schema does not compile.
    """
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    defaults = {
        name: field_schema["default"]
        for name, field_schema in properties.items()
        if isinstance(field_schema, Mapping) and "default" in field_schema
    }
    if not defaults:
        return {}
    # The schema without `required`: only each default against its own field is in question.
    fields_only = {key: value for key, value in schema.items() if key != "required"}
    result = compile_schema(fields_only).validate(defaults)
    refused: dict[str, list[Issue]] = {}
    for issue in result.issues:
        if not issue.instance_path:
            # A failure of the whole object (an engine bound, or a keyword on the object
            # itself) cannot be pinned on one default, so it condemns them all.
            for name in defaults:
                refused.setdefault(name, []).append(issue)
            continue
        # Re-rooted at the default itself, where the violation points.
        token, _, rest = issue.instance_path[1:].partition("/")
        name = token.replace("~1", "/").replace("~0", "~")
        relative = "/" + rest if rest else ""
        refused.setdefault(name, []).append(replace(issue, instance_path=relative))
    return {name: tuple(issues) for name, issues in refused.items()}


def check_elicit_result(
    requested_schema: Any,
    result: Mapping[str, Any],
    revision: Revision,
    *,
    mode: Literal["form", "url"] = "form",
    at: str = "/result",
) -> list[Violation]:
    """Check an ``ElicitResult`` against the request it answers.

    For ``action: "accept"`` in form mode, ``content`` (absent counts as ``{}``) must validate
    against ``requested_schema``: :attr:`Rule.ELICITATION_RESPONSE_INVALID` with the engine's
    value-free issues otherwise. URL mode (2025-11-25+) returns no content: the data goes to the
    server out of band, so content there is an error; ``requested_schema`` is then unused. With
    ``decline`` and ``cancel`` the specification says content is "typically omitted", so
    content there is a warning. A ``requested_schema`` that does not compile cannot be checked
    against, which is a warning here (:func:`check_requested_schema` reports the schema).
    """
    if not revision.has_elicitation:
        return [_not_in_revision(revision)]
    action = result.get("action")
    content_at = at + "/content"
    if action in ("decline", "cancel"):
        if "content" not in result:
            return []
        return [
            Violation(
                Rule.ELICITATION_RESPONSE_INVALID,
                f'content is sent only with action "accept", not "{action}"',
                content_at,
                Severity.WARNING,
            )
        ]
    if action != "accept":
        return []
    if mode == "url":
        if "content" not in result:
            return []
        return [
            Violation(
                Rule.ELICITATION_RESPONSE_INVALID,
                "a URL-mode elicitation returns no content: the user's data goes to the server "
                "out of band, never through the client",
                content_at,
            )
        ]
    try:
        validator = compile_schema(requested_schema)
    except SchemaError as error:
        return [
            Violation(
                Rule.ELICITATION_RESPONSE_INVALID,
                f"content not checked: the requested schema does not compile ({error.code.value})",
                content_at,
                Severity.WARNING,
            )
        ]
    checked = validator.validate(result.get("content", {}))
    if checked.valid:
        return []
    return [
        Violation(
            Rule.ELICITATION_RESPONSE_INVALID,
            "accepted content does not match the requested schema",
            content_at,
            issues=checked.issues,
        )
    ]


@dataclass(frozen=True)
class AppliedDefaults:
    """What :func:`apply_defaults` did.

    ``content``: a new dict, the input plus every applied default. ``applied``: the names of
    the properties filled in. ``refused``: one warning per default left out because its own
    field refuses it, pointing at that default in the request and carrying the engine's issues.
    """

    content: dict[str, Any]
    applied: tuple[str, ...] = ()
    refused: tuple[Violation, ...] = ()


def apply_defaults(
    requested_schema: Mapping[str, Any],
    content: Mapping[str, Any],
    *,
    at: str = "/params/requestedSchema",
) -> AppliedDefaults:
    """Fill each property missing from accepted ``content`` with its ``default`` (SEP-1034).

    For a client answering a form-mode elicitation with ``action: "accept"``, and only if it
    opted in. The specification's ``ClientCapabilities`` defines no flag for this:
    ``elicitation.form`` is an open object, and the TypeScript SDK's client reads its own
    ``capabilities.elicitation.form.applyDefaults``. strictmcp leaves that choice to the caller.

    Never mutates its inputs; applied defaults are copies. A default that its own field
    refuses (wrong type, not among the options, bad format, ...) is not applied and is
    reported in :attr:`AppliedDefaults.refused`. Present properties are never overwritten,
    even when null. Raises :class:`~strictmcp.schema.SchemaError` when ``requested_schema``
    does not compile; check it first with :func:`check_requested_schema`.
    """
    filled = dict(content)
    properties = requested_schema.get("properties")
    if not isinstance(properties, Mapping):
        return AppliedDefaults(filled)
    refused_issues = _refused_defaults(requested_schema)
    applied: list[str] = []
    refused: list[Violation] = []
    for name, field_schema in properties.items():
        if name in filled or not isinstance(field_schema, Mapping) or "default" not in field_schema:
            continue
        issues = refused_issues.get(name)
        if issues is None:
            filled[name] = copy.deepcopy(field_schema["default"])
            applied.append(name)
        else:
            refused.append(_refused_default(name, issues, at))
    return AppliedDefaults(filled, tuple(applied), tuple(refused))
