"""The MCP headers of streamable HTTP that say what a POST carries, and their checks.

From 2026-07-28 a request repeats its protocol version, method and (for the methods that
name something) that name in ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name``, so
that load balancers and gateways can route it without reading the body, and a tool call
repeats the arguments its tool marks with ``x-mcp-header`` in ``Mcp-Param-*`` headers
(SEP-2243). A server refuses a request whose headers and body disagree with
``HEADER_MISMATCH``.

:func:`refusal` is the order the official SDK checks a 2026-07-28 request in, first failure
wins: the ``_meta`` envelope (``INVALID_PARAMS``), the headers, the version (unsupported:
``UNSUPPORTED_PROTOCOL_VERSION`` naming the supported ones), and, the proxy's own rung, a
method the revision removed (``METHOD_NOT_FOUND``): no server behind the proxy may see an
``initialize`` on the wire that has none.

The headers the transport sets itself (:func:`transport_header`) are the ones a command line
may not set, and :func:`challenge_hint` is what a person is told of a server's
``WWW-Authenticate`` challenge when it refuses a request (HTTP 401 or 403).
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from ..policy import is_loopback
from ..protocol import error_response
from ..protocol.jsonrpc import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..protocol.surfaces import CLIENT_REQUESTS
from ..protocol.wire import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    STATELESS_VERSIONS,
    declared_version,
)

SESSION_ID = "mcp-session-id"
PROTOCOL_VERSION = "mcp-protocol-version"
METHOD = "mcp-method"
NAME = "mcp-name"
PARAM = "mcp-param-"
"""The prefix of the headers repeating a tool call's arguments, lower case as ASGI gives them."""

SchemaOf = Callable[[str], Any]
"""The input schema of the tool of a name, as listed (None when it is not)."""

_REMOVED = frozenset(
    {method for methods in CLIENT_REQUESTS.values() for method in methods}
    - {
        method
        for revision, methods in CLIENT_REQUESTS.items()
        if revision.value in STATELESS_VERSIONS
        for method in methods
    }
)
"""Client requests of the handshake revisions that 2026-07-28 no longer has."""

NAMED_BY = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # The tasks extension (SEP-2663) routes its methods by the task they name.
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
"""The methods whose request names something, and the parameter holding the name."""

_TRANSPORT = frozenset(
    {
        "accept",
        "accept-encoding",
        "connection",
        "content-length",
        "content-type",
        "host",
        "last-event-id",
        "te",
        "transfer-encoding",
        "upgrade",
        "user-agent",
    }
)
TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP token (RFC 9110 5.6.2): a header's name, an authentication scheme."""
_AUTH_PARAM = re.compile(r'([!#$%&\'*+.^_`|~0-9A-Za-z-]+)[ \t]*=[ \t]*("(?:[^"\\]|\\.)*"|[^\s,]*)')
_HINTS = ("realm", "error", "scope", "resource_metadata")
"""The parameters of a challenge worth telling (RFC 6750, RFC 9728): where to get a token and
what was wrong with the one sent. ``error_description`` and any others are the server's prose."""
_HINT_WIDTH = 200

_PLAIN = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?")
_ENCODED = re.compile(r"=\?base64\?([A-Za-z0-9+/=]*)\?=")


def named(message: dict[str, Any]) -> str | None:
    """What a request names (a tool, a prompt, a resource), as ``Mcp-Name`` repeats it."""
    key = NAMED_BY.get(str(message.get("method")))
    params = message.get("params")
    value = params.get(key) if key is not None and isinstance(params, dict) else None
    return value if isinstance(value, str) else None


def encode_name(value: str) -> str:
    """``value`` as a header value: as it is when it is plain printable ASCII, otherwise
    base64 of its UTF-8 in the ``=?base64?...?=`` form the spec defines."""
    if _PLAIN.fullmatch(value) and not _ENCODED.fullmatch(value):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


def decode_name(value: str) -> str | None:
    """The name a header value carries; None when its encoding is broken."""
    encoded = _ENCODED.fullmatch(value)
    if encoded is None:
        return value
    payload = encoded.group(1)
    try:
        raw = base64.b64decode(payload, validate=True)
        # Only the canonical form is what an encoder writes: another would be a second
        # spelling of the value, for a router and the server to read differently.
        return raw.decode() if base64.b64encode(raw).decode() == payload else None
    except (binascii.Error, UnicodeDecodeError):
        return None


