"""Method params, results and notifications per revision, against the specification's schemas.

Four parts:

1. Each rule of :mod:`strictmcp.protocol.methods`, valid and invalid, per revision where the rule
   differs between revisions.
2. The tables of revision differences in ``methods`` are exactly what each revision's
   ``schema.json`` says differently from mcp-types' model for its era (recomputed here).
3. Every example in the 2026-07-28 ``examples/`` folder is accepted, as a message of its own or
   inside a message that carries it (``EXAMPLE_FOLDERS`` says which, per folder).
4. A differential test: per revision, messages derived from valid ones by hypothesis (fields
   dropped, retyped or added, methods from other revisions and sides or invented, bad ids,
   batches, content blocks of other kinds and revisions) get the same verdict from strictmcp
   (``decode`` then ``check_request``/``check_notification``/``check_method_result``) as from
   the revision's own schema: ``JSONRPCMessage``, and, for MCP's methods, the definition of
   that method's message or result. ``JSONRPCMessage`` alone checks no method's params in any
   revision (its requests are ``{"method": string, "params": object}``), so the method's own
   definition is what makes the comparison mean anything.

   Where the two differ on purpose, ``EXCLUSIONS`` names the difference and why; a
   disagreement that no exclusion explains fails the test.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

import mcp_types.methods as surfaces
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_schema_support import (
    EXAMPLES,
    all_methods,
    era_differences,
    method_definitions,
    result_validator,
    validator,
)
from strictmcp.protocol import (
    Message,
    Revision,
    Rule,
    Violation,
    check_method_result,
    check_notification,
    check_request,
    decode,
    errors,
)
from strictmcp.protocol import methods as methods_module

ALL = list(Revision)
R2024, R0326, R0618, R1125, R2026 = ALL
SECRET = "hunter2-SECRET"
Side = Literal["client", "server"]
Kind = Literal["request", "notification", "response"]


def other(side: Side) -> Side:
    return "server" if side == "client" else "client"


# --- samples: a message, what it is, who sends it ----------------------------------------------


@dataclass(frozen=True)
class Sample:
    """A message with what strictmcp needs to know to check it.

    For responses ``method`` is the method of the request answered and ``side`` who answers.
    """

    name: str
    kind: Kind
    side: Side
    method: str
    message: dict[str, Any] = field(hash=False)


def request(method: str, params: dict[str, Any] | None = None, side: Side = "client") -> Sample:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        message["params"] = params
    return Sample(f"{method} request", "request", side, method, message)


def notification(
    method: str, params: dict[str, Any] | None = None, side: Side = "server"
) -> Sample:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return Sample(f"{method} notification", "notification", side, method, message)


def response(method: str, result: dict[str, Any], side: Side = "server") -> Sample:
    message = {"jsonrpc": "2.0", "id": 1, "result": result}
    return Sample(f"{method} result", "response", side, method, message)


def verdict_violations(
    sample: Sample, document: Any, revision: Revision, *, strict: bool = False
) -> list[Violation]:
    """Every error strictmcp reports for ``document`` sent as ``sample`` says."""
    decoded = decode(json.dumps(document), revision)
    found = list(decoded.violations)
    for index, message in enumerate(decoded.messages):
        prefix = f"/{index}" if decoded.batch else ""
        found.extend(check(sample, message, revision, strict=strict, pointer=prefix))
    return errors(found)


def check(
    sample: Sample, message: Message, revision: Revision, *, strict: bool, pointer: str = ""
) -> list[Violation]:
    if message.kind == "request":
        return check_request(message, revision, sample.side, strict=strict, pointer=pointer)
    if message.kind == "notification":
        return check_notification(message, revision, sample.side, strict=strict, pointer=pointer)
    if message.kind == "response":
        return check_method_result(
            sample.method,
            message.result,
            revision,
            sample.side,
            strict=strict,
            pointer=pointer + "/result",
        )
    return []


def violations_of(sample: Sample, revision: Revision, *, strict: bool = False) -> list[Violation]:
    return verdict_violations(sample, sample.message, revision, strict=strict)


def codes(
    sample: Sample, revision: Revision, *, strict: bool = False
) -> list[tuple[Rule | Enum, str]]:
    return [(v.rule, v.pointer) for v in violations_of(sample, revision, strict=strict)]


# --- what the revision's own schema says ---------------------------------------------------------

KNOWN_REQUESTS = all_methods("request")
KNOWN_NOTIFICATIONS = all_methods("notification")


def schema_accepts(sample: Sample, document: Any, revision: Revision) -> bool:
    """The verdict of the revision's schema on ``document`` sent as ``sample`` says."""
    if not validator(revision, "JSONRPCMessage").is_valid(document):
        return False
    items = document if isinstance(document, list) else [document]
    return all(_schema_accepts_item(sample, item, revision) for item in items)


def _schema_accepts_item(sample: Sample, item: dict[str, Any], revision: Revision) -> bool:
    # JSONRPCMessage has accepted the item as one of its members; which one decides the
    # definition that applies.
    if isinstance(item.get("method"), str):
        kind: Literal["request", "notification"] = "request" if "id" in item else "notification"
        name = method_definitions(revision, kind, sample.side).get(item["method"])
        if name is not None:
            return validator(revision, name).is_valid(item)
        # A method of MCP's that this revision or side does not have is in no union of the
        # side's messages; any other method is an extension, which JSONRPCMessage covers.
        return item["method"] not in KNOWN_REQUESTS | KNOWN_NOTIFICATIONS
    if "result" in item:
        name = method_definitions(revision, "request", other(sample.side)).get(sample.method)
        if name is not None:
            return result_validator(revision, name).is_valid(item["result"])
        return sample.method not in KNOWN_REQUESTS
    return True


# --- a valid corpus per revision --------------------------------------------------------------

TOOL: dict[str, Any] = {
    "name": "get_weather",
    "description": "Weather for a city",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
TEXT: dict[str, Any] = {"type": "text", "text": "sunny"}
IMAGE: dict[str, Any] = {
    "type": "image",
    "data": "aGk=",
    "mimeType": "image/png",
    "annotations": {"audience": ["user"], "priority": 0.5},
}
RESOURCE: dict[str, Any] = {
    "type": "resource",
    "resource": {"uri": "file:///a.txt", "text": "t", "mimeType": "text/plain"},
}
AUDIO: dict[str, Any] = {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}
LINK: dict[str, Any] = {"type": "resource_link", "uri": "file:///a.txt", "name": "a"}
TOOL_USE: dict[str, Any] = {
    "type": "tool_use",
    "id": "u1",
    "name": "get_weather",
    "input": {"city": "Paris"},
}
TOOL_RESULT: dict[str, Any] = {"type": "tool_result", "toolUseId": "u1", "content": [TEXT]}
SAMPLING: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": TEXT},
        {
            "role": "assistant",
            "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"},
        },
    ],
    "maxTokens": 100,
    "modelPreferences": {"hints": [{"name": "claude"}], "costPriority": 0.5},
    "systemPrompt": "Be brief.",
    "includeContext": "none",
    "temperature": 0.7,
    "stopSequences": ["END"],
    "metadata": {"k": "v"},
}
ELICIT: dict[str, Any] = {
    "message": "Your name?",
    "requestedSchema": {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
    },
}


