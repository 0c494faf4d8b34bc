"""Tasks: a request answered now with a task, its real result later.

Two designs exist, and strictmcp checks both:

- **2025-11-25** (SEP-1686): a request whose params carry ``task`` (``tools/call`` to a server
  that declared ``tasks.requests.tools.call``; ``sampling/createMessage`` and
  ``elicitation/create`` to a client that declared theirs) may be answered with a
  ``CreateTaskResult`` (``{"task": Task}``); ``tasks/get`` and ``notifications/tasks/status``
  tell its status, ``tasks/result`` gives the real result, ``tasks/list`` and
  ``tasks/cancel`` complete the set. Their shapes are the revision's models
  (:mod:`.methods`); the rules beyond shape are here.
- **2026-07-28**, the extension ``io.modelcontextprotocol/tasks`` (SEP-2663): declared per
  request in its client capabilities; only ``tools/call`` may be answered with a task, a
  flat ``CreateTaskResult`` marked ``resultType: "task"``; ``tasks/get`` returns the task
  with its final ``result`` (or ``error``, or ``inputRequests`` while ``input_required``)
  inline; ``tasks/update`` carries ``inputResponses``; ``tasks/cancel`` asks to stop it; no
  ``tasks/result`` and no ``tasks/list``. No revision's schema defines these messages, so
  their shapes are written here, as JSON Schema (:data:`SHAPES`), and checked by the engine.
  Field names follow the official conformance suite strictmcp is tested with (``ttlMs``,
  ``pollIntervalMs``); ``requestState`` is passed through untouched wherever it appears.

Either way the real result is what a direct answer would have been, so it is checked
exactly as one: a tool call's against the ``outputSchema`` of the tool that was called. For
that a :class:`TaskBook` remembers, per task, what created it; it is bounded, and a task is
forgotten when its time to live runs out or when the bound pushes it out. A result for a task
it does not know cannot be checked, and is reported as such (:attr:`Rule.TASK_UNKNOWN`,
an error: a caller that enforces refuses it, failing closed).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..schema import Validator, compile_schema, quote_name
from .revisions import Revision
from .rules import Rule
from .tools import CheckedTool
from .violations import Severity, Violation

__all__ = [
    "AUGMENTABLE",
    "EXTENSION",
    "MISSING_CAPABILITY",
    "NAMES_A_TASK",
    "RELATED_TASK",
    "TASK_METHODS",
    "TERMINAL",
    "UNKNOWN_TASK",
    "UNKNOWN_TASK_TEXT",
    "TaskBook",
    "TaskRecord",
    "check_task_message",
    "created_task",
    "declares_tasks",
    "extension_declared",
    "refused_task_call",
    "task_augmented",
    "task_id_of",
    "task_support",
]

EXTENSION = "io.modelcontextprotocol/tasks"
"""The 2026-07-28 tasks extension's identifier, in ``capabilities.extensions``."""
RELATED_TASK = "io.modelcontextprotocol/related-task"
"""The ``_meta`` key that ties a 2025-11-25 message to its task."""
MISSING_CAPABILITY = -32021
"""2026-07-28: a request needs a capability the client did not declare with it."""
METHOD_NOT_FOUND = -32601
UNKNOWN_TASK = -32602
"""What strictmcp answers for a task it did not see created, or has forgotten, as a server
answers a task id it does not know."""
UNKNOWN_TASK_TEXT = "Unknown task: strictmcp did not see it created, or it has expired"

TERMINAL = frozenset({"completed", "failed", "cancelled"})
"""The statuses a task never leaves."""
_STATUSES = TERMINAL | {"working", "input_required"}
_NEXT = {
    "working": frozenset({"input_required", "completed", "failed", "cancelled"}),
    "input_required": frozenset({"working", "completed", "failed", "cancelled"}),
}

TASK_METHODS = {
    Revision.V2025_11_25: frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"}),
    Revision.V2026_07_28: frozenset({"tasks/get", "tasks/update", "tasks/cancel"}),
}
"""The methods that name a task, by revision (2026-07-28's only with the extension)."""
NAMES_A_TASK = frozenset({"tasks/get", "tasks/result", "tasks/cancel", "tasks/update"})
"""The methods whose params name a task (``taskId``), in either revision."""

