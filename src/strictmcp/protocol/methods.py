"""Params, results and notifications of MCP methods, per revision, checked with mcp-types.

mcp-types (a pinned dependency) says, for each (method, revision), which model a message must
match and who may send it (its surface maps, which :mod:`.surfaces` holds by name); its models
check shapes per schema era: 2025-11-25's for every earlier revision, 2026-07-28's for
2026-07-28. An era's models (and pydantic) are imported the first time a message of one of its
revisions is checked with them, not with this module: they are most of the proxy's start-up.
Where an earlier revision's own schema differs from its era's model, the tables below
(``_FIELD_SINCE``, ``_CLASS_SINCE``, ``_ARRAY_SINCE``, ``_REQUIRED_BEFORE``) say how, and the
check follows the revision. The tests recompute these tables from each revision's
``schema.json`` and compare.

How strictmcp reads a model, beyond what pydantic checks by default:

- Strict types: ``"1"`` is not an integer and ``1`` is not ``true``, as in JSON Schema. (One
  difference stays: ``1.0`` is not an integer either.)
- ``null`` is refused for every field whose type is not "any JSON value": the models write an
  optional field as ``X | None``, and the schemas allow ``null`` nowhere else.
- A field a revision does not define is an unknown field in that revision, whatever the era's
  model says: any value passes, as the revision's own schema has it.
- ``strict=True`` reports every unknown field (``Rule.UNKNOWN_FIELD``): the members of the
  envelope, of params and results and of every object in them that the revision does not
  define, and the keys of ``_meta`` it does not define (``_meta`` is the spec's extension
  point, and strict means "nothing but what the revision defines"). JSON Schema documents
  (``inputSchema``, ``outputSchema``) and free-form maps (tool ``arguments``,
  ``structuredContent``, ``experimental``) are never walked.

Violation pointers: for requests and notifications they point into the message
(``/params/name``); for results they are relative to the result (``/content/0/text``). Either
way ``pointer=`` prefixes them: pass ``"/3"`` for a batch's fourth message, or ``"/result"``
(``"/3/result"``) to make a result's pointers point into its response.

Cost: one pydantic validation in Rust per message (models and adapters are built once per
class and cached), then one walk in Python over the objects the models define, to find
``null``, fields of later revisions and, when strict, unknown fields. The walk skips
free-form values: a large tool ``arguments`` object costs pydantic one pass over its top-level
keys, and the walk nothing. Failures cost more (errors are explained against the model's
types), which is the uncommon path. The commonest messages, a plain ``tools/call`` request and
its result, skip both when their exact shape is one the model accepts (see ``_PLAIN``), and so
does a plain ``initialize`` exchange, which is then answered without importing the models.
"""

from __future__ import annotations

import importlib
import operator
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, reduce
from types import ModuleType, UnionType
from typing import TYPE_CHECKING, Any, Literal

from ..schema.messages import quote_name
from ..schema.pointer import to_pointer
from . import surfaces
from .jsonrpc import Message
from .revisions import Revision
from .rules import Rule
from .violations import Violation

if TYPE_CHECKING:
    # pydantic is imported with the first model checked, not with this module: a plain
    # initialize exchange (the proxy's first answer) is checked without it.
    from pydantic import BaseModel, TypeAdapter, ValidationError
    from pydantic.fields import FieldInfo
    from pydantic_core import ErrorDetails

__all__ = [
    "Sender",
    "check_create_task_result",
    "check_notification",
    "check_request",
    "check_result",
    "is_mcp_request",
]

Sender = Literal["client", "server"]
"""Who sends a message: the client or the server."""

_V2025_03_26 = Revision.V2025_03_26
_V2025_06_18 = Revision.V2025_06_18
_V2025_11_25 = Revision.V2025_11_25
_V2026_07_28 = Revision.V2026_07_28

# --- where a revision's own schema differs from its era's model --------------------------------
# Keys name mcp-types' classes (the schema's definition names) and wire field names. Only
# revisions before 2025-11-25 need entries: later revisions are their own eras.

