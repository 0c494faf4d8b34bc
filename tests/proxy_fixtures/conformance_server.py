"""The MCP server the official conformance suite's server scenarios test, on the official SDK.

    python conformance_server.py http PORT   # streamable HTTP at http://127.0.0.1:PORT/mcp
    python conformance_server.py stdio

It is written with the SDK's low-level ``Server`` and offers what the suite's server scenarios
(npm ``@modelcontextprotocol/conformance``) ask a server for by name: the ``test_*`` tools,
the ``test://`` resources and resource template, the ``test_*`` prompts, completion, logging
levels and resource subscriptions. Each one behaves as its description in the suite says, for
any input: nothing here looks for the suite's own probe values.

Tools and prompts that need something from the client (a form filled in, a model's answer,
its roots) ask for it the way the session's protocol revision does: up to 2025-11-25 with a
request to the client while the call is open, from 2026-07-28 with an ``input_required``
result the client answers by calling again (SEP-2322). The SDK seals the ``requestState``
that such a call carries, so a tampered one is refused before any handler here runs.

From 2026-07-28 it also offers the tasks extension (SEP-2663, task_store.py): the task tools
(``slow_compute``, ``failing_job``, ``protocol_error_job``, ``confirm_delete``, ``multi_input``,
``test_tool_with_task``) answer a request that declared the extension with a task, and run
inline, or refuse with -32021 when they can only run as a task, for one that did not.
"""

from __future__ import annotations

import json
import sys
import warnings
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types import JSONRPCMessage
from mcp_types.jsonrpc import MISSING_REQUIRED_CLIENT_CAPABILITY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from proxy_fixtures import task_store  # found through the path just set
from proxy_fixtures.task_store import Job, Question, TaskStore, Work

NAME = "strictmcp-conformance-fixture"
Context = ServerRequestContext[Any]

# A 1x1 red PNG and a WAV header with two bytes of silence: the smallest valid media.
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
    "AAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

# RFC 5424 severities as MCP names them, least severe first.
LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def _strings(*names: str, required: bool = True) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in names},
        "required": list(names) if required else [],
    }


# The suite checks that a server hands a 2020-12 schema on verbatim, dialect, $defs,
# composition and conditionals included, rather than a re-derived copy.
CONTACT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

# SEP-2243: ``region`` is also sent as the HTTP header Mcp-Param-Region, which the SDK checks.
REGION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "description": "Where to look", "x-mcp-header": "Region"},
        "query": {"type": "string", "description": "What to look for"},
    },
    "required": ["region"],
}

CONTACT_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

# SEP-1034: every primitive a form can ask for, each with a default.
DEFAULTS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


def _titled(keyword: str, titles: dict[str, str]) -> dict[str, Any]:
    return {keyword: [{"const": value, "title": title} for value, title in titles.items()]}


# SEP-1330: the five enum shapes a form may use, with the values the conformance client answers
# with (a proxy refuses an answer outside the form's enums).
ENUMS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Pick one size",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Pick one priority",
            **_titled("oneOf", {"value1": "Low", "value2": "Medium", "value3": "High"}),
        },
        "legacyEnum": {
            "type": "string",
            "description": "Pick one colour (the deprecated enumNames form)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Red", "Green", "Blue"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Pick any permissions",
            "minItems": 1,
            "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Pick any labels",
            "minItems": 1,
            "maxItems": 3,
            "items": _titled("anyOf", {"value1": "Bug", "value2": "Feature", "value3": "Docs"}),
        },
    },
    "required": [],
}


# ---------------------------------------------------------------------------------------------
# Asking the client


Answer = types.ElicitResult | types.CreateMessageResult | types.ListRootsResult
AnswerType = (
    type[types.ElicitResult] | type[types.CreateMessageResult] | type[types.ListRootsResult]
)
_CAPABILITIES: dict[str, tuple[str, types.ClientCapabilities]] = {
    "elicitation/create": (
        "elicitation",
        types.ClientCapabilities(elicitation=types.ElicitationCapability()),
    ),
    "sampling/createMessage": (
        "sampling",
        types.ClientCapabilities(sampling=types.SamplingCapability()),
    ),
    "roots/list": ("roots", types.ClientCapabilities(roots=types.RootsCapability())),
}


@dataclass(frozen=True)
class Ask:
    """One thing a tool or prompt needs from the client, under a key of its own."""

    key: str
    request: types.ElicitRequest | types.CreateMessageRequest | types.ListRootsRequest
    answer: AnswerType


def form(key: str, message: str, schema: dict[str, Any]) -> Ask:
    params = types.ElicitRequestFormParams(message=message, requested_schema=schema)
    return Ask(key, types.ElicitRequest(params=params), types.ElicitResult)


