"""The engine's public API: dialects, references, patterns, formats, issues, cache, bounds."""

from __future__ import annotations

from typing import Any

import pytest

from strictmcp.schema import (
    HIDDEN,
    Dialect,
    IssueCode,
    Limits,
    LRUCache,
    Registry,
    SchemaError,
    SchemaErrorCode,
    compile_schema,
    dialect_of,
)

BACKENDS = ["jsonschema-rs", "python-jsonschema"]


def refused(schema: Any, **options: Any) -> SchemaError:
    with pytest.raises(SchemaError) as caught:
        compile_schema(schema, cache=None, **options)
    return caught.value


# --- dialects ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "dialect"),
    [
        ("https://json-schema.org/draft/2020-12/schema", Dialect.DRAFT2020_12),
        ("https://json-schema.org/draft/2020-12/schema#", Dialect.DRAFT2020_12),
        ("https://json-schema.org/draft/2019-09/schema", Dialect.DRAFT2019_09),
        ("http://json-schema.org/draft-07/schema#", Dialect.DRAFT7),
        ("http://json-schema.org/draft-07/schema", Dialect.DRAFT7),
        ("https://json-schema.org/draft-07/schema#", Dialect.DRAFT7),
        ("http://json-schema.org/draft-06/schema#", Dialect.DRAFT6),
        ("http://json-schema.org/draft-04/schema#", Dialect.DRAFT4),
    ],
)
def test_dialect_comes_from_schema_keyword(uri: str, dialect: Dialect) -> None:
    assert compile_schema({"$schema": uri}).dialect is dialect


def test_dialect_defaults_to_2020_12_and_can_be_overridden() -> None:
    assert compile_schema({}).dialect is Dialect.DRAFT2020_12
    assert compile_schema(True).dialect is Dialect.DRAFT2020_12
    assert compile_schema({}, default_dialect=Dialect.DRAFT7).dialect is Dialect.DRAFT7


def test_dialects_differ_where_the_specs_do() -> None:
    # Array-form `items` is positional in draft-07 and invalid in 2020-12 (prefixItems instead).
    positional = {"items": [{"type": "integer"}], "additionalItems": False}
    draft7 = compile_schema(positional, default_dialect=Dialect.DRAFT7)
    assert draft7.validate([1]).valid
    assert not draft7.validate([1, 2]).valid
    assert refused(positional).code is SchemaErrorCode.INVALID
    prefix = compile_schema({"prefixItems": [{"type": "integer"}], "items": False})
    assert prefix.validate([1]).valid
    assert prefix.validate([1, 2]).issues[0].code is IssueCode.UNEXPECTED_ITEM


@pytest.mark.parametrize(
    "uri",
    [
        "https://json-schema.org/draft/2030-01/schema",
        "http://json-schema.org/draft-03/schema#",
        "https://example.com/my-meta-schema",
    ],
)
def test_unknown_dialect_is_refused_never_guessed(uri: str) -> None:
    error = refused({"$schema": uri, "type": "string"})
    assert error.code is SchemaErrorCode.UNKNOWN_DIALECT
    assert error.detail == uri
    assert error.location == "/$schema"


def test_non_string_schema_keyword_is_invalid() -> None:
    assert refused({"$schema": 7}).code is SchemaErrorCode.INVALID


def test_custom_meta_schema_from_registry_takes_its_dialect() -> None:
    meta_uri = "https://example.com/meta"
    registry = Registry(
        {meta_uri: {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}}
    )
    assert dialect_of({"$schema": meta_uri}, lookup=registry.get) is Dialect.DRAFT7


def test_dialect_names_round_trip() -> None:
    for dialect in Dialect:
        assert Dialect.from_name(dialect.short_name) is dialect
        assert Dialect.from_name(dialect.uri) is dialect
    with pytest.raises(ValueError, match="unknown"):
        Dialect.from_name("draft-99")


# --- references -------------------------------------------------------------------------------


