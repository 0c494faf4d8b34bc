"""Elicitation: restricted requested schemas per revision, elicit results, SEP-1034 defaults.

The specification's own schemas (``../shared/mcp-schema/<rev>/schema.json``) are the oracle:
every form the checker accepts must be valid against that revision's definition.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_schema_support import EXAMPLES, definitions, validator
from strictmcp.protocol import (
    LATEST,
    Revision,
    Rule,
    Severity,
    Violation,
    apply_defaults,
    check_elicit_result,
    check_requested_schema,
    errors,
)
from strictmcp.schema import IssueCode, SchemaError

ELICITATION = [Revision.V2025_06_18, Revision.V2025_11_25, Revision.V2026_07_28]
RICHER = [Revision.V2025_11_25, Revision.V2026_07_28]
BEFORE = [Revision.V2024_11_05, Revision.V2025_03_26]


def example(kind: str, name: str) -> Any:
    return json.loads((EXAMPLES / kind / name).read_text())


def examples(kind: str) -> list[Any]:
    return [json.loads(path.read_text()) for path in sorted((EXAMPLES / kind).glob("*.json"))]


def form(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def spec_accepts(requested_schema: Any, revision: Revision) -> bool:
    """Whether the revision's own schema accepts form-mode params with ``requested_schema``."""
    params = {"message": "m", "requestedSchema": requested_schema}
    if "ElicitRequestFormParams" in definitions(revision):
        return validator(revision, "ElicitRequestFormParams").is_valid(params)
    # 2025-06-18 defines the params only inside the request.
    request = {"method": "elicitation/create", "params": params}
    return validator(revision, "ElicitRequest").is_valid(request)


def only(violations: list[Violation]) -> Violation:
    assert len(violations) == 1, [str(v) for v in violations]
    return violations[0]


def rendered(violations: list[Violation]) -> str:
    return json.dumps([v.to_dict() for v in violations])


# --- the specification's examples are valid ---------------------------------------------------


@pytest.mark.parametrize("revision", ELICITATION)
@pytest.mark.parametrize("params", examples("ElicitRequestFormParams"))
def test_example_form_params_are_supported(params: Any, revision: Revision) -> None:
    assert check_requested_schema(params["requestedSchema"], revision) == []


@pytest.mark.parametrize("revision", ELICITATION)
def test_example_elicit_request_is_supported(revision: Revision) -> None:
    request = example("ElicitRequest", "elicitation-request.json")
    assert check_requested_schema(request["params"]["requestedSchema"], revision) == []


FIELD_EXAMPLES = [
    "StringSchema",
    "NumberSchema",
    "BooleanSchema",
    "UntitledSingleSelectEnumSchema",
    "TitledSingleSelectEnumSchema",
    "UntitledMultiSelectEnumSchema",
    "TitledMultiSelectEnumSchema",
]


@pytest.mark.parametrize("revision", RICHER)
@pytest.mark.parametrize("kind", FIELD_EXAMPLES)
def test_example_fields_are_supported_from_2025_11_25(kind: str, revision: Revision) -> None:
    for field_schema in examples(kind):
        requested = form(field=field_schema)
        assert check_requested_schema(requested, revision) == []
        assert spec_accepts(requested, revision)


@pytest.mark.parametrize(
    ("kind", "severity"),
    [
        ("BooleanSchema", None),  # 2025-06-18 already had boolean defaults
        ("StringSchema", Severity.WARNING),  # `default` on strings and numbers is SEP-1034
        ("NumberSchema", Severity.WARNING),
        ("UntitledSingleSelectEnumSchema", Severity.WARNING),
        ("TitledSingleSelectEnumSchema", Severity.ERROR),  # SEP-1330's forms
        ("UntitledMultiSelectEnumSchema", Severity.ERROR),
        ("TitledMultiSelectEnumSchema", Severity.ERROR),
    ],
)
def test_example_fields_in_2025_06_18(kind: str, severity: Severity | None) -> None:
    (field_schema,) = examples(kind)
    found = check_requested_schema(form(field=field_schema), Revision.V2025_06_18)
    if severity is None:
        assert found == []
        return
    violation = only(found)
    assert violation.rule is Rule.ELICITATION_SCHEMA_UNSUPPORTED
    assert violation.severity is severity
    assert "needs revision 2025-11-25 or later" in violation.message