_FIELD_SINCE: dict[tuple[str, str], Revision] = {
    # 2025-03-26
    ("ProgressNotificationParams", "message"): _V2025_03_26,  # progress messages
    ("ServerCapabilities", "completions"): _V2025_03_26,  # completions capability
    ("Tool", "annotations"): _V2025_03_26,  # tool annotations (readOnlyHint, ...)
    # 2025-06-18
    ("Annotations", "lastModified"): _V2025_06_18,  # content annotations
    ("CallToolResult", "structuredContent"): _V2025_06_18,  # structured tool output
    ("Tool", "outputSchema"): _V2025_06_18,  # structured tool output
    ("ClientCapabilities", "elicitation"): _V2025_06_18,  # elicitation
    ("CompleteRequestParams", "context"): _V2025_06_18,  # completion context
    # `title` next to `name`: display names
    ("Implementation", "title"): _V2025_06_18,
    ("Prompt", "title"): _V2025_06_18,
    ("PromptArgument", "title"): _V2025_06_18,
    ("PromptReference", "title"): _V2025_06_18,
    ("Resource", "title"): _V2025_06_18,
    ("ResourceTemplate", "title"): _V2025_06_18,
    ("Tool", "title"): _V2025_06_18,
    # `_meta` on the objects inside results
    ("AudioContent", "_meta"): _V2025_06_18,
    ("BlobResourceContents", "_meta"): _V2025_06_18,
    ("EmbeddedResource", "_meta"): _V2025_06_18,
    ("ImageContent", "_meta"): _V2025_06_18,
    ("Prompt", "_meta"): _V2025_06_18,
    ("Resource", "_meta"): _V2025_06_18,
    ("ResourceTemplate", "_meta"): _V2025_06_18,
    ("Root", "_meta"): _V2025_06_18,
    ("TextContent", "_meta"): _V2025_06_18,
    ("TextResourceContents", "_meta"): _V2025_06_18,
    ("Tool", "_meta"): _V2025_06_18,
    # 2025-11-25
    ("SamplingMessage", "_meta"): _V2025_11_25,
    # tasks (SEP-1686)
    ("CallToolRequestParams", "task"): _V2025_11_25,
    ("ClientCapabilities", "tasks"): _V2025_11_25,
    ("CreateMessageRequestParams", "task"): _V2025_11_25,
    ("ElicitRequestFormParams", "task"): _V2025_11_25,
    ("ServerCapabilities", "tasks"): _V2025_11_25,
    ("Tool", "execution"): _V2025_11_25,
    # tools in sampling (SEP-1577)
    ("CreateMessageRequestParams", "toolChoice"): _V2025_11_25,
    ("CreateMessageRequestParams", "tools"): _V2025_11_25,
    ("Sampling", "context"): _V2025_11_25,
    ("Sampling", "tools"): _V2025_11_25,
    # elicitation modes (URL mode, SEP-1036)
    ("ElicitRequestFormParams", "mode"): _V2025_11_25,
    ("Elicitation", "form"): _V2025_11_25,
    ("Elicitation", "url"): _V2025_11_25,
    # icons and implementation metadata (SEP-973)
    ("Implementation", "description"): _V2025_11_25,
    ("Implementation", "icons"): _V2025_11_25,
    ("Implementation", "websiteUrl"): _V2025_11_25,
    ("Prompt", "icons"): _V2025_11_25,
    ("Resource", "icons"): _V2025_11_25,
    ("ResourceLink", "icons"): _V2025_11_25,
    ("ResourceTemplate", "icons"): _V2025_11_25,
    ("Tool", "icons"): _V2025_11_25,
    # `$schema` in tool and elicitation schemas (JSON Schema 2020-12 default, SEP-1613)
    ("InputSchema", "$schema"): _V2025_11_25,
    ("OutputSchema", "$schema"): _V2025_11_25,
    ("RequestedSchema", "$schema"): _V2025_11_25,
}
"""(class, field) → the first revision whose schema defines the field."""

_CLASS_SINCE: dict[str, Revision] = {
    "AudioContent": _V2025_03_26,  # audio content blocks
    "ResourceLink": _V2025_06_18,  # resource_link content blocks
    "ToolUseContent": _V2025_11_25,  # tool_use in sampling (SEP-1577)
    "ToolResultContent": _V2025_11_25,  # tool_result in sampling (SEP-1577)
    "ElicitRequestURLParams": _V2025_11_25,  # URL-mode elicitation (SEP-1036)
}
"""Union members (content blocks, params shapes) → the first revision that has them."""

_ARRAY_SINCE: dict[tuple[str, str], Revision] = {
    # An array of content blocks in one sampling message (SEP-1577).
    ("SamplingMessage", "content"): _V2025_11_25,
    ("CreateMessageResult", "content"): _V2025_11_25,
    # Multi-select answers: an array of strings as a map value (SEP-1330).
    ("ElicitResult", "content"): _V2025_11_25,
}
"""(class, field) → the first revision that allows an array there (or as the map's values)."""

_REQUIRED_BEFORE: dict[tuple[str, str], Revision] = {
    # Optional from 2025-11-25, where tasks are cancelled by their own request.
    ("CancelledNotificationParams", "requestId"): _V2025_11_25,
}
"""(class, field) → the first revision where the model's optional field stopped being required."""

# `_meta` keys a revision defines, which strict mode does not report as unknown.
_META_KEYS_SINCE: dict[str, Revision] = {
    "io.modelcontextprotocol/related-task": _V2025_11_25,
    "io.modelcontextprotocol/model-immediate-response": _V2025_11_25,
}

_OPEN_MODELS = frozenset({"InputSchema", "OutputSchema"})
"""JSON Schema documents: every keyword is a legitimate member; the tool layer checks them."""

_DISCRIMINATORS = frozenset({"type", "method", "mode"})
"""Literal fields that say which member of a union an object means to be."""


def _absent(model: str, field: str, revision: Revision) -> bool:
    since = _FIELD_SINCE.get((model, field))
    return since is not None and not revision.at_least(since)


# --- which model, who sends it -----------------------------------------------------------------

_Names = Mapping[Revision, Mapping[str, str | tuple[str, ...]]]
"""Models by name (see :mod:`.surfaces`), by revision then method."""

# Tasks as 2025-11-25 defines them (SEP-1686). mcp-types leaves them out of its surface maps
# on purpose (2026-07-28 made them an extension; see tasks.py), but its models for the
# revision have them; either side may send them, as either side may create a task.
_TASKS = Revision.V2025_11_25
_TASK_REQUESTS: _Names = {
    _TASKS: {
        "tasks/get": "GetTaskRequest",
        "tasks/result": "GetTaskPayloadRequest",
        "tasks/list": "ListTasksRequest",
        "tasks/cancel": "CancelTaskRequest",
    }
}
_TASK_RESULTS: _Names = {
    _TASKS: {
        "tasks/get": "GetTaskResult",
        "tasks/result": "GetTaskPayloadResult",
        "tasks/list": "ListTasksResult",
        "tasks/cancel": "CancelTaskResult",
    }
}
_TASK_NOTIFICATIONS: _Names = {_TASKS: {"notifications/tasks/status": "TaskStatusNotification"}}


