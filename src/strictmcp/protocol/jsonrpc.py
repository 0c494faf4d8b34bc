"""The JSON-RPC 2.0 envelope as MCP uses it: decoding, envelope rules, error replies, pairing.

Transport-independent: stdio lines, HTTP bodies and SSE events all arrive here as text.

MCP is stricter than JSON-RPC 2.0 in a few places, and strictmcp follows MCP:

- ``params``, when present, must be an object: JSON-RPC allows by-position arrays, MCP defines
  every method's params by name. ``null`` is refused too (JSON-RPC allows only omission).
- ``result`` must be an object (MCP's ``Result``); from 2026-07-28 it must carry a string
  ``resultType``.
- ``_meta``, where MCP defines it (in ``params`` and ``result``), must be an object, and a
  request's ``_meta.progressToken`` a string or integer.

And stricter than the MCP schemas where JSON-RPC 2.0 is explicit (the schemas leave these
open because they allow unknown members everywhere): a message may not be a request and a
response at once, a response may not carry both ``result`` and ``error``, and an empty batch is
refused. A string (or key) holding an unpaired surrogate is refused wherever it stands: JSON
can escape one (``"\\ud800"``), but it is not Unicode text, has no UTF-8 form, and servers
read it each their own way (I-JSON, RFC 7493, forbids it for that reason). An error response
may carry ``"id": null`` (JSON-RPC requires it when the request's id could not be read), which
the MCP schemas do not allow.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..schema.codes import IssueCode
from ..schema.jsonio import JSONInputError, load_json
from .revisions import Revision
from .rules import Rule
from .violations import Severity, Violation

__all__ = [
    "CONNECTION_CLOSED",
    "DEFAULT_MAX_SIZE",
    "HEADER_MISMATCH",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "JSONRPC_VERSION",
    "METHOD_NOT_FOUND",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "PARSE_ERROR",
    "REQUEST_TIMEOUT",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "URL_ELICITATION_REQUIRED",
    "Decoded",
    "Kind",
    "Message",
    "RequestTracker",
    "answer_digest",
    "answer_id",
    "check_envelope",
    "decode",
    "error_response",
    "jsonrpc_error_for",
    "refusal_for",
    "unpaired_surrogates",
]

# JSON-RPC's and MCP's error codes, the values mcp_types.jsonrpc gives them (tests/
# test_protocol_codes.py holds them equal). Written here because importing any mcp_types module
# first builds every pydantic model of mcp_types._types: most of the proxy's time to its first
# answer, for constants.
JSONRPC_VERSION: Final = "2.0"
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
CONNECTION_CLOSED: Final = -32000
REQUEST_TIMEOUT: Final = -32001
HEADER_MISMATCH: Final = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
URL_ELICITATION_REQUIRED: Final = -32042

Kind = Literal["request", "notification", "response", "error"]

DEFAULT_MAX_SIZE = 4 * 1024 * 1024
"""The largest message :func:`decode` reads by default: the engine's own instance size bound."""


@dataclass(frozen=True, slots=True)
class Message:
    """One valid JSON-RPC envelope.

    ``kind`` says which of the four shapes it is; the fields that shape does not have are None
    (``result`` is None for anything but a response). ``raw`` is the decoded object itself,
    unknown members included: the method layer validates it, and a proxy forwards it.
    """

    kind: Kind
    id: int | str | None
    method: str | None
    params: dict[str, Any] | None
    result: Any
    error: dict[str, Any] | None
    raw: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Decoded:
    """What :func:`decode` read: the valid envelopes, and every violation found on the way.

    ``messages`` holds each item that is a valid envelope, in order, even when the batch as a
    whole is refused; ``violations`` says whether it was. ``size`` is the length of the input
    (bytes for ``bytes``, characters for ``str``): pass it to the schema engine as
    ``json_size`` when validating any part of these messages. ``error_id`` is the id to
    answer a refused single message with: its own, when the text parsed to an object with a
    valid id, else None (``"id": null``). ``plain`` says, of a response or a batch, that every
    string in the text is printable ASCII, tabs and line breaks (:func:`plain_text`) and none
    is a resource's ``blob``: nothing in it for result hygiene to find (False for other
    messages: not looked for).
    """

    messages: tuple[Message, ...]
    batch: bool
    violations: tuple[Violation, ...]
    size: int
    error_id: int | str | None = None
    plain: bool = False

    @property
    def valid(self) -> bool:
        """Whether no violation is an error."""
        return all(v.severity is not Severity.ERROR for v in self.violations)


