"""StrictMiddleware and FastMCP's tasks (``fastmcp-tasks``, SEP-2663), end to end: a task's
final result, delivered inline by ``tasks/get``, is judged as the direct result of the call
would be. The server is ``fastmcp_tasks/server.py``, run from its own environment over stdio
and spoken to in raw JSON-RPC at 2026-07-28, the extension's revision."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError

from strictmcp.integrations._server_core import ServerCore
from strictmcp.protocol.tasks import UNKNOWN_TASK

ROOT = Path(__file__).resolve().parents[1]
TASKS_PYTHON = ROOT / ".venv-fastmcp-tasks" / "bin" / "python"
SERVER = Path(__file__).resolve().parent / "fastmcp_tasks" / "server.py"
EXTENSION = "io.modelcontextprotocol/tasks"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}},
}
# How many tasks/get a test sends before it gives up on a task that never finishes.
_POLLS = 200


class Session:
    """One stdio server, asked in order."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.next_id = 0

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        self.process.stdin.write(json.dumps({**message, "params": {**params, "_meta": META}}))
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        reply: dict[str, Any] = json.loads(self.process.stdout.readline())
        assert reply.get("id") == self.next_id, reply
        return reply

    def finished(self, tool: str, text: str) -> dict[str, Any]:
        """Call ``tool`` as a task; the ``tasks/get`` result that ends it."""
        created = self.ask("tools/call", {"name": tool, "arguments": {"text": text}})["result"]
        assert created["resultType"] == "task", created
        for _ in range(_POLLS):
            got: dict[str, Any] = self.ask("tasks/get", {"taskId": created["taskId"]})["result"]
            if got["status"] != "working":
                return got
            time.sleep(0.05)
        raise AssertionError(f"task {created['taskId']} never finished")


@contextmanager
def server(mode: str, tmp_path: Path) -> Iterator[tuple[Session, Path]]:
    assert TASKS_PYTHON.exists(), "run `make install-test`: it makes .venv-fastmcp-tasks"
    stderr = tmp_path / "stderr"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "FASTMCP_SHOW_SERVER_BANNER": "false"}
    with stderr.open("w") as errors:
        process = subprocess.Popen(
            [str(TASKS_PYTHON), str(SERVER), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=env,
        )
        try:
            yield Session(process), stderr
        finally:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_task_result_breaking_output_schema_is_replaced(tmp_path: Path) -> None:
    with server("enforce", tmp_path) as (session, stderr):
        good = session.finished("count_words", "one two three")
        bad = session.finished("broken_count", "one two three")
    assert good["status"] == "completed"
    assert good["result"]["structuredContent"] == {"words": 3}
    assert good["result"]["isError"] is False
    # The task ended well as far as the server knows; its result is what strictmcp withheld.
    assert bad["status"] == "completed"
    result = bad["result"]
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert "broken_count" in result["content"][0]["text"]
    assert "many" not in json.dumps(result)
    assert "tool-structured-content-invalid" in result["_meta"]["dev.strictmcp/validation"]["codes"]
    log = stderr.read_text()
    assert 'tools/call "broken_count" replaced at the result stage' in log


def test_audit_mode_logs_a_bad_task_result_and_passes_it(tmp_path: Path) -> None:
    with server("audit", tmp_path) as (session, stderr):
        bad = session.finished("broken_count", "one two")
    assert bad["result"]["structuredContent"] == {"words": "many"}
    assert bad["result"]["isError"] is False
    assert 'tools/call "broken_count" would deny at the result stage' in stderr.read_text()


@pytest.mark.parametrize("mode", ["enforce", "audit"])
def test_a_result_for_a_task_no_call_created_is_not_trusted(mode: str) -> None:
    core = ServerCore(mode="enforce" if mode == "enforce" else "audit")
    listing = core.listing("2026-07-28", [])
    body = {"taskId": "t-1", "status": "completed", "result": {"content": [], "isError": False}}
    if mode == "audit":
        assert core.task_result(listing, "tasks/get", "t-1", body) is None
        return
    with pytest.raises(MCPError) as refused:
        core.task_result(listing, "tasks/get", "t-1", body)
    assert refused.value.error.code == UNKNOWN_TASK