def test_input_required_result_elicitations_point_into_the_result() -> None:
    result = example(
        "InputRequiredResult",
        "input-required-result-with-elicitation-and-sampling-and-request-state.json",
    )
    checked = 0
    for key, request in result["inputRequests"].items():
        if request["method"] == "elicitation/create":
            at = f"/result/inputRequests/{key}/params/requestedSchema"
            schema = request["params"]["requestedSchema"]
            assert check_requested_schema(schema, Revision.V2026_07_28, at=at) == []
            broken = {**schema, "additionalProperties": False}
            violation = only(check_requested_schema(broken, Revision.V2026_07_28, at=at))
            assert violation.pointer == f"{at}/additionalProperties"
            checked += 1
    assert checked == 1


def test_input_requests_and_responses_pair_up() -> None:
    requests = example("InputRequests", "elicitation-and-sampling-input-requests.json")
    responses = example("InputResponses", "elicitation-and-sampling-input-responses.json")
    schema = requests["github_login"]["params"]["requestedSchema"]
    assert check_requested_schema(schema, Revision.V2026_07_28) == []
    at = "/params/inputResponses/github_login"
    assert check_elicit_result(schema, responses["github_login"], Revision.V2026_07_28, at=at) == []
    refused = check_elicit_result(schema, {"action": "accept"}, Revision.V2026_07_28, at=at)
    assert only(refused).pointer == f"{at}/content"


# --- unsupported schemas --------------------------------------------------------------------

UNSUPPORTED = [
    # (field schema, pointer below /properties/field, severity)
    ({"type": "object", "properties": {"x": {"type": "string"}}}, "/type", Severity.ERROR),
    ({"$ref": "#/$defs/Name"}, "", Severity.ERROR),
    ({"type": "string", "$ref": "#/$defs/Name"}, "/$ref", Severity.ERROR),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "", Severity.ERROR),
    ({"type": ["string", "null"]}, "/type", Severity.ERROR),
    ({"type": "null"}, "/type", Severity.ERROR),
    (True, "", Severity.ERROR),
    ({"type": "string", "pattern": "^[a-z]+$"}, "/pattern", Severity.ERROR),
    ({"type": "string", "format": "phone"}, "/format", Severity.ERROR),
    ({"type": "string", "format": 7}, "/format", Severity.ERROR),
    ({"type": "string", "minLength": "3"}, "/minLength", Severity.ERROR),
    ({"type": "string", "maxLength": 2.5}, "/maxLength", Severity.ERROR),
    ({"type": "integer", "exclusiveMinimum": 0}, "/exclusiveMinimum", Severity.ERROR),
    ({"type": "number", "minimum": "0"}, "/minimum", Severity.ERROR),
    ({"type": "number", "multipleOf": 2}, "/multipleOf", Severity.ERROR),
    ({"type": "boolean", "default": "yes"}, "/default", Severity.ERROR),
    ({"type": "string", "enum": ["a", 1]}, "/enum", Severity.ERROR),
    ({"type": "string", "enum": "a"}, "/enum", Severity.ERROR),
    ({"type": "string", "enum": ["a"], "enumNames": [1]}, "/enumNames", Severity.ERROR),
    ({"type": "string", "enum": ["a"], "format": "email"}, "/format", Severity.ERROR),
    ({"type": "string", "oneOf": [{"const": "a"}]}, "/oneOf/0", Severity.ERROR),
    ({"type": "string", "oneOf": [{"const": 1, "title": "One"}]}, "/oneOf/0/const", Severity.ERROR),
    (
        {"type": "string", "oneOf": [{"const": "a", "title": "A", "type": "string"}]},
        "/oneOf/0/type",
        Severity.ERROR,
    ),
    ({"type": "string", "oneOf": {"const": "a", "title": "A"}}, "/oneOf", Severity.ERROR),
    ({"type": "string", "oneOf": ["a"]}, "/oneOf/0", Severity.ERROR),
    (
        {"type": "string", "oneOf": [{"const": "a", "title": "A", "description": "d"}]},
        "/oneOf/0/description",
        Severity.WARNING,
    ),
    ({"type": "array", "items": {"type": "object", "enum": ["a"]}}, "/items/type", Severity.ERROR),
    ({"type": "array", "items": {"type": "string"}}, "/items", Severity.ERROR),
    ({"type": "array", "items": [{"type": "string"}]}, "/items", Severity.ERROR),
    ({"type": "array"}, "", Severity.ERROR),
    ({"type": "array", "items": {"anyOf": [{"const": "a"}]}}, "/items/anyOf/0", Severity.ERROR),
    (
        {"type": "array", "items": {"type": "string", "enum": ["a"], "pattern": "a"}},
        "/items/pattern",
        Severity.ERROR,
    ),
    (
        {"type": "array", "items": {"type": "string", "enum": ["a"]}, "uniqueItems": True},
        "/uniqueItems",
        Severity.ERROR,
    ),
    ({"type": "array", "items": {"anyOf": []}, "default": "a"}, "/default", Severity.ERROR),
    ({"type": "string", "examples": ["a"]}, "/examples", Severity.WARNING),
    ({"type": "string", "const": "a"}, "/const", Severity.ERROR),
]