class _Models(dict[Revision, dict[str, Any]]):
    """One sender's models for one kind of message, by revision then method. A revision's
    models are imported the first time a message of that revision is checked (its era's module
    is most of the proxy's start-up), then looked up like any dictionary's values."""

    def __init__(self, names: _Names) -> None:
        super().__init__()
        self._names = names

    def __missing__(self, revision: Revision) -> dict[str, Any]:
        era = _era(revision)
        models = {
            method: _model(era, name) for method, name in self._names.get(revision, {}).items()
        }
        self[revision] = models
        return models


def _model(era: ModuleType, name: str | tuple[str, ...]) -> Any:
    if isinstance(name, str):
        return getattr(era, name)
    return reduce(operator.or_, (getattr(era, member) for member in name))


def _era(revision: Revision) -> ModuleType:
    """The mcp-types module of ``revision``'s models, imported on first use."""
    return _import_era(surfaces.ERAS[revision])


@cache
def _import_era(module: str) -> ModuleType:
    return importlib.import_module(module)


@dataclass(frozen=True)
class _Kind:
    noun: str
    rule: Rule
    names: Mapping[Sender, _Names]
    known: frozenset[str]
    models: Mapping[Sender, _Models]


def _kind(noun: str, rule: Rule, names: Mapping[Sender, _Names]) -> _Kind:
    known = frozenset(
        method for surface in names.values() for models in surface.values() for method in models
    )
    models = {sender: _Models(surface) for sender, surface in names.items()}
    return _Kind(noun, rule, names, known, models)


def _with_tasks(surface: _Names, tasks: _Names) -> _Names:
    return {**surface, _TASKS: {**surface.get(_TASKS, {}), **tasks[_TASKS]}}


_REQUEST = _kind(
    "request",
    Rule.INVALID_PARAMS,
    {
        "client": _with_tasks(surfaces.CLIENT_REQUESTS, _TASK_REQUESTS),
        "server": _with_tasks(surfaces.SERVER_REQUESTS, _TASK_REQUESTS),
    },
)
_NOTIFICATION = _kind(
    "notification",
    Rule.INVALID_NOTIFICATION,
    {
        "client": _with_tasks(surfaces.CLIENT_NOTIFICATIONS, _TASK_NOTIFICATIONS),
        "server": _with_tasks(surfaces.SERVER_NOTIFICATIONS, _TASK_NOTIFICATIONS),
    },
)
# Results are keyed by their request's method, and sent by the side that received it.
_RESULT = _kind(
    "result",
    Rule.INVALID_RESULT,
    {
        "server": _with_tasks(surfaces.SERVER_RESULTS, _TASK_RESULTS),
        "client": _with_tasks(surfaces.CLIENT_RESULTS, _TASK_RESULTS),
    },
)


def _route(
    kind: _Kind, method: str, revision: Revision, sender: Sender, strict: bool, pointer: str
) -> tuple[Any, list[Violation]]:
    target = kind.models[sender][revision].get(method)
    if target is not None:
        return target, []
    problem = _route_problem(kind, method, revision, sender, strict)
    return None, [] if problem is None else [Violation(problem[0], problem[1], pointer)]


def _route_problem(
    kind: _Kind, method: str, revision: Revision, sender: Sender, strict: bool
) -> tuple[Rule, str] | None:
    """Why a method has no model for this sender and revision, or None when that is fine."""
    other: Sender = "server" if sender == "client" else "client"
    # Method names are quoted only when they are MCP's own, never a peer's invention.
    name = quote_name(method)
    if method in kind.names[other].get(revision, {}):
        return (
            Rule.WRONG_DIRECTION,
            f"a {name} {kind.noun} is sent by the {other}, not the {sender}",
        )
    if method in kind.known:
        return Rule.METHOD_NOT_IN_REVISION, f"{name} is not part of MCP {revision.value}"
    if kind is _REQUEST and method in _NOTIFICATION.known:
        return Rule.INVALID_MESSAGE, f"{name} is a notification: it must not carry an id"
    if kind is _NOTIFICATION and method in _REQUEST.known:
        return Rule.INVALID_MESSAGE, f"{name} is a request: it needs an id"
    if strict:
        return Rule.UNKNOWN_METHOD, f"the method is not an MCP {kind.noun}"
    return None


def is_mcp_request(method: str) -> bool:
    """Whether some MCP revision defines ``method`` as a request (by either side)."""
    return method in _REQUEST.known


def sender_of(method: str, kind: Literal["request", "notification"]) -> Sender | None:
    """Which side sends this MCP method in any revision; None for methods MCP does not define
    (or, in principle, ones both sides send)."""
    return _SENDERS[kind].get(method)


def _sender_table(kind: _Kind) -> dict[str, Sender | None]:
    table: dict[str, Sender | None] = {}
    for sender, surface in kind.names.items():
        for method in (method for models in surface.values() for method in models):
            table[method] = sender if table.get(method, sender) == sender else None
    return table


_SENDERS = {"request": _sender_table(_REQUEST), "notification": _sender_table(_NOTIFICATION)}


def check_request(
    message: Message,
    revision: Revision,
    sender: Sender,
    *,
    strict: bool = False,
    pointer: str = "",
) -> list[Violation]:
    """Check a request's method and params against ``revision``, as sent by ``sender``.

    Methods no revision defines pass unless ``strict`` (``Rule.UNKNOWN_METHOD``); an MCP
    method this revision lacks is ``Rule.METHOD_NOT_IN_REVISION``, one the other side sends
    ``Rule.WRONG_DIRECTION``, and bad params ``Rule.INVALID_PARAMS`` (one violation per
    problem, pointing into the message). ``tools/call`` arguments are only checked to be an
    object here: the tool layer checks them against the tool's schema.
    """
    return _check_message(_REQUEST, message, revision, sender, strict, pointer)


