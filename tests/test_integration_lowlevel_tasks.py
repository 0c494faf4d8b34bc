"""protect() and a low-level SDK server's own tasks (SEP-2663), end to end at 2026-07-28: a
task's final result, inlined in ``tasks/get``, is judged as the direct result of its call would
be, and one for a task no call created is not trusted.

The server is ``proxy_fixtures/lowlevel_tasks_server.py`` (the conformance fixture's task store
on ``mcp.server.lowlevel.Server``). The client is the SDK's own ``Client`` pinned to 2026-07-28,
with a small tasks extension a client author would write: it declares the extension in every
request's ``_meta`` client capabilities and follows a ``CreateTaskResult`` with ``tasks/get``.
In process, ``Client(server)`` serves each request through the SDK's per-request path (its
middleware, handlers and serializer, no JSON-RPC framing); over stdio it is the real wire.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client
from pydantic import ConfigDict

from proxy_fixtures import lowlevel_tasks_server as fixture
from proxy_fixtures.task_store import TASKS, TaskStore
from strictmcp.integrations import AUDIT_LOGGER
from strictmcp.protocol.tasks import UNKNOWN_TASK

MODERN = "2026-07-28"
SRC = Path(__file__).resolve().parents[1] / "src"
# How many tasks/get a test sends before it gives up on a task that never finishes.
_POLLS = 200
T = TypeVar("T")


class GetTask(types.Request[types.GetTaskRequestParams, Literal["tasks/get"]]):
    """``tasks/get`` as SEP-2663 sends it: ``Mcp-Name`` is the task id over HTTP."""

    method: Literal["tasks/get"] = "tasks/get"
    params: types.GetTaskRequestParams
    name_param: ClassVar[str | None] = "taskId"


class CreatedTask(types.Result):
    """A ``CreateTaskResult`` (2026-07-28): the task itself, flat."""

    result_type: Literal["task"]
    task_id: str
    status: str


class TaskState(types.Result):
    """A ``tasks/get`` answer, whatever it holds: the test reads it as it was sent."""

    model_config = ConfigDict(extra="allow")


async def follow(session: ClientSession, task_id: str) -> dict[str, Any]:
    """``tasks/get`` until the task is no longer working; that last answer, as sent."""
    params = types.GetTaskRequestParams(task_id=task_id)
    for _ in range(_POLLS):
        answer = await session.send_request(GetTask(params=params), TaskState)
        body = answer.model_dump(by_alias=True, mode="json", exclude_unset=True)
        if body["status"] != "working":
            return body
        await anyio.sleep(0.01)
    raise AssertionError(f"task {task_id} never finished")


class Tasks(ClientExtension):
    """The client side of the tasks extension: each task a call is answered with is followed
    to its end; every final ``tasks/get`` answer is kept in ``seen``, as it came."""

    identifier = TASKS

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self._resolve)]

    async def _resolve(self, created: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
        body = await follow(ctx.session, created.task_id)
        self.seen.append(body)
        assert body["status"] == "completed", body
        return types.CallToolResult.model_validate(body["result"])


def _in_process(
    mode: Literal["enforce", "audit"],
    script: Callable[[Client, Tasks, TaskStore], Awaitable[T]],
    max_tasks: int = 1000,
) -> T:
    server, store = fixture.build(mode, max_tasks)

    async def run() -> T:
        tasks = Tasks()
        async with Client(server, mode=MODERN, extensions=[tasks]) as client:
            return await script(client, tasks, store)

    return anyio.run(run)


@asynccontextmanager
async def _stdio(mode: str, stderr: Path, tasks: Tasks) -> AsyncIterator[Client]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    script = Path(fixture.__file__).resolve()
    server = StdioServerParameters(command=sys.executable, args=[str(script), mode], env=env)
    with stderr.open("w") as errors:
        transport = stdio_client(server, errlog=errors)
        async with Client(transport, mode=MODERN, extensions=[tasks]) as client:
            yield client


def _call(client: Client, name: str, text: str) -> Awaitable[types.CallToolResult]:
    return client.call_tool(name, {"text": text})


def _assert_withheld(result: dict[str, Any]) -> None:
    """``result`` is strictmcp's refusal of broken_count's result, which it does not quote."""
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert "broken_count" in result["content"][0]["text"]
    assert "many" not in json.dumps(result)
    assert "tool-structured-content-invalid" in result["_meta"]["dev.strictmcp/validation"]["codes"]


def test_a_task_result_that_keeps_its_schema_arrives_unchanged() -> None:
    async def script(client: Client, tasks: Tasks, store: TaskStore) -> types.CallToolResult:
        return await _call(client, "count_words", "one two three")

    result = _in_process("enforce", script)
    assert result.is_error is False
    assert result.structured_content == {"words": 3}
    assert result.content == [types.TextContent(type="text", text="3 words")]


def test_a_task_result_breaking_its_schema_arrives_as_the_refusal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)

    async def script(client: Client, tasks: Tasks, store: TaskStore) -> dict[str, Any]:
        result = await _call(client, "broken_count", "one two three")
        assert result.is_error is True
        [body] = tasks.seen
        return body

    body = _in_process("enforce", script)
    # The task ended well as far as the server knows; its result is what strictmcp withheld.
    assert body["status"] == "completed"
    assert body["resultType"] == "complete"
    _assert_withheld(body["result"])
    [record] = [r for r in caplog.records if r.name == AUDIT_LOGGER]
    entry = record.__dict__["strictmcp"]
    assert (entry["method"], entry["tool"], entry["stage"]) == (
        "tools/call",
        "broken_count",
        "result",
    )
    assert (entry["action"], entry["pointer"]) == ("replaced", "/result/result/structuredContent")
    # Where in the tasks/get answer the result broke, never the value it broke it with.
    assert entry["issues"] == [
        {"code": "wrong-type", "pointer": "/result/result/structuredContent/words"}
    ]


def test_over_stdio_the_bad_result_is_withheld_and_the_good_one_passes(tmp_path: Path) -> None:
    tasks = Tasks()

    async def run() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with _stdio("enforce", tmp_path / "stderr", tasks) as client:
            return await _call(client, "count_words", "a b"), await _call(
                client, "broken_count", "a"
            )

    good, bad = anyio.run(run)
    assert good.structured_content == {"words": 2}
    assert bad.is_error is True
    good_body, bad_body = tasks.seen
    assert good_body["result"]["structuredContent"] == {"words": 2}
    _assert_withheld(bad_body["result"])
    assert (
        'tools/call "broken_count" replaced at the result stage'
        in (tmp_path / "stderr").read_text()
    )


def test_audit_mode_passes_a_bad_task_result_and_logs_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)

    async def script(client: Client, tasks: Tasks, store: TaskStore) -> dict[str, Any]:
        # The SDK client checks the outputSchema itself, so strictmcp's audit is all that
        # stands between this result and the caller: the client refuses it.
        with pytest.raises(RuntimeError, match="broken_count"):
            await _call(client, "broken_count", "one two")
        [body] = tasks.seen
        return body

    body = _in_process("audit", script)
    assert body["result"]["structuredContent"] == {"words": "many"}
    assert body["result"].get("isError", False) is False
    [record] = [r for r in caplog.records if r.name == AUDIT_LOGGER]
    entry = record.__dict__["strictmcp"]
    found = (entry["tool"], entry["action"], entry["mode"])
    assert found == ("broken_count", "would deny", "audit")


async def _behind_its_back(client: Client, store: TaskStore) -> dict[str, Any]:
    """A task the server's store runs though no call created it (another process of the same
    server, a store shared across restarts): ``tasks/get`` of its finished result."""
    task_id = store.start(fixture.counting("many"))["taskId"]
    return await follow(client.session, task_id)


def test_a_result_for_a_task_no_call_created_is_refused_in_enforce_mode() -> None:
    async def script(client: Client, tasks: Tasks, store: TaskStore) -> None:
        with pytest.raises(MCPError) as refused:
            await _behind_its_back(client, store)
        assert refused.value.error.code == UNKNOWN_TASK
        assert "Unknown task" in refused.value.error.message

    _in_process("enforce", script)


def test_audit_mode_hands_on_a_result_for_a_task_no_call_created(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)

    async def script(client: Client, tasks: Tasks, store: TaskStore) -> dict[str, Any]:
        return await _behind_its_back(client, store)

    body = _in_process("audit", script)
    assert body["result"]["structuredContent"] == {"words": "many"}
    [record] = [r for r in caplog.records if r.name == AUDIT_LOGGER]
    entry = record.__dict__["strictmcp"]
    assert (entry["method"], entry["action"]) == ("tasks/get", "would deny")


def test_a_forgotten_task_is_refused_and_a_remembered_one_still_judged() -> None:
    async def script(client: Client, tasks: Tasks, store: TaskStore) -> dict[str, Any]:
        # Call answers kept raw: the claim would follow each task at once.
        first = await _create(client.session, "count_words")
        second = await _create(client.session, "broken_count")
        with pytest.raises(MCPError) as refused:
            await follow(client.session, first)
        assert refused.value.error.code == UNKNOWN_TASK
        return await follow(client.session, second)

    body = _in_process("enforce", script, max_tasks=1)
    _assert_withheld(body["result"])


async def _create(session: ClientSession, name: str) -> str:
    created = await session.call_tool(name, {"text": "a"}, allow_claimed=True)
    assert isinstance(created, CreatedTask), created
    return created.task_id
