"""A 2026-07-28 (stateless) request as a request on a session of a handshake revision, and
the answer back: the translation, without any I/O (``proxy/bridge.py`` holds the sessions).

A server of a handshake revision (2024-11-05 to 2025-11-25, the servers most people run) knows
nothing of a request that carries its protocol version and the client's capabilities in
``_meta``: it wants ``initialize`` first, answers without ``resultType``, and asks the client
things (sampling, elicitation, roots) with requests of its own. A stateless client wants every
request to stand alone, ``resultType`` on every result, and what a server asks of it as an
``input_required`` result it retries with ``inputResponses`` and ``requestState``. What is said
here maps one onto the other:

- the session is opened (:func:`opening`) with the client's ``clientInfo`` and the
  capabilities its request declares, at :data:`BRIDGED_VERSION`;
- a request goes on (:func:`to_session`) without the stateless envelope (``_meta`` keys of
  the protocol's own, ``inputResponses``, ``requestState``);
- ``server/discover`` is answered from the session's ``initialize`` result (:func:`discovered`);
- a result comes back (:func:`to_stateless`) with ``resultType: "complete"`` and, for a
  cacheable result, no caching (``ttlMs`` 0) and for this caller alone (``cacheScope``
  ``private``): the server said nothing about either, and answered one caller's session;
- the server's requests of the client become one ``input_required`` result
  (:func:`input_required`).
"""

from __future__ import annotations

from typing import Any

from .jsonrpc import decode, error_response
from .revisions import Revision
from .wire import (
    CACHE_SCOPE,
    META_CLIENT_INFO,
    META_PREFIX,
    META_SERVER_INFO,
    STATELESS_VERSIONS,
    declared_capabilities,
    declared_version,
)

BRIDGED_VERSION = max(r.value for r in Revision if not r.stateless)
"""The revision a bridged session is opened at: the newest with a handshake (the server may
answer with an older one it speaks, as it would to any client)."""

ANSWERABLE = frozenset({"tools/call", "prompts/get", "resources/read"})
"""The requests a stateless client may be answered ``input_required`` on: the only ones a
server's request of the client can be bridged into."""

INPUT_METHODS: dict[str, str] = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}
"""The server requests a stateless client answers through ``inputResponses``, and the client
capability each needs."""

NOT_BRIDGED = frozenset(
    {
        "subscriptions/listen",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
        "tasks/update",
    }
)
"""Stateless requests with no counterpart on a handshake session: answered by the bridge with
:data:`NOT_BRIDGED_TEXT` (-32601), never sent to the server."""
NOT_BRIDGED_TEXT = (
    "Method not found: a server of a handshake revision has no equivalent of this request "
    "(strictmcp proxy bridge)"
)

_CACHEABLE = frozenset(
    {
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "server/discover",
    }
)
_STATELESS_ONLY = ("inputResponses", "requestState")
_CLIENT_INFO = {"name": "strictmcp-bridge", "version": "1"}


def opens_stateless(line: bytes, *, max_size: int) -> bool:
    """Whether a client's first line is a request of the stateless revision (its ``_meta``
    declares one): a client that says no ``initialize`` first, which a server of a handshake
    revision can serve only through sessions held for it. Read as strictly as every line."""
    decoded = decode(line, max_size=max_size)
    if decoded.batch or len(decoded.messages) != 1:
        return False
    message = decoded.messages[0]
    return (
        message.kind == "request"
        and declared_version({"params": message.params}) in STATELESS_VERSIONS
    )


def capability_names(params: Any) -> frozenset[str]:
    """The capabilities (of those a server may ask something of) a stateless request declares:
    a bridged session is opened with these, so a session serves only requests declaring the
    same."""
    declared = declared_capabilities(params) or {}
    return frozenset(
        name for name in INPUT_METHODS.values() if isinstance(declared.get(name), dict)
    )


