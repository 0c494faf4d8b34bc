"""Malformed MCP messages, as bytes, for the hostile-input tests of both proxy transports.

Each entry is a name and the bytes of one message (no line ending). Every one of them must be
refused by the proxy with a structured error and never reach a server: not JSON, not UTF-8,
JSON that is no valid message, messages with an unpaired surrogate anywhere, numbers no
reader agrees on, nesting past every bound, ambiguous duplicate keys. The names say which
class and which position, so a failure names what broke.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

# Ways an unpaired surrogate can be written in JSON: high alone, low alone, two highs, a
# low before a high; lower and upper case hex (both are JSON).
SURROGATES = [
    "\\ud800",
    "\\uDFFF",
    "\\ud800\\ud800",
    "\\udc00\\ud800",
    "a\\udbffz",
    "\\ud83d\\u0041",
    "ok\\ud83d\\ude00\\udfff",
]

_INIT_PARAMS = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "hostile", "version": "1"},
}


def _call(arguments: Any = None, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "echo", "arguments": arguments or {"text": "hi"}}
    params.update(extra)
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


def _with(template: dict[str, Any], marker: str, replacement: str) -> bytes:
    """``template`` as JSON with the string ``marker`` (quotes included) spelled otherwise."""
    text = json.dumps(template, separators=(",", ":"))
    assert f'"{marker}"' in text, marker
    return text.replace(f'"{marker}"', replacement).encode()


def surrogate_messages() -> list[tuple[str, bytes]]:
    """An unpaired surrogate in every position of a message: id, method, keys and values of
    params, arguments, ``_meta``, nested objects and arrays."""
    places: dict[str, dict[str, Any]] = {
        "id": {**_call(), "id": "MARK"},
        "method": {**_call(), "method": "MARK"},
        "tool-name": _call(None, name="MARK"),
        "argument-value": _call({"text": "MARK"}),
        "argument-key": _call({"MARK": "x"}),
        "nested-value": _call({"text": "x", "deep": {"a": [1, {"b": "MARK"}]}}),
        "nested-key": _call({"text": "x", "deep": [{"MARK": 1}]}),
        "meta-value": _call(None, _meta={"progressToken": "MARK"}),
        "meta-key": _call(None, _meta={"MARK": 1}),
        "params-key": _call(None, MARK=1),
        "top-level-key": {**_call(), "MARK": 1},
        "notification": {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"x": "MARK"},
        },
        "ping-params": {"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"MARK": "MARK"}},
    }
    out = []
    for (place, template), (number, spelled) in itertools.product(
        places.items(), enumerate(SURROGATES)
    ):
        replacement = f'"{spelled}"'
        out.append((f"surrogate-{place}-{number}", _with(template, "MARK", replacement)))
    return out


def number_messages() -> list[tuple[str, bytes]]:
    """Numbers that overflow what readers agree on: integers past the interpreter's digit
    limit, floats past a double; and numbers a double does not hold, which one reader would
    check and another act on differently (not zero yet read as zero or a subnormal, more than
    17 significant digits); in the id, arguments and ``_meta``."""
    huge = ["9" * 5000, "-" + "1" * 4400, "1e400", "-1e400", "1.5e999", "12345678901234567890e400"]
    huge += ["-1e-400", "1e-400", "4e-320", "10.0000000000000000001", "12345678901234567890"]
    places = {
        "id": {**_call(), "id": "MARK"},
        "argument": _call({"text": "MARK"}),
        "meta": _call(None, _meta={"progressToken": "MARK"}),
        "nested": _call({"text": "x", "n": [1, {"v": "MARK"}]}),
    }
    return [
        (f"number-{place}-{number}", _with(template, "MARK", value))
        for (place, template), (number, value) in itertools.product(places.items(), enumerate(huge))
    ]


def encoding_messages() -> list[tuple[str, bytes]]:
    """A valid message in encodings that are not UTF-8, and UTF-8 that is not valid."""
    text = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    with_e = json.dumps(
        {"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"x": "é"}}, ensure_ascii=False
    )
    out = [
        ("utf-16-le", text.encode("utf-16-le")),
        ("utf-16-be", text.encode("utf-16-be")),
        ("utf-16-bom", text.encode("utf-16")),
        ("utf-32-le", text.encode("utf-32-le")),
        ("utf-32-bom", text.encode("utf-32")),
        ("latin-1", with_e.encode("latin-1")),
        ("overlong-slash", text.encode()[:-1] + b',"x":"\xc0\xaf"}'),
        ("cesu-surrogate", text.encode()[:-1] + b',"x":"\xed\xa0\x80"}'),
        ("stray-continuation", b"\x80" + text.encode()),
        ("truncated-sequence", text.encode()[:-1] + b',"x":"\xe2\x82"}'),
        ("utf-16-initialize", _initialize().decode().encode("utf-16-le")),
        ("utf-32-initialize", _initialize().decode().encode("utf-32")),
    ]
    return out


def _initialize() -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _INIT_PARAMS}
    ).encode()


def syntax_messages() -> list[tuple[str, bytes]]:
    """Not JSON, or JSON with a second reading: duplicate keys, trailing data, constants."""
    ping = b'{"jsonrpc":"2.0","id":3,"method":"ping"}'
    return [
        ("not-json", b"garbage"),
        ("truncated", ping[:-1]),
        ("trailing-data", ping + b"x"),
        ("two-messages", ping + ping),
        ("single-quotes", ping.replace(b'"', b"'")),
        ("trailing-comma", ping[:-1] + b",}"),
        ("comment", b"/* c */" + ping),
        ("nan", b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":NaN}}'),
        ("infinity", b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":-Infinity}}'),
        ("duplicate-method", b'{"jsonrpc":"2.0","id":3,"method":"ping","method":"tools/call"}'),
        (
            "duplicate-method-initialize",
            b'{"jsonrpc":"2.0","id":0,"method":"ping","method":"initialize","params":'
            + json.dumps(_INIT_PARAMS).encode()
            + b"}",
        ),
        ("duplicate-id", b'{"jsonrpc":"2.0","id":3,"id":4,"method":"ping"}'),
        (
            "duplicate-argument",
            b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a","text":"b"}}}',
        ),
        ("deep-array", b"[" * 100_000 + b"]" * 100_000),
        ("deep-object", b'{"a":' * 50_000 + b"1" + b"}" * 50_000),
        (
            "deep-arguments",
            b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x","d":'
            + b"[" * 5000
            + b"]" * 5000
            + b"}}}",
        ),
        ("nul-byte", ping[:-1] + b',"x":"\x00"}'),
        ("control-in-string", ping[:-1] + b',"x":"a\x01b"}'),
        ("bare-bom", b"\xef\xbb\xbf"),
        ("double-bom", b"\xef\xbb\xbf\xef\xbb\xbf" + ping),
    ]


def envelope_messages() -> list[tuple[str, bytes]]:
    """JSON that is no valid JSON-RPC message as MCP uses it."""
    cases: dict[str, Any] = {
        "null": None,
        "number": 42,
        "string": "text",
        "true": True,
        "array-of-number": [1],
        "empty-object": {},
        "jsonrpc-only": {"jsonrpc": "2.0"},
        "jsonrpc-1": {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        "no-jsonrpc": {"id": 1, "method": "ping"},
        "id-bool": {"jsonrpc": "2.0", "id": True, "method": "ping"},
        "id-float": {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
        "id-object": {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},
        "id-null-request": {"jsonrpc": "2.0", "id": None, "method": "ping"},
        "method-number": {"jsonrpc": "2.0", "id": 1, "method": 5},
        "method-array": {"jsonrpc": "2.0", "id": 1, "method": ["ping"]},
        "params-array": {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]},
        "params-null": {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None},
        "meta-string": {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": "x"}},
        "token-bool": {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "ping",
            "params": {"_meta": {"progressToken": True}},
        },
        "method-and-result": {"jsonrpc": "2.0", "id": 1, "method": "ping", "result": {}},
        "result-and-error": {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {},
            "error": {"code": 1, "message": "x"},
        },
        "error-without-code": {"jsonrpc": "2.0", "id": 1, "error": {"message": "x"}},
        "empty-batch": [],
        "batch": [{"jsonrpc": "2.0", "id": 31, "method": "ping"}],
        "batch-with-initialize": [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _INIT_PARAMS}
        ],
        "batch-of-garbage": [1, 2, 3],
    }
    return [(f"envelope-{name}", json.dumps(value).encode()) for name, value in cases.items()]


def corpus() -> list[tuple[str, bytes]]:
    """Every malformed message of this module."""
    return [
        *surrogate_messages(),
        *number_messages(),
        *encoding_messages(),
        *syntax_messages(),
        *envelope_messages(),
    ]