def classic_corpus(revision: Revision) -> list[Sample]:
    """Valid messages for the handshake revisions (2024-11-05 to 2025-11-25)."""
    v = revision.value
    samples = [
        request(
            "initialize",
            {
                "protocolVersion": v,
                "capabilities": {"roots": {"listChanged": True}, "sampling": {}},
                "clientInfo": {"name": "client", "version": "1.0"},
            },
        ),
        request("ping"),
        request("ping", side="server"),
        request("tools/list", {"cursor": "c1"}),
        request(
            "tools/call",
            {"name": "get_weather", "arguments": {"city": "Paris"}, "_meta": {"progressToken": 7}},
        ),
        request("resources/list", {}),
        request("resources/templates/list"),
        request("resources/read", {"uri": "file:///a.txt"}),
        request("resources/subscribe", {"uri": "file:///a.txt"}),
        request("resources/unsubscribe", {"uri": "file:///a.txt"}),
        request("prompts/list"),
        request("prompts/get", {"name": "review", "arguments": {"code": "x = 1"}}),
        request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "review"},
                "argument": {"name": "code", "value": "x"},
            },
        ),
        request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "file:///{p}"},
                "argument": {"name": "p", "value": "a"},
            },
        ),
        request("logging/setLevel", {"level": "info"}),
        request("roots/list", side="server"),
        request("sampling/createMessage", SAMPLING, side="server"),
        request("x-vendor/do", {"a": [1, 2], "_meta": {"progressToken": "t"}}),
        notification("notifications/initialized", side="client"),
        notification("notifications/cancelled", {"requestId": 3, "reason": "user"}, side="client"),
        notification("notifications/progress", {"progressToken": "t", "progress": 1, "total": 2.5}),
        notification("notifications/roots/list_changed", side="client"),
        notification("notifications/message", {"level": "info", "logger": "db", "data": {"x": 1}}),
        notification("notifications/resources/updated", {"uri": "file:///a.txt"}),
        notification("notifications/resources/list_changed"),
        notification("notifications/tools/list_changed", {"_meta": {"k": 1}}),
        notification("notifications/prompts/list_changed"),
        notification("notifications/x-vendor/event", {"n": 1}),
        response(
            "initialize",
            {
                "protocolVersion": v,
                "capabilities": {
                    "tools": {"listChanged": True},
                    "resources": {"subscribe": True},
                    "prompts": {},
                    "logging": {},
                },
                "serverInfo": {"name": "server", "version": "1.0"},
                "instructions": "Be nice.",
            },
        ),
        response("ping", {}),
        response("tools/list", {"tools": [TOOL], "nextCursor": "n"}),
        response("tools/call", {"content": [TEXT, IMAGE, RESOURCE], "isError": False}),
        response(
            "resources/list",
            {"resources": [{"uri": "file:///a.txt", "name": "a", "mimeType": "text/plain"}]},
        ),
        response(
            "resources/templates/list",
            {"resourceTemplates": [{"uriTemplate": "file:///{p}", "name": "f"}]},
        ),
        response(
            "resources/read",
            {
                "contents": [
                    {"uri": "file:///a.txt", "text": "t"},
                    {"uri": "file:///b", "blob": "aGk="},
                ]
            },
        ),
        response("resources/subscribe", {}),
        response("logging/setLevel", {"_meta": {"k": "v"}}),
        response(
            "prompts/list",
            {"prompts": [{"name": "review", "arguments": [{"name": "code", "required": True}]}]},
        ),
        response(
            "prompts/get", {"description": "d", "messages": [{"role": "user", "content": TEXT}]}
        ),
        response(
            "completion/complete",
            {"completion": {"values": ["a", "b"], "total": 2, "hasMore": False}},
        ),
        response("x-vendor/do", {"ok": True}),
        response("ping", {}, side="client"),
        response("roots/list", {"roots": [{"uri": "file:///p", "name": "p"}]}, side="client"),
        response(
            "sampling/createMessage",
            {"role": "assistant", "content": TEXT, "model": "m", "stopReason": "endTurn"},
            side="client",
        ),
        Sample(
            "error response",
            "response",
            "server",
            "tools/call",
            {"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "Method not found"}},
        ),
    ]
    if revision.at_least(R0326):
        samples += [
            response("tools/call", {"content": [AUDIO]}),
            response("tools/list", {"tools": [{**TOOL, "annotations": {"readOnlyHint": True}}]}),
            notification(
                "notifications/progress", {"progressToken": 1, "progress": 0.5, "message": "half"}
            ),
        ]
    if revision.at_least(R0618):
        samples += [
            response(
                "tools/list",
                {
                    "tools": [
                        {
                            **TOOL,
                            "title": "Weather",
                            "outputSchema": {
                                "type": "object",
                                "properties": {"t": {"type": "number"}},
                            },
                        }
                    ]
                },
            ),
            response("tools/call", {"content": [LINK], "structuredContent": {"t": 21}}),
            request("elicitation/create", ELICIT, side="server"),
            response(
                "elicitation/create",
                {"action": "accept", "content": {"name": "Ada", "n": 3}},
                side="client",
            ),
            response("elicitation/create", {"action": "decline"}, side="client"),
        ]
    if revision.at_least(R1125):
        samples += [
            request(
                "sampling/createMessage",
                {
                    "messages": [
                        {"role": "user", "content": TEXT},
                        {"role": "assistant", "content": [TOOL_USE]},
                        {"role": "user", "content": [TOOL_RESULT]},
                    ],
                    "maxTokens": 100,
                    "tools": [TOOL],
                    "toolChoice": {"mode": "auto"},
                },
                side="server",
            ),
            request(
                "elicitation/create",
                {
                    "mode": "url",
                    "message": "Sign in",
                    "url": "https://example.com/x",
                    "elicitationId": "e1",
                },
                side="server",
            ),
            response(
                "elicitation/create",
                {"action": "accept", "content": {"colors": ["red"]}},
                side="client",
            ),
            notification("notifications/elicitation/complete", {"elicitationId": "e1"}),
        ]
    return samples


# --- the 2026-07-28 examples, as messages ------------------------------------------------------


def load(folder: str, name: str | None = None) -> Any:
    files = sorted((EXAMPLES / folder).glob("*.json"))
    path = files[0] if name is None else EXAMPLES / folder / name
    return json.loads(path.read_text(encoding="utf-8"))


METHOD_OF = {
    name.removesuffix("Request"): method
    for method, name in method_definitions(R2026, "request", "client").items()
}
"""CallTool → tools/call, for the 2026-07-28 requests (all of them the client's)."""

Carrier = Callable[[Any], Sample]


def frame(message: dict[str, Any], kind: Kind, side: Side, method: str) -> Sample:
    return Sample(f"{method} {kind}", kind, side, method, message)