def test_local_references_resolve() -> None:
    schema = {
        "$defs": {"name": {"type": "string", "maxLength": 3}},
        "properties": {"a": {"$ref": "#/$defs/name"}, "b": {"$ref": "#anchor"}},
        "$anchor": "anchor",
        "type": "object",
    }
    validator = compile_schema(schema)
    assert validator.validate({"a": "abc"}).valid
    issue = validator.validate({"a": "abcd"}).issues[0]
    assert issue.code is IssueCode.TOO_LONG
    assert issue.instance_path == "/a"
    assert issue.schema_path == "/$defs/name/maxLength"
    assert issue.evaluation_path == "/properties/a/$ref/maxLength"


def test_dynamic_ref_works() -> None:
    schema = {
        "$dynamicAnchor": "node",
        "type": "object",
        "properties": {"child": {"$dynamicRef": "#node"}},
    }
    validator = compile_schema(schema)
    assert validator.profile.recursive
    assert validator.validate({"child": {"child": {}}}).valid
    assert not validator.validate({"child": {"child": 3}}).valid


@pytest.mark.parametrize(
    ("schema", "uri"),
    [
        (
            {"$ref": "http://169.254.169.254/latest/meta-data"},
            "http://169.254.169.254/latest/meta-data",
        ),
        ({"$ref": "file:///etc/passwd"}, "file:///etc/passwd"),
        (
            {"$id": "https://example.com/root.json", "$ref": "other.json"},
            "https://example.com/other.json",
        ),
        (
            {"properties": {"x": {"$ref": "https://example.com/s.json#/a"}}},
            "https://example.com/s.json",
        ),
    ],
)
def test_external_references_are_refused_and_named(schema: Any, uri: str) -> None:
    error = refused(schema)
    assert error.code is SchemaErrorCode.EXTERNAL_REF
    assert error.detail == uri
    assert uri in error.message


def test_registry_documents_resolve_from_memory() -> None:
    registry = Registry({"https://example.com/point.json": {"required": ["x", "y"]}})
    validator = compile_schema({"$ref": "https://example.com/point.json"}, registry=registry)
    assert validator.validate({"x": 1, "y": 2}).valid
    assert validator.validate({"x": 1}).issues[0].code is IssueCode.MISSING_REQUIRED


def test_bundled_meta_schema_resolves_without_fetching() -> None:
    validator = compile_schema({"$ref": "https://json-schema.org/draft/2020-12/schema"})
    assert validator.validate({"type": "string"}).valid
    assert not validator.validate({"type": 12}).valid


def test_dangling_local_pointer_is_unresolvable() -> None:
    error = refused({"properties": {"a": {"$ref": "#/$defs/missing"}}})
    assert error.code is SchemaErrorCode.UNRESOLVABLE_REF


def test_invalid_schema_names_its_location() -> None:
    error = refused({"properties": {"a": {"type": "strin"}}})
    assert error.code is SchemaErrorCode.INVALID
    assert error.location == "/properties/a/type"


@pytest.mark.parametrize("schema", [[], "string", 3, None])
def test_non_schemas_are_refused(schema: Any) -> None:
    assert refused(schema).code is SchemaErrorCode.NOT_A_SCHEMA


# --- patterns ---------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["^(?=a)", "(a)\\1", "(?<!x)y"])
def test_backtracking_patterns_need_an_opt_in(pattern: str) -> None:
    error = refused({"properties": {"p": {"pattern": pattern}}})
    assert error.code is SchemaErrorCode.PATTERN_NEEDS_BACKTRACKING
    assert error.location == "/properties/p/pattern"
    assert error.detail == pattern
    assert compile_schema({"pattern": pattern}, backtracking=True, cache=None)


def test_pattern_property_keys_are_checked_too() -> None:
    error = refused({"patternProperties": {"^(?=x)": {}}})
    assert error.code is SchemaErrorCode.PATTERN_NEEDS_BACKTRACKING
    assert error.detail == "^(?=x)"


def test_malformed_pattern_is_invalid_pattern() -> None:
    assert refused({"pattern": "(unclosed"}).code is SchemaErrorCode.INVALID_PATTERN