AUGMENTABLE: dict[str, tuple[str, str]] = {
    "tools/call": ("tools", "call"),
    "sampling/createMessage": ("sampling", "createMessage"),
    "elicitation/create": ("elicitation", "create"),
}
"""2025-11-25: the requests a task may be asked for, and where the receiver declares that it
takes them as tasks, under ``capabilities.tasks.requests``."""

_MAPPING = (dict, Mapping)


# --- asking for a task -------------------------------------------------------------------------


def task_augmented(method: str | None, params: Mapping[str, Any], revision: Revision) -> bool:
    """Whether a 2025-11-25 request asks to be run as a task (``params.task``). From
    2026-07-28 ``task`` means nothing (the extension is declared in capabilities instead)
    and is ignored, as SEP-2663 asks receivers to do."""
    return (
        revision is Revision.V2025_11_25
        and method in AUGMENTABLE
        and isinstance(params.get("task"), _MAPPING)
    )


def extension_declared(capabilities: Mapping[str, Any] | None) -> bool:
    """Whether 2026-07-28 client capabilities declare the tasks extension."""
    if capabilities is None:
        return False
    extensions = capabilities.get("extensions")
    return isinstance(extensions, _MAPPING) and isinstance(extensions.get(EXTENSION), _MAPPING)


def augmentation_violations(
    method: str, receiver_capabilities: Mapping[str, Any] | None
) -> list[Violation]:
    """A 2025-11-25 task-augmented ``method`` request sent to a receiver whose capabilities
    (None: not seen) do not declare task support for it: the spec's "MUST NOT"."""
    if receiver_capabilities is None or declares_tasks(method, receiver_capabilities):
        return []
    kind, name = AUGMENTABLE[method]
    return [
        Violation(
            Rule.TASK_NOT_NEGOTIATED,
            f"the request asks for a task, but the receiver did not declare "
            f"tasks.requests.{kind}.{name} in its capabilities",
            "/params/task",
        )
    ]


def declares_tasks(method: str, capabilities: Mapping[str, Any] | None) -> bool:
    """Whether 2025-11-25 capabilities declare task support for ``method`` requests."""
    if capabilities is None or method not in AUGMENTABLE:
        return False
    kind, name = AUGMENTABLE[method]
    tasks = capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, _MAPPING) else None
    group = requests.get(kind) if isinstance(requests, _MAPPING) else None
    return isinstance(group, _MAPPING) and isinstance(group.get(name), _MAPPING)


def task_support(definition: Mapping[str, Any]) -> str:
    """A listed tool's ``execution.taskSupport`` (``forbidden`` when absent)."""
    execution = definition.get("execution")
    support = execution.get("taskSupport") if isinstance(execution, _MAPPING) else None
    return support if isinstance(support, str) else "forbidden"


def refused_task_call(
    name: str, definition: Mapping[str, Any], augmented: bool
) -> tuple[Violation, tuple[int, str]] | None:
    """A 2025-11-25 call that breaks its tool's ``execution.taskSupport``, and the JSON-RPC
    error (-32601) the spec has the server answer it with; None for a call that keeps it.
    Only for a server that declared task support for tool calls: without it a client must
    not ask for a task, whatever a tool says (and a call that does is reported by
    :func:`augmentation_violations`)."""
    support = task_support(definition)
    quoted = quote_name(name)
    if augmented and support == "forbidden":
        why = f"tool {quoted} may not be called as a task (its execution.taskSupport)"
        return Violation(Rule.TASK_NOT_SUPPORTED, why, "/params/task"), (
            METHOD_NOT_FOUND,
            f"Tool {quoted} does not support task-augmented calls",
        )
    if not augmented and support == "required":
        why = f"tool {quoted} must be called as a task (its execution.taskSupport)"
        return Violation(Rule.TASK_REQUIRED, why, "/params"), (
            METHOD_NOT_FOUND,
            f"Tool {quoted} must be called as a task",
        )
    return None


