"""Guards: what an argument *means*, checked before a tool runs. A schema proves shape, not
safety: a valid string can still be a path out of its root or a URL into the cloud metadata
service. Guards are attached to arguments by a policy, so they protect servers whose code we
do not control."""

from .argv import ArgvGuard
from .base import Guard, GuardFinding, not_a_string
from .codes import GuardCode
from .path import PathGuard
from .schema_fragment import SchemaGuard
from .sql import DEFAULT_DENIED_FUNCTIONS, SqlGuard
from .text import TextGuard
from .url import RedirectRefused, Resolver, SystemResolver, UrlGuard

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
