"""The small protocol every validation backend implements."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .dialects import Dialect
from .limits import Limits
from .registry import Registry

FormatChecker = Callable[[str], bool]


@dataclass(frozen=True)
class CompileOptions:
    """Everything besides the schema that decides how it compiles."""

    dialect: Dialect
    limits: Limits = field(default_factory=Limits)
    formats: bool = True
    format_checkers: Mapping[str, FormatChecker] = field(default_factory=dict)
    backtracking: bool = False
    registry: Registry | None = None


@dataclass(frozen=True)
class RawIssue:
    """One failure as a backend reports it, before it gets a code and a message.

    ``detail`` holds facts from the schema (limits, names, expected types) and, for a few
    keywords, property names from the instance; never instance values. ``value`` is the failing
    instance value itself, surfaced only when a caller asks for it.
    """

    keyword: str
    instance_path: tuple[str | int, ...]
    schema_path: tuple[str | int, ...]
    evaluation_path: tuple[str | int, ...]
    detail: Mapping[str, Any]
    value: Any


class ValidationTimeout(Exception):
    """A backend stopped because validation ran past ``Limits.max_seconds``."""


class CompiledSchema(Protocol):
    """A schema compiled by a backend.

    ``preemptible`` backends may raise :class:`ValidationTimeout` from either method; others
    never do, which lets the engine hand out :meth:`is_valid` itself as a fast path.
    """

    preemptible: bool

    def is_valid(self, instance: Any) -> bool:
        """The verdict alone, as fast as the backend can give it."""

    def iter_raw(self, instance: Any, *, first_only: bool = False) -> Iterator[RawIssue]:
        """Every failure, in the backend's order; only the first with ``first_only``."""


class Backend(Protocol):
    """Compiles schemas; raises :class:`~strictmcp.schema.SchemaError` for ones it refuses."""

    name: str

    def compile(self, schema: Any, options: CompileOptions) -> CompiledSchema:
        """Compile ``schema`` (already profiled and within bounds) with ``options``."""