def created_task(result: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The task a ``tools/call`` result creates, or None when it is the tool's result
    itself: 2026-07-28's ``CreateTaskResult`` is the task, marked ``resultType: "task"``;
    2025-11-25's holds it in ``task``."""
    if result.get("resultType") == "task":
        return result
    task = result.get("task")
    return task if isinstance(task, _MAPPING) and "content" not in result else None


def task_id_of(params: Mapping[str, Any] | None) -> str | None:
    """The ``taskId`` a ``tasks/*`` request names, if it names one in a string."""
    task_id = params.get("taskId") if params is not None else None
    return task_id if isinstance(task_id, str) else None


# --- what is remembered per task ----------------------------------------------------------------


@dataclass(slots=True)
class TaskRecord:
    """What a task was made from: the request's ``method`` and ``params``, and for a tool
    call the listed tool (``tool``, to check its result against) and its ``name``;
    ``status`` is the last one seen."""

    method: str
    params: Mapping[str, Any]
    name: str | None
    tool: CheckedTool | None
    status: str
    deadline: float | None

    def expired(self, now: float) -> bool:
        return self.deadline is not None and now >= self.deadline


DEFAULT_MAX_TASKS = 10_000
"""How many tasks a :class:`TaskBook` remembers by default (per session, per side)."""


class TaskBook:
    """The tasks one side has created, by id, at most ``max_tasks`` (the oldest forgotten
    first), each forgotten once its time to live is over.

    ``clock`` is for tests; a task's ``ttl`` (2025-11-25) or ``ttlMs`` (2026-07-28) is in
    milliseconds, null or absent meaning no limit.
    """

    def __init__(self, max_tasks: int = DEFAULT_MAX_TASKS, clock: Any = time.monotonic) -> None:
        self.max_tasks = max_tasks
        self._clock = clock
        self._tasks: OrderedDict[str, TaskRecord] = OrderedDict()

    def __len__(self) -> int:
        return len(self._tasks)

    def created(self, task: Mapping[str, Any], record: TaskRecord) -> None:
        """Remember the task ``task`` (its wire object) made as ``record`` says."""
        task_id = task.get("taskId")
        if not isinstance(task_id, str):
            return
        ttl = task.get("ttlMs", task.get("ttl"))
        if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl >= 0:
            record.deadline = self._clock() + ttl / 1000
        self._tasks[task_id] = record
        self._tasks.move_to_end(task_id)
        while len(self._tasks) > self.max_tasks:
            self._tasks.popitem(last=False)

    def get(self, task_id: str | None) -> TaskRecord | None:
        """The task ``task_id``, unless unknown, forgotten or expired."""
        if task_id is None:
            return None
        record = self._tasks.get(task_id)
        if record is not None and record.expired(self._clock()):
            del self._tasks[task_id]
            return None
        return record

    def forget(self, task_id: str) -> None:
        """Forget a task (its receiver said it is gone)."""
        self._tasks.pop(task_id, None)

    def moved(self, task_id: str, status: Any, pointer: str) -> list[Violation]:
        """A task's status, seen in a message at ``pointer``: the transition checked and
        remembered."""
        record = self.get(task_id)
        if record is None or not isinstance(status, str) or status == record.status:
            return []
        before = record.status
        if status not in _STATUSES or (before not in TERMINAL and before not in _NEXT):
            return []  # a status no revision has: its shape check says so
        if before in TERMINAL:
            problem = f"a task that was {before} (a final status) cannot become {status}"
            return [Violation(Rule.TASK_STATUS_TRANSITION, problem, pointer)]
        if status not in _NEXT[before]:
            problem = f"a task cannot go from {before} to {status}"
            return [Violation(Rule.TASK_STATUS_TRANSITION, problem, pointer)]
        record.status = status
        return []


def unknown_task(pointer: str) -> Violation:
    """A message about a task this session did not create (or has forgotten)."""
    return Violation(
        Rule.TASK_UNKNOWN,
        "the task is not one this session created, or it has expired or been forgotten: "
        "what is said about it cannot be checked",
        pointer,
    )


# --- 2026-07-28: the extension's messages ------------------------------------------------------

_STATUS = {"enum": ["working", "input_required", "completed", "failed", "cancelled"]}
_TASK_FIELDS: dict[str, Any] = {
    "taskId": {"type": "string"},
    "status": _STATUS,
    "statusMessage": {"type": "string"},
    "createdAt": {"type": "string"},
    "lastUpdatedAt": {"type": "string"},
    "ttlMs": {"type": ["integer", "null"], "minimum": 0},
    "pollIntervalMs": {"type": "integer", "minimum": 0},
    "_meta": {"type": "object"},
}
_TASK_REQUIRED = ["taskId", "status", "createdAt", "lastUpdatedAt"]
_ERROR = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
}
_INLINE = {
    "result": {"type": "object"},
    "error": _ERROR,
    "inputRequests": {
        "type": "object",
        "additionalProperties": {
            "type": "object",
            "required": ["method"],
            "properties": {"method": {"type": "string"}, "params": {"type": "object"}},
        },
    },
}
# What each status may carry inline: a final result when completed, an error when failed,
# input requests while input is required; nothing else.
_BY_STATUS = [
    {
        "if": {"properties": {"status": {"const": status}}},
        "then": {"not": {"anyOf": [{"required": [key]} for key in _INLINE if key not in allowed]}},
    }
    for status, allowed in (
        ("completed", {"result"}),
        ("failed", {"error"}),
        ("input_required", {"inputRequests"}),
        ("working", set()),
        ("cancelled", set()),
    )
]
_DETAILED: dict[str, Any] = {
    "type": "object",
    "required": _TASK_REQUIRED,
    "properties": {**_TASK_FIELDS, **_INLINE},
    "allOf": _BY_STATUS,
}
_ACK: dict[str, Any] = {
    "type": "object",
    "required": ["resultType"],
    "properties": {"resultType": {"const": "complete"}, "_meta": {"type": "object"}},
    "not": {"anyOf": [{"required": [key]} for key in ("taskId", "status", *_INLINE)]},
}
_PARAMS: dict[str, Any] = {
    "type": "object",
    "required": ["taskId"],
    "properties": {
        "taskId": {"type": "string"},
        "requestState": {"type": "string"},
        "inputResponses": {"type": "object"},
        "_meta": {"type": "object"},
    },
}
SHAPES: dict[str, dict[str, Any]] = {
    "CreateTaskResult": {
        "type": "object",
        "required": ["resultType", *_TASK_REQUIRED],
        "properties": {"resultType": {"const": "task"}, **_TASK_FIELDS},
        "not": {"anyOf": [{"required": [key]} for key in _INLINE]},
    },
    "tasks/get": {**_DETAILED, "required": ["resultType", *_TASK_REQUIRED]},
    "tasks/update": _ACK,
    "tasks/cancel": _ACK,
    "notifications/tasks/status": _DETAILED,
    "params": _PARAMS,
    "tasks/update params": {**_PARAMS, "required": ["taskId", "inputResponses"]},
}
"""The 2026-07-28 extension's messages, as JSON Schema: results by method,
``CreateTaskResult``, the status notification's params, and the requests' params."""

# The members each shape defines, for strict mode's unknown fields.
_KNOWN = {name: frozenset(shape.get("properties", {})) for name, shape in SHAPES.items()}


@cache
def _validator(name: str) -> Validator:
    return compile_schema(SHAPES[name])


def check_task_message(
    shape: str, value: Any, rule: Rule, pointer: str, *, strict: bool = False
) -> list[Violation]:
    """``value`` (at ``pointer``) against the 2026-07-28 extension's ``shape`` (a key of
    :data:`SHAPES`); a mismatch is ``rule``. ``strict`` also reports members the shape does
    not define."""
    found = [
        Violation(rule, issue.message, pointer + issue.instance_path)
        for issue in _validator(shape).validate(value).issues
    ]
    if strict and isinstance(value, _MAPPING):
        found += [
            Violation(
                Rule.UNKNOWN_FIELD,
                f"field {quote_name(key)} is not defined by the tasks extension",
                f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}",
                severity=Severity.ERROR,
            )
            for key in value
            if key not in _KNOWN[shape]
        ]
    return found
