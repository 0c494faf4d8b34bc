"""Differential test: strictmcp gives the same verdict on both of its backends.

Hypothesis draws a schema from a useful keyword subset (nested up to three levels) and an
instance, half the time an arbitrary JSON value and half the time one derived from the schema
so that valid instances are common. Three verdicts must agree: strictmcp on ``jsonschema-rs``,
strictmcp on ``python-jsonschema``, and plain python-jsonschema with no strictmcp in between.

The generators stay out of the areas where the two engines are known to differ for reasons
that are no fault of strictmcp's; each exclusion says why where it is made:

- ``format`` is not generated: the engines ship different format checkers (and
  python-jsonschema's depend on optional packages).
- ``multipleOf`` is a small positive integer: with a fractional divisor the engines round
  differently (0.3 against ``multipleOf: 0.1``: jsonschema-rs says valid, python-jsonschema
  invalid, as ``0.3 / 0.1`` is not an integer in binary floating point).
- Instances' numbers are not restricted: halves, integral floats (``1.0``) and large values
  on either side of 2**53 and 2**64 all occur, and the engines agree on them.
- Strings use a small ASCII alphabet with no newline: ``$`` in Python's ``re`` also matches
  before a final newline (``"a\\n"`` matches ``^a$`` there, not in jsonschema-rs), and
  ``\\d``/``\\w`` match non-ASCII digits and letters in Python's ``re`` only (``"٣"`` and
  ``^\\d$``); patterns come from a small set whose meaning is the same in ECMA-262, Rust's
  ``regex`` and Python's ``re`` for that alphabet.
- ``1``, ``1.0`` and ``True`` all occur in instances, ``enum``, ``const`` and ``uniqueItems``:
  the engines agree there (both follow the spec: ``1 == 1.0`` and ``true != 1``), so no
  exclusion is needed and the test would catch a regression.
"""

from __future__ import annotations

from typing import Any

import jsonschema.validators
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictmcp.schema import IssueCode, SchemaError, compile_schema

Schema = Any
JSON = Any

# No newline (see the module docstring) and nothing outside ASCII.
ALPHABET = "ab0 "
KEYS = ["a", "b", "c"]
# Meaning the same in ECMA-262, Rust `regex` and Python `re` for strings over ALPHABET.
PATTERNS = ["^a", "b$", "^[ab]*$", "[0-9]", "^a+b?$", "a|b", "^.{2,}$", "^$", "0{2}", "^[^ ]*$"]
TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]
# Engine bounds never come into play for these small values; if one did, that is a finding.
BOUND_CODES = {
    IssueCode.INSTANCE_TOO_DEEP,
    IssueCode.INSTANCE_TOO_LARGE,
    IssueCode.INSTANCE_NOT_JSON,
    IssueCode.VALIDATION_TIMEOUT,
    IssueCode.UNEXPLAINED,
}

small_ints = st.integers(min_value=-6, max_value=6)
# Integers, halves, exact floats equal to integers (1.0), and a few large exact values.
numbers = st.one_of(
    small_ints,
    small_ints.map(lambda n: n / 2),
    small_ints.map(float),
    st.sampled_from([2**31, -(2**31), 2**53, 2**53 + 1, 2**64 + 1, -(2**63), 1e15, 1e300, 0.1]),
)
strings = st.text(alphabet=ALPHABET, max_size=5)
scalars = st.one_of(st.none(), st.booleans(), numbers, strings)
json_values: st.SearchStrategy[JSON] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), children, max_size=3),
    ),
    max_leaves=8,
)
limits_0_4 = st.integers(min_value=0, max_value=4)

LEAF_KEYWORDS: dict[str, st.SearchStrategy[Any]] = {
    "type": st.one_of(
        st.sampled_from(TYPES),
        st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
    ),
    "enum": st.lists(json_values, min_size=1, max_size=4),
    "const": json_values,
    "minLength": limits_0_4,
    "maxLength": limits_0_4,
    "pattern": st.sampled_from(PATTERNS),
    "minimum": numbers,
    "maximum": numbers,
    "exclusiveMinimum": numbers,
    "exclusiveMaximum": numbers,
    # Integers only: see the module docstring.
    "multipleOf": st.integers(min_value=1, max_value=5),
    "minItems": limits_0_4,
    "maxItems": limits_0_4,
    "uniqueItems": st.booleans(),
    "required": st.lists(st.sampled_from(KEYS), unique=True, max_size=3),
    "minProperties": limits_0_4,
    "maxProperties": limits_0_4,
}
NESTED_KEYWORDS = [
    "items",
    "prefixItems",
    "contains",
    "properties",
    "additionalProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
]


def schemas(depth: int = 3) -> st.SearchStrategy[Schema]:
    """Schemas over the keyword subset, subschemas nested at most ``depth`` levels."""
    names = list(LEAF_KEYWORDS) + (NESTED_KEYWORDS if depth > 0 else [])
    objects = st.lists(st.sampled_from(names), unique=True, max_size=4).flatmap(
        lambda chosen: st.fixed_dictionaries({k: _keyword_value(k, depth) for k in chosen})
    )
    return st.one_of(st.booleans(), objects, objects, objects)


