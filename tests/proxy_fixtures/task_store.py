"""Tasks for the conformance fixture: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663).

A tool that can run as a task hands over its *work*: a coroutine that is given a ``Job`` and
returns the tool's result. When the request declared the extension in its own client
capabilities (2026-07-28 on), ``TaskStore.start`` runs that work in the background and the
call is answered at once with a ``CreateTaskResult``. The client follows the task with
``tasks/get`` (the final result, the JSON-RPC error, or what the task asks the client, inlined),
answers what it asks with ``tasks/update`` and stops it with ``tasks/cancel``.

Field names are the pinned conformance suite's (``ttlMs``, ``pollIntervalMs``, no
``requestState`` on a task), which follows a newer SEP text than some published ones.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, NoReturn

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, ValidationError
from starlette.requests import Request

TASKS = "io.modelcontextprotocol/tasks"
# How long a task stays readable after it was created, and how often a client should poll.
TTL_MS = 300_000
POLL_INTERVAL_MS = 100

Context = ServerRequestContext[Any]
Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[Status] = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True)
class Question:
    """A request to the client a task shows in ``inputRequests``, and the result that answers it."""

    request: BaseModel
    answer: type[BaseModel]


class TaskParams(types.RequestParams):
    """The params of ``tasks/get`` and ``tasks/cancel``."""

    task_id: str = Field(alias="taskId")
    # Opaque to the client and echoed back; this fixture hands out none, so it reads none.
    request_state: str | None = None


class UpdateTaskParams(TaskParams):
    """The params of ``tasks/update``: answers to the task's ``inputRequests``, by key."""

    input_responses: dict[str, Any]


def _timestamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass
class Task:
    """One task's state: what ``tasks/get`` shows of it, and what its work waits for."""

    task_id: str
    created_at: datetime = field(default_factory=_now)
    updated_at: datetime = field(default_factory=_now)
    status: Status = "working"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    # What the task asks the client and is not answered yet, and every key it ever asked:
    # a key names one request for the task's whole life.
    asking: dict[str, Question] = field(default_factory=dict)
    asked: set[str] = field(default_factory=set)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    answered: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    @property
    def expired(self) -> bool:
        return _now() >= self.created_at + timedelta(milliseconds=TTL_MS)

    def move(self, status: Status) -> None:
        self.status = status
        self.updated_at = _now()

    def view(self) -> dict[str, Any]:
        """The task as a ``CreateTaskResult`` carries it: no result, error or input requests."""
        return {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": _timestamp(self.created_at),
            "lastUpdatedAt": _timestamp(self.updated_at),
            "ttlMs": TTL_MS,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }

    def detailed(self) -> dict[str, Any]:
        """The task as ``tasks/get`` shows it, with what its status inlines."""
        detailed = self.view()
        if self.status == "completed":
            detailed["result"] = self.result
        elif self.status == "failed":
            detailed["error"] = self.error
        elif self.status == "input_required":
            detailed["inputRequests"] = {
                key: question.request.model_dump(by_alias=True, mode="json", exclude_none=True)
                for key, question in self.asking.items()
            }
        return detailed

    async def run(self, work: Work) -> None:
        with self.scope:
            try:
                result = await work(Job(self))
            except MCPError as failure:
                self.error = failure.error.model_dump(by_alias=True, mode="json", exclude_none=True)
                self.move("failed")
            except Exception as crash:
                # What the SDK answers for a handler that raises, delivered through the task.
                self.error = {"code": types.INTERNAL_ERROR, "message": str(crash)}
                self.move("failed")
            else:
                self.result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
                self.move("completed")
        if self.scope.cancelled_caught:
            self.move("cancelled")

    def answer(self, responses: Mapping[str, Any]) -> None:
        """Take the answers to questions still open; anything else is ignored (SEP-2663)."""
        taken = False
        for key, response in responses.items():
            question = self.asking.get(key)
            if question is None:
                continue
            try:
                answer = question.answer.model_validate(response)
            except ValidationError:
                # Of the wrong kind: the question stays open, as an unanswered one does.
                continue
            self.answers[key] = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
            del self.asking[key]
            taken = True
        if not taken:
            return
        if self.asking:
            self.updated_at = _now()
        else:
            self.move("working")
            self.answered.set()