def check_notification(
    message: Message,
    revision: Revision,
    sender: Sender,
    *,
    strict: bool = False,
    pointer: str = "",
) -> list[Violation]:
    """Check a notification's method and params, like :func:`check_request`.

    Bad params are ``Rule.INVALID_NOTIFICATION``.
    """
    return _check_message(_NOTIFICATION, message, revision, sender, strict, pointer)


def _check_message(
    kind: _Kind,
    message: Message,
    revision: Revision,
    sender: Sender,
    strict: bool,
    pointer: str,
) -> list[Violation]:
    if message.kind != kind.noun or message.method is None:
        raise ValueError(f"check_{kind.noun} needs a {kind.noun}, not a {message.kind}")
    # The surface models describe the whole frame, which the decoded message already is.
    if _is_plain(kind.names[sender], message.method, message.raw, revision):
        return []
    target, violations = _route(kind, message.method, revision, sender, strict, pointer + "/method")
    if target is None:
        return violations
    return _validate(target, message.raw, revision, strict, kind.rule, pointer)


def check_result(
    method: str,
    result: Any,
    revision: Revision,
    sender: Sender,
    *,
    strict: bool = False,
    pointer: str = "",
) -> list[Violation]:
    """Check the result of a ``method`` request, as sent by ``sender`` (who answers it).

    Pointers are relative to the result unless ``pointer`` says where it is (``"/result"``).
    The routing rules are those of :func:`check_request`; a bad result is
    ``Rule.INVALID_RESULT``.

    From 2026-07-28 some requests have two kinds of result, told apart by ``resultType``
    (``"input_required"`` or not): a result is checked as the kind it says it is. The
    schema's ``anyOf`` of the two would accept any object with a string ``resultType`` as an
    InputRequiredResult, whose members are all optional.
    """
    if _is_plain(_RESULT.names[sender], method, result, revision):
        return []
    target, violations = _route(_RESULT, method, revision, sender, strict, pointer)
    if target is None:
        return violations
    if isinstance(target, UnionType):
        input_required, complete = _result_kinds(target)
        if _is_input_required()(result):
            target = input_required
        else:
            target = complete
            plain = _PLAIN.get((surfaces.ERAS[revision], getattr(complete, "__name__", "")))
            if plain is not None and plain(result, revision):
                return []
    return _validate(target, result, revision, strict, Rule.INVALID_RESULT, pointer)


def check_create_task_result(
    result: Any, revision: Revision, *, strict: bool = False, pointer: str = ""
) -> list[Violation]:
    """Check a 2025-11-25 ``CreateTaskResult``: the answer to a task-augmented request
    (whichever its method) when the receiver made a task of it."""
    model = _era(Revision.V2025_11_25).CreateTaskResult
    return _validate(model, result, revision, strict, Rule.INVALID_RESULT, pointer)


@cache
def _is_input_required() -> Callable[[object], bool]:
    # Imported on the first two-kind result, not with this module: mcp_types.methods imports
    # every revision's models (see surfaces.py).
    from mcp_types.methods import is_input_required  # noqa: PLC0415

    return is_input_required


@cache
def _result_kinds(target: UnionType) -> tuple[Any, Any]:
    """A two-kind result's InputRequiredResult member, and the union of the others."""
    members = typing.get_args(target)
    (input_required,) = (m for m in members if m.__name__ == "InputRequiredResult")
    return input_required, reduce(operator.or_, (m for m in members if m is not input_required))


# --- validation --------------------------------------------------------------------------------


@cache
def _adapter(target: Any) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter  # noqa: PLC0415

    return TypeAdapter(target)


# --- the common case, read without the model --------------------------------------------------
# Most of a proxy's traffic is tools/call: a request naming a tool, with arguments, and a result
# of text blocks, perhaps structured content and isError. Building the model and walking it
# costs more than everything else a call is checked for, yet for a message of exactly such a
# shape the answer is known: no violation. Each shape below is a condition under which the model
# and the walk find nothing, checked on the exact JSON types; a message that does not meet it
# goes through the model as before (tests/test_protocol_fast_path.py compares the two). A shape
# is told by its model's name, before the model is imported: a plain initialize exchange is
# answered without the models, which are most of the proxy's time to its first answer (the
# session's next message imports them).

_CALL_PARAMS = frozenset({"name", "arguments"})
_MODERN_CALL_PARAMS = frozenset({"name", "arguments", "_meta"})
_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
_REQUEST_META = frozenset({_PROTOCOL_VERSION, _CLIENT_CAPABILITIES, _CLIENT_INFO, "progressToken"})
# Capabilities whose every member is an object of objects (extension and experimental
# settings are free-form objects): the plain shape of a 2026-07-28 request's capabilities.
_FREE_FORM_CAPABILITIES = frozenset({"extensions", "experimental"})
_NAME_VERSION = frozenset({"name", "version"})
_NAMED = {"name": "", "version": ""}  # stands for an absent clientInfo


def _plain_call(frame: Any, revision: Revision) -> bool:
    """A ``tools/call`` request with nothing but a string ``name`` and object ``arguments``."""
    params = _plain_call_params(frame)
    return params is not None and params.keys() <= _CALL_PARAMS


