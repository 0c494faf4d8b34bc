"""Compiled schemas and the call that makes them."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from .analysis import SchemaProfile, profile_schema
from .backend import Backend, CompiledSchema, CompileOptions, FormatChecker, ValidationTimeout
from .cache import LRUCache
from .codes import IssueCode
from .dialects import DEFAULT_DIALECT, Dialect, dialect_of
from .errors import SchemaError
from .instance import check_instance, instance_shape, within_bounds
from .limits import Limits
from .messages import describe
from .native import NativeBackend
from .pointer import to_pointer
from .registry import Registry
from .result import HIDDEN, VALID, Issue, ValidationResult

DEFAULT_LIMITS = Limits()
# Native recursion uses stack per subschema level per instance level, and explaining a failure
# uses about three times what the verdict does. Keeping their product under this keeps a
# thread with a 1 MiB stack safe (measured: explaining overflows it from ~830 levels).
_STACK_LEVELS = 384
# Instances with more values than this get only their first failure explained.
_EXPLAIN_ALL_UP_TO = 10_000


class Validator:
    """A compiled schema, safe to share between threads and to call millions of times.

    Get one from :func:`compile_schema`. :meth:`validate` never raises for a bad instance: every
    problem, including the engine's own bounds, comes back as an :class:`Issue`.
    """

    __slots__ = (
        "_compiled",
        "_depth",
        "_explain_depth",
        "_fast_limit",
        "_is_valid",
        "_max_size",
        "_recursive",
        "backend",
        "dialect",
        "limits",
        "profile",
        "schema",
    )

    def __init__(
        self,
        schema: Any,
        *,
        dialect: Dialect,
        profile: SchemaProfile,
        compiled: CompiledSchema,
        limits: Limits,
        backend: str,
    ) -> None:
        self.schema = schema
        self.dialect = dialect
        self.profile = profile
        self.limits = limits
        self.backend = backend
        self._compiled = compiled
        self._is_valid = compiled.is_valid
        self._max_size = limits.max_instance_size
        self._recursive = profile.recursive
        # Largest json_size that may go straight to the backend; -1 when none may.
        self._fast_limit = -1 if self._recursive or compiled.preemptible else self._max_size
        self._depth = limits.max_instance_depth
        if profile.recursive:
            levels = _STACK_LEVELS // profile.evaluation_depth
            self._depth = max(1, min(self._depth, levels))
        # Explaining a failure walks every branch of a branching recursion, and the native
        # backend's error collection grows faster than the branch count (measured: 2.4x a
        # level for two branches), so the budget is spent at (branches + 1) ** depth.
        self._explain_depth = self._depth
        if profile.fanout > 1:
            affordable = int(math.log(limits.explain_budget) / math.log(profile.fanout + 1))
            self._explain_depth = min(self._depth, max(1, affordable))

    def validate(
        self, instance: Any, *, json_size: int | None = None, show_values: bool = False
    ) -> ValidationResult:
        """Validate one instance.

        ``json_size``: the length of the JSON text the instance was parsed from, when known.
        It stands in for measuring the instance, which makes the common case (a schema that
        cannot recurse) cost no more than the backend's own check. ``show_values`` puts each
        failing value in its issue; leave it off where values may be secrets.
        """
        if json_size is not None and json_size <= self._fast_limit:
            try:
                if self._is_valid(instance):
                    return VALID
                return self._explain(instance, show_values)
            except ValueError:
                # The backend could not read the instance (an unpaired surrogate, a key that
                # is not a string, nesting too deep to copy): the measuring path says which.
                return self._validate_bounded(instance, None, show_values)
        return self._validate_bounded(instance, json_size, show_values)

    @property
    def max_instance_depth(self) -> int:
        """The instance depth bound in force: ``limits.max_instance_depth``, lowered for
        recursive schemas so that native recursion fits a thread with a 1 MiB stack."""
        return self._depth

    @property
    def fast_path(self) -> Callable[[Any], bool] | None:
        """The backend's own verdict function, for the hottest loops; None where unsafe.

        Safe to call on any instance parsed from at most ``limits.max_instance_size`` bytes of
        JSON: it exists only for schemas that cannot recurse, on backends that cannot time
        out. A caller that already bounds message size (the protocol layer does) can skip even
        the cost of calling :meth:`validate` when this says True, and call :meth:`validate` for
        the details when it says False. It raises ``ValueError`` for an instance the backend
        cannot read (a key holding an unpaired surrogate): call :meth:`validate` then too.
        """
        return self._is_valid if self._fast_limit >= 0 else None

    def _validate_bounded(
        self, instance: Any, json_size: int | None, show_values: bool
    ) -> ValidationResult:
        if json_size is None:
            violation = (
                None
                if within_bounds(instance, self._depth, self._max_size)
                else check_instance(instance, self._depth, self._max_size)
            )
        elif json_size > self._max_size:
            return _bound_failure(
                IssueCode.INSTANCE_TOO_LARGE,
                f"instance is larger than the limit of {self._max_size} bytes of JSON",
            )
        elif self._recursive:
            violation = check_instance(instance, self._depth, None)
        else:
            violation = None
        if violation is not None:
            return _bound_failure(violation.code, violation.message, violation.pointer)
        try:
            if self._is_valid(instance):
                return VALID
            return self._explain(instance, show_values)
        except ValidationTimeout:
            return _bound_failure(
                IssueCode.VALIDATION_TIMEOUT,
                f"validation took longer than {self.limits.max_seconds} seconds",
            )
        except ValueError:
            return _bound_failure(
                IssueCode.INSTANCE_NOT_JSON,
                "instance holds text that is not valid Unicode (such as an unpaired surrogate)",
            )

    def is_valid(self, instance: Any, *, json_size: int | None = None) -> bool:
        """The verdict of :meth:`validate` alone."""
        return self.validate(instance, json_size=json_size).valid

    def _explain(self, instance: Any, show_values: bool) -> ValidationResult:
        # Only now is depth measured for instances that came with json_size: the backend's
        # error objects copy the failing value, and deep copies are refused (or worse).
        depth, values = instance_shape(instance, self._depth + 1)
        if depth > self._depth:
            return _bound_failure(
                IssueCode.INSTANCE_TOO_DEEP, f"instance nesting exceeds {self._depth} levels"
            )
        if depth > self._explain_depth:
            return _bound_failure(
                IssueCode.UNEXPLAINED,
                "does not match the schema; the details are withheld because explaining "
                "this failure through the schema's branching recursion would take too long",
            )
        # The native backend builds every error before yielding the first: on a big instance
        # that is seconds of work for issues nobody will read, so only the first is explained.
        first_only = values > _EXPLAIN_ALL_UP_TO
        issues: list[Issue] = []
        for raw in self._compiled.iter_raw(instance, first_only=first_only):
            if len(issues) == self.limits.max_issues:
                return ValidationResult(False, tuple(issues), truncated=True)
            code, message = describe(raw)
            issues.append(
                Issue(
                    code=code,
                    message=message,
                    instance_path=to_pointer(raw.instance_path),
                    keyword=raw.keyword.split(":", 1)[0],
                    schema_path=to_pointer(raw.schema_path),
                    evaluation_path=to_pointer(raw.evaluation_path),
                    value=raw.value if show_values else HIDDEN,
                )
            )
        if not issues:
            return _bound_failure(IssueCode.UNEXPLAINED, "does not match the schema")
        return ValidationResult(False, tuple(issues), truncated=first_only)

    def __repr__(self) -> str:
        return f"<Validator {self.dialect.short_name} backend={self.backend}>"


def _bound_failure(code: IssueCode, message: str, pointer: str = "") -> ValidationResult:
    return ValidationResult(False, (Issue(code=code, message=message, instance_path=pointer),))


_BACKENDS: dict[str, Backend] = {"jsonschema-rs": NativeBackend()}

#: Compiled validators by canonical schema and options. Bounded: see :class:`LRUCache`.
VALIDATOR_CACHE: LRUCache[Validator] = LRUCache(maxsize=1024)


def get_backend(name: str) -> Backend:
    """A backend by name: ``jsonschema-rs`` (default) or ``python-jsonschema`` (reference)."""
    if name not in _BACKENDS:
        if name != "python-jsonschema":
            raise ValueError(f"unknown backend {name!r}")
        from .reference import ReferenceBackend  # noqa: PLC0415 - optional dependency

        _BACKENDS[name] = ReferenceBackend()
    return _BACKENDS[name]


def compile_schema(
    schema: Any,
    *,
    default_dialect: Dialect = DEFAULT_DIALECT,
    limits: Limits | None = None,
    formats: bool = True,
    format_checkers: Mapping[str, FormatChecker] | None = None,
    backtracking: bool = False,
    registry: Registry | None = None,
    backend: str = "jsonschema-rs",
    cache: LRUCache[Validator] | None = VALIDATOR_CACHE,
) -> Validator:
    """Compile a schema once; the same schema and options return the cached validator.

    The dialect comes from ``$schema`` (``default_dialect`` when absent). References resolve
    within the schema, to bundled meta-schemas, and to ``registry``, and nowhere else: nothing
    is ever fetched. ``formats`` asserts ``format``; ``format_checkers`` adds or replaces
    checks by name. ``backtracking`` allows lookaround and backreferences in patterns, bounded
    by ``limits.backtrack_limit``; without it patterns run on a linear-time engine.

    Raises :class:`~strictmcp.schema.SchemaError` for invalid, unsafe or unresolvable schemas.
    """
    limits = limits or DEFAULT_LIMITS
    dialect = dialect_of(
        schema, default=default_dialect, lookup=registry.get if registry is not None else None
    )
    id_keyword = "id" if dialect is Dialect.DRAFT4 else "$id"
    options = CompileOptions(
        dialect=dialect,
        limits=limits,
        formats=formats,
        format_checkers=dict(format_checkers or {}),
        backtracking=backtracking,
        registry=registry,
    )
    engine = get_backend(backend)

    def build() -> Validator:
        # Bounds first: the backend must never see a schema over them.
        profile = profile_schema(schema, limits, id_keyword=id_keyword)
        try:
            compiled = engine.compile(schema, options)
        except SchemaError as error:
            if not error.location and error.detail is not None:
                error.location = _reference_location(profile, error.detail)
            raise
        return Validator(
            schema,
            dialect=dialect,
            profile=profile,
            compiled=compiled,
            limits=limits,
            backend=engine.name,
        )

    if cache is None:
        return build()
    try:
        digest = _digest(schema)
    except (RecursionError, TypeError, ValueError):
        # Not hashable as JSON text: too deep or not JSON. Profiling says which, as a
        # SchemaError; it cannot pass a document that json.dumps refused.
        profile_schema(schema, limits, id_keyword=id_keyword)
        raise
    key = (
        digest,
        dialect,
        limits,
        formats,
        tuple(sorted((name, id(check)) for name, check in options.format_checkers.items())),
        backtracking,
        registry.fingerprint if registry is not None else None,
        engine.name,
    )
    return cache.get_or_create(key, build)


def _reference_location(profile: SchemaProfile, target: str) -> str:
    """Where the reference that failed is written, for backends that do not say.

    Backends name the resolved URI; the schema holds what was written, possibly relative to
    an ``$id``. The first reference that is the target, or its unresolved tail, is the one.
    """
    wanted = target.split("#", 1)[0] if not target.startswith("#") else target
    for pointer, written in profile.references:
        bare = written if written.startswith("#") else written.split("#", 1)[0]
        if bare and (wanted == bare or wanted.endswith("/" + bare.removeprefix("./"))):
            return pointer
    return ""


def _digest(schema: Any) -> str:
    # Canonical text: key order and spacing do not make a new entry. A document deeper than
    # the interpreter's recursion limit raises RecursionError here, cleanly, before any backend.
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # surrogatepass: an unpaired surrogate is valid JSON text and must hash, not crash; the
    # backend then refuses the schema with a SchemaError.
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