def test_nested_quantifiers_run_in_linear_time_with_correct_verdicts() -> None:
    validator = compile_schema({"pattern": "^(a+)+$"})
    assert validator.validate("a" * 20_000).valid
    assert validator.validate("a" * 20_000 + "!").issues[0].code is IssueCode.PATTERN_MISMATCH


# --- formats ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("email", "a@example.com", "not an email"),
        ("uri", "https://example.com/x", "no scheme"),
        ("date-time", "2026-11-21T10:00:00Z", "yesterday"),
        ("date", "2026-11-21", "2026-13-01"),
        ("uuid", "2f1e3c4d-0a1b-4c2d-8e3f-405162738495", "not-a-uuid"),
        ("ipv4", "192.0.2.1", "999.0.0.1"),
        ("ipv6", "2001:db8::1", "2001:::1"),
        ("hostname", "example.com", "-bad-.com"),
    ],
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_formats_are_asserted_by_default(fmt: str, good: str, bad: str, backend: str) -> None:
    validator = compile_schema({"format": fmt}, backend=backend)
    assert validator.validate(good).valid
    issue = validator.validate(bad).issues[0]
    assert issue.code is IssueCode.BAD_FORMAT
    assert fmt in issue.message


def test_formats_can_be_annotations_only() -> None:
    assert compile_schema({"format": "email"}, formats=False).validate("nope").valid


def test_custom_format_checkers() -> None:
    checkers = {"even-digits": lambda value: len(value) % 2 == 0}
    validator = compile_schema({"format": "even-digits"}, format_checkers=checkers)
    assert validator.validate("12").valid
    assert validator.validate("123").issues[0].code is IssueCode.BAD_FORMAT


# --- issues -----------------------------------------------------------------------------------

SECRET = "sk-live-0123456789abcdef"

SECRET_CASES: list[tuple[dict[str, Any], Any, IssueCode]] = [
    ({"maxLength": 3}, SECRET, IssueCode.TOO_LONG),
    ({"enum": ["a", "b"]}, SECRET, IssueCode.NOT_IN_ENUM),
    ({"const": "x"}, SECRET, IssueCode.CONST_MISMATCH),
    ({"pattern": "^[0-9]+$"}, SECRET, IssueCode.PATTERN_MISMATCH),
    ({"format": "email"}, SECRET, IssueCode.BAD_FORMAT),
    ({"type": "integer"}, SECRET, IssueCode.WRONG_TYPE),
    ({"not": {"type": "string"}}, SECRET, IssueCode.MATCHES_NOT),
    ({"anyOf": [{"maxLength": 1}, {"pattern": "^x"}]}, SECRET, IssueCode.NO_MATCH),
    ({"oneOf": [{"type": "string"}, {"minLength": 1}]}, SECRET, IssueCode.MULTIPLE_MATCH),
    ({"items": {"type": "integer"}}, [SECRET], IssueCode.WRONG_TYPE),
    ({"uniqueItems": True}, [SECRET, SECRET], IssueCode.DUPLICATE_ITEMS),
    ({"maximum": 3}, 123456789, IssueCode.TOO_LARGE),
    ({"multipleOf": 7}, 123456789, IssueCode.NOT_MULTIPLE),
]


@pytest.mark.parametrize(("schema", "instance", "code"), SECRET_CASES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_issues_never_echo_values(
    schema: dict[str, Any], instance: Any, code: IssueCode, backend: str
) -> None:
    result = compile_schema(schema, backend=backend).validate(instance)
    assert not result.valid
    assert result.issues[0].code is code
    text = repr(result) + str(result.to_dict())
    assert SECRET not in text
    assert "123456789" not in text
    assert all(issue.value is HIDDEN for issue in result.issues)


def test_show_values_puts_the_value_in_the_issue_not_the_message() -> None:
    result = compile_schema({"maxLength": 3}).validate(SECRET, show_values=True)
    issue = result.issues[0]
    assert issue.value == SECRET
    assert SECRET not in issue.message
    assert issue.to_dict()["value"] == SECRET


@pytest.mark.parametrize("backend", BACKENDS)
def test_issue_fields_are_structured(backend: str) -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name"],
        "additionalProperties": False,
    }
    result = compile_schema(schema, backend=backend).validate({"tags": ["a", 2], "extra": 1})
    by_code = {issue.code: issue for issue in result.issues}
    assert set(by_code) == {
        IssueCode.WRONG_TYPE,
        IssueCode.MISSING_REQUIRED,
        IssueCode.UNEXPECTED_PROPERTY,
    }
    wrong = by_code[IssueCode.WRONG_TYPE]
    assert (wrong.instance_path, wrong.keyword) == ("/tags/1", "type")
    assert wrong.schema_path == "/properties/tags/items/type"
    assert "string" in wrong.message
    assert '"name"' in by_code[IssueCode.MISSING_REQUIRED].message
    assert '"extra"' in by_code[IssueCode.UNEXPECTED_PROPERTY].message
    assert str(wrong) == "/tags/1: must be of type string [wrong-type]"