def _plain_modern_call(frame: Any, revision: Revision) -> bool:
    """A 2026-07-28 ``tools/call`` request: a plain call (:func:`_plain_call`) with the
    ``_meta`` every request of the revision carries: its protocol version, its capabilities
    (none, or extensions and experimental settings only), perhaps the client's name and version
    and a progress token."""
    params = _plain_call_params(frame)
    if params is None or not params.keys() <= _MODERN_CALL_PARAMS:
        return False
    meta = params.get("_meta")
    if type(meta) is not dict or not meta.keys() <= _REQUEST_META:
        return False
    capabilities = meta.get(_CLIENT_CAPABILITIES)
    info = meta.get(_CLIENT_INFO, _NAMED)
    token = meta.get("progressToken", 0)
    return (
        type(meta.get(_PROTOCOL_VERSION)) is str
        and type(capabilities) is dict
        and capabilities.keys() <= _FREE_FORM_CAPABILITIES
        and all(_object_of_objects(value) for value in capabilities.values())
        and type(info) is dict
        and info.keys() == _NAME_VERSION
        and type(info["name"]) is str
        and type(info["version"]) is str
        and type(token) in (int, str)
    )


def _plain_call_params(frame: Any) -> dict[str, Any] | None:
    """The params of a ``tools/call`` frame of exactly the envelope's four members, with a
    string ``name`` and object ``arguments`` (if any); None for any other frame."""
    if type(frame) is not dict or len(frame) != 4:
        return None
    params = frame.get("params")
    if (
        frame.get("jsonrpc") == "2.0"
        and frame.get("method") == "tools/call"
        and type(frame.get("id")) in (int, str)
        and type(params) is dict
        and type(params.get("name")) is str
        and ("arguments" not in params or type(params["arguments"]) is dict)
    ):
        return params
    return None


def _object_of_objects(value: Any) -> bool:
    return type(value) is dict and all(type(item) is dict for item in value.values())


_INITIALIZE_PARAMS = frozenset({"protocolVersion", "capabilities", "clientInfo"})
_INITIALIZE_RESULT = frozenset({"protocolVersion", "capabilities", "serverInfo"})
_LIST_CHANGED = frozenset({"listChanged"})
_SUBSCRIBE = frozenset({"listChanged", "subscribe"})

# What each capability of a plain initialize exchange may be: a set of the boolean flags it
# may have, or None for "an empty object". Capabilities that hold more (sampling's context and
# tools, tasks) take the model's path.
_Flags = dict[str, frozenset[str] | None]
_CLIENT_FLAGS: _Flags = {"roots": _LIST_CHANGED, "sampling": None, "elicitation": None}
_SERVER_FLAGS: _Flags = {
    "tools": _LIST_CHANGED,
    "prompts": _LIST_CHANGED,
    "resources": _SUBSCRIBE,
    "logging": None,
    "completions": None,
}


def _plain_initialize(frame: Any, revision: Revision) -> bool:
    """An ``initialize`` request of the envelope's four members, whose params are a string
    ``protocolVersion``, plain capabilities and a plain ``clientInfo``, and nothing else."""
    if type(frame) is not dict or len(frame) != 4:
        return False
    params = frame.get("params")
    return (
        frame.get("jsonrpc") == "2.0"
        and frame.get("method") == "initialize"
        and type(frame.get("id")) in (int, str)
        and type(params) is dict
        and params.keys() == _INITIALIZE_PARAMS
        and type(params["protocolVersion"]) is str
        and _plain_capabilities(params["capabilities"], "ClientCapabilities", revision)
        and _plain_implementation(params["clientInfo"], revision)
    )


def _plain_initialize_result(result: Any, revision: Revision) -> bool:
    """An ``InitializeResult`` of a string ``protocolVersion``, plain capabilities, a plain
    ``serverInfo`` and perhaps string ``instructions``, and nothing else."""
    if type(result) is not dict:
        return False
    keys = result.keys() - {"instructions"}
    return (
        keys == _INITIALIZE_RESULT
        and type(result.get("instructions", "")) is str
        and type(result["protocolVersion"]) is str
        and _plain_capabilities(result["capabilities"], "ServerCapabilities", revision)
        and _plain_implementation(result["serverInfo"], revision)
    )


def _plain_capabilities(value: Any, model: str, revision: Revision) -> bool:
    """Capabilities the revision defines, each an object of its boolean flags (or an empty
    object), and ``experimental`` settings (an object of objects)."""
    if type(value) is not dict:
        return False
    allowed = _CLIENT_FLAGS if model == "ClientCapabilities" else _SERVER_FLAGS
    for name, setting in value.items():
        if name == "experimental":
            if not _object_of_objects(setting):
                return False
            continue
        if name not in allowed or _absent(model, name, revision) or type(setting) is not dict:
            return False
        flags = allowed[name]
        if flags is None:
            if setting:
                return False
        elif not setting.keys() <= flags or any(
            type(flag) is not bool for flag in setting.values()
        ):
            return False
    return True


def _plain_implementation(value: Any, revision: Revision) -> bool:
    """A string ``name`` and ``version``, and a string ``title`` where the revision has it."""
    if type(value) is not dict or not value.keys() >= _NAME_VERSION:
        return False
    for key, item in value.items():
        if type(item) is not str:
            return False
        if key not in _NAME_VERSION and (
            key != "title" or _absent("Implementation", key, revision)
        ):
            return False
    return True


# The members of a CallToolResult the plain shape may have, by revision.
_TOOL_RESULT_KEYS = {
    revision: frozenset(
        key
        for key in ("content", "isError", "structuredContent")
        if not _absent("CallToolResult", key, revision)
    )
    for revision in Revision
}
_MODERN_TOOL_RESULT_KEYS = _TOOL_RESULT_KEYS[_V2026_07_28] | {"resultType"}


def _plain_tool_result(result: Any, revision: Revision) -> bool:
    """A ``CallToolResult`` of text blocks (only ``type`` and ``text``), a boolean ``isError``
    and an object ``structuredContent`` where the revision has it, and nothing else."""
    if type(result) is not dict:
        return False
    return _plain_result_members(result, _TOOL_RESULT_KEYS[revision])


