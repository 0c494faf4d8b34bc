"""The audit log names the request of every record, and with ``--audit all`` records every
call when it ends (allowed ones too), through a real proxy and server."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from strictmcp.policy import Policy, PolicyError
from test_proxy_http import FIXTURES, Process, processes  # noqa: F401 - processes is a fixture

_POLICY = """
[identity]
subject = "ana"

[[access]]
tools = ["echo", "word_count"]
subject = "ana"

[[guard]]
tool = "echo"
argument = "/text"
kind = "text"
max_length = 5
"""
_INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}
_SECRET_ID = "user ana's id: /home/ana/private?token=abc"
# Each call's id, tool and arguments: allowed, refused by the access rules, by the guard.
_CALLS: list[tuple[int | str, str, dict[str, Any]]] = [
    (7, "echo", {"text": "hi"}),
    ("call-8.b:x", "read_file", {"path": "/etc/hostname"}),
    (_SECRET_ID, "echo", {"text": "far too long"}),
    ("w" * 65, "word_count", {"text": "one two"}),
]


def _digest(request_id: str) -> str:
    return "sha256:" + hashlib.sha256(request_id.encode()).hexdigest()[:16]


def _records(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    *options: str,
    policy: str = _POLICY,
) -> tuple[list[dict[str, Any]], str]:
    """The audit log's records once every call is answered, and the log's text."""
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy, encoding="utf-8")
    audit = tmp_path / "audit.jsonl"
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
    args = [sys.executable, "-m", "strictmcp.proxy", "--policy", str(policy_file)]
    args += ["--audit-log", str(audit), *options, "--", *server]
    proxy = Process(args, tmp_path, "stdout", stdin=True)
    processes.append(proxy)
    proxy.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _INIT})
    assert json.loads(proxy.next_line())["id"] == 0
    proxy.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    proxy.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert json.loads(proxy.next_line())["id"] == 1
    for request_id, tool, arguments in _CALLS:
        params = {"name": tool, "arguments": arguments}
        proxy.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        assert json.loads(proxy.next_line())["id"] == request_id
    text = audit.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()], text


def test_findings_name_their_request_as_sent_or_digested(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    records, text = _records(tmp_path, processes)
    findings = {(r["stage"], r["request"]) for r in records}
    assert ("access", "call-8.b:x") in findings
    assert ("policy", _digest(_SECRET_ID)) in findings
    assert _SECRET_ID not in text
    assert "/home/ana" not in text
    # Allowed calls leave no trace without --audit all.
    assert not [r for r in records if r.get("event") == "call"]
    assert all(r["session"] == records[0]["session"] for r in records)


def test_audit_all_records_every_call_with_its_outcome_and_latency(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    records, text = _records(tmp_path, processes, "--audit", "all")
    calls = {r["request"]: r for r in records if r.get("event") == "call"}
    assert calls[0]["method"] == "initialize"
    assert calls[0]["outcome"] == "answered"
    assert calls[1]["method"] == "tools/list"
    assert calls[1]["tool"] is None
    expected = {
        7: ("echo", "answered"),
        "call-8.b:x": ("read_file", "refused"),
        _digest(_SECRET_ID): ("echo", "refused"),
        _digest("w" * 65): ("word_count", "answered"),
    }
    for request, (tool, ended) in expected.items():
        record = calls[request]
        assert (record["method"], record["tool"], record["outcome"]) == ("tools/call", tool, ended)
        assert isinstance(record["latency_ms"], float)
        assert record["latency_ms"] >= 0
        assert record["identity"] == {"subject": "ana", "clientId": None}
        assert record["session"] == calls[0]["session"]
    assert len(calls) == 6  # one per request: none for the notification
    assert _SECRET_ID not in text


@pytest.mark.parametrize(
    ("record", "options", "every_call"),
    [
        ("all", (), True),
        ("findings", (), False),
        (None, (), False),
        # --audit on the command line wins over the policy, either way.
        ("all", ("--audit", "findings"), False),
        ("findings", ("--audit", "all"), True),
    ],
)
def test_the_policy_asks_for_a_record_of_every_call(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    record: str | None,
    options: tuple[str, ...],
    every_call: bool,
) -> None:
    table = f'[audit]\nrecord = "{record}"\n' if record is not None else ""
    records, _ = _records(tmp_path, processes, *options, policy=table + _POLICY)
    calls = {r["request"]: r["outcome"] for r in records if r.get("event") == "call"}
    if every_call:
        assert calls[7] == "answered"  # the allowed call
        assert calls[_digest("w" * 65)] == "answered"
        assert calls["call-8.b:x"] == "refused"
        assert len(calls) == 6
    else:
        assert calls == {}
    # The findings are there either way.
    assert ("access", "call-8.b:x") in {(r.get("stage"), r["request"]) for r in records}


@pytest.mark.parametrize(
    "table",
    ['[audit]\nrecord = "everything"\n', "[audit]\nrecord = true\n", "[audit]\nlevel = 1\n"],
)
def test_a_wrong_audit_table_is_refused_when_loaded(table: str) -> None:
    with pytest.raises(PolicyError) as refused:
        Policy.loads(table.encode())
    assert "[audit]" in str(refused.value)
    assert "everything" not in str(refused.value)
