"""An explicit, in-memory set of documents that ``$ref`` may reach by URI."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from .dialects import DEFAULT_DIALECT, Dialect


def _strip_fragment(uri: str) -> str:
    return uri.split("#", 1)[0]


class Registry(Mapping[str, Any]):
    """Schema documents by URI, the only place a reference outside a schema may resolve to.

    strictmcp never fetches: a reference to a URI that is not here (and not a bundled
    meta-schema) fails to compile. ``dialect`` applies to documents without ``$schema``.

    >>> Registry({"https://example.com/point.json": {"type": "object"}})
    Registry(1 documents, dialect='2020-12')
    """

    def __init__(self, documents: Mapping[str, Any], *, dialect: Dialect = DEFAULT_DIALECT) -> None:
        self._documents = {_strip_fragment(uri): doc for uri, doc in documents.items()}
        self.dialect = dialect
        canonical = json.dumps(
            [dialect.value, sorted(self._documents.items())],
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        #: A digest of the contents, part of every cache key that involves this registry.
        self.fingerprint = hashlib.blake2b(canonical.encode(), digest_size=16).hexdigest()
        self._native: dict[str, Any] = {}

    def __getitem__(self, uri: str) -> Any:
        return self._documents[_strip_fragment(uri)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._documents)

    def __len__(self) -> int:
        return len(self._documents)

    def __repr__(self) -> str:
        return f"Registry({len(self)} documents, dialect={self.dialect.short_name!r})"

    def native(self, backend: str, build: Any) -> Any:
        """The backend's own form of this registry, built once by ``build(self)``."""
        if backend not in self._native:
            self._native[backend] = build(self)
        return self._native[backend]