def _plain_modern_tool_result(result: Any, revision: Revision) -> bool:
    """A 2026-07-28 ``CallToolResult``: a plain one with the ``resultType`` it must have."""
    return (
        type(result) is dict
        and type(result.get("resultType")) is str
        and _plain_result_members(result, _MODERN_TOOL_RESULT_KEYS)
    )


def _plain_result_members(result: dict[str, Any], keys: frozenset[str]) -> bool:
    if not result.keys() <= keys:
        return False
    content = result.get("content")
    if type(content) is not list:
        return False
    for block in content:
        if (
            type(block) is not dict
            or len(block) != 2
            or block.get("type") != "text"
            or type(block.get("text")) is not str
        ):
            return False
    return ("isError" not in result or type(result["isError"]) is bool) and (
        "structuredContent" not in result or type(result["structuredContent"]) is dict
    )


# Keyed by the era's module and the model's name, so that another era's model of the same name
# never takes this path.
_PLAIN: dict[tuple[str, str], Callable[[Any, Revision], bool]] = {
    (surfaces.ERAS[_V2025_11_25], "CallToolRequest"): _plain_call,
    (surfaces.ERAS[_V2025_11_25], "CallToolResult"): _plain_tool_result,
    (surfaces.ERAS[_V2025_11_25], "InitializeRequest"): _plain_initialize,
    (surfaces.ERAS[_V2025_11_25], "InitializeResult"): _plain_initialize_result,
    (surfaces.ERAS[_V2026_07_28], "CallToolRequest"): _plain_modern_call,
    (surfaces.ERAS[_V2026_07_28], "CallToolResult"): _plain_modern_tool_result,
}


def _is_plain(
    names: Mapping[Revision, Mapping[str, Any]], method: str, value: Any, revision: Revision
) -> bool:
    """Whether ``value`` has a plain shape of the model ``names`` gives ``method`` in
    ``revision``: no violation, told without importing the model."""
    name = names.get(revision, {}).get(method)
    plain = _PLAIN.get((surfaces.ERAS[revision], name)) if isinstance(name, str) else None
    return plain is not None and plain(value, revision)


# Each round removes the fields of later revisions that the previous round's errors named;
# another round is needed only when removing them changes which union member matches.
_ROUNDS = 3


def _validate(
    target: Any, value: Any, revision: Revision, strict: bool, rule: Rule, pointer: str
) -> list[Violation]:
    from pydantic import ValidationError  # noqa: PLC0415

    adapter = _adapter(target)
    out: list[Violation] = []
    for _ in range(_ROUNDS):
        try:
            instance = adapter.validate_python(value, strict=True, by_name=False)
        except ValidationError as error:
            problems, removed = _explain(error, target, value, revision, rule, pointer)
            if problems or not removed:
                return _unique(problems)
            value = _without(value, removed)
            if strict:
                out.extend(
                    _unknown(pointer + to_pointer(path), str(path[-1]), revision)
                    for path in removed
                )
            continue
        _Walk(revision, strict, rule, out).value(value, instance, pointer)
        return out
    return [
        Violation(rule, "does not match its definition in any way this revision allows", pointer)
    ]


def _unique(violations: list[Violation]) -> list[Violation]:
    # Union members that both survive can report the same problem.
    return list(dict.fromkeys(violations))


def _unknown(pointer: str, name: str, revision: Revision) -> Violation:
    return Violation(
        Rule.UNKNOWN_FIELD,
        f"field {quote_name(name)} is not defined by MCP {revision.value}",
        pointer,
    )


def _without(value: Any, paths: list[tuple[str | int, ...]]) -> Any:
    """``value`` without the members at ``paths``, copying only the containers on the way."""
    removed = {path[0] for path in paths if len(path) == 1}
    deeper: dict[str | int, list[tuple[str | int, ...]]] = {}
    for path in paths:
        if len(path) > 1:
            deeper.setdefault(path[0], []).append(path[1:])
    if isinstance(value, dict):
        copy: Any = {key: item for key, item in value.items() if key not in removed}
    elif isinstance(value, list):
        copy = list(value)
    else:
        return value
    for key, rest in deeper.items():
        copy[key] = _without(copy[key], rest)
    return copy


# --- the walk over a valid message -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _FieldPlan:
    attribute: str
    nullable: bool
    walk: bool
    descend: bool
    closed_map: bool
    array_since: Revision | None


@dataclass(frozen=True, slots=True)
class _ModelPlan:
    name: str
    fields: dict[str, _FieldPlan]
    open: bool
    since: Revision | None
    required: tuple[str, ...]


