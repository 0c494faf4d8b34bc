"""JSON Pointers (RFC 6901), the one way locations are written everywhere in strictmcp."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote


def to_pointer(path: Iterable[str | int]) -> str:
    """``["a", 0, "b/c"]`` → ``"/a/0/b~1c"``; the empty path is ``""`` (the whole document)."""
    parts = [str(part) for part in path]
    if not parts:
        return ""
    joined = "/".join(parts)
    # Most paths need no escaping; telling so from the joined text saves a pass per part.
    if "~" not in joined and joined.count("/") == len(parts) - 1:
        return "/" + joined
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def from_fragment(fragment: str) -> tuple[str, ...] | None:
    """The tokens of a URI fragment that is a JSON Pointer (``#/a/b``), or None if it is not."""
    if fragment in ("", "#"):
        return ()
    if not fragment.startswith("#/"):
        return None
    return tuple(
        unquote(token).replace("~1", "/").replace("~0", "~") for token in fragment[2:].split("/")
    )