def test_unexpected_property_names_are_escaped_and_shortened() -> None:
    name = "x\u202e" + "y" * 500
    result = compile_schema({"additionalProperties": False}).validate({name: 1})
    message = result.issues[0].message
    assert "\u202e" not in message
    assert len(message) < 120


@pytest.mark.parametrize(
    ("schema", "instance", "code", "keyword"),
    [
        ({"minLength": 2}, "a", IssueCode.TOO_SHORT, "minLength"),
        ({"exclusiveMinimum": 2}, 2, IssueCode.TOO_SMALL, "exclusiveMinimum"),
        ({"minItems": 1}, [], IssueCode.TOO_FEW_ITEMS, "minItems"),
        ({"maxItems": 0}, [1], IssueCode.TOO_MANY_ITEMS, "maxItems"),
        ({"contains": {"const": 1}}, [2], IssueCode.CONTAINS_MISMATCH, "contains"),
        (
            {"contains": {"const": 1}, "maxContains": 1},
            [1, 1],
            IssueCode.CONTAINS_MISMATCH,
            "maxContains",
        ),
        ({"minProperties": 1}, {}, IssueCode.TOO_FEW_PROPERTIES, "minProperties"),
        ({"maxProperties": 0}, {"a": 1}, IssueCode.TOO_MANY_PROPERTIES, "maxProperties"),
        (
            {"propertyNames": {"maxLength": 1}},
            {"ab": 1},
            IssueCode.BAD_PROPERTY_NAME,
            "propertyNames",
        ),
        (
            {"dependentRequired": {"a": ["b"]}},
            {"a": 1},
            IssueCode.MISSING_REQUIRED,
            "dependentRequired",
        ),
        (
            {"unevaluatedProperties": False},
            {"a": 1},
            IssueCode.UNEXPECTED_PROPERTY,
            "unevaluatedProperties",
        ),
        (False, 1, IssueCode.FALSE_SCHEMA, "falseSchema"),
        ({"oneOf": [{"type": "string"}]}, 1, IssueCode.NO_MATCH, "oneOf"),
    ],
)
def test_each_keyword_has_a_code(schema: Any, instance: Any, code: IssueCode, keyword: str) -> None:
    issue = compile_schema(schema).validate(instance).issues[0]
    assert (issue.code, issue.keyword) == (code, keyword)


# --- cache ------------------------------------------------------------------------------------


def test_cache_keys_are_canonical() -> None:
    cache: LRUCache[Any] = LRUCache(maxsize=4)
    first = compile_schema({"type": "string", "maxLength": 3}, cache=cache)
    same = compile_schema({"maxLength": 3, "type": "string"}, cache=cache)
    assert first is same
    assert (cache.hits, cache.misses) == (1, 1)
    other = compile_schema({"type": "string", "maxLength": 3}, formats=False, cache=cache)
    assert other is not first


def test_cache_is_bounded_and_evicts_least_recent() -> None:
    cache: LRUCache[Any] = LRUCache(maxsize=3)
    validators = [compile_schema({"maxLength": n}, cache=cache) for n in range(10)]
    assert len(cache) == 3
    assert compile_schema({"maxLength": 9}, cache=cache) is validators[9]
    assert compile_schema({"maxLength": 0}, cache=cache) is not validators[0]


