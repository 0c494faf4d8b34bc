"""Invalid tool inputs: one targeted change to a valid input, each confirmed by the engine.

Each mutation breaks one thing at one place (a type, a required argument, a bound crossed by
one, a pattern, an enum, a format) and is kept only if the local engine refuses the result,
so an "invalid" case is invalid by the same rules the server published. Attack strings go
into string arguments whose name or format says path, URL, command or SQL (NUL and bidi
controls into every string): the schema may well allow them, so they are only "suspicious"
unless the engine refuses them.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..protocol.tools import resolve_local_ref
from ..schema import Validator
from ..schema.pointer import to_pointer
from .cases import Case, Expect

_MAX_DEPTH = 3
_EXTRA_NAME = "strictmcp_unexpected"
_TYPE_SAMPLES: tuple[tuple[str, Any], ...] = (
    ("string", "not-the-right-type"),
    ("integer", 12345),
    ("boolean", True),
    ("null", None),
    ("array", ["x"]),
    ("object", {"x": 1}),
)
_PATTERN_BREAKERS = ("", " ", "!#%&()*+,;<=>?@[]^`{|}~", "\n", "0", "a", "\u00e9\u4e2d")
_ENUM_OUTSIDERS: tuple[Any, ...] = ("strictmcp-not-a-member", -987654321, None)
_FORMAT_BREAKERS = ("not a valid value", "", "999.999.999.999", "2024-13-45T25:61:61Z", "%%%")

_ATTACKS: dict[str, tuple[str, ...]] = {
    "path": ("../../../../etc/passwd", "/etc/shadow"),
    "url": ("http://169.254.169.254/latest/meta-data/", "file:///etc/passwd"),
    "command": ("; rm -rf /", "$(id)"),
    "sql": ("' OR 1=1 --", "1; DROP TABLE users"),
    "text": ("a\u0000b", "\u202etxt.exe"),
}
_HINTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("path", re.compile(r"path|file|dir|folder|root|location", re.I)),
    ("url", re.compile(r"url|uri|link|href|endpoint|host|domain|webhook|website", re.I)),
    ("command", re.compile(r"command|cmd|exec|shell|script|argv|program|args?$", re.I)),
    ("sql", re.compile(r"sql|query|where|filter|table|statement", re.I)),
)


def mutations(
    schema: Any, validator: Validator, bases: tuple[Any, ...], *, per_kind: int
) -> list[Case]:
    """Up to ``per_kind`` distinct invalid (or suspicious) cases of each kind, from ``bases``.

    Bases are taken in order and each is mutated at every place it can be, so that with
    several bases the cases differ in their other arguments too. Deterministic.
    """
    taken: dict[str, int] = {}
    seen: set[str] = set()
    cases: list[Case] = []
    for base in bases:
        for kind, pointer, label, value in _candidates(schema, base):
            if taken.get(kind, 0) >= per_kind:
                continue
            key = json.dumps([kind, value], sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            valid = validator.validate(value).valid
            if kind != "attack" and valid:
                continue  # the change did not break the schema here: not a case
            expect: Expect = "suspicious" if valid else "invalid"
            cases.append(Case(kind, pointer, label, value, expect))
            taken[kind] = taken.get(kind, 0) + 1
    return cases


def _candidates(schema: Any, base: Any) -> Iterator[tuple[str, str, str, Any]]:
    """(kind, pointer, label, whole new arguments) for every change worth trying."""
    yield from _wrong_root(base)
    for path, sub, value in _sites(schema, schema, base, (), 0):
        pointer = to_pointer(list(path))
        for kind, label, new in _changes(sub, value, path):
            yield kind, pointer, label, _replaced(base, path, new)
        if isinstance(sub, Mapping) and isinstance(value, dict):
            yield from _object_changes(sub, base, path, value)


def _wrong_root(base: Any) -> Iterator[tuple[str, str, str, Any]]:
    if isinstance(base, dict):
        yield "wrong-type", "", "arguments are an array, not an object", []


def _sites(
    root: Any, sub: Any, value: Any, path: tuple[str | int, ...], depth: int
) -> Iterator[tuple[tuple[str | int, ...], Any, Any]]:
    """Every value in ``value`` with the schema that describes it, down to a bound."""
    sub = _resolved(root, sub)
    yield path, sub, value
    if depth >= _MAX_DEPTH or not isinstance(sub, Mapping):
        return
    if isinstance(value, dict):
        properties = sub.get("properties")
        if isinstance(properties, Mapping):
            for name in sorted(properties):
                if name in value:
                    yield from _sites(root, properties[name], value[name], (*path, name), depth + 1)
    elif isinstance(value, list) and value and isinstance(sub.get("items"), Mapping):
        yield from _sites(root, sub["items"], value[0], (*path, 0), depth + 1)


def _resolved(root: Any, sub: Any) -> Any:
    # One level of a local $ref: enough for the usual "$defs" style of tool schemas.
    if isinstance(sub, Mapping) and isinstance(sub.get("$ref"), str):
        target = resolve_local_ref(root, sub["$ref"])
        if isinstance(target, Mapping):
            return target
    return sub


def _changes(sub: Any, value: Any, path: tuple[str | int, ...]) -> Iterator[tuple[str, str, Any]]:
    """(kind, label, new value) for the value at one place."""
    if not isinstance(sub, Mapping):
        return
    if path:
        for type_name, sample in _TYPE_SAMPLES:
            if _type_allowed(sub, type_name):
                continue
            yield "wrong-type", f"{type_name} where the schema wants {_types(sub)}", sample
            break
    yield from _bounds(sub, value)
    if isinstance(value, str):
        yield from _string_changes(sub, value, path)
    for key in ("enum", "const"):
        if key in sub:
            allowed = sub["enum"] if key == "enum" else [sub["const"]]
            for outsider in _ENUM_OUTSIDERS:
                if outsider not in allowed:
                    yield "enum", f"{json.dumps(outsider)} is not in the {key}", outsider


def _bounds(sub: Mapping[str, Any], value: Any) -> Iterator[tuple[str, str, Any]]:
    if _number(value):
        integer = isinstance(value, int)
        maximum, minimum = sub.get("maximum"), sub.get("minimum")
        exclusive_max, exclusive_min = sub.get("exclusiveMaximum"), sub.get("exclusiveMinimum")
        if _number(maximum):
            yield "maximum", f"maximum {maximum} crossed by one", _step(maximum, 1, integer)
        if _number(exclusive_max):
            yield "maximum", f"exclusiveMaximum {exclusive_max} reached", exclusive_max
        if _number(minimum):
            yield "minimum", f"minimum {minimum} crossed by one", _step(minimum, -1, integer)
        if _number(exclusive_min):
            yield "minimum", f"exclusiveMinimum {exclusive_min} reached", exclusive_min
    if isinstance(value, list):
        low, high = sub.get("minItems"), sub.get("maxItems")
        if isinstance(high, int) and not isinstance(high, bool):
            filler = value[0] if value else "x"
            padded = value + [copy.deepcopy(filler)] * (high + 1 - len(value))
            yield "max-items", f"maxItems {high} crossed: {high + 1} items", padded
        if isinstance(low, int) and not isinstance(low, bool) and low > 0:
            yield "min-items", f"minItems {low} crossed: {low - 1} items", value[: low - 1]


def _string_changes(
    sub: Mapping[str, Any], value: str, path: tuple[str | int, ...]
) -> Iterator[tuple[str, str, Any]]:
    high, low = sub.get("maxLength"), sub.get("minLength")
    if isinstance(high, int) and not isinstance(high, bool):
        longer = (value + "a" * (high + 1))[: high + 1]
        yield "max-length", f"maxLength {high} crossed: {high + 1} characters", longer
    if isinstance(low, int) and not isinstance(low, bool) and low > 0:
        yield "min-length", f"minLength {low} crossed: {low - 1} characters", value[: low - 1]
    if isinstance(sub.get("pattern"), str):
        for breaker in _PATTERN_BREAKERS:
            yield "pattern", "a string outside the pattern", breaker
    if isinstance(sub.get("format"), str):
        for breaker in _FORMAT_BREAKERS:
            yield "format", f"not a valid {sub['format']}", breaker
    for family in _families(sub, path):
        for attack in _ATTACKS[family]:
            yield "attack", f"{family} attack string", attack


def _families(sub: Mapping[str, Any], path: tuple[str | int, ...]) -> list[str]:
    """Which attack strings fit a string argument, from its name, format and description."""
    name = str(path[-1]) if path else ""
    hints = " ".join([name, str(sub.get("format", "")), str(sub.get("title", ""))])
    found = [family for family, pattern in _HINTS if pattern.search(hints)]
    return [*found, "text"]


def _object_changes(
    sub: Mapping[str, Any], base: Any, path: tuple[str | int, ...], value: dict[str, Any]
) -> Iterator[tuple[str, str, str, Any]]:
    required = sub.get("required")
    for name in required if isinstance(required, list) else []:
        if isinstance(name, str) and name in value:
            smaller = {key: item for key, item in value.items() if key != name}
            pointer = to_pointer([*path, name])
            yield (
                "missing-required",
                pointer,
                "required argument left out",
                (_replaced(base, path, smaller)),
            )
    if sub.get("additionalProperties") is False or sub.get("unevaluatedProperties") is False:
        bigger = {**value, _EXTRA_NAME: "x"}
        pointer = to_pointer([*path, _EXTRA_NAME])
        label = "an argument the schema does not declare"
        yield "extra-property", pointer, label, _replaced(base, path, bigger)


def _replaced(base: Any, path: tuple[str | int, ...], new: Any) -> Any:
    if not path:
        return copy.deepcopy(new)
    out = copy.deepcopy(base)
    target = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = copy.deepcopy(new)
    return out


def _type_allowed(sub: Mapping[str, Any], type_name: str) -> bool:
    declared = sub.get("type")
    if declared is None:
        return True  # any type may be fine: nothing certain to break
    names = declared if isinstance(declared, list) else [declared]
    return type_name in names or (type_name == "integer" and "number" in names)


def _types(sub: Mapping[str, Any]) -> str:
    declared = sub.get("type")
    return " or ".join(declared) if isinstance(declared, list) else str(declared)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _step(bound: Any, by: int, integer: bool) -> Any:
    if integer and float(bound).is_integer():
        return int(bound) + by
    return bound + by