def sample(key: str, prompt: str, max_tokens: int = 100) -> Ask:
    message = types.SamplingMessage(
        role="user", content=types.TextContent(type="text", text=prompt)
    )
    params = types.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    return Ask(key, types.CreateMessageRequest(params=params), types.CreateMessageResult)


def roots(key: str) -> Ask:
    return Ask(key, types.ListRootsRequest(), types.ListRootsResult)


@dataclass
class Answered:
    """What the client answered, by key; ``resumed`` when a sealed requestState came back."""

    answers: dict[str, Answer]
    resumed: bool = False

    def form(self, key: str) -> tuple[str, dict[str, Any]]:
        answer = self.answers[key]
        assert isinstance(answer, types.ElicitResult)
        return answer.action, dict(answer.content or {})

    def said(self, key: str) -> str:
        answer = self.answers[key]
        assert isinstance(answer, types.CreateMessageResult)
        blocks = answer.content if isinstance(answer.content, list) else [answer.content]
        return " ".join(b.text for b in blocks if isinstance(b, types.TextContent))

    def roots(self, key: str) -> list[str]:
        answer = self.answers[key]
        assert isinstance(answer, types.ListRootsResult)
        return [str(root.uri) for root in answer.roots]


async def converse(
    ctx: Context,
    params: types.CallToolRequestParams | types.GetPromptRequestParams,
    rounds: Sequence[Sequence[Ask]],
    *,
    optional: bool = False,
) -> Answered | types.InputRequiredResult:
    """Ask the client each round's questions in turn, as the session's revision does it.

    A question the client has no capability for is left out when ``optional``, and is
    otherwise a -32021 error naming the capability.
    """
    offered = [[ask for ask in asks if _offers(ctx, ask, optional)] for asks in rounds]
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        answered = Answered({})
        for asks in offered:
            for ask in asks:
                answered.answers[ask.key] = await ctx.session.send_request(
                    ask.request,
                    ask.answer,
                    metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
                )
        return answered
    return _next_round(offered, params.input_responses or {}, params.request_state)


def _offers(ctx: Context, ask: Ask, optional: bool) -> bool:
    name, capability = _CAPABILITIES[ask.request.method]
    if ctx.session.check_client_capability(capability):
        return True
    if optional:
        return False
    raise MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"This needs the client's {name} capability",
        {"requiredCapabilities": {name: {}}},
    )


def _next_round(
    rounds: list[list[Ask]], responses: dict[str, Any], minted_state: str | None
) -> Answered | types.InputRequiredResult:
    # The state is plaintext this server minted: the SDK's boundary unsealed and verified it.
    state: dict[str, Any] = (
        json.loads(minted_state) if minted_state else {"round": 0, "answers": {}}
    )
    number: int = state["round"]
    gathered: dict[str, Any] = state["answers"]
    while number < len(rounds):
        pending = []
        for ask in rounds[number]:
            if ask.key in gathered:
                continue
            response = responses.get(ask.key)
            if isinstance(response, ask.answer):
                gathered[ask.key] = response.model_dump(
                    by_alias=True, mode="json", exclude_none=True
                )
            else:
                # Missing or of the wrong kind: asked again rather than refused (SEP-2322).
                pending.append(ask)
        if pending:
            return types.InputRequiredResult(
                input_requests={ask.key: ask.request for ask in pending},
                request_state=json.dumps({"round": number, "answers": gathered}),
            )
        number += 1
        # Answers count only for the round that asked for them.
        responses = {}
    asks = {ask.key: ask for asks in rounds for ask in asks}
    answers = {key: _revive(asks[key].answer, raw) for key, raw in gathered.items()}
    return Answered(answers, resumed=minted_state is not None)


def _revive(answer: AnswerType, raw: dict[str, Any]) -> Answer:
    try:
        return answer.model_validate(raw)
    except ValidationError as error:
        raise MCPError(types.INVALID_PARAMS, f"Unusable input response: {error}") from None


# ---------------------------------------------------------------------------------------------
# Tools


ToolResult = types.CallToolResult | types.InputRequiredResult
ToolHandler = Callable[["Fixture", Context, types.CallToolRequestParams], Awaitable[ToolResult]]


def _text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def _result(*content: types.ContentBlock) -> types.CallToolResult:
    return types.CallToolResult(content=list(content))


def _failure(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[_text(message)], is_error=True)


def _arguments(params: types.CallToolRequestParams) -> dict[str, Any]:
    return params.arguments or {}