def decode(
    data: bytes | str,
    revision: Revision | None = None,
    *,
    max_size: int = DEFAULT_MAX_SIZE,
    value: Any = None,
) -> Decoded:
    """Read one JSON-RPC message or batch and check its envelope; never raises on bad input.

    The size is checked before parsing; duplicate keys and ``NaN``/``Infinity`` are refused
    (see :func:`strictmcp.schema.jsonio.load_json`). With ``revision`` None, the revision is
    not known yet and batches are accepted; with a revision, a batch is refused unless that
    revision allows batches (only 2025-03-26 does).

    ``value``, when not None, is what ``data`` reads as, known to the caller (it read the
    text as strictly, or wrote the text from it): the text is not parsed again. Everything
    else is checked on ``data`` as ever.
    """
    size = len(data)
    try:
        document = value if value is not None and size <= max_size else None
        if document is None:
            document = load_json(data, max_size=max_size)
    except JSONInputError as error:
        rule = (
            Rule.MESSAGE_TOO_LARGE
            if error.code == IssueCode.INSTANCE_TOO_LARGE.value
            else Rule.PARSE_ERROR
        )
        request_id = _lenient_id(data) if rule is Rule.PARSE_ERROR else None
        return Decoded((), False, (Violation(rule, error.message),), size, request_id)
    # Most messages hold no backslash at all, hence no escape: no call for them.
    unpaired = _unpaired_in(data, document) if _may_escape(data) else []
    if not isinstance(document, list):
        message, violations = check_envelope(document, revision)
        if message is not None and not violations and not unpaired:
            plain = message.kind == "response" and _nothing_for_hygiene(data)
            return Decoded((message,), False, (), size, message.id, plain)
        violations += unpaired
        return Decoded(
            () if message is None else (message,),
            False,
            tuple(violations),
            size,
            _error_id(document, unpaired),
        )
    violations = unpaired
    if revision is not None and not revision.allows_batches:
        violations.append(
            Violation(Rule.BATCH_NOT_ALLOWED, f"MCP {revision.value} does not allow batches")
        )
    if not document:
        violations.append(Violation(Rule.EMPTY_BATCH, "a batch must hold at least one message"))
    messages = []
    for index, item in enumerate(document):
        message, found = check_envelope(item, revision, f"/{index}")
        violations.extend(found)
        if message is not None:
            messages.append(message)
            if message.method == "initialize":
                # The handshake settles the revision, so it cannot ride in a batch.
                violations.append(
                    Violation(
                        Rule.BATCH_NOT_ALLOWED,
                        "initialize must not be part of a batch",
                        f"/{index}/method",
                    )
                )
    kinds = {m.kind in ("request", "notification") for m in messages}
    if len(kinds) > 1:
        # A batch is what one side sends: requests and notifications, or the responses to them.
        violations.append(
            Violation(Rule.INVALID_MESSAGE, "a batch must not mix requests and responses")
        )
    return Decoded(tuple(messages), True, tuple(violations), size, None, _nothing_for_hygiene(data))


# The top-level id of a message written as most SDKs write one: first after "jsonrpc" (Python
# and compact writers), or last (the TypeScript SDK). A closing brace at the end of the text is
# the top level's, and a key opened after a comma is not the tail of another string. The last
# form is looked for in the text's tail only: a long line is not scanned for it. An integer
# id is at most 19 digits: a longer one is no id the session gave (the strict reader refuses
# what a double does not hold), and read as a Python int it could exceed the digits limit.
_ID_TEXT = rb'(-?(?:0|[1-9][0-9]{0,18})|"[^"\\\x00-\x1f]*")'
_ID_FIRST = re.compile(rb'\{"jsonrpc": ?"2\.0", ?"id": ?' + _ID_TEXT + rb", ?")
_ID_LAST = re.compile(rb', ?"id": ?' + _ID_TEXT + rb"\}[\r\n]*\Z")
_TAIL = 256


