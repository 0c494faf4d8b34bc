"""The fast paths for plain messages give exactly the general checks' verdicts.

``strictmcp.protocol.methods`` answers a ``tools/call`` request or result of a plain shape
without building its pydantic model, and ``strictmcp.protocol.jsonrpc`` accepts the envelope of
a plain request or response without walking every envelope rule. Every test here checks a
message both ways, the fast paths on and off (``_PLAIN`` emptied, ``_plain_envelope`` finding
nothing), and asserts the same violations: for the envelope and method checks alone, for whole
conversations, and for the proxy's routing of the lines.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strictmcp.enforce import Auditor
from strictmcp.protocol import (
    Conversation,
    Direction,
    Message,
    Revision,
    Sender,
    check_envelope,
    check_method_result,
    check_request,
    decode,
)
from strictmcp.protocol import jsonrpc as jsonrpc_module
from strictmcp.protocol import methods as methods_module
from strictmcp.protocol.surfaces import ERAS
from strictmcp.proxy.session import ProxySession, Routed

REVISIONS = list(Revision)
TOOL = "create_issue"
INPUT_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string", "minLength": 1}, "priority": {"type": "integer"}},
    "required": ["title"],
}
OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"received": {"type": "object"}},
    "required": ["received"],
}


def load_every_revision() -> None:
    """Import every revision's models now: their fast paths are added to ``_PLAIN`` when they
    are (methods._import_era), which must not happen inside :func:`slow_path`."""
    for revision in Revision:
        methods_module._era(revision)


@contextmanager
def slow_path() -> Iterator[None]:
    """Every message checked through every envelope rule and its model, as before the fast
    paths."""
    saved = dict(methods_module._PLAIN)
    plain_envelope = jsonrpc_module._plain_envelope
    methods_module._PLAIN.clear()
    jsonrpc_module._plain_envelope = lambda obj, revision: None
    try:
        yield
    finally:
        methods_module._PLAIN.update(saved)
        jsonrpc_module._plain_envelope = plain_envelope


def both_ways(check: Any) -> tuple[Any, Any]:
    fast = check()
    with slow_path():
        slow = check()
    return fast, slow


# --- values ------------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
# Text with lone surrogates and escapes too: JSON can carry them, and the model must agree.
texts = st.text(max_size=10) | st.sampled_from(["", "\ud800", "a\udc00b", ":", '\\"', "\x00"])
objects = st.dictionaries(texts, json_values, max_size=4)


# What a field holds when it is not what it should be; null the likeliest, as in real traffic.
odd_values = st.none() | json_values


def member(
    key: str, usual: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]
) -> st.SearchStrategy[dict[str, Any]]:
    """``{key: value}``, mostly with a usual value (so that whole messages are often plain),
    sometimes with an odd one, sometimes absent."""
    present = usual.map(lambda value: {key: value})
    return st.one_of(present, present, present, odd.map(lambda value: {key: value}), st.just({}))


def seldom(values: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(st.just({}), st.just({}), values)


extras = st.dictionaries(
    st.sampled_from(["_meta", "task", "extra", "resultType", "annotations", "cursor"]),
    json_values,
    min_size=1,
    max_size=2,
)


PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"

capabilities = st.one_of(
    st.just({}),
    st.dictionaries(
        st.sampled_from(["extensions", "experimental", "roots", "sampling", "other"]),
        st.dictionaries(texts, objects | odd_values, max_size=2) | odd_values,
        max_size=2,
    ),
)
client_infos = st.one_of(
    st.fixed_dictionaries({"name": texts, "version": texts}),
    st.fixed_dictionaries(
        {"name": texts | odd_values, "version": texts}, optional={"title": texts}
    ),
)


@st.composite
def request_metas(draw: st.DrawFn) -> dict[str, Any]:
    """The ``_meta`` of a 2026-07-28 request, plain or almost plain."""
    meta: dict[str, Any] = {}
    meta |= draw(member(PROTOCOL_VERSION, st.just("2026-07-28") | texts, odd_values))
    meta |= draw(member(CLIENT_CAPABILITIES, capabilities, odd_values))
    meta |= draw(seldom(member(CLIENT_INFO, client_infos, odd_values)))
    meta |= draw(seldom(member("progressToken", ids, odd_values)))
    meta |= draw(seldom(member("io.modelcontextprotocol/logLevel", texts, odd_values)))
    return meta


def _objects_in(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if isinstance(value, dict):
        yield path
        for key, item in value.items():
            yield from _objects_in(item, (*path, key))


@st.composite
def near_modern_calls(draw: st.DrawFn) -> dict[str, Any]:
    """A plain 2026-07-28 ``tools/call`` (with a client's name, capabilities and progress
    token, or without), or one with one member of one of its objects changed, dropped or
    added: most of them a step from the plain shape, on either side of it."""
    meta: dict[str, Any] = {
        PROTOCOL_VERSION: draw(st.just("2026-07-28") | texts),
        CLIENT_CAPABILITIES: draw(
            st.sampled_from([{}, {"extensions": {"io.modelcontextprotocol/tasks": {}}}])
        ),
    }
    meta |= draw(seldom(st.fixed_dictionaries({CLIENT_INFO: client_infos})))
    meta |= draw(seldom(st.fixed_dictionaries({"progressToken": ids})))
    params = {"name": draw(texts), "arguments": draw(objects), "_meta": meta}
    frame = {"jsonrpc": "2.0", "id": draw(ids), "method": "tools/call", "params": params}
    change = draw(st.sampled_from(["none", "change", "drop", "add"]))
    if change == "none":
        return frame
    path = draw(st.sampled_from(list(_objects_in(frame))))
    target: Any = frame
    for key in path:
        target = target[key]
    if change == "add" or not target:
        more = draw(st.sampled_from(["extra", "_meta", "task", "roots", "title", "logLevel"]))
        target[more] = draw(odd_values | objects)
        return frame
    key = draw(st.sampled_from(sorted(target)))
    if change == "drop":
        del target[key]
    else:
        target[key] = draw(odd_values)
    return frame


@st.composite
def call_frames(draw: st.DrawFn) -> dict[str, Any]:
    """A ``tools/call`` request frame, plain or almost plain (for 2026-07-28 too)."""
    params: dict[str, Any] = {}
    params |= draw(member("name", texts, odd_values))
    params |= draw(member("arguments", objects, odd_values))
    params |= draw(st.one_of(st.just({}), member("_meta", request_metas(), odd_values)))
    params |= draw(seldom(extras))
    frame: dict[str, Any] = {}
    frame |= draw(member("jsonrpc", st.just("2.0"), st.sampled_from(["1.0", 2.0, None])))
    frame |= draw(member("id", st.integers(min_value=-(2**70)) | texts, odd_values))
    frame["method"] = "tools/call"
    frame |= draw(member("params", st.just(params), odd_values))
    frame |= draw(seldom(st.dictionaries(st.sampled_from(["extra", "result"]), json_values)))
    return frame


text_blocks = st.fixed_dictionaries({"type": st.just("text"), "text": texts})
odd_blocks = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "image", "TEXT"]), "text": st.one_of(texts, scalars)}
    ),
    text_blocks.flatmap(lambda block: extras.map(lambda more: {**block, **more})),
    st.fixed_dictionaries({"type": st.just("image"), "data": texts, "mimeType": texts}),
    st.fixed_dictionaries({"text": texts}),
    json_values,
)
blocks = st.one_of(text_blocks, text_blocks, text_blocks, odd_blocks)


@st.composite
def tool_results(draw: st.DrawFn) -> Any:
    """A ``CallToolResult``, plain or almost plain."""
    result: dict[str, Any] = {}
    result |= draw(member("content", st.lists(blocks, max_size=3), odd_values))
    result |= draw(member("isError", st.booleans(), odd_values))
    result |= draw(member("structuredContent", objects, odd_values))
    kinds = st.sampled_from(["complete", "input_required", "task"]) | texts
    result |= draw(st.one_of(st.just({}), member("resultType", kinds, odd_values)))
    result |= draw(seldom(extras))
    return draw(st.one_of(st.just(result), st.just(result), json_values))


def request_of(frame: dict[str, Any], method: str = "tools/call") -> Message:
    params, request_id = frame.get("params"), frame.get("id")
    return Message(
        kind="request",
        # The method checks never read the id; a Message holds only a valid one (the
        # compiled build refuses any other), so a frame's invalid id stays in raw alone.
        id=request_id if type(request_id) in (int, str) else 1,
        method=method,
        params=params if isinstance(params, dict) else None,
        result=None,
        error=None,
        raw=frame,
    )


# --- the method checks -------------------------------------------------------------------------

PLAIN_CALL = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": TOOL, "arguments": {"title": "x"}},
}
PLAIN_RESULT = {
    "content": [{"type": "text", "text": "done"}],
    "structuredContent": {"received": {"title": "x"}},
    "isError": False,
}

MODERN_META: dict[str, Any] = {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}}
MODERN_CALL: dict[str, Any] = {
    **PLAIN_CALL,
    "params": {"name": TOOL, "arguments": {"title": "x"}, "_meta": MODERN_META},
}
MODERN_RESULT: dict[str, Any] = {**PLAIN_RESULT, "resultType": "complete"}

MODERN_META_CHANGES: list[dict[str, Any]] = [
    {CLIENT_CAPABILITIES: {"extensions": {"io.modelcontextprotocol/tasks": {}}}},
    {CLIENT_CAPABILITIES: {"extensions": {"x": None}}},
    {CLIENT_CAPABILITIES: {"roots": {}}},
    {CLIENT_CAPABILITIES: None},
    {CLIENT_INFO: {"name": "c", "version": "1"}},
    {CLIENT_INFO: {"name": "c"}},
    {CLIENT_INFO: {"name": "c", "version": "1", "title": "C"}},
    {"progressToken": "p"},
    {"progressToken": None},
    {"progressToken": True},
    {PROTOCOL_VERSION: 2026},
    {"io.modelcontextprotocol/logLevel": "debug"},
    {"other": 1},
]

CALL_TABLE: list[dict[str, Any]] = [
    PLAIN_CALL,
    {**PLAIN_CALL, "id": "seven"},
    {**PLAIN_CALL, "id": 2**80},
    {**PLAIN_CALL, "id": True},
    {**PLAIN_CALL, "id": 1.5},
    {**PLAIN_CALL, "jsonrpc": "1.0"},
    {**PLAIN_CALL, "extra": 1},
    {**PLAIN_CALL, "params": {"name": TOOL}},
    {**PLAIN_CALL, "params": {"name": TOOL, "arguments": None}},
    {**PLAIN_CALL, "params": {"name": TOOL, "arguments": []}},
    {**PLAIN_CALL, "params": {"name": 3, "arguments": {}}},
    {**PLAIN_CALL, "params": {"arguments": {}}},
    {**PLAIN_CALL, "params": {"name": TOOL, "arguments": {}, "_meta": {"progressToken": 1}}},
    {**PLAIN_CALL, "params": {"name": TOOL, "arguments": {}, "_meta": None}},
    {**PLAIN_CALL, "params": {"name": TOOL, "arguments": {}, "task": {"ttl": 5}}},
    {**PLAIN_CALL, "params": {"name": "\ud800", "arguments": {"\udc00": 1}}},
    {**PLAIN_CALL, "params": []},
    MODERN_CALL,
    {**MODERN_CALL, "params": {"name": TOOL, "_meta": MODERN_META}},
    {**MODERN_CALL, "params": {"name": TOOL, "arguments": {}}},
    *(
        {**MODERN_CALL, "params": {"name": TOOL, "arguments": {}, "_meta": {**MODERN_META, **more}}}
        for more in MODERN_META_CHANGES
    ),
    {**MODERN_CALL, "params": {"name": TOOL, "arguments": {}, "_meta": {PROTOCOL_VERSION: "x"}}},
]
RESULT_TABLE: list[Any] = [
    PLAIN_RESULT,
    {"content": []},
    {"content": [{"type": "text", "text": ""}], "isError": True},
    {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "\ud800"}]},
    {"content": [{"type": "text", "text": 1}]},
    {"content": [{"type": "text", "text": None}]},
    {"content": [{"type": "text"}]},
    {"content": [{"type": "Text", "text": "a"}]},
    {"content": [{"type": "text", "text": "a", "annotations": {"priority": 0.5}}]},
    {"content": [{"type": "text", "text": "a", "_meta": {}}]},
    {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
    {"content": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]},
    {"content": ["text"]},
    {"content": {"type": "text", "text": "a"}},
    {"content": [], "isError": None},
    {"content": [], "isError": 0},
    {"content": [], "structuredContent": None},
    {"content": [], "structuredContent": [1, 2]},
    {"content": [], "structuredContent": "text"},
    {"content": [], "_meta": {"k": 1}},
    {"content": [], "resultType": "complete"},
    MODERN_RESULT,
    {**MODERN_RESULT, "resultType": "task"},
    {**MODERN_RESULT, "resultType": "input_required"},
    {**MODERN_RESULT, "resultType": None},
    {**MODERN_RESULT, "structuredContent": [1]},
    {"content": [], "other": 1},
    {"isError": False},
    {},
    [],
    None,
]


@pytest.mark.parametrize("sender", ["client", "server"])
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("frame", CALL_TABLE)
def test_requests_in_the_table(
    frame: dict[str, Any], revision: Revision, strict: bool, sender: Sender
) -> None:
    message = request_of(frame)
    fast, slow = both_ways(lambda: check_request(message, revision, sender, strict=strict))
    assert fast == slow


@pytest.mark.parametrize("sender", ["server", "client"])
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("result", RESULT_TABLE)
def test_results_in_the_table(
    result: Any, revision: Revision, strict: bool, sender: Sender
) -> None:
    fast, slow = both_ways(
        lambda: check_method_result(
            "tools/call", result, revision, sender, strict=strict, pointer="/result"
        )
    )
    assert fast == slow


def plain(revision: Revision, model: str) -> Any:
    return methods_module._PLAIN[(ERAS[revision], model)]


def test_the_plain_shapes_do_take_the_fast_path() -> None:
    # Otherwise the differential tests would compare the slow path with itself.
    revision = Revision.V2025_06_18
    assert plain(revision, "CallToolRequest")(PLAIN_CALL, revision)
    assert plain(revision, "CallToolResult")(PLAIN_RESULT, revision)
    assert not plain(revision, "CallToolResult")(PLAIN_RESULT, Revision.V2025_03_26)
    modern = Revision.V2026_07_28
    assert plain(modern, "CallToolRequest")(MODERN_CALL, modern)
    assert plain(modern, "CallToolResult")(MODERN_RESULT, modern)
    assert not plain(modern, "CallToolResult")(PLAIN_RESULT, modern)
    for revision in HANDSHAKE_REVISIONS:
        assert plain(revision, "InitializeRequest")(PLAIN_INITIALIZE, revision)
        assert plain(revision, "InitializeResult")(PLAIN_INITIALIZE_RESULT, revision)
    late = Revision.V2025_06_18
    assert plain(late, "InitializeRequest")(FULL_INITIALIZE, late)
    assert plain(late, "InitializeResult")(FULL_INITIALIZE_RESULT, late)
    early = Revision.V2024_11_05
    assert not plain(early, "InitializeRequest")(FULL_INITIALIZE, early)
    assert not plain(early, "InitializeResult")(FULL_INITIALIZE_RESULT, early)


# --- the initialize exchange ---------------------------------------------------------------------

HANDSHAKE_REVISIONS = [revision for revision in Revision if not revision.stateless]
PLAIN_INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
}
PLAIN_INITIALIZE_RESULT: dict[str, Any] = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "serverInfo": {"name": "s", "version": "1"},
}
# Every member the plain shapes allow, as 2025-06-18 has them.
FULL_INITIALIZE: dict[str, Any] = {
    **PLAIN_INITIALIZE,
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {
            "roots": {"listChanged": True},
            "sampling": {},
            "elicitation": {},
            "experimental": {"x": {"y": [1]}},
        },
        "clientInfo": {"name": "c", "version": "1", "title": "C"},
    },
}
FULL_INITIALIZE_RESULT: dict[str, Any] = {
    "protocolVersion": "2025-06-18",
    "capabilities": {
        "tools": {"listChanged": False},
        "prompts": {"listChanged": True},
        "resources": {"listChanged": True, "subscribe": False},
        "logging": {},
        "completions": {},
        "experimental": {"toolValidation": {"tool": "validate"}},
    },
    "serverInfo": {"name": "s", "version": "1", "title": "S"},
    "instructions": "use it",
}

capability_names = st.sampled_from(
    [
        "roots",
        "sampling",
        "elicitation",
        "experimental",
        "tasks",
        "tools",
        "prompts",
        "resources",
        "logging",
        "completions",
        "other",
    ]
)
capability_settings = st.one_of(
    st.just({}),
    st.dictionaries(
        st.sampled_from(["listChanged", "subscribe", "context", "tools", "form", "x"]),
        st.booleans() | odd_values | objects,
        max_size=2,
    ),
    odd_values,
)
implementations = st.fixed_dictionaries(
    {"name": texts, "version": texts},
    optional={"title": texts | odd_values, "icons": st.just([{"src": "a"}]) | odd_values},
)


def near(frame: dict[str, Any], draw: st.DrawFn) -> dict[str, Any]:
    """``frame``, or a copy with one member of one of its objects changed, dropped or added
    (a copy: ``st.just`` values are shared between examples)."""
    change = draw(st.sampled_from(["none", "change", "drop", "add"]))
    if change == "none":
        return frame
    frame = copy.deepcopy(frame)
    path = draw(st.sampled_from(list(_objects_in(frame))))
    target: Any = frame
    for key in path:
        target = target[key]
    if change == "add" or not target:
        more = draw(st.sampled_from(["extra", "_meta", "title", "instructions", "listChanged"]))
        target[more] = draw(odd_values | objects | st.booleans())
        return frame
    key = draw(st.sampled_from(sorted(target)))
    if change == "drop":
        del target[key]
    else:
        target[key] = draw(odd_values | st.booleans())
    return frame


@st.composite
def initialize_frames(draw: st.DrawFn) -> dict[str, Any]:
    """An ``initialize`` request, plain or a step from plain, on either side of it."""
    params = {
        "protocolVersion": draw(st.sampled_from([r.value for r in Revision]) | texts),
        "capabilities": draw(st.dictionaries(capability_names, capability_settings, max_size=3)),
        "clientInfo": draw(implementations),
    }
    frame = {"jsonrpc": "2.0", "id": draw(ids), "method": "initialize", "params": params}
    return near(frame, draw)


@st.composite
def initialize_results(draw: st.DrawFn) -> dict[str, Any]:
    """An ``InitializeResult``, plain or a step from plain."""
    result = {
        "protocolVersion": draw(st.sampled_from([r.value for r in Revision]) | texts),
        "capabilities": draw(st.dictionaries(capability_names, capability_settings, max_size=3)),
        "serverInfo": draw(implementations),
    }
    result |= draw(seldom(st.fixed_dictionaries({"instructions": texts | odd_values})))
    return near(result, draw)


def with_params(**changes: Any) -> dict[str, Any]:
    return {**PLAIN_INITIALIZE, "params": {**PLAIN_INITIALIZE["params"], **changes}}


CLIENT_CAPABILITY_CASES: list[Any] = [
    {"roots": {}},
    {"roots": {"listChanged": None}},
    {"roots": {"listChanged": 1}},
    {"sampling": {"context": {}}},
    {"sampling": None},
    {"elicitation": {"form": {}}},
    {"tasks": {}},
    {"experimental": {"x": 1}},
    {"tools": {}},
]
SERVER_CAPABILITY_CASES: list[Any] = [
    {"tools": {"listChanged": "yes"}},
    {"resources": {"subscribe": True, "other": True}},
    {"logging": {"level": "info"}},
    {"completions": {}},
    {"roots": {}},
    {"tasks": {"list": {}}},
    {"experimental": None},
]

INITIALIZE_TABLE: list[dict[str, Any]] = [
    PLAIN_INITIALIZE,
    FULL_INITIALIZE,
    {**PLAIN_INITIALIZE, "id": "a"},
    {**PLAIN_INITIALIZE, "id": None},
    {**PLAIN_INITIALIZE, "extra": 1},
    with_params(_meta={}),
    with_params(capabilities=None),
    {**PLAIN_INITIALIZE, "params": {"protocolVersion": "2025-06-18", "capabilities": {}}},
    *(with_params(capabilities=capabilities) for capabilities in CLIENT_CAPABILITY_CASES),
    *(
        with_params(clientInfo=info)
        for info in (
            {"name": "c"},
            {"name": "c", "version": 1},
            {"name": "c", "version": "1", "title": None},
            {"name": "c", "version": "1", "websiteUrl": "https://example.com"},
            None,
        )
    ),
]
INITIALIZE_RESULT_TABLE: list[Any] = [
    PLAIN_INITIALIZE_RESULT,
    FULL_INITIALIZE_RESULT,
    {**PLAIN_INITIALIZE_RESULT, "instructions": None},
    {**PLAIN_INITIALIZE_RESULT, "_meta": {}},
    {**PLAIN_INITIALIZE_RESULT, "protocolVersion": 1},
    {"protocolVersion": "2025-06-18", "capabilities": {}},
    *(
        {**PLAIN_INITIALIZE_RESULT, "capabilities": capabilities}
        for capabilities in SERVER_CAPABILITY_CASES
    ),
    [],
    None,
]


@pytest.mark.parametrize("sender", ["client", "server"])
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("frame", INITIALIZE_TABLE)
def test_initialize_requests_in_the_table(
    frame: dict[str, Any], revision: Revision, strict: bool, sender: Sender
) -> None:
    message = request_of(frame, "initialize")
    fast, slow = both_ways(lambda: check_request(message, revision, sender, strict=strict))
    assert fast == slow


@pytest.mark.parametrize("sender", ["server", "client"])
@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("result", INITIALIZE_RESULT_TABLE)
def test_initialize_results_in_the_table(
    result: Any, revision: Revision, strict: bool, sender: Sender
) -> None:
    fast, slow = both_ways(
        lambda: check_method_result("initialize", result, revision, sender, strict=strict)
    )
    assert fast == slow


_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(frame=call_frames(), revision=st.sampled_from(REVISIONS), strict=st.booleans())
def test_any_request(frame: dict[str, Any], revision: Revision, strict: bool) -> None:
    message = request_of(frame)
    fast, slow = both_ways(lambda: check_request(message, revision, "client", strict=strict))
    assert fast == slow


@_SETTINGS
@given(frame=near_modern_calls(), strict=st.booleans())
def test_any_modern_request(frame: dict[str, Any], strict: bool) -> None:
    message = request_of(frame)
    revision = Revision.V2026_07_28
    fast, slow = both_ways(lambda: check_request(message, revision, "client", strict=strict))
    assert fast == slow


@_SETTINGS
@given(frame=initialize_frames(), revision=st.sampled_from(REVISIONS), strict=st.booleans())
def test_any_initialize_request(frame: dict[str, Any], revision: Revision, strict: bool) -> None:
    message = request_of(frame, "initialize")
    fast, slow = both_ways(lambda: check_request(message, revision, "client", strict=strict))
    assert fast == slow


@_SETTINGS
@given(result=initialize_results(), revision=st.sampled_from(REVISIONS), strict=st.booleans())
def test_any_initialize_result(result: Any, revision: Revision, strict: bool) -> None:
    fast, slow = both_ways(
        lambda: check_method_result("initialize", result, revision, "server", strict=strict)
    )
    assert fast == slow


@_SETTINGS
@given(result=tool_results(), revision=st.sampled_from(REVISIONS), strict=st.booleans())
def test_any_result(result: Any, revision: Revision, strict: bool) -> None:
    fast, slow = both_ways(
        lambda: check_method_result(
            "tools/call", result, revision, "server", strict=strict, pointer="/result"
        )
    )
    assert fast == slow


# --- envelopes -----------------------------------------------------------------------------------

ids = st.one_of(st.integers(min_value=-(2**70), max_value=2**70), texts)
metas = st.one_of(
    st.dictionaries(st.sampled_from(["progressToken", "other"]), ids | odd_values, max_size=2),
    st.none(),
    odd_values,
)
result_types = st.one_of(st.sampled_from(["complete", "input_required"]), odd_values)


@st.composite
def envelopes(draw: st.DrawFn) -> Any:
    """A plain request or response envelope, or one with one thing off the plain shape, or
    anything else."""
    body: dict[str, Any] = {}
    body |= draw(seldom(st.fixed_dictionaries({"_meta": metas})))
    body |= draw(seldom(st.fixed_dictionaries({"resultType": result_types})))
    body |= draw(seldom(objects))
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": draw(ids)}
    if draw(st.booleans()):
        frame |= {"method": draw(st.sampled_from(["tools/call", "ping"])), "params": body}
    else:
        frame["result"] = body
    change = draw(st.sampled_from(["none", "none", "change", "drop", "add"]))
    key = draw(st.sampled_from(sorted(frame)))
    if change == "change":
        frame[key] = draw(odd_values)
    elif change == "drop":
        del frame[key]
    elif change == "add":
        more = draw(st.sampled_from(["extra", "error", "result", "method", "params"]))
        frame[more] = draw(odd_values)
    return draw(st.one_of(st.just(frame), st.just(frame), st.just(frame), json_values))


def test_the_plain_envelopes_do_take_the_fast_path() -> None:
    assert jsonrpc_module._plain_envelope(PLAIN_CALL, None) is not None
    response = {"jsonrpc": "2.0", "id": 1, "result": PLAIN_RESULT}
    assert jsonrpc_module._plain_envelope(response, Revision.V2025_06_18) is not None


@_SETTINGS
@given(
    frame=envelopes(),
    revision=st.sampled_from([None, *REVISIONS]),
    pointer=st.sampled_from(["", "/3"]),
)
def test_any_envelope(frame: Any, revision: Revision | None, pointer: str) -> None:
    fast, slow = both_ways(lambda: check_envelope(frame, revision, pointer))
    assert fast == slow


# --- whole sessions ----------------------------------------------------------------------------


def _line(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def _handshake(revision: Revision) -> list[tuple[Direction, bytes]]:
    tool = {"name": TOOL, "inputSchema": INPUT_SCHEMA, "outputSchema": OUTPUT_SCHEMA}
    initialize = {
        "protocolVersion": revision.value,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    answer: dict[str, Any] = {
        "protocolVersion": revision.value,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    }
    return [
        ("c2s", _line({"jsonrpc": "2.0", "id": "i", "method": "initialize", "params": initialize})),
        ("s2c", _line({"jsonrpc": "2.0", "id": "i", "result": answer})),
        ("c2s", _line({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        ("c2s", _line({"jsonrpc": "2.0", "id": "l", "method": "tools/list"})),
        ("s2c", _line({"jsonrpc": "2.0", "id": "l", "result": {"tools": [tool]}})),
    ]


def _routes(lines: list[tuple[Direction, bytes]], strict: bool) -> list[Routed]:
    """What a proxy session decides about ``lines``."""

    async def run() -> list[Routed]:
        session = ProxySession(Auditor(None, stderr=io.StringIO()), strict=strict)
        out = []
        for direction, line in lines:
            if direction == "c2s":
                out.append(await session.from_client(line))
            else:
                out.append(await session.from_server(line))
        return out

    return asyncio.run(run())


def _conversation(lines: list[tuple[Direction, bytes]], strict: bool) -> list[Any]:
    """Every violation a conversation reports for ``lines``."""
    conversation = Conversation(strict=strict)
    found: list[Any] = []
    for direction, line in lines:
        decoded = decode(line, conversation.revision)
        found.append(decoded.violations)
        for message in decoded.messages:
            found.append(conversation.observe(message, direction, size=decoded.size))
    return found


@_SETTINGS
@given(
    exchanges=st.lists(st.tuples(call_frames(), tool_results()), min_size=1, max_size=4),
    revision=st.sampled_from([r for r in REVISIONS if not r.stateless]),
    strict=st.booleans(),
    named=st.booleans(),
)
def test_sessions(
    exchanges: list[tuple[dict[str, Any], Any]], revision: Revision, strict: bool, named: bool
) -> None:
    lines = _handshake(revision)
    for number, (frame, result) in enumerate(exchanges):
        request = dict(frame)
        if named and isinstance(request.get("params"), dict):
            # Most calls should name the listed tool, so that their results are checked too.
            request["params"] = {**request["params"], "name": TOOL}
        request["id"] = number
        lines.append(("c2s", _line(request)))
        lines.append(("s2c", _line({"jsonrpc": "2.0", "id": number, "result": result})))
    fast, slow = both_ways(lambda: _routes(lines, strict))
    assert fast == slow
    fast, slow = both_ways(lambda: _conversation(lines, strict))
    assert fast == slow