def whole(kind: Kind, side: Side) -> Carrier:
    """The example is a whole request or notification."""
    return lambda example: frame(example, kind, side, example["method"])


def whole_response(method: str) -> Carrier:
    """The example is a whole response to a ``method`` request."""
    return lambda example: frame(example, "response", "server", method)


def result_of(method: str) -> Carrier:
    """The example is the result of a ``method`` request."""
    return lambda example: response(method, example)


def params_of(method: str, kind: Kind = "request", side: Side = "client") -> Carrier:
    if kind == "request":
        return lambda example: request(method, example, side)
    return lambda example: notification(method, example, side)


def error_object(example: Any) -> Sample:
    return frame({"jsonrpc": "2.0", "id": 1, "error": example}, "response", "server", "tools/call")


# 2026-07-28 has no server-to-client requests: a server asks for input in an
# InputRequiredResult, and the client answers in the retried request's inputResponses.


def input_requests(requests: Any) -> Sample:
    result = {"resultType": "input_required", "inputRequests": requests, "requestState": "s"}
    return response("tools/call", result)


def input_request(example: Any) -> Sample:
    return input_requests({"ask": example})


def input_request_params(method: str) -> Carrier:
    return lambda params: input_request({"method": method, "params": params})


def input_responses(responses: Any) -> Sample:
    call = copy.deepcopy(load("CallToolRequest"))
    call["params"]["inputResponses"] = responses
    return frame(call, "request", "client", "tools/call")


def input_response(example: Any) -> Sample:
    return input_responses({"ask": example})


def sampling(**params: Any) -> Sample:
    basic = load("CreateMessageRequestParams", "basic-request.json")
    return input_request_params("sampling/createMessage")({**basic, **params})


def content_block(block: Any) -> Sample:
    return response("tools/call", {"resultType": "complete", "content": [block]})


def in_result(folder: str, key: str, *, listed: bool = True) -> Carrier:
    """The example replaces ``key`` in the first example of ``folder`` (a result)."""
    stem = folder.removesuffix("Result")
    return lambda example: response(
        METHOD_OF[stem], {**load(folder), key: [example] if listed else example}
    )


def client_capabilities(capabilities: Any) -> Sample:
    call = copy.deepcopy(load("CallToolRequest"))
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities
    return frame(call, "request", "client", "tools/call")


def requested_field(schema: Any) -> Sample:
    params = copy.deepcopy(load("ElicitRequestFormParams", "elicit-single-field.json"))
    params["requestedSchema"]["properties"] = {"field": schema}
    return input_request_params("elicitation/create")(params)


SERVER_NOTIFICATIONS = (
    "LoggingMessageNotification",
    "ProgressNotification",
    "PromptListChangedNotification",
    "ResourceListChangedNotification",
    "ResourceUpdatedNotification",
    "SubscriptionsAcknowledgedNotification",
    "ToolListChangedNotification",
)
ELICITATION_FIELD_SCHEMAS = (
    "BooleanSchema",
    "NumberSchema",
    "StringSchema",
    "TitledMultiSelectEnumSchema",
    "TitledSingleSelectEnumSchema",
    "UntitledMultiSelectEnumSchema",
    "UntitledSingleSelectEnumSchema",
)

# Folder → how its examples become a message strictmcp checks: as the whole message, or inside
# one that carries them (data types, params, the results of input requests).
EXAMPLE_FOLDERS: dict[str, Carrier] = {
    **{f"{stem}Request": whole("request", "client") for stem in METHOD_OF},
    **{f"{stem}Result": result_of(method) for stem, method in METHOD_OF.items()},
    **{f"{stem}ResultResponse": whole_response(method) for stem, method in METHOD_OF.items()},
    "CancelledNotification": whole("notification", "client"),
    **dict.fromkeys(SERVER_NOTIFICATIONS, whole("notification", "server")),
    # error responses, and error objects
    **dict.fromkeys(
        (
            "HeaderMismatchError",
            "MissingRequiredClientCapabilityError",
            "UnsupportedProtocolVersionError",
        ),
        whole_response("tools/call"),
    ),
    **dict.fromkeys(
        ("InternalError", "InvalidParamsError", "MethodNotFoundError", "ParseError"),
        error_object,
    ),
    # params
    "CallToolRequestParams": params_of("tools/call"),
    "CompleteRequestParams": params_of("completion/complete"),
    "GetPromptRequestParams": params_of("prompts/get"),
    "PaginatedRequestParams": params_of("tools/list"),
    "CancelledNotificationParams": params_of("notifications/cancelled", "notification", "client"),
    "LoggingMessageNotificationParams": params_of(
        "notifications/message", "notification", "server"
    ),
    "ProgressNotificationParams": params_of("notifications/progress", "notification", "server"),
    "ResourceUpdatedNotificationParams": params_of(
        "notifications/resources/updated", "notification", "server"
    ),
    # input requests and their answers
    "InputRequiredResult": result_of("tools/call"),
    "InputRequests": input_requests,
    "InputResponses": input_responses,
    **dict.fromkeys(("CreateMessageRequest", "ElicitRequest", "ListRootsRequest"), input_request),
    "CreateMessageRequestParams": input_request_params("sampling/createMessage"),
    "ElicitRequestFormParams": input_request_params("elicitation/create"),
    "ElicitRequestURLParams": input_request_params("elicitation/create"),
    **dict.fromkeys(("CreateMessageResult", "ElicitResult", "ListRootsResult"), input_response),
    # data types, in a message that carries them
    **dict.fromkeys(
        ("AudioContent", "EmbeddedResource", "ImageContent", "ResourceLink", "TextContent"),
        content_block,
    ),
    "ToolUseContent": lambda block: sampling(messages=[{"role": "assistant", "content": [block]}]),
    "ToolResultContent": lambda block: sampling(messages=[{"role": "user", "content": [block]}]),
    "SamplingMessage": lambda message: sampling(messages=[message]),
    "ModelPreferences": lambda preferences: sampling(modelPreferences=preferences),
    "BlobResourceContents": in_result("ReadResourceResult", "contents"),
    "TextResourceContents": in_result("ReadResourceResult", "contents"),
    "Resource": in_result("ListResourcesResult", "resources"),
    "Tool": in_result("ListToolsResult", "tools"),
    "ServerCapabilities": in_result("DiscoverResult", "capabilities", listed=False),
    "Root": lambda root: input_response({"roots": [root]}),
    "ClientCapabilities": client_capabilities,
    # mcp-types types `requestedSchema.properties` as a map of any JSON: the method layer does
    # not check these field schemas (strictmcp.protocol.elicitation does).
    **dict.fromkeys(ELICITATION_FIELD_SCHEMAS, requested_field),
}


# What strict mode finds in the examples: members their definitions do not have.
STRICT_FINDINGS = {
    # An input request's ListRootsRequest has no id (the example writes one).
    "ListRootsRequest/list-roots-request.json": ["/result/inputRequests/ask/id"],
}