def _keyword_value(keyword: str, depth: int) -> st.SearchStrategy[Any]:
    if keyword in LEAF_KEYWORDS:
        return LEAF_KEYWORDS[keyword]
    sub = st.deferred(lambda: schemas(depth - 1))
    if keyword in ("allOf", "anyOf", "oneOf", "prefixItems"):
        return st.lists(sub, min_size=1, max_size=3)
    if keyword == "properties":
        return st.dictionaries(st.sampled_from(KEYS), sub, max_size=3)
    return sub


@st.composite
def derived(draw: st.DrawFn, schema: Schema, depth: int = 4) -> JSON:
    """An instance shaped by ``schema``: often valid, and near the edges when it is not."""
    if not isinstance(schema, dict) or depth == 0:
        return draw(json_values)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    for keyword in ("allOf", "anyOf", "oneOf"):
        if keyword in schema and draw(st.booleans()):
            return draw(derived(draw(st.sampled_from(schema[keyword])), depth - 1))
    kind = _kind(draw, schema)
    if kind == "null":
        return None
    if kind == "boolean":
        return draw(st.booleans())
    if kind in ("integer", "number"):
        return _number(draw, schema, integer=kind == "integer")
    if kind == "string":
        low = schema.get("minLength", 0)
        high = max(low, schema.get("maxLength", low + 3))
        return draw(st.text(alphabet=ALPHABET, min_size=low, max_size=high))
    if kind == "array":
        return _array(draw, schema, depth)
    return _object(draw, schema, depth)


def _kind(draw: st.DrawFn, schema: dict[str, Any]) -> str:
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared
    if isinstance(declared, list):
        return str(draw(st.sampled_from(declared)))
    hints = [
        ("string", ("minLength", "maxLength", "pattern")),
        ("number", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")),
        ("array", ("items", "prefixItems", "contains", "minItems", "maxItems", "uniqueItems")),
        ("object", ("properties", "required", "additionalProperties", "minProperties")),
    ]
    for kind, keywords in hints:
        if any(k in schema for k in keywords):
            return kind
    return str(draw(st.sampled_from(TYPES)))


def _number(draw: st.DrawFn, schema: dict[str, Any], *, integer: bool) -> JSON:
    low = max(
        [int(schema[k]) + 1 for k in ("minimum", "exclusiveMinimum") if k in schema], default=-8
    )
    high = min(
        [int(schema[k]) - 1 for k in ("maximum", "exclusiveMaximum") if k in schema], default=8
    )
    value = draw(st.integers(min_value=min(low, high), max_value=max(low, high)))
    step = schema.get("multipleOf", 1)
    value -= value % step
    return value if integer or draw(st.booleans()) else float(value)


def _array(draw: st.DrawFn, schema: dict[str, Any], depth: int) -> JSON:
    low = schema.get("minItems", 0)
    size = draw(st.integers(min_value=low, max_value=max(low, schema.get("maxItems", 3))))
    prefix = schema.get("prefixItems", [])
    items = schema.get("items", True)
    return [draw(derived(prefix[i] if i < len(prefix) else items, depth - 1)) for i in range(size)]


def _object(draw: st.DrawFn, schema: dict[str, Any], depth: int) -> JSON:
    properties = schema.get("properties", {})
    names = set(schema.get("required", [])) | set(
        draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=3))
    )
    if schema.get("additionalProperties") is False:
        names = {name for name in names if name in properties} | set(schema.get("required", []))
    extra = schema.get("additionalProperties", True)
    return {name: draw(derived(properties.get(name, extra), depth - 1)) for name in sorted(names)}


cases = schemas().flatmap(
    lambda schema: st.tuples(st.just(schema), st.one_of(json_values, derived(schema)))
)


def _verdicts(schema: Schema, instance: JSON) -> tuple[bool | None, bool | None, bool]:
    """(strictmcp on jsonschema-rs, strictmcp on python-jsonschema, plain python-jsonschema).

    A schema one strictmcp backend refuses gives ``None`` for it.
    """
    found: list[bool | None] = []
    for backend in ("jsonschema-rs", "python-jsonschema"):
        try:
            validator = compile_schema(schema, backend=backend, cache=None)
        except SchemaError:
            found.append(None)
            continue
        result = validator.validate(instance)
        # An invalid verdict always comes with its reasons, never with an engine bound here.
        assert result.valid == (not result.issues), (backend, result)
        assert not {issue.code for issue in result.issues} & BOUND_CODES, (backend, result)
        found.append(result.valid)
    plain = jsonschema.validators.validator_for(schema)(schema).is_valid(instance)
    return found[0], found[1], bool(plain)


@settings(
    max_examples=700,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases)
def test_backends_agree_on_the_verdict(case: tuple[Schema, JSON]) -> None:
    schema, instance = case
    native, reference, plain = _verdicts(schema, instance)
    assert native is not None, "generated schemas are valid: jsonschema-rs refused one"
    assert reference is not None, "generated schemas are valid: python-jsonschema refused one"
    assert native == reference == plain, {
        "jsonschema-rs": native,
        "python-jsonschema": reference,
        "plain python-jsonschema": plain,
    }