@pytest.mark.parametrize("revision", RICHER)
@pytest.mark.parametrize(("field_schema", "where", "severity"), UNSUPPORTED)
def test_unsupported_fields_are_named(
    field_schema: Any, where: str, severity: Severity, revision: Revision
) -> None:
    violation = only(check_requested_schema(form(field=field_schema), revision))
    assert violation.rule is Rule.ELICITATION_SCHEMA_UNSUPPORTED
    assert violation.severity is severity
    assert violation.pointer == "/params/requestedSchema/properties/field" + where
    assert '"field"' in violation.message


@pytest.mark.parametrize("revision", ELICITATION)
@pytest.mark.parametrize(
    ("schema", "pointer", "severity"),
    [
        (
            {**form(a={"type": "string"}), "additionalProperties": False},
            "/additionalProperties",
            Severity.ERROR,
        ),
        ({**form(a={"type": "string"}), "title": "Model"}, "/title", Severity.WARNING),
        ({**form(a={"type": "string"}), "$defs": {}}, "/$defs", Severity.ERROR),
        ({"type": "array", "properties": {}}, "/type", Severity.ERROR),
        ({"type": "object"}, "", Severity.ERROR),
        ({"properties": {}}, "", Severity.ERROR),
        ({"type": "object", "properties": []}, "/properties", Severity.ERROR),
        ({**form(a={"type": "string"}), "required": "a"}, "/required", Severity.ERROR),
        ({**form(a={"type": "string"}), "required": ["a", "b"]}, "/required/1", Severity.ERROR),
        ([], "", Severity.ERROR),
        (None, "", Severity.ERROR),
    ],
)
def test_unsupported_requested_schema_shapes(
    schema: Any, pointer: str, severity: Severity, revision: Revision
) -> None:
    violation = only(check_requested_schema(schema, revision))
    assert violation.rule is Rule.ELICITATION_SCHEMA_UNSUPPORTED
    assert (violation.pointer, violation.severity) == (
        "/params/requestedSchema" + pointer,
        severity,
    )


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        (form(a={"type": "string", "minLength": -1}), "/properties/a/minLength"),
        ({**form(a={"type": "string"}), "required": ["a", "a"]}, "/required"),
    ],
)
def test_schema_must_compile(schema: Any, pointer: str) -> None:
    violation = only(check_requested_schema(schema, Revision.V2025_11_25))
    assert violation.rule is Rule.ELICITATION_SCHEMA_UNSUPPORTED
    assert violation.pointer == "/params/requestedSchema" + pointer
    assert "does not compile (schema-invalid)" in violation.message


def test_unknown_dialect_does_not_compile() -> None:
    schema = {**form(a={"type": "string"}), "$schema": "https://example.com/my-dialect"}
    violation = only(check_requested_schema(schema, Revision.V2025_11_25))
    assert violation.pointer == "/params/requestedSchema/$schema"
    assert "schema-unknown-dialect" in violation.message


def test_several_problems_are_all_reported_once() -> None:
    schema = {
        **form(
            a={"type": "string", "pattern": "x", "format": "phone"},
            b={"type": "object"},
            c={"type": "string", "minLength": -1},
        ),
        "required": ["a", "zzz"],
    }
    found = check_requested_schema(schema, Revision.V2025_11_25)
    assert sorted(v.pointer.removeprefix("/params/requestedSchema") for v in found) == [
        "/properties/a/format",
        "/properties/a/pattern",
        "/properties/b/type",
        "/required/1",
    ]  # the negative minLength is the engine's to find once the shape is right