# The one example that is not what its folder says. Without ttlMs and cacheScope it is no
# ReadResourceResult; the schema accepts it only as an InputRequiredResult (the response's
# result is an anyOf of the two, and InputRequiredResult's members are all optional). Its
# resultType says "complete", so strictmcp checks it as a ReadResourceResult (see
# methods.check_result) and refuses it. Its sibling read-resource-result-response-with-ttl.json
# is the valid one.
REFUSED_EXAMPLES = {
    "ReadResourceResultResponse/read-resource-result-response.json": [
        (Rule.INVALID_RESULT, "/result", 'is missing the required field "cacheScope"'),
        (Rule.INVALID_RESULT, "/result", 'is missing the required field "ttlMs"'),
    ],
}


def example_samples() -> list[tuple[str, Sample]]:
    found = []
    for folder in sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()):
        for path in sorted((EXAMPLES / folder).glob("*.json")):
            example = json.loads(path.read_text(encoding="utf-8"))
            found.append((f"{folder}/{path.name}", EXAMPLE_FOLDERS[folder](example)))
    return found


def corpus(revision: Revision) -> list[Sample]:
    if revision is R2026:
        samples = [sample for name, sample in example_samples() if name not in REFUSED_EXAMPLES]
        return [
            *samples,
            request("x-vendor/do", {"a": 1}),
            notification("notifications/x-vendor/event", {"n": 1}),
            response("x-vendor/do", {"resultType": "complete", "ok": True}),
        ]
    return [
        sample
        for sample in classic_corpus(revision)
        if "x-vendor" in sample.method or _exists(sample, revision)
    ]


def _exists(sample: Sample, revision: Revision) -> bool:
    key = (sample.method, revision.value)
    table: Mapping[tuple[str, str], Any]
    if sample.kind == "request":
        table = surfaces.CLIENT_REQUESTS if sample.side == "client" else surfaces.SERVER_REQUESTS
    elif sample.kind == "notification":
        table = (
            surfaces.CLIENT_NOTIFICATIONS
            if sample.side == "client"
            else surfaces.SERVER_NOTIFICATIONS
        )
    else:
        table = surfaces.SERVER_RESULTS if sample.side == "server" else surfaces.CLIENT_RESULTS
    return key in table


CORPUS = {revision: corpus(revision) for revision in ALL}


# --- part 1: the rules -------------------------------------------------------------------------


def frame_of(sample: Sample) -> Message:
    decoded = decode(json.dumps(sample.message))
    assert decoded.valid, decoded.violations
    return decoded.messages[0]


def surface_revisions(table: Any, method: str) -> set[Revision]:
    return {revision for revision in ALL if (method, revision.value) in table}


@pytest.mark.parametrize("revision", ALL)
@pytest.mark.parametrize(
    ("method", "side", "table"),
    [
        ("initialize", "client", surfaces.CLIENT_REQUESTS),
        ("logging/setLevel", "client", surfaces.CLIENT_REQUESTS),
        ("server/discover", "client", surfaces.CLIENT_REQUESTS),
        ("subscriptions/listen", "client", surfaces.CLIENT_REQUESTS),
        ("elicitation/create", "server", surfaces.SERVER_REQUESTS),
        ("sampling/createMessage", "server", surfaces.SERVER_REQUESTS),
        ("ping", "server", surfaces.SERVER_REQUESTS),
    ],
)
def test_method_not_in_revision(method: str, side: Side, table: Any, revision: Revision) -> None:
    found = codes(request(method, {}, side=side), revision)
    if revision in surface_revisions(table, method):
        assert (Rule.METHOD_NOT_IN_REVISION, "/method") not in found
    else:
        assert found == [(Rule.METHOD_NOT_IN_REVISION, "/method")]


def test_method_not_in_revision_examples_from_the_brief() -> None:
    assert codes(request("initialize", {}), R2026) == [(Rule.METHOD_NOT_IN_REVISION, "/method")]
    assert codes(request("elicitation/create", ELICIT, "server"), R2024) == [
        (Rule.METHOD_NOT_IN_REVISION, "/method")
    ]
    assert codes(request("elicitation/create", ELICIT, "server"), R0618) == []
    cancelled = notification("notifications/elicitation/complete", {"elicitationId": "e"})
    assert codes(cancelled, R0618) == [(Rule.METHOD_NOT_IN_REVISION, "/method")]
    assert codes(cancelled, R1125) == []
    assert codes(response("initialize", {"resultType": "complete"}), R2026) == [
        (Rule.METHOD_NOT_IN_REVISION, "/result")
    ]


@pytest.mark.parametrize("revision", [R2024, R0618, R1125])
def test_wrong_direction(revision: Revision) -> None:
    wrong = [(Rule.WRONG_DIRECTION, "/method")]
    assert codes(request("sampling/createMessage", SAMPLING, side="client"), revision) == wrong
    assert codes(request("sampling/createMessage", SAMPLING, side="server"), revision) == []
    assert codes(request("tools/list", {}, side="server"), revision) == wrong
    assert (
        codes(
            notification("notifications/message", {"level": "info", "data": 1}, "client"), revision
        )
        == wrong
    )
    assert codes(notification("notifications/initialized", None, "server"), revision) == wrong
    assert codes(response("tools/list", {"tools": []}, side="client"), revision) == [
        (Rule.WRONG_DIRECTION, "/result")
    ]
    assert codes(response("roots/list", {"roots": []}, side="server"), revision) == [
        (Rule.WRONG_DIRECTION, "/result")
    ]
    # ping goes both ways
    assert codes(request("ping", side="server"), revision) == []
    assert codes(request("ping", side="client"), revision) == []


@pytest.mark.parametrize("revision", ALL)
def test_unknown_methods_pass_unless_strict(revision: Revision) -> None:
    for sample in (
        request("x-vendor/do", {"a": 1}),
        notification("notifications/x-vendor", {"a": 1}),
        response("x-vendor/do", {"resultType": "complete"}),
    ):
        assert codes(sample, revision) == []
        (violation,) = violations_of(sample, revision, strict=True)
        assert violation.rule is Rule.UNKNOWN_METHOD
        assert "x-vendor" not in violation.message


def test_methods_of_the_other_kind() -> None:
    assert codes(request("notifications/initialized"), R0618) == [(Rule.INVALID_MESSAGE, "/method")]
    assert codes(notification("tools/list", {}, "client"), R0618) == [
        (Rule.INVALID_MESSAGE, "/method")
    ]


def test_checks_need_the_right_kind_of_message() -> None:
    with pytest.raises(ValueError, match="needs a request"):
        check_request(frame_of(notification("notifications/initialized")), R0618, "client")
    with pytest.raises(ValueError, match="needs a notification"):
        check_notification(frame_of(request("ping")), R0618, "client")


