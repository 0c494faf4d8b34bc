"""Each audit record carries the mode its stage ran in, and audit mode has one word at every
stage for what enforce mode would have refused, withheld or replaced: ``would deny``.

The policy's stages (``access``, ``rate``, ``policy``, its deep checks) run in audit mode
when either the proxy (``--mode audit``) or the policy (``mode = "audit"``) says so; the
proxy's own stages (``arguments``, ``result``, ``listing``, ``message``) follow ``--mode``.
Through the real stdio proxy in front of the fixture server, its audit log read back.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from strictmcp.enforce import Auditor, Enforcer
from strictmcp.policy import Identity, Policy
from strictmcp.protocol import Revision, ToolRegistry
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

[[rate_limit]]
tools = ["word_count"]
calls = 1
period = 600
"""
_INIT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}
# What each call meets: the access rules, the guard, the schema, the rate limit (the second
# word_count), and (word_count's) a result that breaks its outputSchema.
_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "/etc/hostname"}),
    ("echo", {"text": "far too long"}),
    ("echo", {"text": 5}),
    ("word_count", {"text": "one"}),
    ("word_count", {"text": "two"}),
]
_STAGES = ("access", "policy", "arguments", "rate", "result")


def _stages(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    policy: str,
    *options: str,
) -> Any:
    """Each stage's (mode, action) pairs in the audit log, once the calls are answered."""
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
    for number, (tool, arguments) in enumerate(_CALLS, 2):
        params = {"name": tool, "arguments": arguments}
        proxy.send({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params})
        assert json.loads(proxy.next_line())["id"] == number
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    return {
        stage: {(r["mode"], r["action"]) for r in records if r["stage"] == stage}
        for stage in _STAGES
    }


def _received(tmp_path: Path) -> list[str]:
    calls = tmp_path / "calls"
    lines = calls.read_text(encoding="utf-8").splitlines() if calls.exists() else []
    return [json.loads(line)["name"] for line in lines]


def test_in_enforce_mode_every_stage_acts(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    assert _stages(tmp_path, processes, _POLICY) == {
        "access": {("enforce", "refused")},
        "policy": {("enforce", "refused")},
        "arguments": {("enforce", "refused")},
        "rate": {("enforce", "refused")},
        "result": {("enforce", "replaced")},
    }
    assert _received(tmp_path) == ["word_count"]


def test_a_policy_in_audit_mode_runs_its_own_stages_in_audit_mode(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    assert _stages(tmp_path, processes, 'mode = "audit"\n' + _POLICY) == {
        "access": {("audit", "would deny")},
        "policy": {("audit", "would deny")},
        "arguments": {("enforce", "refused")},  # the schema is the proxy's, enforced
        "rate": {("audit", "would deny")},
        "result": {("enforce", "replaced")},
    }
    assert _received(tmp_path) == ["read_file", "echo", "word_count", "word_count"]


@pytest.mark.parametrize("policy_mode", ["enforce", "audit"])
def test_the_proxy_in_audit_mode_runs_every_stage_in_audit_mode(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    policy_mode: str,
) -> None:
    policy = f'mode = "{policy_mode}"\n' + _POLICY
    assert _stages(tmp_path, processes, policy, "--mode", "audit") == {
        stage: {("audit", "would deny")} for stage in _STAGES
    }
    received = _received(tmp_path)
    assert received == ["read_file", "echo", "echo", "word_count", "word_count"]


def test_audit_mode_says_would_deny_for_listings_prompts_and_hygiene_too() -> None:
    log = io.StringIO()
    policy = Policy.from_dict({"result": [{"tool": "*", "hygiene": "strip"}]})
    enforcer = Enforcer(policy=policy, mode="audit", auditor=Auditor(log))
    hidden = "hi\u200bdden"
    definition = {"name": "t", "description": hidden, "inputSchema": {"type": "object"}}
    assert enforcer.check_listing([definition], Revision.V2025_11_25) == set()
    registry = ToolRegistry(Revision.V2025_11_25)
    registry.update({"tools": [definition]})
    result = {"content": [{"type": "text", "text": hidden}]}
    assert enforcer.clean_result(registry, "t", registry.get("t"), result) is None
    records = [json.loads(line) for line in log.getvalue().splitlines()]
    assert {(r["stage"], r["mode"], r["action"]) for r in records} == {
        ("listing", "audit", "would deny"),
        ("result", "audit", "would deny"),
    }
    # A policy in audit mode under an enforcing proxy: its guards' record says so.
    guarded = Policy.from_dict(
        {
            "mode": "audit",
            "guard": [{"tool": "t", "argument": "/q", "kind": "text", "max_length": 1}],
        }
    )
    log = io.StringIO()
    enforcer = Enforcer(policy=guarded, auditor=Auditor(log))
    assert enforcer.check_call(registry, "t", {"q": "long"}, identity=Identity("ana")).allowed
    [record] = [json.loads(line) for line in log.getvalue().splitlines()]
    assert (record["stage"], record["mode"], record["action"]) == ("policy", "audit", "would deny")