def test_pointer_and_message_escape_property_names() -> None:
    name = "a/b~c\u0000\n" + "x" * 200
    violation = only(check_requested_schema(form(**{name: {"type": "object"}}), LATEST))
    assert (
        violation.pointer
        == "/params/requestedSchema/properties/a~1b~0c\u0000\n" + "x" * 200 + "/type"
    )
    assert "\u0000" not in violation.message
    assert "\n" not in violation.message
    assert "\\u0000" in violation.message
    assert "x" * 64 not in violation.message  # shortened


# --- per-revision differences ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("field_schema", "label"),
    [
        ({"type": "string", "default": "a"}, "string field"),
        ({"type": "integer", "default": 1}, "number field"),
        ({"type": "string", "enum": ["a"], "default": "a"}, "single-select enum"),
        ({"type": "string", "enum": ["a"], "enumNames": ["A"], "default": "a"}, "single-select"),
    ],
)
def test_defaults_beyond_booleans_came_in_2025_11_25(field_schema: Any, label: str) -> None:
    violation = only(check_requested_schema(form(f=field_schema), Revision.V2025_06_18))
    assert violation.severity is Severity.WARNING
    assert violation.pointer.endswith("/properties/f/default")
    assert label in violation.message
    for revision in RICHER:
        assert check_requested_schema(form(f=field_schema), revision) == []


@pytest.mark.parametrize(
    "field_schema",
    [
        {"type": "string", "oneOf": [{"const": "a", "title": "A"}]},
        {"type": "array", "items": {"type": "string", "enum": ["a"]}},
        {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}, "minItems": 1},
    ],
)
def test_titled_and_multi_select_forms_came_in_2025_11_25(field_schema: Any) -> None:
    violation = only(check_requested_schema(form(f=field_schema), Revision.V2025_06_18))
    assert violation.severity is Severity.ERROR
    assert violation.pointer == "/params/requestedSchema/properties/f"
    for revision in RICHER:
        assert check_requested_schema(form(f=field_schema), revision) == []


def test_dialect_keyword_came_in_2025_11_25() -> None:
    schema = {
        **form(a={"type": "string"}),
        "$schema": "https://json-schema.org/draft/2020-12/schema",
    }
    violation = only(check_requested_schema(schema, Revision.V2025_06_18))
    assert (violation.pointer, violation.severity) == (
        "/params/requestedSchema/$schema",
        Severity.WARNING,
    )
    for revision in RICHER:
        assert check_requested_schema(schema, revision) == []


def test_multi_select_is_offered_in_messages_only_where_it_exists() -> None:
    old = only(check_requested_schema(form(f={"type": "object"}), Revision.V2025_06_18))
    new = only(check_requested_schema(form(f={"type": "object"}), Revision.V2025_11_25))
    assert '"array"' not in old.message
    assert '"array"' in new.message


@pytest.mark.parametrize("revision", BEFORE)
def test_no_elicitation_before_2025_06_18(revision: Revision) -> None:
    schema = form(a={"type": "string"})
    for violation in (
        only(check_requested_schema(schema, revision)),
        only(check_elicit_result(schema, {"action": "accept", "content": {"a": "x"}}, revision)),
    ):
        assert violation.rule is Rule.METHOD_NOT_IN_REVISION
        assert violation.severity is Severity.ERROR


# --- defaults that their own field refuses ----------------------------------------------------

REFUSED_DEFAULTS = [
    ({"type": "string", "enum": ["a", "b"], "default": "c"}, IssueCode.NOT_IN_ENUM),
    ({"type": "string", "format": "email", "default": "not-an-address"}, IssueCode.BAD_FORMAT),
    ({"type": "string", "maxLength": 2, "default": "abc"}, IssueCode.TOO_LONG),
    ({"type": "integer", "default": 1.5}, IssueCode.WRONG_TYPE),
    ({"type": "number", "maximum": 10, "default": 11}, IssueCode.TOO_LARGE),
    (
        {
            "type": "string",
            "oneOf": [{"const": "a", "title": "A"}, {"const": "c", "title": "C"}],
            "default": "b",
        },
        IssueCode.NO_MATCH,
    ),
    (
        {"type": "array", "items": {"type": "string", "enum": ["a"]}, "default": ["a", "z"]},
        IssueCode.NOT_IN_ENUM,
    ),
    (
        {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b"]},
            "maxItems": 1,
            "default": ["a", "b"],
        },
        IssueCode.TOO_MANY_ITEMS,
    ),
]


