"""Guards: what an argument *means*, checked before a tool runs. A schema proves shape, not
safety: a valid string can still be a path out of its root or a URL into the cloud metadata
service. Guards are attached to arguments by a policy, so they protect servers whose code we
do not control."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .argv import ArgvGuard
from .base import Guard, GuardFinding, not_a_string
from .codes import GuardCode
from .path import PathGuard
from .schema_fragment import SchemaGuard
from .text import TextGuard
from .url import RedirectRefused, Resolver, SystemResolver, UrlGuard

if TYPE_CHECKING:
    from .sql import DEFAULT_DENIED_FUNCTIONS, SqlGuard

__all__ = [
    "DEFAULT_DENIED_FUNCTIONS",
    "ArgvGuard",
    "Guard",
    "GuardCode",
    "GuardFinding",
    "PathGuard",
    "RedirectRefused",
    "Resolver",
    "SchemaGuard",
    "SqlGuard",
    "SystemResolver",
    "TextGuard",
    "UrlGuard",
    "not_a_string",
]


def __getattr__(name: str) -> Any:
    # The SQL guard's parsers (sqlglot, pglast) take longer to import than the rest of the
    # package: they are imported when a policy first asks for the guard.
    if name not in ("DEFAULT_DENIED_FUNCTIONS", "SqlGuard"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import sql  # noqa: PLC0415 - on first use

    value = getattr(sql, name)
    globals()[name] = value
    return value
