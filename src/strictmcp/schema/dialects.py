"""JSON Schema dialects, and which one a schema declares with ``$schema``."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from .codes import SchemaErrorCode
from .errors import SchemaError


class Dialect(Enum):
    """A JSON Schema dialect the engine can validate with."""

    DRAFT4 = "http://json-schema.org/draft-04/schema#"
    DRAFT6 = "http://json-schema.org/draft-06/schema#"
    DRAFT7 = "http://json-schema.org/draft-07/schema#"
    DRAFT2019_09 = "https://json-schema.org/draft/2019-09/schema"
    DRAFT2020_12 = "https://json-schema.org/draft/2020-12/schema"

    @property
    def uri(self) -> str:
        """The canonical ``$schema`` URI of this dialect."""
        return self.value

    @property
    def short_name(self) -> str:
        """The name users type: ``draft7``, ``2019-09``, ``2020-12``."""
        return _SHORT_NAMES[self]

    @classmethod
    def from_name(cls, name: str) -> Dialect:
        """Look a dialect up by short name (``2020-12``, ``draft7``) or ``$schema`` URI."""
        for dialect, short in _SHORT_NAMES.items():
            if name in (short, dialect.name):
                return dialect
        found = _KNOWN.get(_normalize(name))
        if found is None:
            raise ValueError(f"unknown JSON Schema dialect {name!r}")
        return found


DEFAULT_DIALECT = Dialect.DRAFT2020_12

_SHORT_NAMES = {
    Dialect.DRAFT4: "draft4",
    Dialect.DRAFT6: "draft6",
    Dialect.DRAFT7: "draft7",
    Dialect.DRAFT2019_09: "2019-09",
    Dialect.DRAFT2020_12: "2020-12",
}


def _normalize(uri: str) -> str:
    # Publishers write these URIs with and without the empty fragment and with either scheme;
    # all spellings name the same meta-schema.
    uri = uri.strip()
    if uri.endswith("#"):
        uri = uri[:-1]
    if uri.startswith("https://"):
        uri = "http://" + uri[len("https://") :]
    return uri


_KNOWN = {_normalize(d.uri): d for d in Dialect}


def dialect_of(
    schema: Any,
    *,
    default: Dialect = DEFAULT_DIALECT,
    lookup: Callable[[str], Any] | None = None,
) -> Dialect:
    """The dialect a schema declares, or ``default`` when it declares none.

    A ``$schema`` naming a custom meta-schema is followed through ``lookup`` (the caller's
    in-memory documents) to the dialect that meta-schema is written in. Anything else is a
    :class:`SchemaError`: an unknown ``$schema`` never silently falls back and is never fetched.
    """
    seen: set[str] = set()
    while isinstance(schema, dict) and "$schema" in schema:
        uri = schema["$schema"]
        if not isinstance(uri, str):
            raise SchemaError(
                SchemaErrorCode.INVALID, "$schema must be a string", location="/$schema"
            )
        known = _KNOWN.get(_normalize(uri))
        if known is not None:
            return known
        meta = lookup(uri) if lookup is not None and uri not in seen else None
        if meta is None:
            raise SchemaError(
                SchemaErrorCode.UNKNOWN_DIALECT,
                f"unknown $schema {uri!r}: strictmcp knows draft-04, draft-06, draft-07, "
                "2019-09 and 2020-12, and fetches no meta-schema",
                location="/$schema",
                detail=uri,
            )
        seen.add(uri)
        schema = meta
    return default
