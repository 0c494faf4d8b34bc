"""Tasks, as 2025-11-25 defines them and as the 2026-07-28 extension does: each rule, and the
flows a capture of either shows (a valid task, a final result that breaks its tool's
``outputSchema``, ``taskSupport`` broken both ways, a result for a task no one created, a task
created for a request that did not ask for one)."""

from __future__ import annotations

import json
from typing import Any

from proxy_fixtures.task_server import STAMP, TOOLS
from strictmcp.protocol import (
    Conversation,
    Message,
    Revision,
    Rule,
    check_envelope,
    validate_capture,
)
from strictmcp.protocol.tasks import EXTENSION, TaskBook, TaskRecord
from strictmcp.protocol.wire import META_CLIENT_CAPABILITIES as CAPABILITIES

Obj = dict[str, Any]
V2025 = Revision.V2025_11_25
V2026 = Revision.V2026_07_28

GOOD = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"total": 3}}
BAD = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"total": "three"}}


def message(obj: Obj) -> Message:
    decoded, problems = check_envelope(obj, None)
    assert decoded is not None, problems
    return decoded


def codes(found: list[Any]) -> list[str]:
    return [v.code for v in found]


class Session:
    """A conversation driven message by message, with ids handed out in order."""

    def __init__(self, revision: Revision, *, server_tasks: bool = True) -> None:
        self.revision = revision
        self.conversation = Conversation(revision if revision is V2026 else None)
        self.next_id = 0
        if revision is V2025:
            capabilities: Obj = {"tools": {}}
            if server_tasks:
                capabilities["tasks"] = {"requests": {"tools": {"call": {}}}, "cancel": {}}
            init = self.ask(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            )
            self.answer(
                init,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": capabilities,
                    "serverInfo": {"name": "s", "version": "1"},
                },
            )
        listing = self.ask("tools/list", self.params({}))
        result: Obj = {"tools": TOOLS}
        if revision is V2026:
            result.update(resultType="complete", ttlMs=60_000, cacheScope="public")
        assert not self.answer(listing, result)

    def params(self, params: Obj, *, extension: bool = True) -> Obj:
        if self.revision is not V2026:
            return params
        capabilities: Obj = {"extensions": {EXTENSION: {}}} if extension else {}
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", CAPABILITIES: capabilities}
        return {**params, "_meta": meta}

    def ask(self, method: str, params: Obj, direction: str = "c2s") -> tuple[int, list[Any]]:
        self.next_id += 1
        obj = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        found = self.conversation.observe(message(obj), direction)  # type: ignore[arg-type]
        self.last_call = self.conversation.call
        return self.next_id, list(found)

    def answer(
        self, asked: tuple[int, list[Any]], result: Obj, direction: str = "s2c"
    ) -> list[Any]:
        obj = {"jsonrpc": "2.0", "id": asked[0], "result": result}
        return list(self.conversation.observe(message(obj), direction))  # type: ignore[arg-type]

    def notify(self, method: str, params: Obj, direction: str = "s2c") -> list[Any]:
        obj = {"jsonrpc": "2.0", "method": method, "params": params}
        return list(self.conversation.observe(message(obj), direction))  # type: ignore[arg-type]


def task(task_id: str = "t-1", status: str = "working", **extra: Any) -> Obj:
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": STAMP,
        "lastUpdatedAt": STAMP,
        "ttl": 60_000,
        **extra,
    }


def task_2026(task_id: str = "t-1", status: str = "working", **extra: Any) -> Obj:
    return {
        "taskId": task_id,
        "status": status,
        "createdAt": STAMP,
        "lastUpdatedAt": STAMP,
        "ttlMs": 60_000,
        **extra,
    }


# --- 2025-11-25 ----------------------------------------------------------------------------


def v2025_task(session: Session, result: Obj | None = None) -> None:
    call = session.ask("tools/call", {"name": "report", "arguments": {}, "task": {"ttl": 60_000}})
    assert call[1] == []
    assert session.last_call is not None
    assert session.last_call.allowed
    assert session.answer(call, {"task": task()}) == []


def test_2025_valid_task_flow() -> None:
    session = Session(V2025)
    v2025_task(session)
    get = session.ask("tasks/get", {"taskId": "t-1"})
    assert get[1] == []
    assert session.answer(get, {**task(status="working"), "pollInterval": 500}) == []
    assert session.notify("notifications/tasks/status", task(status="completed")) == []
    fetch = session.ask("tasks/result", {"taskId": "t-1"})
    payload = {**GOOD, "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"}}}
    assert session.answer(fetch, payload) == []


def test_2025_final_result_breaking_output_schema() -> None:
    session = Session(V2025)
    v2025_task(session)
    fetch = session.ask("tasks/result", {"taskId": "t-1"})
    found = session.answer(fetch, BAD)
    assert codes(found) == [Rule.TOOL_STRUCTURED_CONTENT_INVALID.value]
    assert found[0].pointer.startswith("/result/structuredContent")