@pytest.mark.parametrize(("field_schema", "code"), REFUSED_DEFAULTS)
def test_refused_default_is_a_warning(field_schema: Any, code: IssueCode) -> None:
    violation = only(check_requested_schema(form(f=field_schema), Revision.V2025_11_25))
    assert violation.severity is Severity.WARNING
    assert violation.pointer == "/params/requestedSchema/properties/f/default"
    assert code in {issue.code for issue in violation.issues}
    # Issues are re-rooted at the default: the array's second item, or the default itself.
    assert {issue.instance_path for issue in violation.issues} <= {"", "/1"}


# --- cross-check against the specification's schema -------------------------------------------

ACCEPTED_FORMS: list[tuple[dict[str, Any], Revision]] = [
    # (field schema, first revision whose checker accepts it without errors)
    ({"type": "string"}, Revision.V2025_06_18),
    (
        {
            "type": "string",
            "title": "T",
            "description": "D",
            "minLength": 1,
            "maxLength": 9,
            "format": "date-time",
        },
        Revision.V2025_06_18,
    ),
    ({"type": "string", "format": "uri", "default": "https://a.example"}, Revision.V2025_06_18),
    ({"type": "integer", "minimum": 0, "maximum": 3.5}, Revision.V2025_06_18),
    ({"type": "number", "title": "N", "default": 2.5}, Revision.V2025_06_18),
    ({"type": "boolean", "description": "B", "default": True}, Revision.V2025_06_18),
    ({"type": "string", "enum": ["a", "b"], "title": "E"}, Revision.V2025_06_18),
    ({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]}, Revision.V2025_06_18),
    ({"type": "string", "enum": ["a"], "enumNames": ["A"], "default": "a"}, Revision.V2025_06_18),
    (
        {"type": "string", "oneOf": [{"const": "a", "title": "A"}], "default": "a"},
        Revision.V2025_11_25,
    ),
    (
        {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b"]},
            "minItems": 0,
            "maxItems": 2,
            "default": ["b"],
        },
        Revision.V2025_11_25,
    ),
    (
        {
            "type": "array",
            "title": "M",
            "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]},
            "default": [],
        },
        Revision.V2025_11_25,
    ),
]


@pytest.mark.parametrize("revision", ELICITATION)
@pytest.mark.parametrize(("field_schema", "since"), ACCEPTED_FORMS)
def test_every_accepted_form_is_valid_in_the_spec(
    field_schema: dict[str, Any], since: Revision, revision: Revision
) -> None:
    requested = {**form(field=field_schema), "required": ["field"]}
    accepted = not errors(check_requested_schema(requested, revision))
    assert accepted == revision.at_least(since)
    if accepted:
        assert spec_accepts(requested, revision)
        assert validator(revision, "PrimitiveSchemaDefinition").is_valid(field_schema)


SPEC_REJECTS = [
    {"type": "object"},
    {"type": "string", "minLength": "1"},
    {"type": "string", "format": "phone"},
    {"type": "number", "maximum": "9"},
    {"type": "boolean", "default": 1},
    # An enum whose options are not strings is still a (spec-valid) StringSchema with extra
    # keywords; a keyword every string form types is what the spec's anyOf refuses.
    {"type": "string", "enum": ["a"], "title": 5},
    {"type": "string", "oneOf": [{"const": "a", "title": "A"}], "description": []},
    {"type": "integer", "title": 1},
    {"title": "no type"},
    {"type": "array", "items": {"type": "string"}},
    {"type": "array", "items": {"anyOf": [{"const": "a"}]}},
]


@pytest.mark.parametrize("revision", ELICITATION)
@pytest.mark.parametrize("field_schema", SPEC_REJECTS)
def test_what_the_spec_rejects_the_checker_rejects(field_schema: Any, revision: Revision) -> None:
    requested = form(field=field_schema)
    assert not spec_accepts(requested, revision)
    assert errors(check_requested_schema(requested, revision))


@pytest.mark.parametrize("revision", ELICITATION)
@pytest.mark.parametrize(
    "schema", [{"type": "object"}, {"type": "array", "properties": {}}, {"properties": {}}]
)
def test_what_the_spec_rejects_at_the_top_the_checker_rejects(
    schema: dict[str, Any], revision: Revision
) -> None:
    assert not spec_accepts(schema, revision)
    assert errors(check_requested_schema(schema, revision))


