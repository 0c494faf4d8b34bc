"""Reloading the policy while sessions stay open: SIGHUP and ``--watch``, for the stdio proxy
and the gateway, made for real on a running process whose session is never closed."""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

from test_proxy_http import (  # noqa: F401 - processes is a fixture
    FIXTURES,
    Process,
    modern,
    processes,
)

FIXTURE = Path(__file__).resolve().parent / "proxy_fixtures" / "gateway_server.py"
_INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "t", "version": "1"},
}


def _policy(tmp_path: Path, max_length: int, tool: str = "echo", extra: str = "") -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(
        extra
        + f'[[guard]]\ntool = "{tool}"\nargument = "/text"\nkind = "schema"\n'
        + f"schema = {{ maxLength = {max_length} }}\n",
        encoding="utf-8",
    )
    return path


class Client:
    """A client on the stdio of a running proxy or gateway, one request at a time."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.ids = iter(range(1, 1000))
        self.ask("initialize", _INIT)
        process.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.ask("tools/list", {})

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self.ids)
        self.process.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            reply: dict[str, Any] = json.loads(self.process.next_line())
            if reply.get("id") == request_id:
                return reply

    def refused(self, tool: str, text: str) -> bool:
        result = self.ask("tools/call", {"name": tool, "arguments": {"text": text}})["result"]
        return bool(result.get("isError"))


def _start(tmp_path: Path, processes: list[Process], *args: str) -> Client:  # noqa: F811
    process = Process([sys.executable, "-m", "strictmcp", *args], tmp_path, "stdout", stdin=True)
    processes.append(process)
    return Client(process)


def _proxy(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
    policy: Path,
    audit: Path,
    *options: str,
) -> Client:
    """A client of ``strictmcp proxy`` under ``policy``, auditing to ``audit``, in front of
    the fixture server."""
    args = ["--policy", str(policy), "--audit-log", str(audit), *options]
    return _start(tmp_path, processes, "proxy", *args, "--", sys.executable, str(FIXTURE), "solo")


def _records(path: Path) -> list[dict[str, Any]]:
    # Whole lines only: with --workers, another process may be writing the last one now.
    return [json.loads(line) for line in path.read_text().split("\n")[:-1]]


def _reloads(path: Path) -> list[dict[str, Any]]:
    return [r for r in _records(path) if r.get("event") == "policy-reload"]


def _wait_for(check: Any, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.05)


def test_sighup_puts_a_new_policy_in_force_in_the_open_session(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    policy = _policy(tmp_path, 3)
    audit = tmp_path / "audit.jsonl"
    client = _proxy(tmp_path, processes, policy, audit)
    assert client.refused("echo", "longer")
    _policy(tmp_path, 10)
    client.process.popen.send_signal(signal.SIGHUP)
    _wait_for(lambda: audit.exists() and _reloads(audit))
    # The same session, its next call judged by the new policy.
    assert not client.refused("echo", "longer")
    assert client.refused("echo", "longer than ten")
    (reload,) = _reloads(audit)
    assert reload["outcome"] == "applied"
    assert reload["old"] != reload["new"]
    assert len(reload["new"]) == 16


def test_a_policy_that_does_not_load_leaves_the_old_in_force(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    policy = _policy(tmp_path, 3)
    audit = tmp_path / "audit.jsonl"
    client = _proxy(tmp_path, processes, policy, audit)
    wrong = ("[[guard]\n", '[[guard]]\ntool = "echo"\nkind = "nonsense"\n', "colour = 1\n")
    for count, broken in enumerate(wrong, start=1):
        policy.write_text(broken, encoding="utf-8")
        client.process.popen.send_signal(signal.SIGHUP)
        _wait_for(lambda count=count: audit.exists() and len(_reloads(audit)) >= count)
        assert client.refused("echo", "longer")  # the old policy, still in force
    outcomes = [r["outcome"] for r in _reloads(audit)]
    assert outcomes == ["refused", "refused", "refused"]
    assert all("reason" in r and "new" not in r for r in _reloads(audit))


def test_watch_reloads_when_the_file_changes(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    policy = _policy(tmp_path, 3)
    audit = tmp_path / "audit.jsonl"
    client = _proxy(tmp_path, processes, policy, audit, "--watch")
    assert client.refused("echo", "longer")
    _policy(tmp_path, 10)
    _wait_for(lambda: audit.exists() and _reloads(audit))
    assert not client.refused("echo", "longer")


def test_the_gateway_reloads_its_guards_and_refuses_a_changed_server_table(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    servers = (
        f'[[server]]\nname = "a"\ncommand = {json.dumps([sys.executable, str(FIXTURE), "a"])}\n'
    )
    policy = _policy(tmp_path, 3, tool="a__echo", extra=servers)
    audit = tmp_path / "audit.jsonl"
    client = _start(
        tmp_path, processes, "gateway", "--policy", str(policy), "--audit-log", str(audit)
    )
    assert client.refused("a__echo", "longer")
    _policy(tmp_path, 10, tool="a__echo", extra=servers)
    client.process.popen.send_signal(signal.SIGHUP)
    _wait_for(lambda: audit.exists() and _reloads(audit))
    assert not client.refused("a__echo", "longer")
    # A server table changed: only a restart applies it, and the policy in force stays.
    _policy(tmp_path, 3, tool="a__echo", extra=servers.replace('"a"]', '"b"]'))
    client.process.popen.send_signal(signal.SIGHUP)
    _wait_for(lambda: len(_reloads(audit)) == 2)
    refused = _reloads(audit)[1]
    assert refused["outcome"] == "refused"
    assert "[[server]] changed, which only a restart applies" in refused["reason"]
    assert not client.refused("a__echo", "longer")


def test_workers_take_a_policy_only_once_the_supervisor_has_loaded_it(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    policy = _policy(tmp_path, 3)
    audit = tmp_path / "audit.jsonl"
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
    args = [sys.executable, "-m", "strictmcp", "proxy", "--listen", "127.0.0.1:0", "--workers"]
    args += ["2", "--policy", str(policy), "--audit-log", str(audit), "--", *server]
    proxy = Process(args, tmp_path, "stderr")
    processes.append(proxy)
    url = proxy.wait_for("listening on").rsplit(" ", 1)[1]

    def refusals(text: str, connections: int = 12) -> set[bool]:
        async def body() -> set[bool]:
            seen = set()
            for number in range(connections):  # a new connection each: either worker
                async with httpx2.AsyncClient(timeout=30) as http:
                    params = {"name": "echo", "arguments": {"text": text}}
                    call, headers = modern("tools/call", number, params)
                    answer = (await http.post(url, json=call, headers=headers)).json()
                    seen.add(bool(answer["result"].get("isError")))
            return seen

        return anyio.run(body)

    assert refusals("longer") == {True}
    policy.write_text("[[guard]\n", encoding="utf-8")
    proxy.popen.send_signal(signal.SIGHUP)
    _wait_for(lambda: audit.exists() and _reloads(audit))
    time.sleep(1)  # what a worker would have written by now, had it been told
    assert [r["outcome"] for r in _reloads(audit)] == ["refused"]  # the supervisor's alone
    assert refusals("longer") == {True}
    _policy(tmp_path, 10)
    proxy.popen.send_signal(signal.SIGHUP)
    # The supervisor's record, then each worker's: three in all, each applied.
    _wait_for(lambda: len(_reloads(audit)) == 4)
    assert [r["outcome"] for r in _reloads(audit)] == ["refused", "applied", "applied", "applied"]
    assert refusals("longer") == {False}


def _calls(path: Path) -> list[dict[str, Any]]:
    return [r for r in _records(path) if r.get("event") == "call"] if path.exists() else []


def _reloaded(client: Client, audit: Path, count: int) -> None:
    client.process.popen.send_signal(signal.SIGHUP)
    _wait_for(lambda: audit.exists() and len(_reloads(audit)) == count)
    assert _reloads(audit)[-1]["outcome"] == "applied"


def test_a_reloaded_audit_table_records_every_call_of_the_open_session(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    policy = _policy(tmp_path, 10)
    audit = tmp_path / "audit.jsonl"
    client = _proxy(tmp_path, processes, policy, audit)
    assert not client.refused("echo", "allowed")
    assert _calls(audit) == []
    _policy(tmp_path, 10, extra='[audit]\nrecord = "all"\n')
    _reloaded(client, audit, 1)
    # The same session: its next allowed call is recorded.
    assert not client.refused("echo", "allowed")
    (call,) = _calls(audit)
    assert (call["method"], call["tool"], call["outcome"]) == ("tools/call", "echo", "answered")
    _policy(tmp_path, 10, extra='[audit]\nrecord = "findings"\n')
    _reloaded(client, audit, 2)
    assert not client.refused("echo", "allowed")
    assert len(_calls(audit)) == 1  # none more


def test_audit_on_the_command_line_holds_whatever_a_reload_says(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    policy = _policy(tmp_path, 10)
    audit = tmp_path / "audit.jsonl"
    client = _proxy(tmp_path, processes, policy, audit, "--audit", "findings")
    _policy(tmp_path, 10, extra='[audit]\nrecord = "all"\n')
    _reloaded(client, audit, 1)
    assert not client.refused("echo", "allowed")
    assert _calls(audit) == []
