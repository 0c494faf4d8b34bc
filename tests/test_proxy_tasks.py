"""Tasks through the proxy, end to end: a server that delivers a tool's final result through a
task cannot get past the ``outputSchema`` that way, a task is reached only by the session (or,
stateless, the client) that created it, and ``taskSupport`` is kept.

The server is ``proxy_fixtures/task_server.py`` (both task designs; sequential task ids).
stdio speaks 2025-11-25; HTTP speaks 2026-07-28 statelessly, where many clients share the
proxy's one channel to the server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2

from strictmcp.protocol.tasks import EXTENSION
from test_proxy_http import _ACCEPT, Process, answer, request

FIXTURES = Path(__file__).resolve().parent / "proxy_fixtures"
SERVER = FIXTURES / "task_server.py"
MODERN = "2026-07-28"


def recorded(workspace: Path) -> list[dict[str, Any]]:
    path = workspace / "calls"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


# --- stdio, 2025-11-25 -----------------------------------------------------------------------


class Stdio:
    def __init__(self, workspace: Path) -> None:
        server = [sys.executable, str(SERVER), str(workspace / "calls")]
        command = [sys.executable, "-m", "strictmcp.proxy", "--", *server]
        self.process = Process(command, workspace, "stdout", stdin=True)
        self.next_id = 0

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self.process.send(request(method, self.next_id, params))
        reply: dict[str, Any] = json.loads(self.process.next_line())
        assert reply.get("id") == self.next_id, reply
        return reply


def test_stdio_task_result_breaking_output_schema_is_refused(tmp_path: Path) -> None:
    proxy = Stdio(tmp_path)
    try:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        assert "result" in proxy.ask("initialize", init)
        proxy.process.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        proxy.ask("tools/list", {})
        # A valid task: its final result comes back as the server sent it.
        created = proxy.ask("tools/call", {"name": "report", "arguments": {}, "task": {}})
        good_id = created["result"]["task"]["taskId"]
        good = proxy.ask("tasks/result", {"taskId": good_id})["result"]
        assert good["structuredContent"] == {"total": 3}
        assert not good.get("isError")
        # A task whose final result breaks the outputSchema: refused, as a direct one is.
        created = proxy.ask(
            "tools/call", {"name": "report", "arguments": {"lie": True}, "task": {}}
        )
        bad_id = created["result"]["task"]["taskId"]
        assert proxy.ask("tasks/get", {"taskId": bad_id})["result"]["status"] == "completed"
        bad = proxy.ask("tasks/result", {"taskId": bad_id})["result"]
        assert bad["isError"] is True
        assert "structuredContent" not in bad or bad["structuredContent"] != {"total": "three"}
        assert "three" not in json.dumps(bad)
        assert bad["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": bad_id}
        # A task this session never created: answered by the proxy, never asked of the server.
        forged = proxy.ask("tasks/result", {"taskId": "task-77"})
        assert forged["error"]["code"] == -32602
        # taskSupport: a tool without it is not called as a task.
        refused = proxy.ask("tools/call", {"name": "quick", "arguments": {}, "task": {}})
        assert refused["error"]["code"] == -32601
    finally:
        proxy.process.stop()
    asked = [
        (c["method"], c["params"].get("taskId"), c["params"].get("name"))
        for c in recorded(tmp_path)
    ]
    assert ("tasks/result", "task-77", None) not in asked
    assert ("tools/call", None, "quick") not in asked


# --- HTTP, 2026-07-28 stateless --------------------------------------------------------------


def modern(
    method: str, id_: int, params: dict[str, Any], *, extension: bool = True
) -> tuple[dict[str, Any], dict[str, str]]:
    capabilities: dict[str, Any] = {"extensions": {EXTENSION: {}}} if extension else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    headers = {**_ACCEPT, "mcp-protocol-version": MODERN, "mcp-method": method}
    name = params.get("name", params.get("taskId"))
    if name is not None:
        headers["mcp-name"] = name
    return request(method, id_, {**params, "_meta": meta}), headers


def test_http_stateless_tasks_are_checked_and_kept_apart(tmp_path: Path) -> None:
    server = [sys.executable, str(SERVER), str(tmp_path / "calls")]
    command = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0", "--", *server]
    process = Process(command, tmp_path, "stderr")
    try:
        url = process.wait_for("listening on").rsplit(" ", 1)[1]
        with httpx2.Client(timeout=30) as http:

            def post(method: str, id_: int, params: dict[str, Any], **options: Any) -> Any:
                body, headers = modern(method, id_, params, **options)
                return answer(http.post(url, json=body, headers=headers))

            created = post("tools/call", 1, {"name": "report", "arguments": {"lie": True}})[
                "result"
            ]
            assert created["resultType"] == "task"
            public = created["taskId"]
            # The client sees the proxy's own unguessable id, not the server's "task-1".
            assert public != "task-1"
            assert len(public) >= 24
            done = post("tasks/get", 2, {"taskId": public})["result"]
            assert done["status"] == "completed"
            assert done["taskId"] == public
            assert done["result"]["isError"] is True
            assert "three" not in json.dumps(done)
            # The server's own id, guessed: not a task this client was given.
            guessed = post("tasks/get", 3, {"taskId": "task-1"})
            assert guessed["error"]["code"] == -32602
            # A valid task's inline result is handed on as it came.
            created = post("tools/call", 4, {"name": "report", "arguments": {}})["result"]
            fine = post("tasks/get", 5, {"taskId": created["taskId"]})["result"]
            assert fine["result"]["structuredContent"] == {"total": 3}
            # Without the extension, the same tool answers directly.
            direct = post("tools/call", 6, {"name": "report", "arguments": {}}, extension=False)
            assert direct["result"]["structuredContent"] == {"total": 3}
    finally:
        process.stop()
    asked = [c["params"].get("taskId") for c in recorded(tmp_path) if c["method"] == "tasks/get"]
    assert asked == ["task-1", "task-2"]  # the guessed one never reached the server


# --- check --call follows a task ---------------------------------------------------------------


def test_check_call_follows_a_task_to_its_result(tmp_path: Path) -> None:
    strictmcp = Path(sys.executable).with_name("strictmcp")
    server = [sys.executable, str(SERVER), str(tmp_path / "calls")]
    report = tmp_path / "report.json"
    command = [str(strictmcp), "check", "--call", "--cases", "3", "--tool", "batch"]
    command += ["--format", "json", "--output", str(report), "--", *server]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    asked = [c["method"] for c in recorded(tmp_path)]
    # Every call of the task-only tool was made as a task and followed to its result.
    calls = [c for c in recorded(tmp_path) if c["method"] == "tools/call"]
    assert calls
    assert all("task" in c["params"] for c in calls)
    assert asked.count("tasks/result") == len(calls)