# Schemas near the allowed forms: each form with well-typed keywords, then perhaps one keyword
# overwritten by noise (a wrong type, a keyword from another form, one no form allows).
_texts = st.text(alphabet="ab#:/@.-0123456789", max_size=6)
_counts = st.integers(0, 5)
_numbers = st.one_of(st.integers(-5, 5), st.floats(-5, 5))
_scalars = st.one_of(_texts, st.integers(-3, 12), st.floats(-5, 5), st.booleans(), st.none())
_noise_values: st.SearchStrategy[Any] = st.one_of(
    _scalars, st.lists(_scalars, max_size=2), st.just({})
)
_options = st.lists(st.fixed_dictionaries({"const": _texts, "title": _texts}), max_size=3)


def _near(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[Any]:
    exact = st.fixed_dictionaries(
        required, optional={"title": _texts, "description": _texts, **optional}
    )
    noise = st.dictionaries(
        st.sampled_from(
            [*required, *optional, "title", "pattern", "const", "enum", "items", "format"]
        ),
        _noise_values,
        max_size=1,
    )
    return st.builds(lambda schema, extra: {**schema, **extra}, exact, noise)


_fields = st.one_of(
    _near(
        {"type": st.just("string")},
        {
            "minLength": _counts,
            "maxLength": _counts,
            "format": st.sampled_from(["email", "uri", "date", "date-time"]),
            "default": _texts,
        },
    ),
    _near(
        {"type": st.sampled_from(["number", "integer"])},
        {"minimum": _numbers, "maximum": _numbers, "default": _numbers},
    ),
    _near({"type": st.just("boolean")}, {"default": st.booleans()}),
    _near(
        {"type": st.just("string"), "enum": st.lists(_texts, max_size=3)},
        {"enumNames": st.lists(_texts, max_size=3), "default": _texts},
    ),
    _near({"type": st.just("string"), "oneOf": _options}, {"default": _texts}),
    _near(
        {
            "type": st.just("array"),
            "items": st.one_of(
                st.fixed_dictionaries(
                    {"type": st.just("string"), "enum": st.lists(_texts, max_size=3)}
                ),
                st.fixed_dictionaries({"anyOf": _options}),
            ),
        },
        {"minItems": _counts, "maxItems": _counts, "default": st.lists(_texts, max_size=2)},
    ),
)
_requested_schemas = _near(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), _fields, max_size=3),
    },
    {
        "required": st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True),
        "$schema": st.just("https://json-schema.org/draft/2020-12/schema"),
    },
)


@pytest.mark.parametrize("revision", ELICITATION)
@settings(max_examples=200, deadline=None)
@given(schema=_requested_schemas)
def test_checker_accepts_nothing_the_spec_rejects(
    schema: dict[str, Any], revision: Revision
) -> None:
    if not errors(check_requested_schema(schema, revision)):
        assert spec_accepts(schema, revision)


# --- elicit results -------------------------------------------------------------------------


@pytest.mark.parametrize("revision", ELICITATION)
@pytest.mark.parametrize(
    ("request_file", "result_file"),
    [
        ("elicit-single-field.json", "input-single-field.json"),
        ("elicit-multiple-fields.json", "input-multiple-fields.json"),
    ],
)
def test_example_results_match_their_requests(
    request_file: str, result_file: str, revision: Revision
) -> None:
    schema = example("ElicitRequestFormParams", request_file)["requestedSchema"]
    result = example("ElicitResult", result_file)
    assert check_elicit_result(schema, result, revision) == []


@pytest.mark.parametrize("revision", RICHER)
def test_url_mode_accept_carries_no_content(revision: Revision) -> None:
    result = example("ElicitResult", "accept-url-mode-no-content.json")
    assert check_elicit_result(None, result, revision, mode="url") == []
    with_content = {**result, "content": {"apiKey": "x"}}
    violation = only(check_elicit_result(None, with_content, revision, mode="url"))
    assert (violation.rule, violation.severity) == (
        Rule.ELICITATION_RESPONSE_INVALID,
        Severity.ERROR,
    )
    assert violation.pointer == "/result/content"


def test_form_mode_accept_without_content_must_still_satisfy_required() -> None:
    schema = example("ElicitRequestFormParams", "elicit-single-field.json")["requestedSchema"]
    result = example("ElicitResult", "accept-url-mode-no-content.json")
    violation = only(check_elicit_result(schema, result, LATEST))
    assert violation.rule is Rule.ELICITATION_RESPONSE_INVALID
    assert [issue.code for issue in violation.issues] == [IssueCode.MISSING_REQUIRED]
    assert check_elicit_result(form(a={"type": "string"}), result, LATEST) == []