def test_2025_result_for_unknown_task() -> None:
    session = Session(V2025)
    fetch = session.ask("tasks/result", {"taskId": "forged"})
    assert codes(fetch[1]) == [Rule.TASK_UNKNOWN.value]
    found = session.answer(fetch, GOOD)
    assert Rule.TASK_UNKNOWN.value in codes(found)


def test_2025_task_support_forbidden_and_required() -> None:
    session = Session(V2025)
    forbidden = session.ask("tools/call", {"name": "quick", "arguments": {}, "task": {}})
    assert codes(forbidden[1]) == [Rule.TASK_NOT_SUPPORTED.value]
    assert session.last_call is not None
    assert session.last_call.jsonrpc_error is not None
    assert session.last_call.jsonrpc_error[0] == -32601
    required = session.ask("tools/call", {"name": "batch", "arguments": {"n": 1}})
    assert codes(required[1]) == [Rule.TASK_REQUIRED.value]
    assert session.last_call is not None
    assert not session.last_call.allowed
    fine = session.ask("tools/call", {"name": "batch", "arguments": {"n": 1}, "task": {}})
    assert fine[1] == []
    assert session.last_call is not None
    assert session.last_call.allowed


def test_2025_task_without_the_servers_capability() -> None:
    session = Session(V2025, server_tasks=False)
    call = session.ask("tools/call", {"name": "report", "arguments": {}, "task": {}})
    assert codes(call[1]) == [Rule.TASK_NOT_NEGOTIATED.value]


def test_2025_task_created_for_a_request_that_did_not_ask() -> None:
    session = Session(V2025)
    call = session.ask("tools/call", {"name": "report", "arguments": {}})
    assert codes(session.answer(call, {"task": task()})) == [Rule.TASK_NOT_REQUESTED.value]


def test_2025_status_transitions() -> None:
    session = Session(V2025)
    v2025_task(session)
    assert session.notify("notifications/tasks/status", task(status="input_required")) == []
    assert session.notify("notifications/tasks/status", task(status="cancelled")) == []
    back = session.notify("notifications/tasks/status", task(status="working"))
    assert codes(back) == [Rule.TASK_STATUS_TRANSITION.value]


def test_2025_bad_task_shape() -> None:
    session = Session(V2025)
    call = session.ask("tools/call", {"name": "report", "arguments": {}, "task": {}})
    found = session.answer(call, {"task": {"taskId": 7, "status": "sleeping"}})
    assert found
    assert set(codes(found)) == {Rule.INVALID_RESULT.value}


def test_2025_client_side_task_for_sampling() -> None:
    session = Session(V2025)
    # The client declared no task support for sampling: a task-augmented request breaks it.
    asked = session.ask(
        "sampling/createMessage",
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 5,
            "task": {},
        },
        direction="s2c",
    )
    assert Rule.TASK_NOT_NEGOTIATED.value in codes(asked[1])


# --- 2026-07-28, the extension ---------------------------------------------------------------


def v2026_task(session: Session) -> None:
    call = session.ask("tools/call", session.params({"name": "report", "arguments": {}}))
    assert call[1] == []
    assert session.answer(call, {"resultType": "task", **task_2026()}) == []


def test_2026_valid_task_flow() -> None:
    session = Session(V2026)
    v2026_task(session)
    get = session.ask("tasks/get", session.params({"taskId": "t-1"}))
    assert get[1] == []
    assert session.answer(get, {"resultType": "complete", **task_2026()}) == []
    get = session.ask("tasks/get", session.params({"taskId": "t-1"}))
    done = {"resultType": "complete", **task_2026(status="completed"), "result": GOOD}
    assert session.answer(get, done) == []


def test_2026_inline_result_breaking_output_schema() -> None:
    session = Session(V2026)
    v2026_task(session)
    get = session.ask("tasks/get", session.params({"taskId": "t-1"}))
    done = {"resultType": "complete", **task_2026(status="completed"), "result": BAD}
    found = session.answer(get, done)
    assert codes(found) == [Rule.TOOL_STRUCTURED_CONTENT_INVALID.value]
    assert found[0].pointer.startswith("/result/result/structuredContent")


def test_2026_inline_result_in_a_status_notification() -> None:
    session = Session(V2026)
    v2026_task(session)
    found = session.notify(
        "notifications/tasks/status", {**task_2026(status="completed"), "result": BAD}
    )
    assert codes(found) == [Rule.TOOL_STRUCTURED_CONTENT_INVALID.value]
    assert found[0].pointer.startswith("/params/result/structuredContent")


def test_2026_task_without_the_extension_is_not_a_valid_answer() -> None:
    session = Session(V2026)
    call = session.ask(
        "tools/call", session.params({"name": "report", "arguments": {}}, extension=False)
    )
    found = session.answer(call, {"resultType": "task", **task_2026()})
    assert codes(found) == [Rule.TASK_NOT_REQUESTED.value]