def _id_at(data: bytes) -> re.Match[bytes] | None:
    first = _ID_FIRST.match(data)
    return first if first is not None else _ID_LAST.search(data, max(0, len(data) - _TAIL))


def answer_id(data: bytes) -> int | str | None:
    """The top-level ``id`` of the JSON text ``data`` (one message, read strictly already),
    found without reading the text: where a writer usually puts it (first after ``jsonrpc``,
    or last); None when it is elsewhere."""
    found = _id_at(data)
    if found is None:
        return None
    text = found.group(1)
    if not text.startswith(b'"'):
        return int(text)
    try:
        return text[1:-1].decode()
    except UnicodeDecodeError:
        return None


def answer_with_id(data: bytes, request_id: int | str) -> bytes | None:
    """The JSON text ``data`` (one message, read strictly already) with its top-level id,
    where :func:`answer_id` finds it, replaced by ``request_id``: the same message under
    another id, without writing it anew. None when the id is elsewhere."""
    found = _id_at(data)
    if found is None:
        return None
    start, end = found.span(1)
    return data[:start] + json.dumps(request_id).encode() + data[end:]


def answer_digest(data: bytes) -> bytes | None:
    """A digest of the JSON text ``data`` less its top-level ``id``, for text already read
    strictly (:func:`decode`) as one message: two texts with the same digest are the same
    message but for the id, so what was decided about the one's content holds for the other's.
    None when the id is not where :func:`answer_id` finds it; nothing is then to be reused."""
    found = _id_at(data)
    if found is None:
        return None
    if found.start() == 0:
        digest = hashlib.sha256(b"first\0")
        digest.update(memoryview(data)[found.end() :])
    else:
        digest = hashlib.sha256(b"last\0")
        digest.update(memoryview(data)[: found.start()])
    return digest.digest()


# What makes a string of JSON text hold more than printable ASCII once read: an escape of a
# code point (\u), of a backspace or of a form feed, or DEL (the one ASCII control that JSON
# does not make text escape). Raw controls in strings are refused by the parser.
_UNPLAIN_ESCAPE = re.compile(rb"\\[ubf]")
_TEXT_UNPLAIN_ESCAPE = re.compile(r"\\[ubf]")


def plain_text(data: bytes | str) -> bool:
    """Whether every string that valid JSON text ``data`` holds is printable ASCII, tabs and
    line breaks, told from the text without reading it: True is always right, False may be
    too cautious (an escaped backslash before ``u``, say)."""
    if not data.isascii():
        return False
    if isinstance(data, bytes):
        return b"\x7f" not in data and (b"\\" not in data or not _UNPLAIN_ESCAPE.search(data))
    return "\x7f" not in data and ("\\" not in data or not _TEXT_UNPLAIN_ESCAPE.search(data))


def _nothing_for_hygiene(data: bytes | str) -> bool:
    """:attr:`Decoded.plain`: every string is printable ASCII (:func:`plain_text`) and none
    is a resource's ``blob``, whose bytes may be text hygiene reads (a ``text/plain`` one)."""
    if isinstance(data, bytes):
        return b'"blob"' not in data and plain_text(data)
    return '"blob"' not in data and plain_text(data)


# An escape that may start a surrogate: the only way one gets into text that is valid UTF-8.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD]")
_TEXT_SURROGATE_ESCAPE = re.compile(r"\\u[dD]")


def _may_escape(data: bytes | str) -> bool:
    return not isinstance(data, bytes) or b"\\" in data


def _unpaired_in(data: bytes | str, document: Any) -> list[Violation]:
    """The unpaired surrogates of a document parsed from ``data``.

    Bytes that decode as UTF-8 hold none, so in them one can only be an escape: a document
    whose text has no ``\\u`` escape of one is not walked (the common case, and the search
    costs a scan for a backslash first, which most messages do not even have).
    """
    if isinstance(data, bytes):
        suspect = b"\\" in data and _SURROGATE_ESCAPE.search(data) is not None
    else:
        suspect = not data.isascii() or (
            "\\" in data and _TEXT_SURROGATE_ESCAPE.search(data) is not None
        )
    return unpaired_surrogates(document) if suspect else []