RICH_FORM = {
    **form(
        email={"type": "string", "format": "email"},
        age={"type": "integer", "minimum": 18},
        color={"type": "string", "enum": ["Red", "Green"]},
        hex={
            "type": "string",
            "oneOf": [{"const": "#FF0000", "title": "Red"}, {"const": "#00FF00", "title": "Green"}],
        },
        many={
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b"]},
            "minItems": 1,
            "maxItems": 1,
        },
        agree={"type": "boolean"},
    ),
    "required": ["email"],
}


@pytest.mark.parametrize(
    ("content", "path", "code"),
    [
        ({"email": 5}, "/email", IssueCode.WRONG_TYPE),
        ({}, "", IssueCode.MISSING_REQUIRED),
        ({"email": "not an address"}, "/email", IssueCode.BAD_FORMAT),
        ({"email": "a@b.example", "age": 17}, "/age", IssueCode.TOO_SMALL),
        ({"email": "a@b.example", "age": 18.5}, "/age", IssueCode.WRONG_TYPE),
        ({"email": "a@b.example", "color": "Blue"}, "/color", IssueCode.NOT_IN_ENUM),
        ({"email": "a@b.example", "hex": "#000000"}, "/hex", IssueCode.NO_MATCH),
        ({"email": "a@b.example", "many": []}, "/many", IssueCode.TOO_FEW_ITEMS),
        ({"email": "a@b.example", "many": ["a", "b"]}, "/many", IssueCode.TOO_MANY_ITEMS),
        ({"email": "a@b.example", "agree": "yes"}, "/agree", IssueCode.WRONG_TYPE),
        ([], "", IssueCode.WRONG_TYPE),
    ],
)
def test_accepted_content_must_match(content: Any, path: str, code: IssueCode) -> None:
    result = {"action": "accept", "content": content}
    violation = only(check_elicit_result(RICH_FORM, result, Revision.V2025_11_25))
    assert (violation.rule, violation.severity) == (
        Rule.ELICITATION_RESPONSE_INVALID,
        Severity.ERROR,
    )
    assert violation.pointer == "/result/content"
    assert (path, code) in {(issue.instance_path, issue.code) for issue in violation.issues}


def test_accepted_content_that_matches_passes() -> None:
    content = {"email": "a@b.example", "age": 40, "color": "Red", "hex": "#FF0000", "many": ["b"]}
    assert check_elicit_result(RICH_FORM, {"action": "accept", "content": content}, LATEST) == []


@pytest.mark.parametrize("revision", ELICITATION)
@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_carry_no_content(action: str, revision: Revision) -> None:
    assert check_elicit_result(RICH_FORM, {"action": action}, revision) == []
    violation = only(check_elicit_result(RICH_FORM, {"action": action, "content": {}}, revision))
    assert (violation.rule, violation.severity) == (
        Rule.ELICITATION_RESPONSE_INVALID,
        Severity.WARNING,
    )


def test_unknown_action_is_left_to_the_method_schema() -> None:
    assert check_elicit_result(RICH_FORM, {"action": "maybe", "content": 1}, LATEST) == []


def test_result_against_a_schema_that_does_not_compile_is_not_checked() -> None:
    schema = form(a={"type": "string", "minLength": -1})
    violation = only(check_elicit_result(schema, {"action": "accept", "content": {}}, LATEST))
    assert violation.severity is Severity.WARNING
    assert "not checked" in violation.message


@pytest.mark.parametrize(
    "check",
    [
        lambda: check_requested_schema(
            form(
                secret={
                    "type": "string",
                    "format": "SECRET-format",
                    "default": "SECRET-default",
                    "pattern": "SECRET-pattern",
                    "minLength": "SECRET-length",
                    "enum": ["SECRET-option"],
                }
            ),
            LATEST,
        ),
        lambda: check_requested_schema(
            form(f={"type": "string", "enum": ["a"], "default": "SECRET-default"}), LATEST
        ),
        lambda: check_elicit_result(
            RICH_FORM,
            {"action": "accept", "content": {"email": "SECRET-address", "age": "SECRET-age"}},
            LATEST,
        ),
        lambda: check_elicit_result(
            None, {"action": "accept", "content": {"k": "SECRET"}}, LATEST, mode="url"
        ),
        lambda: check_elicit_result(
            RICH_FORM, {"action": "decline", "content": {"k": "SECRET"}}, LATEST
        ),
    ],
)
def test_no_value_from_the_message_is_echoed(check: Callable[[], list[Violation]]) -> None:
    found = check()
    assert found
    assert "SECRET" not in rendered(found)