@pytest.mark.parametrize("revision", [R2024, R1125])
def test_invalid_params(revision: Revision) -> None:
    bad = request("tools/call", {"name": 5, "arguments": [1]})
    assert codes(bad, revision) == [
        (Rule.INVALID_PARAMS, "/params/arguments"),
        (Rule.INVALID_PARAMS, "/params/name"),
    ]
    missing = request("tools/call", {"arguments": {}})
    (violation,) = violations_of(missing, revision)
    assert (violation.rule, violation.pointer) == (Rule.INVALID_PARAMS, "/params")
    assert violation.message == 'is missing the required field "name"'
    assert codes(request("resources/read"), revision) == [(Rule.INVALID_PARAMS, "")]
    assert codes(request("logging/setLevel", {"level": "loud"}), revision) == [
        (Rule.INVALID_PARAMS, "/params/level")
    ]


@pytest.mark.parametrize("revision", [R2024, R1125])
def test_invalid_notification(revision: Revision) -> None:
    progress = notification("notifications/progress", {"progressToken": "t", "progress": "half"})
    assert codes(progress, revision) == [(Rule.INVALID_NOTIFICATION, "/params/progress")]
    assert codes(notification("notifications/message", {"level": "info"}), revision) == [
        (Rule.INVALID_NOTIFICATION, "/params")
    ]


@pytest.mark.parametrize("revision", ALL)
def test_invalid_result(revision: Revision) -> None:
    extra = {"resultType": "complete"} if revision is R2026 else {}
    valid = response("tools/call", {**extra, "content": [TEXT]})
    assert codes(valid, revision) == []
    bad = response(
        "tools/call", {**extra, "content": [{"type": "text", "text": 5}], "isError": "no"}
    )
    assert codes(bad, revision) == [
        (Rule.INVALID_RESULT, "/result/content/0/text"),
        (Rule.INVALID_RESULT, "/result/isError"),
    ]


def test_result_pointers_are_relative_unless_prefixed() -> None:
    result = {"tools": [{"name": "t"}]}
    (violation,) = check_method_result("tools/list", result, R0618, "server")
    assert violation.pointer == "/tools/0"
    (violation,) = check_method_result("tools/list", result, R0618, "server", pointer="/2/result")
    assert violation.pointer == "/2/result/tools/0"
    message = frame_of(request("tools/call", {"name": 1}))
    (violation,) = check_request(message, R0618, "client", pointer="/3")
    assert violation.pointer == "/3/params/name"


def test_union_errors_name_the_member_meant() -> None:
    # A content block says what it is by its type: only that member's errors are reported.
    audio = response("tools/call", {"content": [{"type": "audio", "data": "x"}]})
    assert [(v.pointer, v.message) for v in violations_of(audio, R0618)] == [
        ("/result/content/0", 'is missing the required field "mimeType"')
    ]
    # A type no member has: one violation, with the types this revision allows.
    bogus = response("tools/call", {"content": [{"type": "video"}]})
    (violation,) = violations_of(bogus, R2024)
    assert violation.pointer == "/result/content/0"
    assert violation.message == (
        "matches no allowed shape: \"type\" must be 'text', 'image', 'resource'"
    )
    # Not even an object
    (violation,) = violations_of(response("tools/call", {"content": ["text"]}), R1125)
    assert violation.message.startswith("matches none of the allowed shapes")
    # URL-mode elicitation: the mode says which params shape is meant.
    url = request("elicitation/create", {"mode": "url", "message": "m"}, side="server")
    assert [v.message for v in violations_of(url, R1125)] == [
        'is missing the required field "elicitationId"',
        'is missing the required field "url"',
    ]


@pytest.mark.parametrize("revision", ALL)
def test_types_are_strict(revision: Revision) -> None:
    sampling = copy.deepcopy(SAMPLING)
    sampling["maxTokens"] = "100"
    assert codes(request("sampling/createMessage", sampling, "server"), revision) in (
        [(Rule.INVALID_PARAMS, "/params/maxTokens")],
        [(Rule.WRONG_DIRECTION, "/method")],
        [(Rule.METHOD_NOT_IN_REVISION, "/method")],
    )
    flag = response("tools/call", {"content": [], "isError": 1, "resultType": "complete"})
    assert codes(flag, revision) == [(Rule.INVALID_RESULT, "/result/isError")]


@pytest.mark.parametrize("revision", ALL)
def test_null_is_not_an_absent_field(revision: Revision) -> None:
    extra = {"resultType": "complete"} if revision is R2026 else {}
    nulls = response(
        "tools/call", {**extra, "content": [{**TEXT, "annotations": None}], "isError": None}
    )
    assert [(v.pointer, v.message) for v in violations_of(nulls, revision)] == [
        ("/result/content/0/annotations", "must not be null"),
        ("/result/isError", "must not be null"),
    ]
    # where any JSON value is allowed, null is one
    if revision is R2026:
        assert (
            codes(
                response("tools/call", {**extra, "content": [], "structuredContent": None}),
                revision,
            )
            == []
        )


# --- unknown fields ----------------------------------------------------------------------------


@pytest.mark.parametrize("revision", [R2024, R1125])
def test_unknown_fields_pass_unless_strict(revision: Revision) -> None:
    sample = request(
        "tools/call",
        {
            "name": "t",
            "arguments": {"free": {"form": 1}},
            "extra": 1,
            "_meta": {"progressToken": 1, "com.example/trace": "x"},
        },
    )
    sample.message["x-envelope"] = True
    assert codes(sample, revision) == []
    found = violations_of(sample, revision, strict=True)
    assert [(v.rule, v.pointer) for v in found] == [
        (Rule.UNKNOWN_FIELD, "/params/extra"),
        (Rule.UNKNOWN_FIELD, "/params/_meta/com.example~1trace"),
        (Rule.UNKNOWN_FIELD, "/x-envelope"),
    ]
    assert found[0].message == f'field "extra" is not defined by MCP {revision.value}'


def test_strict_walks_results_but_not_schemas_or_free_form_values() -> None:
    tool = {
        **TOOL,
        "inputSchema": {**TOOL["inputSchema"], "additionalProperties": False, "$defs": {}},
        "annotations": {"readOnlyHint": True, "x-hint": 1},
    }
    sample = response("tools/list", {"tools": [tool], "x-page": 2, "_meta": {"k": 1}})
    assert codes(sample, R0618) == []
    assert codes(sample, R0618, strict=True) == [
        (Rule.UNKNOWN_FIELD, "/result/tools/0/annotations/x-hint"),
        (Rule.UNKNOWN_FIELD, "/result/x-page"),
        (Rule.UNKNOWN_FIELD, "/result/_meta/k"),
    ]


def test_strict_2026_meta_keys() -> None:
    call = copy.deepcopy(load("CallToolRequest"))
    assert codes(frame(call, "request", "client", "tools/call"), R2026, strict=True) == []
    call["params"]["_meta"]["io.modelcontextprotocol/unknown"] = 1
    assert codes(frame(call, "request", "client", "tools/call"), R2026, strict=True) == [
        (Rule.UNKNOWN_FIELD, "/params/_meta/io.modelcontextprotocol~1unknown")
    ]


# --- where an earlier revision's schema differs from its era's model ----------------------------