async def _simple_text(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult:
    return _result(_text("This is a simple text response for testing."))


async def _image(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    return _result(types.ImageContent(type="image", data=PNG, mime_type="image/png"))


async def _audio(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    return _result(types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"))


async def _embedded(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    resource = types.TextResourceContents(
        uri="test://embedded-resource",
        mime_type="text/plain",
        text="This is an embedded resource content.",
    )
    return _result(types.EmbeddedResource(type="resource", resource=resource))


async def _mixed(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    resource = types.TextResourceContents(
        uri="test://mixed-content-resource",
        mime_type="application/json",
        text=json.dumps({"test": "data", "value": 123}),
    )
    return _result(
        _text("Multiple content types test:"),
        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
        types.EmbeddedResource(type="resource", resource=resource),
    )


async def _logging(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    messages = ("Tool execution started", "Tool processing data", "Tool execution completed")
    for step, message in enumerate(messages):
        if step:
            await anyio.sleep(0.05)
        await app.log(ctx, "info", message)
    return _result(_text("Logged three messages."))


async def _progress(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    # report_progress sends nothing when the request carried no progress token.
    for step, done in enumerate((0, 50, 100)):
        if step:
            await anyio.sleep(0.05)
        await ctx.session.report_progress(done, 100, f"{done} of 100")
    return _result(_text("Done: 100 of 100."))


async def _error(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    return _failure("This tool intentionally returns an error for testing")


async def _reconnection(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult:
    # Closing the request's stream makes the client resume it with Last-Event-ID; the
    # answer, sent after the pause, reaches it through the event store. Over stdio, or
    # when the client cannot resume, there is no stream to close. The SDK's close drops the
    # stream's writer at once, and a priming event not yet handed to the response goes with
    # it (seen under CI load), so the tool lets the priming event out first.
    if ctx.close_sse_stream is not None:
        await anyio.sleep(0.5)
        await ctx.close_sse_stream()
    await anyio.sleep(0.2)
    return _result(_text("Answered after the stream was closed."))


async def _contact(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    return _result(_text(f"Contact: {json.dumps(_arguments(params), sort_keys=True)}"))


async def _toggle_tool(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult:
    app.extra_tool = not app.extra_tool
    await app.bus.publish(ToolsListChanged())
    return _result(_text(f"{DYNAMIC_TOOL.name} is {'listed' if app.extra_tool else 'gone'}."))


async def _toggle_prompt(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult:
    app.extra_prompt = not app.extra_prompt
    await app.bus.publish(PromptsListChanged())
    return _result(_text(f"{DYNAMIC_PROMPT.name} is {'listed' if app.extra_prompt else 'gone'}."))


async def _hello(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    return _result(_text(f"Hello, {_arguments(params)['name']}!"))


async def _region(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    arguments = _arguments(params)
    return _result(_text(f"Searched {arguments['region']} for {arguments.get('query', '')!r}."))


def _asking(
    rounds: Sequence[Sequence[Ask]],
    finish: Callable[[Answered], str],
    *,
    optional: bool = False,
) -> ToolHandler:
    """A tool that asks the client ``rounds`` of questions, then answers ``finish(answers)``."""

    async def handler(
        app: Fixture, ctx: Context, params: types.CallToolRequestParams
    ) -> ToolResult:
        outcome = await converse(ctx, params, rounds, optional=optional)
        if isinstance(outcome, types.InputRequiredResult):
            return outcome
        return _result(_text(finish(outcome)))

    return handler


def _form_reply(label: str, key: str) -> Callable[[Answered], str]:
    def finish(answered: Answered) -> str:
        action, content = answered.form(key)
        return f"{label}: action={action}, content={json.dumps(content, sort_keys=True)}"

    return finish


async def _sampling(app: Fixture, ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    ask = sample("answer", str(_arguments(params)["prompt"]))
    return await _asking([[ask]], lambda a: f"LLM response: {a.said('answer')}")(app, ctx, params)


async def _elicitation(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult:
    ask = form("contact", str(_arguments(params)["message"]), CONTACT_FORM)
    return await _asking([[ask]], _form_reply("User response", "contact"))(app, ctx, params)


NAME_FORM = _strings("name")


def _greet(answered: Answered) -> str:
    action, content = answered.form("user_name")
    return f"Hello, {content.get('name')}!" if action == "accept" else f"No name given ({action})."


def _confirmed(answered: Answered) -> str:
    action, content = answered.form("confirm")
    # Only a sealed state that came back intact shows the round trip worked.
    checked = " (state-ok)" if answered.resumed else ""
    return f"Confirmation: action={action}, ok={content.get('ok')}{checked}"


def _everything(answered: Answered) -> str:
    _, content = answered.form("user_name")
    folders = ", ".join(answered.roots("client_roots")) or "none"
    return f"{answered.said('greeting')} {content.get('name')}; roots: {folders}"


def _two_steps(answered: Answered) -> str:
    _, name = answered.form("step1")
    _, colour = answered.form("step2")
    return f"{name.get('name')} likes {colour.get('color')}."


def _whatever(answered: Answered) -> str:
    parts = [f"{key}={type(answer).__name__}" for key, answer in sorted(answered.answers.items())]
    return "Answers: " + (", ".join(parts) or "none needed")


CONFIRM_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}
CONFIRM = form("confirm", "Please confirm", CONFIRM_FORM)

DYNAMIC_TOOL = types.Tool(
    name="test_dynamic_tool",
    description="Listed only while test_trigger_tool_change has added it.",
    input_schema=NO_ARGUMENTS,
)
DYNAMIC_PROMPT = types.Prompt(
    name="test_dynamic_prompt",
    description="Listed only while test_trigger_prompt_change has added it.",
)

TOOLS: list[tuple[types.Tool, ToolHandler]] = [
    (types.Tool(name=name, description=description, input_schema=schema), handler)
    for name, description, schema, handler in [
        ("test_simple_text", "Answers with one text block.", NO_ARGUMENTS, _simple_text),
        ("greet", "Greets someone by name; never runs as a task.", _strings("name"), _hello),
        ("test_image_content", "Answers with a PNG image.", NO_ARGUMENTS, _image),
        ("test_audio_content", "Answers with a WAV clip.", NO_ARGUMENTS, _audio),
        ("test_embedded_resource", "Answers with an embedded resource.", NO_ARGUMENTS, _embedded),
        ("test_multiple_content_types", "Text, image and resource.", NO_ARGUMENTS, _mixed),
        ("test_tool_with_logging", "Logs three messages while it runs.", NO_ARGUMENTS, _logging),
        ("test_logging_tool", "Logs three messages while it runs.", NO_ARGUMENTS, _logging),
        ("test_tool_with_progress", "Reports progress while it runs.", NO_ARGUMENTS, _progress),
        ("test_error_handling", "Always fails, as a tool error.", NO_ARGUMENTS, _error),
        ("test_reconnection", "Closes its SSE stream mid-call.", NO_ARGUMENTS, _reconnection),
        ("json_schema_2020_12_tool", "Echoes a contact.", CONTACT_SCHEMA, _contact),
        ("test_custom_headers", "Searches a region.", REGION_SCHEMA, _region),
        ("test_trigger_tool_change", "Adds or removes a tool.", NO_ARGUMENTS, _toggle_tool),
        ("test_trigger_prompt_change", "Adds or removes a prompt.", NO_ARGUMENTS, _toggle_prompt),
        ("test_sampling", "Asks the client's model a prompt.", _strings("prompt"), _sampling),
        ("test_elicitation", "Asks for a username and e-mail.", _strings("message"), _elicitation),
        (
            "test_elicitation_sep1034_defaults",
            "Asks a form whose fields have defaults.",
            NO_ARGUMENTS,
            _asking(
                [[form("form", "Please review the defaults", DEFAULTS_FORM)]],
                _form_reply("Elicitation completed", "form"),
            ),
        ),
        (
            "test_elicitation_sep1330_enums",
            "Asks a form of every enum shape.",
            NO_ARGUMENTS,
            _asking(
                [[form("form", "Please pick from the lists", ENUMS_FORM)]],
                _form_reply("Elicitation completed", "form"),
            ),
        ),
        (
            "test_streaming_elicitation",
            "Asks the user's favourite colour.",
            NO_ARGUMENTS,
            _asking(
                [[form("colour", "Your favourite colour?", _strings("color"))]],
                _form_reply("Colour", "colour"),
            ),
        ),
        (
            "test_missing_capability",
            "Asks the client's model for a haiku; needs sampling.",
            NO_ARGUMENTS,
            _asking([[sample("haiku", "Write a haiku.")]], lambda a: a.said("haiku")),
        ),
        (
            "test_input_required_result_elicitation",
            "Asks the user's name, then greets them.",
            NO_ARGUMENTS,
            _asking([[form("user_name", "What is your name?", NAME_FORM)]], _greet),
        ),
        (
            "test_input_required_result_sampling",
            "Asks the client's model a question.",
            NO_ARGUMENTS,
            _asking(
                [[sample("capital_question", "What is the capital of France?")]],
                lambda a: f"The model says: {a.said('capital_question')}",
            ),
        ),
        (
            "test_input_required_result_list_roots",
            "Lists the client's roots.",
            NO_ARGUMENTS,
            _asking(
                [[roots("client_roots")]],
                lambda a: "Roots: " + (", ".join(a.roots("client_roots")) or "none"),
            ),
        ),
        (
            "test_input_required_result_request_state",
            "Asks for a confirmation, keeping state between rounds.",
            NO_ARGUMENTS,
            _asking([[CONFIRM]], _confirmed),
        ),
        (
            "test_input_required_result_tampered_state",
            "Asks for a confirmation, keeping sealed state between rounds.",
            NO_ARGUMENTS,
            _asking([[CONFIRM]], _confirmed),
        ),
        (
            "test_input_required_result_multiple_inputs",
            "Asks a form, the model and the roots at once.",
            NO_ARGUMENTS,
            _asking(
                [
                    [
                        form("user_name", "What is your name?", NAME_FORM),
                        sample("greeting", "Generate a greeting", max_tokens=50),
                        roots("client_roots"),
                    ]
                ],
                _everything,
            ),
        ),
        (
            "test_input_required_result_multi_round",
            "Asks a name, then a colour.",
            NO_ARGUMENTS,
            _asking(
                [
                    [form("step1", "Step 1: What is your name?", NAME_FORM)],
                    [form("step2", "Step 2: What is your favorite color?", _strings("color"))],
                ],
                _two_steps,
            ),
        ),
        (
            "test_input_required_result_capabilities",
            "Asks whatever the client can answer: a form, the model.",
            NO_ARGUMENTS,
            _asking(
                [[form("approval", "Approve?", CONFIRM_FORM), sample("summary", "Summarise.")]],
                _whatever,
                optional=True,
            ),
        ),
    ]
]


# ---------------------------------------------------------------------------------------------
# Tools that run as tasks


# "optional": a task when the request declared the extension, inline otherwise; "required":
# only as a task, so a request without the extension is refused with -32021.
TaskSupport = Literal["optional", "required"]
# What a task tool does with a call: an answer before any task (a refusal, an MRTR round) or
# the work to run, as a task or inline.
TaskStart = Callable[
    ["Fixture", Context, types.CallToolRequestParams], Awaitable[ToolResult | Work]
]


@dataclass(frozen=True)
class TaskTool:
    """A tool that can run as a task, and whether it can also run inline."""

    tool: types.Tool
    support: TaskSupport
    start: TaskStart


async def ask(job: Job, asks: Sequence[Ask]) -> Answered:
    """Ask the client ``asks`` at once through the job's task; what it answered."""
    answers = await job.ask({a.key: Question(a.request, a.answer) for a in asks})
    return Answered({a.key: _revive(a.answer, answers[a.key]) for a in asks})


# The longest a slow_compute may take: a task is not meant to outlive its test.
LONGEST_COMPUTE_SECONDS = 120
COMPUTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "seconds": {"type": "number", "minimum": 0, "maximum": LONGEST_COMPUTE_SECONDS},
        "label": {"type": "string"},
    },
}
CONFIRM_DELETE_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean", "description": "Go ahead?"}},
    "required": ["confirm"],
}


async def _slow_compute(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult | Work:
    arguments = _arguments(params)
    seconds, label = arguments.get("seconds", 0), str(arguments.get("label", ""))
    if not isinstance(seconds, (int, float)) or not 0 <= seconds <= LONGEST_COMPUTE_SECONDS:
        return _failure(f"seconds must be a number from 0 to {LONGEST_COMPUTE_SECONDS}.")

    async def work(job: Job) -> types.CallToolResult:
        await anyio.sleep(seconds)
        return _result(_text(f"Computed {label!r} in {seconds} s."))

    return work


async def _failing_job(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult | Work:
    async def work(job: Job) -> types.CallToolResult:
        await anyio.sleep(1)
        return _failure("The job ran and failed.")

    return work


async def _protocol_error_job(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult | Work:
    async def work(job: Job) -> types.CallToolResult:
        await anyio.sleep(0.1)
        raise RuntimeError("The job crashed.")

    return work


async def _confirm_delete(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult | Work:
    filename = _arguments(params)["filename"]
    question = form("confirm_delete", f"Delete {filename}?", CONFIRM_DELETE_FORM)

    async def work(job: Job) -> types.CallToolResult:
        action, content = (await ask(job, [question])).form(question.key)
        deleted = action == "accept" and content.get("confirm") is True
        return _result(_text(f"Deleted {filename}." if deleted else f"Kept {filename}."))

    return work


async def _multi_input(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult | Work:
    name = form("name", "What is your name?", NAME_FORM)
    confirmation = form("confirmation", "Shall I go ahead?", CONFIRM_DELETE_FORM)

    async def work(job: Job) -> types.CallToolResult:
        answered = await ask(job, [name, confirmation])
        _, given = answered.form(name.key)
        action, _ = answered.form(confirmation.key)
        return _result(_text(f"{given.get('name')} answered both; confirmation: {action}."))

    return work


async def _greet_later(
    app: Fixture, ctx: Context, params: types.CallToolRequestParams
) -> ToolResult | Work:
    # Asks the name in MRTR rounds first; the call that brings the answer gets the task.
    outcome = await converse(ctx, params, [[form("user_name", "What is your name?", NAME_FORM)]])
    if isinstance(outcome, types.InputRequiredResult):
        return outcome

    async def work(job: Job) -> types.CallToolResult:
        return _result(_text(_greet(outcome)))

    return work


def _task_tool(
    name: str, description: str, schema: dict[str, Any], support: TaskSupport, start: TaskStart
) -> TaskTool:
    return TaskTool(
        types.Tool(name=name, description=description, input_schema=schema), support, start
    )


TASK_TOOLS = [
    _task_tool(
        "slow_compute",
        "Works for the given seconds, then answers.",
        COMPUTE_SCHEMA,
        "optional",
        _slow_compute,
    ),
    _task_tool(
        "failing_job", "Works a second, then fails.", NO_ARGUMENTS, "required", _failing_job
    ),
    _task_tool(
        "protocol_error_job",
        "Crashes: a JSON-RPC error.",
        NO_ARGUMENTS,
        "optional",
        _protocol_error_job,
    ),
    _task_tool(
        "confirm_delete",
        "Deletes a file once the user confirms.",
        _strings("filename"),
        "required",
        _confirm_delete,
    ),
    _task_tool("multi_input", "Asks two things at once.", NO_ARGUMENTS, "required", _multi_input),
    _task_tool(
        "test_tool_with_task",
        "Asks the user's name, then greets them from a task.",
        NO_ARGUMENTS,
        "required",
        _greet_later,
    ),
]


# ---------------------------------------------------------------------------------------------
# Resources and prompts


STATIC: dict[
    str, tuple[types.Resource, types.TextResourceContents | types.BlobResourceContents]
] = {
    "test://static-text": (
        types.Resource(
            uri="test://static-text",
            name="static-text",
            description="A fixed text resource.",
            mime_type="text/plain",
        ),
        types.TextResourceContents(
            uri="test://static-text",
            mime_type="text/plain",
            text="This is the content of the static text resource.",
        ),
    ),
    "test://static-binary": (
        types.Resource(
            uri="test://static-binary",
            name="static-binary",
            description="A fixed PNG image.",
            mime_type="image/png",
        ),
        types.BlobResourceContents(uri="test://static-binary", mime_type="image/png", blob=PNG),
    ),
    "test://watched-resource": (
        types.Resource(
            uri="test://watched-resource",
            name="watched-resource",
            description="A resource clients may subscribe to.",
            mime_type="text/plain",
        ),
        types.TextResourceContents(
            uri="test://watched-resource", mime_type="text/plain", text="Watched resource content"
        ),
    ),
}
TEMPLATE_PREFIX, TEMPLATE_SUFFIX = "test://template/", "/data"
TEMPLATE = types.ResourceTemplate(
    uri_template=TEMPLATE_PREFIX + "{id}" + TEMPLATE_SUFFIX,
    name="template",
    description="Data for any ID.",
    mime_type="application/json",
)


def _template_id(uri: str) -> str | None:
    if not (uri.startswith(TEMPLATE_PREFIX) and uri.endswith(TEMPLATE_SUFFIX)):
        return None
    ident = uri[len(TEMPLATE_PREFIX) : -len(TEMPLATE_SUFFIX)]
    return ident if ident and "/" not in ident else None


def _not_found(uri: str) -> MCPError:
    # SEP-2164: an unknown URI is an invalid-params error naming it, never empty contents.
    return MCPError(types.INVALID_PARAMS, "Resource not found", {"uri": uri})


def _argument(name: str, description: str) -> types.PromptArgument:
    return types.PromptArgument(name=name, description=description, required=True)


PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A prompt without arguments."),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt quoting its two arguments.",
        arguments=[
            _argument("arg1", "First test argument"),
            _argument("arg2", "Second test argument"),
        ],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt embedding the resource it is given.",
        arguments=[_argument("resourceUri", "URI of the resource to embed")],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt showing an image."),
    types.Prompt(
        name="test_input_required_result_prompt",
        description="A prompt built from context the user is asked for.",
    ),
]
CONTEXT_QUESTION = form("user_context", "What context should the prompt use?", _strings("context"))

# What completion/complete offers for each prompt argument, filtered by the typed prefix.
SUGGESTIONS: dict[str, tuple[str, ...]] = {
    "arg1": ("paris", "park", "party", "hello"),
    "arg2": ("world", "word", "work"),
    "resourceUri": tuple(STATIC),
}


def _prompt_messages(name: str, arguments: dict[str, str]) -> list[types.PromptMessage]:
    def user(content: types.ContentBlock) -> types.PromptMessage:
        return types.PromptMessage(role="user", content=content)

    if name == "test_simple_prompt":
        return [user(_text("This is a simple prompt for testing."))]
    if name == "test_prompt_with_arguments":
        quoted = f"arg1='{arguments['arg1']}', arg2='{arguments['arg2']}'"
        return [user(_text(f"Prompt with arguments: {quoted}"))]
    if name == "test_prompt_with_embedded_resource":
        resource = types.TextResourceContents(
            uri=arguments["resourceUri"],
            mime_type="text/plain",
            text="Embedded resource content for testing.",
        )
        return [
            user(types.EmbeddedResource(type="resource", resource=resource)),
            user(_text("Please process the embedded resource above.")),
        ]
    if name == "test_prompt_with_image":
        return [
            user(types.ImageContent(type="image", data=PNG, mime_type="image/png")),
            user(_text("Please analyze the image above.")),
        ]
    return [user(_text(f"This is {name}."))]


# ---------------------------------------------------------------------------------------------
# The server


class MemoryEventStore(EventStore):
    """Every event a stream sent, so a client that reconnects with Last-Event-ID gets the rest."""

    def __init__(self) -> None:
        self._events: list[tuple[str, JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        self._events.append((stream_id, message))
        return str(len(self._events))

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        if not last_event_id.isdigit() or not 0 < int(last_event_id) <= len(self._events):
            return None
        seen = int(last_event_id)
        stream_id = self._events[seen - 1][0]
        for number, (stream, message) in enumerate(self._events[seen:], start=seen + 1):
            # A None message is a priming event: it only carries an ID to resume from.
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, str(number)))
        return stream_id


@dataclass
class SessionState:
    """What one client session set: the least severe level it wants logged, its subscriptions."""

    level: int = 0
    subscriptions: set[str] = field(default_factory=set)


class Fixture:
    """The handlers, with state per client session."""

    def __init__(self) -> None:
        self._sessions: weakref.WeakKeyDictionary[ServerSession, SessionState] = (
            weakref.WeakKeyDictionary()
        )
        self._tools = {tool.name: (tool, handler) for tool, handler in TOOLS}
        self._task_tools = {task_tool.tool.name: task_tool for task_tool in TASK_TOOLS}
        self.tasks = TaskStore()
        # Whether the trigger tools have added their tool and prompt; the lists are the
        # same for every session, and subscriptions/listen streams hear of each change.
        self.extra_tool = False
        self.extra_prompt = False
        self.bus = InMemorySubscriptionBus()

    def state(self, ctx: Context) -> SessionState:
        return self._sessions.setdefault(ctx.session, SessionState())

    async def log(self, ctx: Context, level: types.LoggingLevel, message: str) -> None:
        """Send ``message`` unless the client asked for more severe ones only."""
        if LEVELS.index(level) >= self.state(ctx).level:
            await ctx.session.send_log_message(
                level, message, logger=NAME, related_request_id=ctx.request_id
            )

    async def set_level(
        self, ctx: Context, params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        self.state(ctx).level = LEVELS.index(params.level)
        return types.EmptyResult()

    async def list_tools(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        extra = [DYNAMIC_TOOL] if self.extra_tool else []
        tools = [tool for tool, _ in TOOLS] + [task_tool.tool for task_tool in TASK_TOOLS]
        return types.ListToolsResult(tools=tools + extra)

    async def call_tool(
        self, ctx: Context, params: types.CallToolRequestParams
    ) -> ToolResult | dict[str, Any]:
        """The tool's result, or, for a task tool, a ``CreateTaskResult`` when it runs as a task."""
        if params.name == DYNAMIC_TOOL.name and self.extra_tool:
            return _result(_text("The dynamic tool ran."))
        task_tool = self._task_tools.get(params.name)
        if task_tool is not None:
            tool = task_tool.tool
        elif params.name in self._tools:
            tool, handler = self._tools[params.name]
        else:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        arguments = _arguments(params)
        for name in tool.input_schema.get("required", []):
            if not isinstance(arguments.get(name), str):
                return _failure(f"The argument {name!r} must be a string.")
        if task_tool is None:
            return await handler(self, ctx, params)
        if task_tool.support == "required":
            task_store.require(ctx)
        outcome = await task_tool.start(self, ctx, params)
        if isinstance(outcome, (types.CallToolResult, types.InputRequiredResult)):
            return outcome
        if task_store.negotiated(ctx):
            return self.tasks.start(outcome)
        return await outcome(task_store.synchronous())

    async def list_resources(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[resource for resource, _ in STATIC.values()])

    async def list_templates(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[TEMPLATE])

    async def read_resource(
        self, ctx: Context, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri in STATIC:
            return types.ReadResourceResult(contents=[STATIC[uri][1]])
        ident = _template_id(uri)
        if ident is None:
            raise _not_found(uri)
        data = {"id": ident, "templateTest": True, "data": f"Data for ID: {ident}"}
        text = json.dumps(data, separators=(",", ":"))
        contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
        return types.ReadResourceResult(contents=[contents])

    async def subscribe(
        self, ctx: Context, params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        if uri not in STATIC and _template_id(uri) is None:
            raise _not_found(uri)
        self.state(ctx).subscriptions.add(uri)
        return types.EmptyResult()

    async def unsubscribe(
        self, ctx: Context, params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self.state(ctx).subscriptions.discard(str(params.uri))
        return types.EmptyResult()

    async def list_prompts(
        self, ctx: Context, params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=self._prompts())

    def _prompts(self) -> list[types.Prompt]:
        return PROMPTS + ([DYNAMIC_PROMPT] if self.extra_prompt else [])

    async def get_prompt(
        self, ctx: Context, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        prompt = next((p for p in self._prompts() if p.name == params.name), None)
        if prompt is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        arguments = params.arguments or {}
        missing = [a.name for a in prompt.arguments or () if a.required and a.name not in arguments]
        if missing:
            raise MCPError(types.INVALID_PARAMS, f"Missing prompt arguments: {missing}")
        if prompt.name != "test_input_required_result_prompt":
            return types.GetPromptResult(messages=_prompt_messages(prompt.name, arguments))
        outcome = await converse(ctx, params, [[CONTEXT_QUESTION]])
        if isinstance(outcome, types.InputRequiredResult):
            return outcome
        _, content = outcome.form(CONTEXT_QUESTION.key)
        text = f"Answer with this context in mind: {content.get('context')}"
        return types.GetPromptResult(
            messages=[types.PromptMessage(role="user", content=_text(text))]
        )

    async def complete(
        self, ctx: Context, params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        values: list[str] = []
        if isinstance(params.ref, types.PromptReference):
            candidates = SUGGESTIONS.get(params.argument.name, ())
            values = [value for value in candidates if value.startswith(params.argument.value)]
        return types.CompleteResult(
            completion=types.Completion(values=values, total=len(values), has_more=False)
        )

    @asynccontextmanager
    async def lifespan(self, server: Server[Any]) -> AsyncIterator[None]:
        """While the server runs, so do its tasks."""
        async with self.tasks.running():
            yield

    def server(self) -> Server[Any]:
        # The SDK warns that logging/setLevel is gone from 2026-07-28; the handshake
        # revisions this fixture also serves still have it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            server = Server(
                NAME,
                version="1.0.0",
                lifespan=self.lifespan,
                on_list_tools=self.list_tools,
                on_list_resources=self.list_resources,
                on_list_resource_templates=self.list_templates,
                on_read_resource=self.read_resource,
                on_subscribe_resource=self.subscribe,
                on_unsubscribe_resource=self.unsubscribe,
                on_list_prompts=self.list_prompts,
                on_get_prompt=self.get_prompt,
                on_completion=self.complete,
                on_set_logging_level=self.set_level,
                on_subscriptions_listen=ListenHandler(self.bus),
            )
        # Seals every requestState this server hands out and verifies each one that comes
        # back, so the handlers above only ever read state they minted themselves.
        server.middleware.append(
            RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=NAME)
        )
        # Registered directly rather than as on_call_tool, whose type admits no CreateTaskResult.
        server.add_request_handler("tools/call", types.CallToolRequestParams, self.call_tool)
        server.extensions[task_store.TASKS] = {}
        for method, params_type, handler in self.tasks.methods():
            server.add_request_handler(method, params_type, handler)
        return server


async def serve_stdio() -> None:
    server = Fixture().server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def serve_http(port: int) -> None:
    # retry_interval tells a client whose stream the server closed how soon to resume it.
    app = (
        Fixture()
        .server()
        .streamable_http_app(event_store=MemoryEventStore(), retry_interval=100, host="127.0.0.1")
    )
    # h11, as the SDK is tested on: with httptools (installed with strictmcp) header values
    # keep their trailing whitespace, which the SDK does not strip (RFC 9110 says to), and
    # the suite's Mcp-Name whitespace case would fail on the fixture rather than the proxy.
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", http="h11")


def main(argv: list[str]) -> None:
    # The SDK flags logging and sampling as deprecated from 2026-07-28 at every use; the
    # handshake revisions this fixture also serves still have them.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    if argv == ["stdio"]:
        anyio.run(serve_stdio)
    elif len(argv) == 2 and argv[0] == "http" and argv[1].isdigit():
        serve_http(int(argv[1]))
    else:
        sys.exit("usage: conformance_server.py http PORT | stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