def test_cache_rejects_a_zero_size() -> None:
    with pytest.raises(ValueError, match="maxsize"):
        LRUCache(maxsize=0)


# --- bounds -----------------------------------------------------------------------------------


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_schema_profile_tells_recursion_apart() -> None:
    plain = compile_schema({"$defs": {"a": {"type": "string"}}, "items": {"$ref": "#/$defs/a"}})
    assert not plain.profile.recursive
    tree = compile_schema({"type": "array", "items": {"$ref": "#"}})
    assert tree.profile.recursive
    assert tree.profile.fanout == 1
    mutual = compile_schema(
        {
            "$defs": {
                "a": {"items": {"$ref": "#/$defs/b"}},
                "b": {"items": {"$ref": "#/$defs/a"}},
            },
            "$ref": "#/$defs/a",
        }
    )
    assert mutual.profile.fanout == 1


def test_enum_contents_are_data_not_subschemas() -> None:
    validator = compile_schema({"enum": [{"$ref": "#"}, {"properties": {"a": {}}}]})
    assert validator.profile.refs == 0
    assert validator.profile.subschemas == 1


def test_instance_depth_is_bounded() -> None:
    limits = Limits(max_instance_depth=5)
    validator = compile_schema({}, limits=limits)
    assert validator.validate(nested(4)).valid
    issue = validator.validate(nested(6)).issues[0]
    assert issue.code is IssueCode.INSTANCE_TOO_DEEP
    assert issue.instance_path == "/0/0/0/0/0"


def test_recursive_schema_checks_depth_even_with_json_size() -> None:
    validator = compile_schema({"type": "array", "items": {"$ref": "#"}})
    result = validator.validate(nested(100, []), json_size=200)
    assert result.issues[0].code is IssueCode.INSTANCE_TOO_DEEP


def test_non_recursive_schema_with_json_size_checks_depth_before_explaining() -> None:
    validator = compile_schema({"type": "array", "items": {"type": "array"}})
    assert validator.validate(nested(100, []), json_size=200).valid
    failing = compile_schema({"type": "string"}).validate(nested(1000), json_size=2000)
    assert failing.issues[0].code is IssueCode.INSTANCE_TOO_DEEP


def test_instance_size_is_bounded_by_measure_or_by_json_size() -> None:
    validator = compile_schema({"type": "string"}, limits=Limits(max_instance_size=100))
    assert validator.validate("x" * 50).valid
    assert validator.validate("x" * 200).issues[0].code is IssueCode.INSTANCE_TOO_LARGE
    assert validator.validate("x", json_size=101).issues[0].code is IssueCode.INSTANCE_TOO_LARGE


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1: "a"}, {"a": {1, 2}}, b"x"])
def test_python_values_that_are_not_json_are_refused(value: Any) -> None:
    issue = compile_schema({}).validate(value).issues[0]
    assert issue.code is IssueCode.INSTANCE_NOT_JSON


def test_issue_count_is_bounded() -> None:
    validator = compile_schema({"items": {"type": "string"}}, limits=Limits(max_issues=5))
    result = validator.validate(list(range(1000)))
    assert len(result.issues) == 5
    assert result.truncated


def test_schema_depth_and_size_are_bounded() -> None:
    deep: Any = {}
    for _ in range(100):
        deep = {"items": deep}
    assert refused(deep).code is SchemaErrorCode.TOO_DEEP
    wide: dict[str, Any] = {"properties": {f"p{n}": {} for n in range(50)}}
    error = refused(wide, limits=Limits(max_subschemas=10))
    assert error.code is SchemaErrorCode.TOO_MANY_SUBSCHEMAS