def unpaired_surrogates(document: Any, pointer: str = "", *, most: int = 10) -> list[Violation]:
    """A violation for each string of ``document`` that holds an unpaired surrogate (at most
    ``most``). A bad key is pointed at by its object, so the pointer itself is always text."""
    if not _has_unpaired(document):
        return []
    found: list[Violation] = []
    stack: list[tuple[Any, str]] = [(document, pointer)]
    while stack and len(found) < most:
        value, at = stack.pop()
        if isinstance(value, str):
            if not _encodes(value):
                found.append(_unpaired(at, "a string holds an unpaired surrogate"))
        elif isinstance(value, dict):
            for key, item in value.items():
                if not _encodes(key):
                    found.append(_unpaired(at, "an object key holds an unpaired surrogate"))
                else:
                    stack.append((item, f"{at}/{key.replace('~', '~0').replace('/', '~1')}"))
        elif isinstance(value, list):
            stack.extend((item, f"{at}/{index}") for index, item in enumerate(value))
    return found


def _has_unpaired(document: Any) -> bool:
    try:
        json.dumps(document, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return True
    except (ValueError, RecursionError):
        return False  # nothing a parsed document holds; it would be refused elsewhere
    return False


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _unpaired(pointer: str, message: str) -> Violation:
    return Violation(Rule.UNPAIRED_SURROGATE, f"{message}: it is not Unicode text", pointer)


class _Doubt:
    """An ``id`` member given twice: which one a peer reads is in doubt."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) < len(pairs) and sum(key == "id" for key, _ in pairs) > 1:
        found["id"] = _Doubt
    return found


def _lenient_id(data: bytes | str) -> int | str | None:
    """The id of a text the strict reader refused though it is JSON to a lenient one (an
    inexact number, ``NaN``, a duplicate key elsewhere), so that the refusal answers the
    request it refuses rather than leave its client waiting; None when the text is no JSON
    at all or the id itself is in doubt (given twice, a lone surrogate, a number some reader
    rounds)."""
    try:
        document = json.loads(data, object_pairs_hook=_pairs)
    except (ValueError, RecursionError):
        return None
    value = document.get("id") if isinstance(document, dict) else None
    if isinstance(value, str) and not _encodes(value):
        return None
    if isinstance(value, int) and id_readings(value):
        return None
    return _error_id(document, [])


def _error_id(document: Any, unpaired: list[Violation]) -> int | str | None:
    """The id to answer a refused message with; null unless it is one a response may carry."""
    value = document.get("id") if isinstance(document, dict) else None
    if not isinstance(value, (int, str)) or isinstance(value, bool):
        return None
    if isinstance(value, str) and any(v.pointer == "/id" for v in unpaired):
        return None
    return value


def check_envelope(
    obj: Any, revision: Revision | None, pointer: str = ""
) -> tuple[Message | None, list[Violation]]:
    """Check one decoded item as a JSON-RPC envelope; the message, or None if it is invalid.

    ``pointer`` locates the item in its document (``/3`` for a batch's fourth item) and
    prefixes every violation's pointer. Only the envelope is checked here: what a method's
    params and result must hold is :mod:`strictmcp.protocol.methods`' business.
    """
    plain = _plain_envelope(obj, revision)
    if plain is not None:
        return plain, []
    if not isinstance(obj, dict):
        return None, [_invalid(pointer, "a message must be a JSON object")]
    violations: list[Violation] = []
    if "jsonrpc" not in obj:
        violations.append(_invalid(pointer, 'is missing the required member "jsonrpc"'))
    elif obj["jsonrpc"] != JSONRPC_VERSION:
        violations.append(_invalid(pointer + "/jsonrpc", f'must be the string "{JSONRPC_VERSION}"'))
    kind = _kind(obj, pointer, violations)
    if kind is None:
        return None, violations
    method = obj.get("method")
    if kind in ("request", "notification"):
        if not isinstance(method, str):
            violations.append(_invalid(pointer + "/method", "must be a string"))
        if "params" in obj:
            _check_object_with_meta(obj["params"], pointer + "/params", kind, violations)
    if kind in ("request", "response"):
        _check_id(obj, pointer, violations)
    elif kind == "error":
        # Omitted or null when the request's id could not be read: JSON-RPC 2.0 says null, the
        # MCP schemas from 2025-11-25 say omit it. Before 2025-11-25 the member is required.
        if "id" in obj:
            if obj["id"] is not None:
                _check_id(obj, pointer, violations)
        elif revision is not None and not revision.at_least(Revision.V2025_11_25):
            violations.append(
                Violation(Rule.BAD_ID, 'is missing the required member "id"', pointer)
            )
        _check_error(obj["error"], pointer + "/error", violations)
    if kind == "response":
        _check_object_with_meta(obj["result"], pointer + "/result", kind, violations)
        result = obj["result"]
        # 2026-07-28's Result requires resultType on every result.
        if (
            isinstance(result, dict)
            and revision is not None
            and revision.at_least(Revision.V2026_07_28)
            and not isinstance(result.get("resultType"), str)
        ):
            problem = "must be a string" if "resultType" in result else "is required"
            violations.append(_invalid(pointer + "/result/resultType", problem))
    if violations:
        return None, violations
    return (
        Message(
            kind=kind,
            id=obj.get("id"),
            method=method,
            # Only the members of its own shape: a response's stray "params" (a list, say)
            # is left in raw, never taken for a request's.
            params=obj.get("params") if kind in ("request", "notification") else None,
            result=obj.get("result") if kind == "response" else None,
            error=obj.get("error") if kind == "error" else None,
            raw=obj,
        ),
        violations,
    )


# --- the common case, recognized by its exact members --------------------------------------------
# Nearly every message is a request with params or a response with a result, and nothing else.
# For such a message the general checks above find nothing, yet walk every rule to say so. The
# function below tests a condition under which they would pass, on the exact JSON types; a
# message that does not meet it goes through them (tests/test_protocol_fast_path.py compares).

_REQUEST_MEMBERS = frozenset({"jsonrpc", "id", "method", "params"})
_RESPONSE_MEMBERS = frozenset({"jsonrpc", "id", "result"})
_ID_TYPES = (int, str)


def _plain_envelope(obj: Any, revision: Revision | None) -> Message | None:
    """The message, when ``obj`` is a request or response of the plain shape; else None."""
    if type(obj) is not dict or obj.get("jsonrpc") != JSONRPC_VERSION:
        return None
    request_id = obj.get("id")
    if type(request_id) not in _ID_TYPES:
        return None
    members = obj.keys()
    if members == _REQUEST_MEMBERS:
        method, params = obj["method"], obj["params"]
        if type(method) is not str or type(params) is not dict:
            return None
        if "_meta" in params:
            meta = params["_meta"]
            if type(meta) is not dict or (
                "progressToken" in meta and type(meta["progressToken"]) not in _ID_TYPES
            ):
                return None
        return Message("request", request_id, method, params, None, None, obj)
    if members == _RESPONSE_MEMBERS:
        result = obj["result"]
        if type(result) is not dict or ("_meta" in result and type(result["_meta"]) is not dict):
            return None
        if (
            revision is not None
            and revision.at_least(Revision.V2026_07_28)
            and type(result.get("resultType")) is not str
        ):
            return None
        return Message("response", request_id, None, None, result, None, obj)
    return None


def _invalid(pointer: str, message: str) -> Violation:
    return Violation(Rule.INVALID_MESSAGE, message, pointer)


def _kind(obj: dict[str, Any], pointer: str, violations: list[Violation]) -> Kind | None:
    has_result, has_error = "result" in obj, "error" in obj
    if "method" in obj:
        if has_result or has_error:
            violations.append(
                _invalid(pointer, "a message must not carry both a method and a result or error")
            )
            return None
        return "request" if "id" in obj else "notification"
    if has_result and has_error:
        violations.append(_invalid(pointer, "a response must not carry both result and error"))
        return None
    if has_result:
        return "response"
    if has_error:
        return "error"
    violations.append(_invalid(pointer, "a message needs a method, a result or an error"))
    return None


def _check_id(obj: dict[str, Any], pointer: str, violations: list[Violation]) -> None:
    if "id" not in obj:
        violations.append(Violation(Rule.BAD_ID, 'is missing the required member "id"', pointer))
        return
    value = obj["id"]
    # bool is an int in Python and a separate type in JSON.
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        violations.append(Violation(Rule.BAD_ID, "must be a string or an integer", pointer + "/id"))


def _check_object_with_meta(
    value: Any, pointer: str, kind: Kind, violations: list[Violation]
) -> None:
    if not isinstance(value, dict):
        violations.append(_invalid(pointer, "must be an object"))
        return
    if "_meta" not in value:
        return
    meta = value["_meta"]
    if not isinstance(meta, dict):
        violations.append(_invalid(pointer + "/_meta", "must be an object"))
    elif kind == "request" and "progressToken" in meta:
        token = meta["progressToken"]
        if not isinstance(token, (str, int)) or isinstance(token, bool):
            violations.append(
                _invalid(pointer + "/_meta/progressToken", "must be a string or an integer")
            )


def _check_error(value: Any, pointer: str, violations: list[Violation]) -> None:
    if not isinstance(value, dict):
        violations.append(_invalid(pointer, "must be an object"))
        return
    code = value.get("code")
    if "code" not in value:
        violations.append(_invalid(pointer, 'is missing the required member "code"'))
    elif not isinstance(code, int) or isinstance(code, bool):
        violations.append(_invalid(pointer + "/code", "must be an integer"))
    if "message" not in value:
        violations.append(_invalid(pointer, 'is missing the required member "message"'))
    elif not isinstance(value["message"], str):
        violations.append(_invalid(pointer + "/message", "must be a string"))


# --- answering ---------------------------------------------------------------------------------


def error_response(
    id: int | str | None, code: int, message: str, data: Any = None
) -> dict[str, Any]:
    """A JSON-RPC error response; ``id`` None writes ``"id": null`` (the id was unreadable).

    ``data`` is omitted when None. Put only value-free content there (``Violation.to_dict()``
    is): the reply goes to the peer that sent the bad message, and often to its logs.
    """
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": JSONRPC_VERSION, "id": id, "error": error}


def refusal_for(request_id: int | str | None, violations: Sequence[Violation]) -> dict[str, Any]:
    """The error response that refuses a message for ``violations`` (errors, the first
    deciding the code), each listed value-free in ``data``."""
    code, message = jsonrpc_error_for(violations[0])
    return error_response(request_id, code, message, [v.to_dict() for v in violations])


_STANDARD_MESSAGES = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}

_CODE_FOR_RULE = {
    Rule.PARSE_ERROR: PARSE_ERROR,
    Rule.INVALID_MESSAGE: INVALID_REQUEST,
    Rule.BATCH_NOT_ALLOWED: INVALID_REQUEST,
    Rule.EMPTY_BATCH: INVALID_REQUEST,
    Rule.BAD_ID: INVALID_REQUEST,
    Rule.DUPLICATE_ID: INVALID_REQUEST,
    Rule.UNMATCHED_RESPONSE: INVALID_REQUEST,
    Rule.ALREADY_INITIALIZED: INVALID_REQUEST,
    # Nothing was parsed, so nothing about the message is known: it is not a valid request.
    Rule.MESSAGE_TOO_LARGE: INVALID_REQUEST,
    Rule.UNPAIRED_SURROGATE: INVALID_REQUEST,
    Rule.METHOD_NOT_IN_REVISION: METHOD_NOT_FOUND,
    Rule.WRONG_DIRECTION: METHOD_NOT_FOUND,
    Rule.UNKNOWN_METHOD: METHOD_NOT_FOUND,
    # A peer's bad result is not the requester's fault: a proxy answers for it as the failure
    # of the side it stands in for.
    Rule.INVALID_RESULT: INTERNAL_ERROR,
}


def jsonrpc_error_for(violation: Violation) -> tuple[int, str]:
    """The JSON-RPC error code and standard message a receiver answers a violation with.

    Envelope rules map to -32700 (parse error) or -32600 (invalid request); methods that do not
    exist here to -32601; a bad result to -32603; every other rule is about what a message
    carries, which JSON-RPC calls invalid params (-32602).
    """
    rule = violation.rule
    code = _CODE_FOR_RULE.get(rule, INVALID_PARAMS) if isinstance(rule, Rule) else INVALID_PARAMS
    if rule is Rule.UNPAIRED_SURROGATE and violation.pointer.startswith("/params/"):
        code = INVALID_PARAMS  # the envelope is fine; what it carries is not
    return code, _STANDARD_MESSAGES[code]


# --- pairing -----------------------------------------------------------------------------------


class RequestTracker:
    """Pairs responses with the requests they answer, for one direction of one session.

    A proxy keeps two: one for requests the client sends (answered by the server) and one for
    requests the server sends. Memory is bounded: at most ``max_in_flight`` requests are
    remembered, and past that the oldest is forgotten (counted in ``evicted``); its response,
    if it ever comes, is then reported as unmatched. Call :meth:`discard` when a request is
    cancelled, since its response may never come. Not thread-safe: one tracker per session
    direction, used by one task.

    Ids are told apart as the strictest peer would, but read as the loosest would
    (:func:`id_readings`): a request whose id some client could read as one in flight is a
    duplicate, and :meth:`confusable` names the requests an answer could be taken for.
    """

    __slots__ = ("_aliases", "_in_flight", "evicted", "max_in_flight")

    def __init__(self, max_in_flight: int = 10_000) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.max_in_flight = max_in_flight
        self.evicted = 0
        self._in_flight: OrderedDict[int | str, Message] = OrderedDict()
        # What else some peer reads the ids in flight as (``"7"`` as 7), to the ids: empty
        # unless a request's id is a string or a number past 2**53.
        self._aliases: dict[int | str, int | str] = {}

    def __len__(self) -> int:
        return len(self._in_flight)

    def __contains__(self, request_id: object) -> bool:
        """Whether a request with this id is waiting for its response."""
        return request_id in self._in_flight

    def get(self, request_id: int | str) -> Message | None:
        """The request with this id that is waiting for its response, if there is one."""
        return self._in_flight.get(request_id)

    def sent(self, message: Message, pointer: str = "") -> list[Violation]:
        """Remember an outgoing request; anything but a request is ignored.

        Reusing an id that is still in flight, or one some peer would read as such (``"7"``
        while 7 waits), is a :attr:`Rule.DUPLICATE_ID` violation, and the first request keeps
        the id: a response cannot say which of the two it answers.
        """
        request_id = message.id
        if message.kind != "request" or request_id is None:
            return []
        # Most ids are small integers, which no peer reads as another: no readings to make.
        small = type(request_id) is int and -_EXACT_IN_DOUBLES <= request_id <= _EXACT_IN_DOUBLES
        readings = () if small else id_readings(request_id)
        aliases = self._aliases
        if (
            request_id in self._in_flight
            or (aliases and request_id in aliases)
            or (readings and self._confused(readings))
        ):
            return [
                Violation(
                    Rule.DUPLICATE_ID,
                    "reuses the id of a request that is still waiting for its response",
                    pointer + "/id",
                )
            ]
        self._in_flight[request_id] = message
        for reading in readings:
            self._aliases[reading] = request_id
        if len(self._in_flight) > self.max_in_flight:
            self._forget(next(iter(self._in_flight)))
            self.evicted += 1
        return []

    def answered(
        self, message: Message, pointer: str = ""
    ) -> tuple[Message | None, list[Violation]]:
        """The request a response answers (now no longer in flight), and any violation.

        A response whose id matches no request in flight, exactly, is a
        :attr:`Rule.UNMATCHED_RESPONSE` violation. An error response without an id (or with
        ``"id": null``) answers a request that could not be read: no request, no violation.
        Anything but a response is ignored.
        """
        if message.kind not in ("response", "error") or message.id is None:
            return None, []
        request = self._in_flight.pop(message.id, None)
        if request is not None and self._aliases:
            self._unalias(message.id)
        if request is None:
            return None, [
                Violation(
                    Rule.UNMATCHED_RESPONSE,
                    "answers no request that is waiting for a response",
                    pointer + "/id",
                )
            ]
        return request, []

    def confusable(self, answer_id: int | str) -> list[int | str]:
        """The ids in flight, other than ``answer_id`` itself, that some peer could take an
        answer with ``answer_id`` for (7 for ``"7"``, ``"07"`` for 7)."""
        found: list[int | str] = []
        for key in (answer_id, *id_readings(answer_id)):
            for candidate in (key, self._aliases.get(key)):
                if (
                    candidate is not None
                    and candidate in self._in_flight
                    and candidate not in found
                    and not _same_id(candidate, answer_id)
                ):
                    found.append(candidate)
        return found

    def discard(self, request_id: int | str) -> None:
        """Forget a request that will not be answered (it was cancelled)."""
        self._forget(request_id)

    def _confused(self, readings: tuple[int | str, ...]) -> bool:
        return any(r in self._in_flight or r in self._aliases for r in readings)

    def _forget(self, request_id: int | str) -> Message | None:
        request = self._in_flight.pop(request_id, None)
        if request is not None and self._aliases:
            self._unalias(request_id)
        return request

    def _unalias(self, request_id: int | str) -> None:
        for reading in id_readings(request_id):
            if self._aliases.get(reading) == request_id:
                del self._aliases[reading]


# Past 2**53 a reader with doubles (JavaScript's) rounds an integer id to its neighbour.
_EXACT_IN_DOUBLES = 2**53
# A reading is only tried on a short id: no reader gives a longer numeral a meaning of its own.
_MAX_READ = 64
# JavaScript's Number(): its white space, and the numerals it reads.
_JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_JS_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)", re.ASCII)
_RADIX = {"x": 16, "o": 8, "b": 2}


def id_readings(request_id: int | str) -> tuple[int | str, ...]:
    """What else a JSON-RPC peer may read ``request_id`` as, besides itself.

    The official TypeScript client reads a response's id with ``Number()``, and Python ones
    with ``int()``: the string ``"7"`` (or ``" 07 "``, ``"0x7"``, ``"7e0"``, ``"7_0"`` as 70)
    is then the id 7, and an integer past 2**53 its neighbour in doubles. Such readings make
    two ids the same request to some client, so the proxy never lets both be in flight nor
    hands a client an answer it could misread.
    """
    if isinstance(request_id, int):
        if -_EXACT_IN_DOUBLES <= request_id <= _EXACT_IN_DOUBLES:
            return ()
        rounded = _as_double(request_id)
        return (rounded,) if rounded is not None and rounded != request_id else ()
    if len(request_id) > _MAX_READ:
        return ()
    readings: list[int | str] = []
    for reading in (_python_int(request_id), _js_number(request_id)):
        if reading is not None and reading not in readings:
            readings.append(reading)
            rounded = _as_double(reading)
            if rounded is not None and rounded not in readings:
                readings.append(rounded)
    return tuple(readings)


def _same_id(a: int | str, b: int | str) -> bool:
    return type(a) is type(b) and a == b


def _as_double(value: int) -> int | None:
    try:
        return int(float(value))
    except OverflowError:
        return None


def _python_int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _js_number(text: str) -> int | None:
    """``Number(text)`` in JavaScript, when it is a whole number."""
    text = text.strip(_JS_SPACE)
    if not text:
        return 0  # Number("") is 0
    radix = _JS_RADIX.fullmatch(text)
    if radix:
        return int(text[2:], _RADIX[text[1].lower()])
    if not _JS_DECIMAL.fullmatch(text):
        return None
    try:
        value = float(text)
    except (ValueError, OverflowError):
        return None
    return int(value) if value.is_integer() else None