def _strip(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    """The types a value may have, ``None`` left out."""
    tp = _strip(tp)
    if typing.get_origin(tp) in (typing.Union, UnionType):
        return [_strip(arg) for arg in typing.get_args(tp) if arg is not type(None)]
    return [tp]


def _is_model(tp: Any) -> bool:
    from pydantic import BaseModel  # noqa: PLC0415

    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _holds_model(tp: Any) -> bool:
    return any(
        _is_model(member) or any(_holds_model(arg) for arg in typing.get_args(member))
        for member in _members(tp)
    )


@cache
def _fields(model: type[BaseModel]) -> dict[str, FieldInfo]:
    return {field.alias or name: field for name, field in model.model_fields.items()}


_PLANS: dict[Revision, dict[type[BaseModel], _ModelPlan]] = {revision: {} for revision in Revision}


def _plan(model: type[BaseModel], revision: Revision) -> _ModelPlan:
    """What the walk needs to know about a model in a revision; built once, then looked up."""
    fields = {}
    for alias, field in _fields(model).items():
        if _absent(model.__name__, alias, revision):
            continue
        since = _ARRAY_SINCE.get((model.__name__, alias))
        array_since = since if since is not None and not revision.at_least(since) else None
        descend = _holds_model(field.annotation)
        # `_meta` as a plain map: its keys are extensions, and in strict mode unknown.
        closed_map = alias == "_meta" and not descend
        fields[alias] = _FieldPlan(
            attribute=next(n for n, f in model.model_fields.items() if f is field),
            nullable=any(member is Any for member in _members(field.annotation)),
            walk=descend or closed_map or array_since is not None,
            descend=descend,
            closed_map=closed_map,
            array_since=array_since,
        )
    since = _CLASS_SINCE.get(model.__name__)
    plan = _ModelPlan(
        name=model.__name__,
        fields=fields,
        open=model.__name__ in _OPEN_MODELS,
        since=since if since is not None and not revision.at_least(since) else None,
        required=tuple(
            alias
            for (name, alias), until in _REQUIRED_BEFORE.items()
            if name == model.__name__ and not revision.at_least(until)
        ),
    )
    _PLANS[revision][model] = plan
    return plan


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


class _Walk:
    """Walks a validated value next to its model instance (which says which union member
    each object matched), for what pydantic does not check."""

    __slots__ = ("base", "out", "plans", "revision", "rule", "strict")

    def __init__(self, revision: Revision, strict: bool, rule: Rule, out: list[Violation]) -> None:
        from pydantic import BaseModel  # noqa: PLC0415

        self.base: type[BaseModel] = BaseModel
        self.revision = revision
        self.plans = _PLANS[revision]
        self.strict = strict
        self.rule = rule
        self.out = out

    def value(self, data: Any, instance: Any, pointer: str) -> None:
        if isinstance(instance, self.base):
            if isinstance(data, dict):
                self.model(data, instance, pointer)
        elif isinstance(instance, list):
            for index, (item, inner) in enumerate(zip(data, instance, strict=True)):
                self.value(item, inner, f"{pointer}/{index}")
        elif isinstance(instance, dict):
            for key, inner in instance.items():
                self.value(data[key], inner, f"{pointer}/{_escape(key)}")

    def model(self, data: dict[str, Any], instance: BaseModel, pointer: str) -> None:
        model = type(instance)
        plan = self.plans.get(model) or _plan(model, self.revision)
        if plan.since is not None:
            self.out.append(
                Violation(
                    self.rule, f"{plan.name} is not part of MCP {self.revision.value}", pointer
                )
            )
            return
        fields = plan.fields
        for key, value in data.items():
            field = fields.get(key)
            if field is None:
                if self.strict and not plan.open:
                    self.out.append(_unknown(f"{pointer}/{_escape(key)}", key, self.revision))
            elif value is None:
                if not field.nullable:
                    self.out.append(
                        Violation(self.rule, "must not be null", f"{pointer}/{_escape(key)}")
                    )
            elif field.walk:
                inner = getattr(instance, field.attribute)
                self._field(field, value, inner, f"{pointer}/{_escape(key)}")
        for alias in plan.required:
            if alias not in data:
                self.out.append(
                    Violation(
                        self.rule,
                        f"is missing the field {quote_name(alias)}, required in MCP "
                        f"{self.revision.value}",
                        pointer,
                    )
                )

    def _field(self, field: _FieldPlan, value: Any, inner: Any, where: str) -> None:
        if field.array_since is not None:
            # The instance says what the value is: an array, or a map whose values may be.
            if isinstance(inner, list):
                places = [where]
            elif isinstance(inner, dict):
                places = [f"{where}/{_escape(k)}" for k, v in inner.items() if isinstance(v, list)]
            else:
                places = []
            for place in places:
                self.out.append(
                    Violation(
                        self.rule,
                        f"an array is not allowed here before MCP {field.array_since.value}",
                        place,
                    )
                )
        if field.closed_map and self.strict and isinstance(value, dict):
            for key in value:
                since = _META_KEYS_SINCE.get(key)
                if since is None or not self.revision.at_least(since):
                    self.out.append(_unknown(f"{where}/{_escape(key)}", key, self.revision))
        if field.descend:
            self.value(value, inner, where)


# --- explaining pydantic's errors --------------------------------------------------------------

_ArmKey = tuple[tuple[str | int, ...], int]


@dataclass(slots=True)
class _Traced:
    """One pydantic error, read against the model's types."""

    error: ErrorDetails
    tokens: list[str | int]
    # Each union on the way: its place → (member label, member model or None, index in loc).
    arms: dict[_ArmKey, tuple[str, type[BaseModel] | None, int]]
    # Length of the tokens up to a field the revision does not define, if any is on the way.
    later: int | None


def _arm(members: list[Any], label: str | int) -> Any:
    """The union member pydantic's ``label`` names (class names, ``list[...]``, ``str``)."""
    for member in members:
        if _is_model(member) and member.__name__ == label:
            return member
    for prefix, origin in (("list[", list), ("dict[", dict)):
        if isinstance(label, str) and label.startswith(prefix):
            return next((m for m in members if typing.get_origin(m) is origin), None)
    return None


def _trace(target: Any, error: ErrorDetails, revision: Revision) -> _Traced:
    tokens: list[str | int] = []
    arms: dict[_ArmKey, tuple[str, type[BaseModel] | None, int]] = {}
    later = None
    tp: Any = target
    for index, element in enumerate(error["loc"]):
        members = _members(tp) if tp is not None else []
        if len(members) > 1:
            # pydantic labels the union member it tried before going on into it.
            tp = _arm(members, element)
            arms[(tuple(tokens), len(arms))] = (
                str(element),
                tp if _is_model(tp) else None,
                index,
            )
            continue
        tp = members[0] if members else None
        tokens.append(element)
        if _is_model(tp):
            field = _fields(tp).get(str(element))
            if later is None and _absent(tp.__name__, str(element), revision):
                later = len(tokens)
            tp = field.annotation if field is not None else None
        elif typing.get_origin(tp) in (list, dict):
            tp = typing.get_args(tp)[-1]
        else:
            tp = None
    return _Traced(error, tokens, arms, later)


def _explain(
    error: ValidationError,
    target: Any,
    value: Any,
    revision: Revision,
    rule: Rule,
    pointer: str,
) -> tuple[list[Violation], list[tuple[str | int, ...]]]:
    """Violations for pydantic's errors, and the later-revision fields to remove and retry."""
    traced = [
        _trace(target, details, revision)
        for details in error.errors(include_url=False, include_input=False)
    ]
    alive, problems = _choose_members(traced, revision, rule, pointer)
    removed: list[tuple[str | int, ...]] = []
    for item in alive:
        if item.later is not None:
            path = tuple(item.tokens[: item.later])
            if path not in removed:
                removed.append(path)
        else:
            problems.append(_describe(item, rule, pointer))
    return problems, removed


def _choose_members(
    traced: list[_Traced], revision: Revision, rule: Rule, pointer: str
) -> tuple[list[_Traced], list[Violation]]:
    """Keep the errors of the union members a value meant to be.

    pydantic reports every member's errors when none matches. A member is out when the
    revision does not have it, when the value is not even of its type, or when a
    discriminator (``type``, ``method``, ``mode``) says it is another one; the errors of the
    members left explain the failure. When no member is left, one violation says so.
    """
    alive = traced
    problems: list[Violation] = []
    places = sorted({key for item in traced for key in item.arms}, key=lambda k: (len(k[0]), k[1]))
    for place in places:
        by_label: dict[str, list[_Traced]] = {}
        models: dict[str, type[BaseModel] | None] = {}
        for item in alive:
            if place in item.arms:
                label, model, _ = item.arms[place]
                by_label.setdefault(label, []).append(item)
                models[label] = model
        if not by_label:
            continue
        kept = {
            label
            for label, items in by_label.items()
            if not _rules_out(place, models[label], items, revision)
        }
        # A member whose only errors are in fields this revision does not define is the one
        # meant: those fields are removed and the value checked again.
        clean = {label for label in kept if all(i.later is not None for i in by_label[label])}
        kept = clean or kept
        alive = [item for item in alive if place not in item.arms or item.arms[place][0] in kept]
        if not kept:
            problems.append(_no_member(place, by_label, models, revision, rule, pointer))
    return alive, problems


def _rules_out(
    place: _ArmKey, model: type[BaseModel] | None, items: list[_Traced], revision: Revision
) -> bool:
    if model is not None:
        since = _CLASS_SINCE.get(model.__name__)
        if since is not None and not revision.at_least(since):
            return True
    for item in items:
        at = item.arms[place][2]
        last = len(item.error["loc"]) - 1
        if at == last:
            return True
        if (
            at == last - 1
            and item.error["type"] == "literal_error"
            and item.error["loc"][-1] in _DISCRIMINATORS
            and item.later is None
        ):
            return True
    return False


def _no_member(
    place: _ArmKey,
    by_label: dict[str, list[_Traced]],
    models: dict[str, type[BaseModel] | None],
    revision: Revision,
    rule: Rule,
    pointer: str,
) -> Violation:
    where = pointer + to_pointer(place[0])
    allowed = []
    for label, model in models.items():
        since = _CLASS_SINCE.get(model.__name__) if model is not None else None
        if since is None or revision.at_least(since):
            allowed.append(label)
            continue
        if not any(_rules_out(place, None, [item], revision) for item in by_label[label]):
            return Violation(rule, f"{label} is not part of MCP {revision.value}", where)
    expected: dict[str, list[str]] = {}
    for label in allowed:
        for item in by_label[label]:
            loc = item.error["loc"]
            if (
                item.error["type"] == "literal_error"
                and item.arms[place][2] == len(loc) - 2
                and loc[-1] in _DISCRIMINATORS
            ):
                expected.setdefault(str(loc[-1]), []).append(str(item.error["ctx"]["expected"]))
    if len(expected) == 1:
        ((name, values),) = expected.items()
        return Violation(
            rule, f"matches no allowed shape: {quote_name(name)} must be {', '.join(values)}", where
        )
    return Violation(rule, f"matches none of the allowed shapes ({', '.join(allowed)})", where)


_EXPECTED_TYPES = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}

_BOUNDS = {
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be greater than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
    "too_long": ("max_length", "must have at most {} items"),
    "too_short": ("min_length", "must have at least {} items"),
    "literal_error": ("expected", "must be {}"),
}


def _describe(item: _Traced, rule: Rule, pointer: str) -> Violation:
    # Built from the error's type and the model's own facts (ctx), never from `msg` or
    # `input`: pydantic's messages can quote the value.
    kind = item.error["type"]
    tokens = item.tokens
    if kind == "missing":
        return Violation(
            rule,
            f"is missing the required field {quote_name(tokens[-1])}",
            pointer + to_pointer(tokens[:-1]),
        )
    where = pointer + to_pointer(tokens)
    if kind in _EXPECTED_TYPES:
        return Violation(rule, f"must be {_EXPECTED_TYPES[kind]}", where)
    bound = _BOUNDS.get(kind)
    ctx = item.error.get("ctx") or {}
    if bound is not None and bound[0] in ctx:
        return Violation(rule, bound[1].format(ctx[bound[0]]), where)
    return Violation(rule, f"is not valid ({kind})", where)