def test_branching_recursion_withholds_costly_explanations() -> None:
    schema = {
        "$defs": {
            "n": {
                "anyOf": [
                    {"type": "array", "maxItems": 5, "items": {"$ref": "#/$defs/n"}},
                    {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/n"}},
                    {"type": "integer"},
                ]
            }
        },
        "$ref": "#/$defs/n",
    }
    validator = compile_schema(schema, limits=Limits(explain_budget=1000))
    assert validator.validate(nested(30, 1)).valid
    shallow = validator.validate(nested(2, "leaf"))
    assert shallow.issues[0].code is IssueCode.NO_MATCH
    deep = validator.validate(nested(30, "leaf"))
    assert [issue.code for issue in deep.issues] == [IssueCode.UNEXPLAINED]


@pytest.mark.parametrize(
    "field", ["max_schema_depth", "max_instance_depth", "max_issues", "explain_budget"]
)
def test_limits_must_be_positive(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Limits(**{field: 0})


def test_reference_backend_honours_its_deadline() -> None:
    schema = {"items": {"pattern": "^(a|aa)+$"}}
    validator = compile_schema(
        schema, backend="python-jsonschema", limits=Limits(max_seconds=0.001), cache=None
    )
    result = validator.validate(["a" * 28 + "!"] * 200)
    assert [issue.code for issue in result.issues] == [IssueCode.VALIDATION_TIMEOUT]


def test_unknown_backend_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown backend"):
        compile_schema({}, backend="nope")


def test_fast_path_exists_only_where_it_is_safe() -> None:
    plain = compile_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
    fast = plain.fast_path
    assert fast is not None
    assert fast({"n": 1})
    assert not fast({"n": "x"})
    assert compile_schema({"items": {"$ref": "#"}}).fast_path is None
    assert compile_schema({}, backend="python-jsonschema").fast_path is None


def test_json_size_path_gives_the_same_results_as_measuring() -> None:
    validator = compile_schema({"properties": {"n": {"type": "integer", "maximum": 3}}})
    for instance in ({"n": 1}, {"n": 9}, {"n": "x"}, {}):
        assert validator.validate(instance, json_size=20) == validator.validate(instance)


def test_cache_hit_skips_work_but_never_the_bounds() -> None:
    cache: LRUCache[Any] = LRUCache(maxsize=4)
    deep: Any = {}
    for _ in range(5000):
        deep = {"not": deep}
    for _ in range(2):
        with pytest.raises(SchemaError) as caught:
            compile_schema(deep, cache=cache)
        assert caught.value.code is SchemaErrorCode.TOO_DEEP
    assert len(cache) == 0


@pytest.mark.parametrize(
    ("schema", "location", "code"),
    [
        (
            {"properties": {"a": {"$ref": "https://example.com/x.json"}}},
            "/properties/a/$ref",
            SchemaErrorCode.EXTERNAL_REF,
        ),
        (
            {"$id": "https://example.com/r.json", "properties": {"c": {"$ref": "other.json#/a"}}},
            "/properties/c/$ref",
            SchemaErrorCode.EXTERNAL_REF,
        ),
        (
            {"properties": {"b": {"$ref": "#/$defs/missing"}}},
            "/properties/b/$ref",
            SchemaErrorCode.UNRESOLVABLE_REF,
        ),
    ],
)
def test_reference_errors_say_where_the_reference_is(
    schema: Any, location: str, code: SchemaErrorCode
) -> None:
    error = refused(schema)
    assert (error.code, error.location) == (code, location)


def test_optional_model_failures_name_the_field() -> None:
    # What pydantic writes for `dates: Optional[Dates]`: the null branch is the wrong kind of
    # value, so the object branch's own failure is the useful one.
    schema = {
        "type": "object",
        "properties": {"dates": {"anyOf": [{"$ref": "#/$defs/Dates"}, {"type": "null"}]}},
        "$defs": {
            "Dates": {
                "type": "object",
                "properties": {"start": {"type": "string", "format": "date"}},
                "required": ["start"],
            }
        },
    }
    validator = compile_schema(schema)
    issue = validator.validate({"dates": {"start": "soon"}}).issues[0]
    assert (issue.instance_path, issue.code) == ("/dates/start", IssueCode.BAD_FORMAT)
    assert issue.evaluation_path == "/properties/dates/anyOf/0/$ref/properties/start/format"
    mismatch = validator.validate({"dates": 5}).issues[0]
    assert (mismatch.instance_path, mismatch.code) == ("/dates", IssueCode.NO_MATCH)