def test_2026_tasks_get_without_the_extension() -> None:
    session = Session(V2026)
    v2026_task(session)
    get = session.ask("tasks/get", session.params({"taskId": "t-1"}, extension=False))
    assert codes(get[1]) == [Rule.TASK_NOT_NEGOTIATED.value]


def test_2026_unknown_task_with_a_result() -> None:
    session = Session(V2026)
    get = session.ask("tasks/get", session.params({"taskId": "forged"}))
    assert codes(get[1]) == [Rule.TASK_UNKNOWN.value]
    done = {"resultType": "complete", **task_2026("forged", "completed"), "result": GOOD}
    assert Rule.TASK_UNKNOWN.value in codes(session.answer(get, done))


def test_2026_result_with_an_error_and_inline_shapes() -> None:
    session = Session(V2026)
    v2026_task(session)
    get = session.ask("tasks/get", session.params({"taskId": "t-1"}))
    failed = {
        "resultType": "complete",
        **task_2026(status="failed"),
        "error": {"code": -32603, "message": "Internal error"},
    }
    assert session.answer(get, failed) == []
    # A working task carries no final result.
    session2 = Session(V2026)
    v2026_task(session2)
    get = session2.ask("tasks/get", session2.params({"taskId": "t-1"}))
    found = session2.answer(get, {"resultType": "complete", **task_2026(), "result": GOOD})
    assert found
    assert set(codes(found)) == {Rule.INVALID_RESULT.value}


def test_2026_update_and_cancel() -> None:
    session = Session(V2026)
    v2026_task(session)
    get = session.ask("tasks/get", session.params({"taskId": "t-1"}))
    asked = {
        "resultType": "complete",
        **task_2026(status="input_required"),
        "inputRequests": {
            "confirm-1": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Go?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"ok": {"type": "boolean"}},
                    },
                },
            }
        },
    }
    assert session.answer(get, asked) == []
    update = session.ask(
        "tasks/update",
        session.params(
            {
                "taskId": "t-1",
                "inputResponses": {"confirm-1": {"action": "accept", "content": {"ok": "yes"}}},
                "requestState": "opaque",
            }
        ),
    )
    assert Rule.ELICITATION_RESPONSE_INVALID.value in codes(update[1])
    assert session.answer(update, {"resultType": "complete"}) == []
    cancel = session.ask("tasks/cancel", session.params({"taskId": "t-1"}))
    assert cancel[1] == []
    found = session.answer(cancel, {"resultType": "complete", "taskId": "t-1"})
    assert codes(found) == [Rule.INVALID_RESULT.value]


def test_2026_removed_methods() -> None:
    session = Session(V2026)
    listing = session.ask("tasks/list", session.params({}))
    assert codes(listing[1]) == [Rule.METHOD_NOT_IN_REVISION.value]
    fetch = session.ask("tasks/result", session.params({"taskId": "t-1"}))
    assert codes(fetch[1]) == [Rule.METHOD_NOT_IN_REVISION.value]


# --- what is kept per task -------------------------------------------------------------------


def test_task_book_is_bounded_and_forgets_expired_tasks() -> None:
    now = [100.0]
    book = TaskBook(max_tasks=2, clock=lambda: now[0])

    def record() -> TaskRecord:
        return TaskRecord("tools/call", {}, "report", None, "working", None)

    book.created({"taskId": "a", "ttl": 1000}, record())
    book.created({"taskId": "b", "ttl": None}, record())
    assert book.get("a") is not None
    assert book.get("b") is not None
    now[0] += 1.5
    assert book.get("a") is None  # its ttl ran out
    assert book.get("b") is not None  # null: no limit
    book.created({"taskId": "c"}, record())
    book.created({"taskId": "d"}, record())
    assert len(book) == 2
    assert book.get("b") is None


# --- captures --------------------------------------------------------------------------------


def capture_lines(*messages: Obj) -> list[bytes]:
    return [json.dumps(m).encode() for m in messages]


def test_capture_of_a_task_flow_with_a_bad_final_result() -> None:
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    }
    server: Obj = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
    lines = capture_lines(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": server,
                "serverInfo": {"name": "s", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "result": {"tools": TOOLS}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "report", "arguments": {}, "task": {}},
        },
        {"jsonrpc": "2.0", "id": 3, "result": {"task": task()}},
        {"jsonrpc": "2.0", "id": 4, "method": "tasks/result", "params": {"taskId": "t-1"}},
        {"jsonrpc": "2.0", "id": 4, "result": BAD},
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "quick", "arguments": {}, "task": {}},
        },
        {"jsonrpc": "2.0", "id": 6, "method": "tasks/result", "params": {"taskId": "nope"}},
    )
    report = validate_capture(lines)
    found = [(f.line, f.violation.code) for f in report.findings]
    assert (8, Rule.TOOL_STRUCTURED_CONTENT_INVALID.value) in found
    assert (9, Rule.TASK_NOT_SUPPORTED.value) in found
    assert (10, Rule.TASK_UNKNOWN.value) in found
    assert not [f for f in found if f[0] < 8]
