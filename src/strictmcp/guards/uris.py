"""Resource URIs meeting path and url guards: which guard a URI is for, and the paths a
``file:`` URI names.

A ``[[guard]]`` on a ``resources/read`` (or ``subscribe``, ``unsubscribe``) reads the URI the
server is asked for. A path guard confines ``file:`` URIs to its roots, a url guard checks
every other scheme, and a URI neither kind on it allows is refused: with only a path guard,
``https://169.254.169.254/`` is refused as surely as ``file:///etc/passwd``. A URI without a
scheme is checked by both, as the path a careless server would open and as a URL.

A ``file:`` URI is read as the two spellings a server may open: percent-decoded (Node's
``fileURLToPath``, Python's ``url2pathname``) and as written (a server that cuts off
``file://``); each must pass. What servers read differently is refused outright
(:data:`~strictmcp.guards.codes.GuardCode.PATH_URI_INVALID`): a host other than
``localhost`` (a share on another machine), a query or a fragment, an encoded ``/``, an
encoding that is not UTF-8; whitespace, controls and backslashes are refused as in any URL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import unquote_to_bytes

from .base import Guard, GuardFinding
from .codes import GuardCode
from .url import text_problem

URI_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "resources/read": ("/uri",),
    "resources/subscribe": ("/uri",),
    "resources/unsubscribe": ("/uri",),
}
"""The pointers into a request's params that hold a resource URI, per method: a path or url
guard there reads the URI as this module says."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_ENCODED_SLASH = re.compile(r"%2[fF]")
# Longer than any path a guard accepts (its max_length is 4096 by default): the guards' own
# bounds then decide.
_MAX_URI = 65536


def check_uri(uri: Any, paths: Sequence[Guard], urls: Sequence[Guard]) -> list[GuardFinding]:
    """Every finding of the path guards (``paths``) and url guards (``urls``) on one resource
    URI; see the module documentation."""
    if not isinstance(uri, str):
        return [finding for guard in (*paths, *urls) for finding in guard.check(uri)]
    problem = text_problem(uri, _MAX_URI)
    if problem is not None:
        return [problem]
    scheme = _SCHEME.match(uri)
    if scheme is None:
        return [finding for guard in (*paths, *urls) for finding in guard.check(uri)]
    if scheme.group()[:-1].lower() != "file":
        if urls:
            return [finding for guard in urls for finding in guard.check(uri)]
        only = "a path guard allows file: URIs only, and no url guard allows other schemes"
        return [GuardFinding(GuardCode.URL_SCHEME_NOT_ALLOWED, only)]
    if not paths:
        return [finding for guard in urls for finding in guard.check(uri)]
    read = file_paths(uri[scheme.end() :])
    if isinstance(read, GuardFinding):
        return [read]
    return list(dict.fromkeys(f for guard in paths for path in read for f in guard.check(path)))


def file_paths(rest: str) -> list[str] | GuardFinding:
    """The paths a server may open for a ``file:`` URI (``rest`` follows ``file:``): decoded,
    and as written when that differs; or why the URI is refused."""
    if rest.startswith("//"):
        host, slash, path = rest[2:].partition("/")
        if host.lower() not in ("", "localhost"):
            return _refused("the file: URI names a host other than localhost")
        path = slash + path
    else:
        path = rest
    if "?" in path or "#" in path:
        return _refused("the file: URI has a query or a fragment, which servers read differently")
    if _ENCODED_SLASH.search(path):
        return _refused("the file: URI has an encoded '/', which servers read differently")
    try:
        decoded = unquote_to_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        return _refused("the file: URI's percent-encoding is not UTF-8")
    decoded = decoded or "/"
    return [decoded] if decoded == path else [decoded, path]


def _refused(message: str) -> GuardFinding:
    return GuardFinding(GuardCode.PATH_URI_INVALID, message)
