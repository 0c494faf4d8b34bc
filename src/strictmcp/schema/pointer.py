"""JSON Pointers (RFC 6901), the one way locations are written everywhere in strictmcp."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote


def to_pointer(path: Iterable[str | int]) -> str:
    """``["a", 0, "b/c"]`` → ``"/a/0/b~1c"``; the empty path is ``""`` (the whole document)."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def from_fragment(fragment: str) -> tuple[str, ...] | None:
    """The tokens of a URI fragment that is a JSON Pointer (``#/a/b``), or None if it is not."""
    if fragment in ("", "#"):
        return ()
    if not fragment.startswith("#/"):
        return None
    return tuple(
        unquote(token).replace("~1", "/").replace("~0", "~") for token in fragment[2:].split("/")
    )