def content_result(*blocks: Any) -> Sample:
    return response("tools/call", {"content": list(blocks)})


@pytest.mark.parametrize(
    ("block", "since"),
    [(AUDIO, R0326), (LINK, R0618), (TEXT, R2024), (IMAGE, R2024), (RESOURCE, R2024)],
)
@pytest.mark.parametrize("revision", ALL[:4])
def test_content_blocks_per_revision(block: Any, since: Revision, revision: Revision) -> None:
    found = violations_of(content_result(block), revision)
    if revision.at_least(since):
        assert found == []
    else:
        (violation,) = found
        assert (violation.rule, violation.pointer) == (Rule.INVALID_RESULT, "/result/content/0")
        assert violation.message.endswith(f"is not part of MCP {revision.value}")


@pytest.mark.parametrize("revision", ALL[:4])
def test_sampling_content_per_revision(revision: Revision) -> None:
    def sampling(content: Any, role: str = "user") -> Sample:
        return request(
            "sampling/createMessage",
            {"messages": [{"role": role, "content": content}], "maxTokens": 5},
            side="server",
        )

    tool_use = codes(sampling(TOOL_USE, "assistant"), revision)
    array = codes(sampling([TEXT]), revision)
    audio = codes(sampling(AUDIO), revision)
    if revision.at_least(R1125):
        assert tool_use == array == audio == []
    else:
        assert tool_use == [(Rule.INVALID_PARAMS, "/params/messages/0/content")]
        assert array == [(Rule.INVALID_PARAMS, "/params/messages/0/content")]
        assert audio == (
            []
            if revision.at_least(R0326)
            else [(Rule.INVALID_PARAMS, "/params/messages/0/content")]
        )


@pytest.mark.parametrize("revision", ALL[:4])
def test_fields_of_later_revisions_are_unknown_fields(revision: Revision) -> None:
    # A title that is not a string: nothing to the revisions that have no title, an error to
    # those that do. Strict mode reports the field where the revision lacks it.
    tool = {**TOOL, "title": 5, "outputSchema": {"no": "type"}}
    sample = response("tools/list", {"tools": [tool]})
    found = codes(sample, revision)
    strict = codes(sample, revision, strict=True)
    if revision.at_least(R0618):
        assert found == [
            (Rule.INVALID_RESULT, "/result/tools/0/outputSchema"),
            (Rule.INVALID_RESULT, "/result/tools/0/title"),
        ]
    else:
        assert found == []
        assert sorted(strict) == [
            (Rule.UNKNOWN_FIELD, "/result/tools/0/outputSchema"),
            (Rule.UNKNOWN_FIELD, "/result/tools/0/title"),
        ]
    good = response("tools/call", {"content": [], "structuredContent": {"a": 1}})
    assert codes(good, revision) == []
    assert codes(good, revision, strict=True) == (
        [] if revision.at_least(R0618) else [(Rule.UNKNOWN_FIELD, "/result/structuredContent")]
    )


@pytest.mark.parametrize("revision", ALL)
def test_cancelled_request_id(revision: Revision) -> None:
    # Optional only in 2025-11-25, where tasks are cancelled by tasks/cancel instead.
    sample = notification("notifications/cancelled", {"reason": "gone"}, side="client")
    found = codes(sample, revision)
    if revision is R1125:
        assert found == []
    else:
        assert found == [(Rule.INVALID_NOTIFICATION, "/params")]


@pytest.mark.parametrize("revision", [R0618, R1125])
def test_url_elicitation(revision: Revision) -> None:
    url = {"mode": "url", "message": "m", "url": "https://example.com", "elicitationId": "e"}
    found = codes(request("elicitation/create", url, side="server"), revision)
    assert found == ([] if revision is R1125 else [(Rule.INVALID_PARAMS, "/params")])
    # `mode` is unknown to 2025-06-18: whatever its value, the form params are what count.
    form = violations_of(
        request("elicitation/create", {**ELICIT, "mode": 5}, side="server"), revision
    )
    if revision is R0618:
        assert form == []
    else:
        assert [(v.pointer, v.message) for v in form] == [
            ("/params", "matches no allowed shape: \"mode\" must be 'url', 'form'")
        ]


# --- no values in messages ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "sample",
    [
        request("tools/call", {"name": SECRET + "x", "arguments": SECRET}),
        request("tools/call", {"name": [SECRET]}),
        request("logging/setLevel", {"level": SECRET}),
        request(
            "completion/complete",
            {"ref": {"type": SECRET}, "argument": {"name": 1, "value": SECRET}},
        ),
        request(
            "sampling/createMessage",
            {"messages": [{"role": SECRET, "content": SECRET}], "maxTokens": SECRET},
            "server",
        ),
        request(SECRET, {"x": SECRET}),
        request(
            "initialize",
            {"protocolVersion": 1, "capabilities": SECRET, "clientInfo": {"name": SECRET}},
        ),
        notification(SECRET, {"x": SECRET}),
        notification("notifications/message", {"level": SECRET, "data": SECRET}),
        response("tools/call", {"content": [{"type": SECRET, "text": SECRET}], "isError": SECRET}),
        response(
            "tools/call",
            {
                "content": [
                    {"type": "text", "text": [SECRET]},
                    {"type": "image", "data": 5, "mimeType": SECRET},
                ]
            },
        ),
        response(
            "prompts/get",
            {"messages": [{"role": SECRET, "content": {"type": "text", "text": SECRET}}]},
        ),
        response(SECRET, {"x": SECRET}),
    ],
    ids=lambda sample: sample.name.replace(SECRET, "SECRET"),
)
@pytest.mark.parametrize("revision", [R2024, R1125, R2026])
def test_violations_never_quote_values(sample: Sample, revision: Revision) -> None:
    found = violations_of(sample, revision, strict=True)
    assert found
    for violation in found:
        assert SECRET not in json.dumps(violation.to_dict())


# --- part 2: the revision tables are what the schemas say ----------------------------------------


TABLES: dict[str, dict[Any, Revision]] = {
    "fields": methods_module._FIELD_SINCE,
    "classes": methods_module._CLASS_SINCE,
    "arrays": methods_module._ARRAY_SINCE,
    "required": methods_module._REQUIRED_BEFORE,
}


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("revision", ALL)
def test_revision_tables_cover_the_schemas(revision: Revision, table: str) -> None:
    # Every difference the revision's schema has from its era's model is in the table, with a
    # revision late enough. (Some entries are unreachable in early revisions: ("Elicitation",
    # "url") in 2024-11-05, which has no elicitation capability at all.)
    entries = TABLES[table]
    found = getattr(era_differences(revision), table)
    assert found <= {key for key, since in entries.items() if not revision.at_least(since)}


@pytest.mark.parametrize("table", TABLES)
def test_revision_tables_are_exact(table: str) -> None:
    # ... and no later than needed: the revision just before an entry's lacks it.
    for key, since in TABLES[table].items():
        previous = ALL[ALL.index(since) - 1]
        assert key in getattr(era_differences(previous), table), key