def request_headers(
    message: Any, version: str | None, input_schema: SchemaOf | None = None
) -> dict[str, str]:
    """The MCP headers to send with ``message`` (``version`` negotiated so far, if any); a
    2026-07-28 tool call's ``Mcp-Param-*`` ones need its tool's schema, from ``input_schema``."""
    declared = declared_version(message)
    if declared is not None and not _PLAIN.fullmatch(declared):
        # No version has a name a header cannot carry; the server reads the body's.
        declared = None
    headers: dict[str, str] = {}
    if declared is not None or version is not None:
        headers[PROTOCOL_VERSION] = declared or version or ""
    method = message.get("method") if isinstance(message, dict) else None
    if declared in STATELESS_VERSIONS and "id" in message and isinstance(method, str):
        # A method name a header cannot carry goes base64, as names do.
        headers[METHOD] = encode_name(method)
        name = named(message)
        if name is not None:
            headers[NAME] = encode_name(name)
        if name is not None and input_schema is not None and message["method"] == "tools/call":
            for key, token in _marked(input_schema(name)):
                value = _rendered(_arguments(message).get(key))
                if value is not None:
                    headers[f"{PARAM}{token.lower()}"] = encode_name(value)
    return headers


def refusal(message: dict[str, Any], headers: dict[str, str]) -> dict[str, Any] | None:
    """The error answering a 2026-07-28 request the transport refuses (see the module
    documentation), or None. Values are not repeated: they may be what the client wants kept
    private, and the requested version only when it is one (the spec wants it echoed)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    request_id = message.get("id")
    if (
        not isinstance(meta, dict)
        or META_PROTOCOL_VERSION not in meta
        or META_CLIENT_CAPABILITIES not in meta
    ):
        missing = f"params._meta must carry {META_PROTOCOL_VERSION} and {META_CLIENT_CAPABILITIES}"
        return error_response(request_id, INVALID_PARAMS, missing)
    wrong = _mismatch(message, headers)
    if wrong is not None:
        return error_response(request_id, HEADER_MISMATCH, f"Header mismatch: {wrong}")
    version = meta[META_PROTOCOL_VERSION]
    if not isinstance(version, str):
        return error_response(request_id, INVALID_PARAMS, "The protocol version must be a string")
    if version not in STATELESS_VERSIONS:
        return unsupported(request_id, version)
    if message.get("method") in _REMOVED:
        return error_response(request_id, METHOD_NOT_FOUND, "Method not found")
    return None


def unsupported(request_id: Any, version: str) -> dict[str, Any]:
    """``UNSUPPORTED_PROTOCOL_VERSION`` for ``version``, naming the versions served."""
    data = {"supported": sorted(STATELESS_VERSIONS), "requested": version}
    return error_response(
        request_id, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data
    )


def _mismatch(message: dict[str, Any], headers: dict[str, str]) -> str | None:
    if headers.get(PROTOCOL_VERSION) != declared_version(message):
        return "MCP-Protocol-Version header does not match the request's protocol version"
    if METHOD not in headers:
        return "the Mcp-Method header is missing: a stateless request carries its method in it"
    if headers.get(METHOD) != message.get("method"):
        return "Mcp-Method header does not match the request's method"
    name = named(message)
    if name is not None:
        given = headers.get(NAME)
        key = NAMED_BY[str(message.get("method"))]
        if given is None:
            return f"the Mcp-Name header is missing: a stateless request carries its {key} in it"
        if decode_name(given) != name:
            return f"Mcp-Name header does not match the request's {key}"
    return None


def param_mismatch(
    message: dict[str, Any], input_schema: Any, headers: dict[str, str]
) -> dict[str, Any] | None:
    """The ``HEADER_MISMATCH`` error for a tool call whose ``Mcp-Param-*`` headers disagree
    with its arguments, as its tool's ``input_schema`` marks them, or None.

    Each marked argument and its header come together and agree (a null argument counts as
    absent); booleans are ``true`` or ``false``, an integral number matches as a number.
    """
    arguments = _arguments(message)
    for key, token in _marked(input_schema):
        given = headers.get(f"{PARAM}{token.lower()}")
        wrong = _param_wrong(arguments.get(key), given, input_schema["properties"][key].get("type"))
        if wrong is not None:
            text = f"Header mismatch: Mcp-Param-{token} header {wrong}"
            return error_response(message.get("id"), HEADER_MISMATCH, text)
    return None


def _marked(input_schema: Any) -> list[tuple[str, str]]:
    """The arguments an input schema marks with ``x-mcp-header``, with their header tokens."""
    properties = input_schema.get("properties") if isinstance(input_schema, dict) else None
    if not isinstance(properties, dict):
        return []
    marked = []
    for key, schema in properties.items():
        token = schema.get("x-mcp-header") if isinstance(schema, dict) else None
        if isinstance(token, str) and token:
            marked.append((key, token))
    return marked


def _arguments(message: dict[str, Any]) -> dict[str, Any]:
    params = message.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    return arguments if isinstance(arguments, dict) else {}


def _param_wrong(value: Any, given: str | None, kind: Any) -> str | None:
    """What is wrong with one ``Mcp-Param-*`` header for argument ``value``, or None."""
    rendered = _rendered(value)
    if rendered is None:
        return None if given is None else "is present but the argument has no header value"
    if given is None:
        return "is missing but the argument is present"
    decoded = decode_name(given)
    if decoded is None:
        return "carries a malformed base64 value"
    if decoded == rendered or (kind == "integer" and _same_integer(decoded, value)):
        return None
    return "does not match the argument"


def _rendered(value: Any) -> str | None:
    """An argument as a client writes it into its header; None for one it leaves out."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