def opening(request_id: str, params: Any) -> dict[str, Any]:
    """The ``initialize`` request opening a session for the stateless request with ``params``:
    its client's name and the capabilities it declares (those a handshake revision has)."""
    declared = declared_capabilities(params) or {}
    capabilities = {
        name: declared[name]
        for name in (*INPUT_METHODS.values(), "experimental")
        if isinstance(declared.get(name), dict)
    }
    meta = params.get("_meta") if isinstance(params, dict) else None
    info = meta.get(META_CLIENT_INFO) if isinstance(meta, dict) else None
    named = isinstance(info, dict) and all(
        isinstance(info.get(k), str) for k in ("name", "version")
    )
    initialize = {
        "protocolVersion": BRIDGED_VERSION,
        "capabilities": capabilities,
        "clientInfo": info if named else _CLIENT_INFO,
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": initialize}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
"""What the bridge tells the server once its ``initialize`` is answered."""


def to_session(request: dict[str, Any]) -> dict[str, Any]:
    """A stateless request as it goes on a session: without the protocol's ``_meta`` keys (a
    progress token and the client's own keys stay), ``inputResponses`` and ``requestState``."""
    params = request.get("params")
    if not isinstance(params, dict):
        return request
    kept = {k: v for k, v in params.items() if k not in _STATELESS_ONLY and k != "_meta"}
    meta = params.get("_meta")
    if isinstance(meta, dict):
        own = {k: v for k, v in meta.items() if not k.startswith(META_PREFIX)}
        if own:
            kept["_meta"] = own
    return {**request, "params": kept}


def to_stateless(response: dict[str, Any], method: str) -> dict[str, Any]:
    """A session's answer to a request of ``method`` as a stateless client reads it: an error
    as it came, a result marked complete (and, when cacheable, not to be cached)."""
    result = response.get("result")
    if not isinstance(result, dict):
        return response
    marked = {**result, "resultType": "complete"}
    if method in _CACHEABLE:
        marked.update(ttlMs=0, **{CACHE_SCOPE: "private"})
    return {**response, "result": marked}


def discovered(request_id: Any, initialized: dict[str, Any]) -> dict[str, Any]:
    """The answer to ``server/discover``, from the result of the session's ``initialize``:
    its capabilities (but the 2025-11-25 ``tasks``, which are not bridged, and ``logging``,
    whose messages are not), instructions and server information."""
    capabilities = initialized.get("capabilities")
    kept = {
        k: v
        for k, v in (capabilities if isinstance(capabilities, dict) else {}).items()
        if k not in ("tasks", "logging")
    }
    result: dict[str, Any] = {
        "resultType": "complete",
        "supportedVersions": [r.value for r in Revision if r.stateless],
        "capabilities": kept,
        "ttlMs": 0,
        CACHE_SCOPE: "private",
    }
    instructions = initialized.get("instructions")
    if isinstance(instructions, str):
        result["instructions"] = instructions
    info = initialized.get("serverInfo")
    if isinstance(info, dict):
        result["_meta"] = {META_SERVER_INFO: info}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def input_required(request_id: Any, asked: dict[str, dict[str, Any]], state: str) -> dict[str, Any]:
    """The answer telling a stateless client what the server asks of it (``asked``: each
    server request, by the key its response is to have in ``inputResponses``), and the
    ``requestState`` to retry with."""
    requests = {
        key: {"method": r["method"], **({"params": r["params"]} if "params" in r else {})}
        for key, r in asked.items()
    }
    result = {"resultType": "input_required", "inputRequests": requests, "requestState": state}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def responses_given(params: Any) -> tuple[str | None, dict[str, Any]]:
    """A retry's ``requestState`` and ``inputResponses`` (only the entries that are objects)."""
    if not isinstance(params, dict):
        return None, {}
    state = params.get("requestState")
    given = params.get("inputResponses")
    answers = (
        {k: v for k, v in given.items() if isinstance(v, dict)} if isinstance(given, dict) else {}
    )
    return (state if isinstance(state, str) else None), answers


def not_bridged(request_id: Any) -> dict[str, Any]:
    """The answer to a request in :data:`NOT_BRIDGED`."""
    return error_response(request_id, -32601, NOT_BRIDGED_TEXT)