@pytest.mark.parametrize("revision", ALL)
def test_mcp_types_requires_nothing_a_revision_leaves_optional(revision: Revision) -> None:
    assert era_differences(revision).model_requires == set()


# --- part 3: the examples, and the corpus the differential test starts from --------------------


def test_every_example_folder_is_mapped() -> None:
    folders = {p.name for p in EXAMPLES.iterdir() if p.is_dir()}
    assert folders == set(EXAMPLE_FOLDERS)


@pytest.mark.parametrize(
    ("name", "sample"), example_samples(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_examples_are_accepted(name: str, sample: Sample) -> None:
    # The message that carries the example is valid by the schema.
    assert schema_accepts(sample, sample.message, R2026)
    found = [(v.rule, v.pointer, v.message) for v in violations_of(sample, R2026)]
    assert found == REFUSED_EXAMPLES.get(name, [])
    if not found:
        strict = [(v.rule, v.pointer) for v in violations_of(sample, R2026, strict=True)]
        assert strict == [(Rule.UNKNOWN_FIELD, p) for p in STRICT_FINDINGS.get(name, [])]


@pytest.mark.parametrize("revision", ALL)
def test_corpus_is_valid_both_ways(revision: Revision) -> None:
    for sample in CORPUS[revision]:
        assert violations_of(sample, revision) == [], sample.name
        assert schema_accepts(sample, sample.message, revision), sample.name


# --- part 4: the differential test ---------------------------------------------------------------

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Mutation:
    """One change made to a valid message: ``op`` at ``path``, writing ``value``."""

    op: str
    path: Path_ = ()
    value: Any = None


@dataclass(frozen=True)
class Case:
    """A message on which strictmcp and the revision's schema disagree."""

    revision: Revision
    sample: Sample
    document: Any
    mutations: tuple[Mutation, ...]
    ours: bool

    @property
    def items(self) -> list[Any]:
        return self.document if isinstance(self.document, list) else [self.document]

    def touched(self, *prefix: str | int) -> bool:
        """Whether a mutation changed something at or below ``prefix``."""
        return any(m.path[: len(prefix)] == prefix for m in self.mutations)

    def wrote(self, test: Callable[[Any], bool]) -> bool:
        return any(m.op in ("retype", "add", "id") and test(m.value) for m in self.mutations)


@dataclass(frozen=True)
class Exclusion:
    """A known, intended difference between strictmcp and a revision's schema."""

    name: str
    reason: str
    explains: Callable[[Case], bool]


def _two_kinds(item: Any) -> bool:
    """A request and a response at once, or a response with both outcomes."""
    if not isinstance(item, dict):
        return False
    response_members = ("result" in item) + ("error" in item)
    return response_members + ("method" in item) > 1


def _is_integral_float(value: Any) -> bool:
    return isinstance(value, float) and value.is_integer()


def _integers(value: Any) -> Any:
    """``value`` with every float that is an integer written as one."""
    if _is_integral_float(value):
        return int(value)
    if isinstance(value, dict):
        return {key: _integers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integers(item) for item in value]
    return value


def _method_of(item: Any) -> Any:
    return item.get("method") if isinstance(item, dict) else None


TASK_METHODS = {m for m in KNOWN_REQUESTS | KNOWN_NOTIFICATIONS if "tasks" in m.split("/")}
DUAL_RESULTS = {
    "tools/call": "CallToolResult",
    "prompts/get": "GetPromptResult",
    "resources/read": "ReadResourceResult",
}

EXCLUSIONS = [
    Exclusion(
        "request-and-response",
        "JSON-RPC 2.0: a message is a request, a notification or a response, and a response "
        "carries result or error, not both. strictmcp refuses the mixtures; the schemas allow "
        "unknown members, so a request with a `result` member still matches JSONRPCRequest.",
        lambda case: not case.ours and any(_two_kinds(item) for item in case.items),
    ),
    Exclusion(
        "empty-batch",
        "JSON-RPC 2.0 answers an empty batch with Invalid Request; 2025-03-26's batch schema "
        "has no minItems.",
        lambda case: not case.ours and case.document == [],
    ),
    Exclusion(
        "initialize-in-batch",
        "2025-03-26 says the initialize request MUST NOT be part of a JSON-RPC batch (it settles "
        "the revision the rest is read by); its JSONRPCBatchRequest schema does not say so.",
        lambda case: (
            not case.ours
            and isinstance(case.document, list)
            and any(isinstance(i, dict) and i.get("method") == "initialize" for i in case.document)
        ),
    ),
    Exclusion(
        "error-id-null",
        'JSON-RPC 2.0 requires "id": null in an error response to a request whose id could not '
        "be read; no revision's RequestId allows null.",
        lambda case: (
            case.ours
            and any(
                isinstance(item, dict) and "error" in item and item.get("id", 0) is None
                for item in case.items
            )
        ),
    ),
    Exclusion(
        "request-passes-as-notification",
        "JSON-RPC 2.0: a message with an id member is a request. A request that JSONRPCRequest "
        "refuses (an id that is no string or integer, a progressToken that is neither) still "
        "matches JSONRPCNotification, which allows unknown members; and the method definitions "
        "say nothing of id before 2025-11-25, nor does any revision for extension methods. "
        "strictmcp checks it as the request it is.",
        lambda case: (
            not case.ours
            and any(
                isinstance(item, dict)
                and "method" in item
                and "id" in item
                and not validator(case.revision, "JSONRPCRequest").is_valid(item)
                and validator(case.revision, "JSONRPCNotification").is_valid(item)
                for item in case.items
            )
        ),
    ),
    Exclusion(
        "integral-float",
        "strictmcp (pydantic strict mode, and the envelope's id check) takes 1.0 for a number, "
        "not an integer; JSON Schema's integer includes it. MCP SDKs write integers as integers. "
        "Explains a case when writing those floats as integers makes strictmcp agree.",
        lambda case: (
            not case.ours
            and case.wrote(_is_integral_float)
            and not verdict_violations(case.sample, _integers(case.document), case.revision)
        ),
    ),
    Exclusion(
        "extension-method-meta",
        "strictmcp requires `_meta` in params to be an object, and a request's progressToken a "
        "string or integer, for every method, since every revision defines `_meta` so; from "
        "2025-11-25 JSONRPCMessage no longer checks the params of methods the schema does not "
        "define.",
        lambda case: (
            not case.ours
            and case.revision.at_least(R1125)
            and any(
                _method_of(item) not in KNOWN_REQUESTS | KNOWN_NOTIFICATIONS for item in case.items
            )
            and case.touched("params", "_meta")
        ),
    ),
    Exclusion(
        "tasks",
        "2025-11-25's tasks (tasks/*, notifications/tasks/status) are experimental and absent "
        "from mcp-types' surface maps; strictmcp checks them as extension methods (envelope "
        "only), the schema checks their params.",
        lambda case: case.ours and any(_method_of(item) in TASK_METHODS for item in case.items),
    ),
    Exclusion(
        "input-required-by-result-type",
        "2026-07-28 results of tools/call, prompts/get and resources/read are checked as the "
        "kind their resultType says (see methods.check_result); the schema's anyOf accepts any "
        "object with a string resultType as an InputRequiredResult, whose members are all "
        "optional, even one that says it is complete.",
        lambda case: (
            not case.ours
            and case.revision is R2026
            and case.sample.method in DUAL_RESULTS
            and any(
                isinstance(item, dict)
                and isinstance(item.get("result"), dict)
                and item["result"].get("resultType") != "input_required"
                and validator(R2026, "InputRequiredResult").is_valid(item["result"])
                and not validator(R2026, DUAL_RESULTS[case.sample.method]).is_valid(item["result"])
                for item in case.items
            )
        ),
    ),
    # Where mcp-types, in the same era, is looser than the revision's schema: strictmcp uses
    # mcp-types' models (a dependency, never a copy), and checks these elsewhere.
    Exclusion(
        "requested-schema",
        "mcp-types types an elicitation's requestedSchema.properties as free-form; the schema "
        "restricts them to primitive schema definitions. strictmcp.protocol.elicitation checks "
        "requested schemas (check_requested_schema).",
        lambda case: case.ours and any("requestedSchema" in m.path for m in case.mutations),
    ),
    Exclusion(
        "boolean-property-schemas",
        "mcp-types allows `true`/`false` as property schemas in inputSchema and outputSchema, "
        "as JSON Schema does; the 2025 schemas say each is an object. strictmcp.protocol.tools "
        "checks tool schemas with the engine.",
        lambda case: (
            case.ours
            and any(
                isinstance(m.value, bool)
                and "properties" in m.path
                and ({"inputSchema", "outputSchema"} & set(m.path))
                for m in case.mutations
            )
        ),
    ),
    Exclusion(
        "server-info",
        "mcp-types types 2026-07-28's result _meta `io.modelcontextprotocol/serverInfo` as any "
        "value (it is self-reported, for display only); the schema says Implementation.",
        lambda case: (
            case.ours
            and any("io.modelcontextprotocol/serverInfo" in m.path for m in case.mutations)
        ),
    ),
    Exclusion(
        "elicitation-answers",
        "mcp-types lets an elicitation answer hold numbers and null, which a `number` field of "
        "the requested schema needs; the schema's ElicitResult allows only strings, integers, "
        "booleans and string arrays. strictmcp.protocol.elicitation checks answers against the "
        "requested schema.",
        lambda case: (
            case.ours
            and case.sample.method == "elicitation/create"
            and case.touched("result", "content")
        ),
    ),
]


def nodes(value: Any, path: Path_ = ()) -> list[tuple[Path_, Any]]:
    """Every value below ``value`` (not itself), with its path."""
    found: list[tuple[Path_, Any]] = []
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return found
    for key, item in items:
        found.append(((*path, key), item))
        found.extend(nodes(item, (*path, key)))
    return found


def parent_of(document: Any, path: Path_) -> Any:
    for key in path[:-1]:
        document = document[key]
    return document


VALUES = [None, True, False, 0, -1, 7, 1.5, 1.0, 2**70, "", "x", [], ["x"], [1], {}, {"x": 1}, TEXT]
KEYS = [
    "x-extra",
    "title",
    "_meta",
    "icons",
    "annotations",
    "structuredContent",
    "outputSchema",
    "task",
    "mode",
    "resultType",
    "lastModified",
    "progressToken",
    "requestId",
]
BLOCKS = [TEXT, IMAGE, RESOURCE, AUDIO, LINK, TOOL_USE, TOOL_RESULT]
BLOCK_TYPES = {block["type"] for block in BLOCKS}
METHODS: list[Any] = [*sorted(KNOWN_REQUESTS | KNOWN_NOTIFICATIONS), "x-vendor/other", ""]
IDS: list[Any] = [1.5, 1.0, True, None, [1], {"a": 1}, "s", 0, -7, 2**70]
JSONRPC_VERSIONS: list[Any] = ["1.0", 2.0, None]
OPS = ["drop", "retype", "retype", "add", "method", "id", "content", "jsonrpc", "batch"]


@st.composite
def mutated(draw: st.DrawFn, revision: Revision) -> tuple[Sample, Any, tuple[Mutation, ...]]:
    sample = draw(st.sampled_from(CORPUS[revision]))
    document: Any = copy.deepcopy(sample.message)
    mutations = []
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        op = draw(st.sampled_from(OPS))
        if op == "batch":
            document = draw(st.sampled_from([[document], [document, document], []]))
            mutations.append(Mutation(op))
            break
        if op in ("method", "id", "jsonrpc"):
            choices: list[Any] = {"method": METHODS, "id": IDS, "jsonrpc": JSONRPC_VERSIONS}[op]
            value = draw(st.sampled_from(choices))
            document[op] = value
            mutations.append(Mutation(op, (op,), value))
            continue
        everything = nodes(document)
        if op == "drop":
            candidates = [
                path for path, _ in everything if isinstance(parent_of(document, path), dict)
            ]
        elif op == "add":
            candidates = [(), *(path for path, node in everything if isinstance(node, dict))]
        elif op == "content":
            candidates = [
                path
                for path, node in everything
                if isinstance(node, dict) and isinstance(node.get("type"), str)
                if node["type"] in BLOCK_TYPES
            ]
        else:
            candidates = [path for path, _ in everything]
        if not candidates:
            continue
        path = draw(st.sampled_from(candidates))
        if op == "add":
            key = draw(st.sampled_from(KEYS))
            value = copy.deepcopy(draw(st.sampled_from(VALUES)))
            target = document
            for step in path:
                target = target[step]
            target[key] = value
            mutations.append(Mutation(op, (*path, key), value))
            continue
        parent = parent_of(document, path)
        if op == "drop":
            del parent[path[-1]]
            mutations.append(Mutation(op, path))
        else:
            pool = BLOCKS if op == "content" else VALUES
            value = copy.deepcopy(draw(st.sampled_from(pool)))
            parent[path[-1]] = value
            mutations.append(Mutation(op, path, value))
    return sample, document, tuple(mutations)


@pytest.mark.parametrize("revision", ALL)
@settings(
    max_examples=1000,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_same_verdict_as_the_revisions_schema(revision: Revision, data: st.DataObject) -> None:
    sample, document, mutations = data.draw(mutated(revision))
    found = verdict_violations(sample, document, revision)
    ours = not found
    if ours == schema_accepts(sample, document, revision):
        return
    case = Case(revision, sample, document, mutations, ours)
    explained = [e.name for e in EXCLUSIONS if e.explains(case)]
    assert explained, (
        f"{revision.value}: strictmcp says {'valid' if ours else 'invalid'}, the schema does "
        f"not.\nsample: {sample.name} ({sample.side} {sample.kind})\nmutations: {mutations}\n"
        f"document: {json.dumps(document)[:2000]}\nstrictmcp: {[str(v) for v in found]}"
    )