_DECIMAL = re.compile(r"-?[0-9]+(?:\.0+)?")


def _same_integer(text: str, value: Any) -> bool:
    """Whether ``text`` is a decimal numeral of the integral number ``value``."""
    integral = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not integral or not _DECIMAL.fullmatch(text):
        return False
    return int(text.partition(".")[0]) == int(value)


def transport_header(name: str) -> bool:
    """Whether the transport sets the header ``name`` itself (framing, content negotiation,
    the MCP headers): one a user's ``--header`` would break or forge."""
    lowered = name.lower()
    return lowered in _TRANSPORT or lowered.startswith("mcp-")


def challenge_hint(challenge: str | None, sent: Sequence[str] = ()) -> str:
    """The scheme and the ``realm``, ``error``, ``scope`` and ``resource_metadata`` of a
    ``WWW-Authenticate`` value (``Bearer error="invalid_token", resource_metadata="..."``),
    each cut short; "" when it has none. A value holding one of the credentials ``sent`` is
    withheld: a server may repeat the token it was given, and this is printed."""

    def clean(value: str) -> str | None:
        if any(secret in value for secret in sent if secret):
            return None
        return value[:_HINT_WIDTH] + ("..." if len(value) > _HINT_WIDTH else "")

    scheme, _, rest = (challenge or "").strip().partition(" ")
    shown = clean(scheme) if TOKEN.fullmatch(scheme) and len(scheme) <= 32 else None
    found: dict[str, str] = {}
    for match in _AUTH_PARAM.finditer(rest):
        name, value = match.group(1).lower(), match.group(2)
        if name not in _HINTS or name in found:
            continue
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        found[name] = clean(value) or "(withheld: it repeats a credential)"
    params = ", ".join(f'{name}="{found[name]}"' for name in _HINTS if name in found)
    return " ".join(part for part in (shown, params) if part)


def header_map(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """A request's headers (as ASGI gives them) by lower-case name, without the whitespace
    around each value (RFC 9110 5.5; h11 strips it, httptools keeps what trails); a repeated
    one is its values joined with commas, as HTTP combines them, so that no check reads one
    value and the rest another."""
    headers: dict[str, str] = {}
    for key, value in raw:
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1").strip(" \t")
        headers[name] = f"{headers[name]}, {text}" if name in headers else text
    return headers


_CACHED_HEADERS = 512
"""The longest Host and Origin together whose verdict is cached (a host name is at most 253
characters)."""


def foreign(headers: dict[str, str], loopback: bool) -> int:
    """The status refusing a request from a foreign page or name (403 for a foreign
    ``Origin``, 421 for a foreign ``Host`` when listening on ``loopback``), else 0: what
    every streamable HTTP endpoint of strictmcp checks before reading anything.

    A page in a browser may post to any address, and DNS rebinding can make a foreign
    name resolve to ours: on loopback only local origins are let in; elsewhere, a page
    of our own origin (or a local one).
    """
    host, origin = headers.get("host", ""), headers.get("origin")
    if len(host) + len(origin or "") > _CACHED_HEADERS:
        # A client's headers are its own to size: the cache keeps short ones only.
        return _foreign.__wrapped__(host, origin, loopback)
    return _foreign(host, origin, loopback)


@functools.lru_cache(maxsize=256)
def _foreign(host_header: str, origin: str | None, loopback: bool) -> int:
    # Every request asks, with the same few headers: parsing them is a few per cent of a call.
    host = _hostname(f"//{host_header}")
    if origin is not None:
        origin_host = _hostname(origin)
        allowed = origin_host is not None and (
            is_loopback(origin_host) or (not loopback and origin_host == host)
        )
        if not allowed:
            return 403
    if loopback and (host is None or not is_loopback(host)):
        return 421
    return 0


def _hostname(url: str) -> str | None:
    """The host a URL names ("" for none); None when it cannot be read (a bracket left
    open, something in brackets that is no IPv6 address), which no local name is."""
    try:
        return urlsplit(url).hostname or ""
    except ValueError:
        return None
