"""The reference backend: python-jsonschema, for differential tests, never the default.

It is pure Python, so unlike the native backend it can be stopped between keywords: each one
checks a deadline, ``Limits.max_seconds``. A single keyword cannot be stopped, and Python's
regex engine backtracks, so a catastrophic ``pattern`` or a huge ``uniqueItems`` can overrun
the deadline: do not use this backend on untrusted input.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from ..extras import needs
from .backend import CompileOptions, RawIssue, ValidationTimeout
from .codes import SchemaErrorCode
from .dialects import Dialect
from .errors import SchemaError
from .native import NativeBackend
from .pointer import to_pointer
from .registry import Registry

_clock = threading.local()


def _load() -> Any:
    with needs("reference"):
        import jsonschema  # noqa: PLC0415 - an optional extra, imported only when chosen
    return jsonschema


def _with_deadline(cls: Any) -> Any:
    jsonschema = _load()

    def guard(check: Callable[..., Any]) -> Callable[..., Iterator[Any]]:
        def guarded(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
            if time.monotonic() > _clock.deadline:
                raise ValidationTimeout
            return check(validator, value, instance, schema) or iter(())

        return guarded

    return jsonschema.validators.extend(
        cls, {keyword: guard(check) for keyword, check in cls.VALIDATORS.items()}
    )


class ReferenceBackend:
    """python-jsonschema with a registry of only the caller's documents: it cannot fetch."""

    name = "python-jsonschema"

    def __init__(self) -> None:
        jsonschema = _load()
        self._classes: dict[Dialect, Any] = {
            Dialect.DRAFT4: _with_deadline(jsonschema.Draft4Validator),
            Dialect.DRAFT6: _with_deadline(jsonschema.Draft6Validator),
            Dialect.DRAFT7: _with_deadline(jsonschema.Draft7Validator),
            Dialect.DRAFT2019_09: _with_deadline(jsonschema.Draft201909Validator),
            Dialect.DRAFT2020_12: _with_deadline(jsonschema.Draft202012Validator),
        }

    def compile(self, schema: Any, options: CompileOptions) -> ReferenceSchema:
        """Refuse what the native backend refuses, then build a python-jsonschema validator.

        The native compile is the gate: python-jsonschema resolves references lazily and
        accepts any Python regex, so without it an external ``$ref`` would only fail at
        validation time and lookaround would pass unannounced.
        """
        NativeBackend().compile(schema, options)
        jsonschema = _load()
        cls = self._classes[options.dialect]
        try:
            cls.check_schema(schema, format_checker=cls.FORMAT_CHECKER)
        except jsonschema.SchemaError as error:
            raise SchemaError(
                SchemaErrorCode.INVALID,
                error.message,
                location=to_pointer(error.absolute_path),
            ) from None
        registry = (
            options.registry.native(self.name, _referencing_registry)
            if options.registry is not None
            else _referencing_registry(None)
        )
        checker = None
        if options.formats:
            checker = jsonschema.FormatChecker()
            for name, check in options.format_checkers.items():
                checker.checks(name)(check)
        validator = cls(schema, registry=registry, format_checker=checker)
        return ReferenceSchema(validator, options.limits.max_seconds)


class ReferenceSchema:
    """A python-jsonschema validator behind the :class:`CompiledSchema` protocol."""

    preemptible = True

    def __init__(self, validator: Any, max_seconds: float) -> None:
        self._validator = validator
        self._max_seconds = max_seconds

    def is_valid(self, instance: Any) -> bool:
        """The verdict; raises :class:`ValidationTimeout` past the deadline."""
        return next(self.iter_raw(instance), None) is None

    def iter_raw(self, instance: Any, *, first_only: bool = False) -> Iterator[RawIssue]:
        """Every failure as a :class:`RawIssue`; python-jsonschema is lazy, so
        ``first_only`` needs nothing special: the caller stops iterating."""
        import referencing.exceptions  # noqa: PLC0415 - comes with the optional extra

        _clock.deadline = time.monotonic() + self._max_seconds
        errors = self._validator.iter_errors(instance)
        while True:
            try:
                error = next(errors)
            except StopIteration:
                return
            except referencing.exceptions.Unresolvable as unresolvable:
                yield RawIssue("$ref", (), (), (), {"ref": str(unresolvable)}, None)
                return
            except RecursionError:
                raise ValidationTimeout from None
            yield _raw_issue(error)


def _raw_issue(error: Any) -> RawIssue:
    keyword = str(error.validator)
    value = error.validator_value
    detail: dict[str, Any] = {}
    if keyword in ("required", "dependentRequired", "dependencies"):
        missing = _missing_property(error)
        if missing is not None:
            detail["property"] = missing
    elif keyword == "type":
        detail["types"] = [value] if isinstance(value, str) else list(value)
    elif keyword in ("enum",):
        detail["options"] = value
    elif keyword == "const":
        detail["expected_value"] = value
    elif keyword in ("format", "pattern"):
        detail[keyword] = value
    elif keyword == "multipleOf":
        detail["multiple_of"] = value
    elif keyword == "oneOf" and "valid under each of" in error.message:
        keyword = "oneOf:multiple"
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        detail["limit"] = value
    elif keyword in ("additionalProperties", "unevaluatedProperties"):
        detail["unexpected"] = _unexpected(error)
    return RawIssue(
        keyword=keyword,
        instance_path=tuple(error.absolute_path),
        schema_path=tuple(error.absolute_schema_path),
        evaluation_path=tuple(error.absolute_schema_path),
        detail=detail,
        value=error.instance,
    )


def _missing_property(error: Any) -> str | None:
    instance = error.instance
    wanted = error.validator_value
    if isinstance(wanted, dict):
        wanted = [name for names in wanted.values() if isinstance(names, list) for name in names]
    if isinstance(instance, dict) and isinstance(wanted, list):
        for name in wanted:
            if name not in instance:
                return str(name)
    return None


def _unexpected(error: Any) -> list[str]:
    # python-jsonschema names the extra keys only in its message; recover them from the
    # instance and the schema instead of parsing prose.
    instance = error.instance if isinstance(error.instance, dict) else {}
    declared = error.schema.get("properties", {})
    patterns = error.schema.get("patternProperties", {})
    import re  # noqa: PLC0415

    return [
        key
        for key in instance
        if key not in declared and not any(re.search(p, key) for p in patterns)
    ]


def _referencing_registry(registry: Registry | None) -> Any:
    import referencing  # noqa: PLC0415
    import referencing.jsonschema  # noqa: PLC0415

    empty = referencing.Registry()
    if registry is None:
        return empty
    default = referencing.jsonschema.specification_with(registry.dialect.uri)
    return empty.with_resources(
        (uri, referencing.Resource.from_contents(doc, default_specification=default))
        for uri, doc in registry.items()
    )