# --- SEP-1034 defaults ----------------------------------------------------------------------

EXAMPLE_FIELDS = {kind: examples(kind)[0] for kind in FIELD_EXAMPLES}


def test_every_example_default_is_applied() -> None:
    schema = form(**EXAMPLE_FIELDS)
    applied = apply_defaults(schema, {})
    assert applied.refused == ()
    assert applied.applied == tuple(FIELD_EXAMPLES)
    assert applied.content == {kind: field["default"] for kind, field in EXAMPLE_FIELDS.items()}
    result = {"action": "accept", "content": applied.content}
    assert check_elicit_result(schema, result, Revision.V2026_07_28) == []


def test_present_values_are_kept_and_inputs_untouched() -> None:
    schema = form(
        a={"type": "string", "default": "x"},
        b={"type": "array", "items": {"type": "string", "enum": ["p", "q"]}, "default": ["p"]},
        c={"type": "boolean", "default": False},
        d={"type": "string"},
    )
    schema_before = copy.deepcopy(schema)
    content = {"a": None, "extra": 1}
    applied = apply_defaults(schema, content)
    assert content == {"a": None, "extra": 1}
    assert applied.content == {"a": None, "extra": 1, "b": ["p"], "c": False}
    assert applied.applied == ("b", "c")
    applied.content["b"].append("q")
    assert schema == schema_before


@pytest.mark.parametrize(("field_schema", "code"), REFUSED_DEFAULTS)
def test_refused_defaults_are_not_applied(field_schema: Any, code: IssueCode) -> None:
    schema = form(bad=field_schema, good={"type": "integer", "default": 3})
    at = "/result/inputRequests/k/params/requestedSchema"
    applied = apply_defaults(schema, {}, at=at)
    assert applied.content == {"good": 3}
    assert applied.applied == ("good",)
    violation = only(list(applied.refused))
    assert violation.pointer == f"{at}/properties/bad/default"
    assert violation.severity is Severity.WARNING
    assert code in {issue.code for issue in violation.issues}


def test_defaults_need_a_compilable_schema() -> None:
    with pytest.raises(SchemaError):
        apply_defaults(form(a={"type": "string", "minLength": -1, "default": "x"}), {})


def test_no_properties_means_nothing_to_apply() -> None:
    assert apply_defaults({"type": "object"}, {"a": 1}).content == {"a": 1}


def test_a_failure_of_the_whole_object_refuses_every_default() -> None:
    schema = {
        **form(a={"type": "string", "default": "x"}, b={"type": "integer"}),
        "maxProperties": 0,
    }
    applied = apply_defaults(schema, {"b": 1})
    assert applied.content == {"b": 1}
    assert [v.pointer for v in applied.refused] == ["/params/requestedSchema/properties/a/default"]
    assert [issue.code for issue in applied.refused[0].issues] == [IssueCode.TOO_MANY_PROPERTIES]


# --- enumNames --------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", ELICITATION)
@pytest.mark.parametrize(
    ("names", "described"),
    [(["Low"], "1 names for 2"), ([], "0 names for 2"), (["Low", "High", "Max"], "3 names for 2")],
)
def test_enum_names_must_name_each_enum_value(
    names: list[str], described: str, revision: Revision
) -> None:
    field = {"type": "string", "enum": ["low", "high"], "enumNames": names}
    requested = form(level=field)
    # The specification's schema cannot say it: the mismatch is valid by its shape.
    assert spec_accepts(requested, revision)
    violations = check_requested_schema(requested, revision)
    assert [(v.rule, v.pointer, v.severity) for v in violations] == [
        (
            Rule.ELICITATION_ENUM_NAMES_MISMATCH,
            "/params/requestedSchema/properties/level/enumNames",
            Severity.ERROR,
        )
    ]
    assert described in violations[0].message
    matched = form(level={**field, "enumNames": ["Low", "High"]})
    assert check_requested_schema(matched, revision) == []
    assert check_requested_schema(form(level={"type": "string", "enum": ["a"]}), revision) == []


def test_enum_names_not_strings_are_the_shape_check_s_alone() -> None:
    field = {"type": "string", "enum": ["low", "high"], "enumNames": "Low"}
    violations = check_requested_schema(form(level=field), Revision.V2025_11_25)
    assert [v.rule for v in violations] == [Rule.ELICITATION_SCHEMA_UNSUPPORTED]