class Job:
    """What a task's work sees of its task: a way to ask the client things and wait."""

    def __init__(self, task: Task | None) -> None:
        self._task = task

    async def ask(self, questions: Mapping[str, Question]) -> dict[str, dict[str, Any]]:
        """Show ``questions`` in the task's ``inputRequests``; return the answers, by key.

        Without a task (the tool runs synchronously) there is nobody to wait for: the call
        needs the tasks extension.
        """
        task = self._task
        if task is None:
            _missing_extension()
        reused = task.asked & questions.keys()
        if reused:
            raise ValueError(f"input request keys asked before: {sorted(reused)}")
        task.asked |= questions.keys()
        task.asking.update(questions)
        task.answered = anyio.Event()
        task.move("input_required")
        await task.answered.wait()
        return {key: task.answers[key] for key in questions}


Work = Callable[[Job], Awaitable[types.CallToolResult]]


def synchronous() -> Job:
    """The job of work run inline, for a request that did not declare the extension."""
    return Job(None)


def negotiated(ctx: Context) -> bool:
    """Whether this request may be answered with a task: it declared the extension itself."""
    capabilities = ctx.session.client_capabilities
    return (
        ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        and capabilities is not None
        and TASKS in (capabilities.extensions or {})
    )


def _missing_extension() -> NoReturn:
    raise MCPError(
        types.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"This needs the client's {TASKS} extension",
        {"requiredCapabilities": {"extensions": {TASKS: {}}}},
    )


def require(ctx: Context) -> None:
    """Refuse a request that did not declare the extension with -32021, naming it."""
    if not negotiated(ctx):
        _missing_extension()


class TaskStore:
    """The server's tasks, by id, and the task group their work runs in."""

    def __init__(self) -> None:
        self._tasks: dict[str, Task] = {}
        self._group: TaskGroup | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run tasks while the block lasts; those still working when it ends are stopped."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    def start(self, work: Work) -> dict[str, Any]:
        """Run ``work`` as a new task; the ``CreateTaskResult`` that answers the call.

        The task is stored before the answer leaves, so a ``tasks/get`` right after it finds
        the task (SEP-2663's durable creation).
        """
        if self._group is None:
            raise RuntimeError("TaskStore.start outside TaskStore.running")
        self._forget_expired()
        # Task ids are the only thing that guards a task: unguessable, and header-safe.
        task = Task(secrets.token_urlsafe(24))
        self._tasks[task.task_id] = task
        self._group.start_soon(task.run, work)
        return {"resultType": "task", **task.view()}

    async def get(self, ctx: Context, params: TaskParams) -> dict[str, Any]:
        task = self._find(ctx, params)
        if task is None:
            raise MCPError(types.INVALID_PARAMS, "Failed to retrieve task: Task not found")
        return {"resultType": "complete", **task.detailed()}

    async def update(self, ctx: Context, params: UpdateTaskParams) -> dict[str, Any]:
        # Acknowledged even for a task this server does not know (SEP-2663).
        task = self._find(ctx, params)
        if task is not None:
            task.answer(params.input_responses)
        return {"resultType": "complete"}

    async def cancel(self, ctx: Context, params: TaskParams) -> dict[str, Any]:
        task = self._find(ctx, params)
        if task is None:
            raise MCPError(types.INVALID_PARAMS, "Failed to cancel task: Task not found")
        # Cancelling a finished task changes nothing and is acknowledged all the same.
        task.scope.cancel()
        return {"resultType": "complete"}

    def methods(self) -> list[tuple[str, type[TaskParams], Callable[..., Awaitable[Any]]]]:
        """The extension's request methods, their params and handlers, to register."""
        return [
            ("tasks/get", TaskParams, self.get),
            ("tasks/update", UpdateTaskParams, self.update),
            ("tasks/cancel", TaskParams, self.cancel),
        ]

    def _find(self, ctx: Context, params: TaskParams) -> Task | None:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # The extension does not exist before 2026-07-28.
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", ctx.method)
        require(ctx)
        _check_name_header(ctx, params.task_id)
        self._forget_expired()
        return self._tasks.get(params.task_id)

    def _forget_expired(self) -> None:
        for task_id, task in list(self._tasks.items()):
            if task.expired:
                task.scope.cancel()
                del self._tasks[task_id]


def _check_name_header(ctx: Context, task_id: str) -> None:
    # SEP-2663 makes tasks/* name-bearing over HTTP (Mcp-Name is the task id), which the
    # SDK's own header check does not cover yet.
    if not isinstance(ctx.request, Request):
        return
    if decode_header_value(ctx.request.headers.get(MCP_NAME_HEADER)) != task_id:
        raise MCPError(
            types.HEADER_MISMATCH,
            f"{MCP_NAME_HEADER} header does not match the request body's 'taskId' parameter",
        )
