"""Attacks on the gateway's ``[[flow]]`` rules, made for real through ``strictmcp gateway``.

A malicious model or client reads a secret from one server (the recording fixture server
``vault``) and tries to carry it to another (``sink``) by every part of a message the gateway
sends a server: the ground truth is the sink's own record of every line it was sent
(``sink.wire.jsonl``), never what the gateway says it did. And what one server must not
see of another's (the client's progress on its requests, the tasks the client runs for it).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from strictmcp.policy import names
from test_flows import AWS, _read_secret, _stateless_gateway, flow_server, plant
from test_gateway import server_table, write_policy
from test_proxy_http import (  # noqa: F401 - a fixture
    Process,
    answer,
    handshake,
    in_session,
    processes,
    request,
)
from test_proxy_session import nested

_SECONDS = 30
_HANDSHAKE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"sampling": {}, "roots": {"listChanged": True}},
    "clientInfo": {"name": "attacker", "version": "1"},
}


class RawClient:
    """``strictmcp gateway`` over stdio, written to and read line by line, as a client that
    breaks the rules would."""

    def __init__(self, policy: Path, errlog: Path) -> None:
        with errlog.open("ab") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                cwd=errlog.parent,
            )
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            body = json.loads(line)
            for message in body if isinstance(body, list) else [body]:  # a batch's answers
                self.lines.put(message)
        self.lines.put(None)

    def write(self, *messages: Any) -> None:
        """Each of ``messages`` as one line, all in one write."""
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.process.stdin.flush()

    def answer(self, request_id: Any) -> dict[str, Any]:
        """The gateway's answer to ``request_id`` (what else came kept in ``seen``)."""
        for message in self.seen:
            if message.get("id") == request_id and "method" not in message:
                self.seen.remove(message)
                return message
        while True:
            line = self.lines.get(timeout=_SECONDS)
            assert line is not None, "the gateway ended before answering"
            if line.get("id") == request_id and "method" not in line:
                return line
            self.seen.append(line)

    def request(self, request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.write(message)
        return self.answer(request_id)

    def close(self) -> None:
        self.process.kill()
        self.process.wait(_SECONDS)


def _vault_and_sink(tmp_path: Path, *more: str) -> Path:
    planted = {"content": [{"type": "text", "text": f"AWS_ACCESS_KEY_ID={AWS}"}]}
    (tmp_path / "vault.next.json").write_text(json.dumps(planted), encoding="utf-8")
    return write_policy(
        tmp_path,
        server_table("vault", flow_server("vault", tmp_path, "read_secret", "fail", "log")),
        server_table("sink", flow_server("sink", tmp_path, "write_query")),
        '[[flow]]\nfrom = ["vault"]\nto = ["*"]\n',
        *more,
    )


def _started(tmp_path: Path, policy: Path) -> RawClient:
    client = RawClient(policy, tmp_path / "stderr.log")
    client.request(0, "initialize", _HANDSHAKE)
    client.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
    client.request("list", "tools/list")
    client.request("prompts", "prompts/list")
    client.request("resources", "resources/list")
    return client


def _sink_got(tmp_path: Path) -> str:
    record = tmp_path / "sink.wire.jsonl"
    return record.read_text(encoding="utf-8") if record.exists() else ""


def _carried(tmp_path: Path, policy: Path, attack: Callable[[str], list[Any]]) -> list[str]:
    """Send ``attack`` (its messages in one write, their ids made with a suffix), read the
    vault's secret, then send it again; after each, a clean call to the sink (answered only
    once the sink read every line before it). The sink's record before the read and after
    it, and the gateway's answers to the second attack's requests."""
    client = _started(tmp_path, policy)
    answers: list[dict[str, Any]] = []
    try:
        for phase in ("before", "after"):
            if phase == "after":
                read = client.request("read", "tools/call", {"name": "vault__read_secret"})
                assert AWS in json.dumps(read)
            messages = attack(phase)
            client.write(*messages)
            # A cancelled call ("c-") may never be answered.
            answers = [client.answer(m["id"]) for m in messages if m.get("id") == f"a-{phase}"]
            clean = {"name": "sink__write_query", "arguments": {"q": f"SELECT {phase}"}}
            assert "result" in client.request(f"clean-{phase}", "tools/call", clean)
    finally:
        client.close()
    got = _sink_got(tmp_path)
    before, _, after = got.partition("SELECT before")
    assert "SELECT after" in after  # the sink's record is complete up to the clean call
    return [before, after, json.dumps(answers)]


def _call(request_id: str, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def _note(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


_META = {"note": f"key {AWS}"}


_QUERY = {"name": "sink__write_query", "arguments": {"q": "SELECT 2"}}


def _completion(ref: dict[str, Any], value: str, **more: Any) -> dict[str, Any]:
    return {"ref": ref, "argument": {"name": "text", "value": value}, **more}


_PROMPT_REF = {"type": "ref/prompt", "name": "sink__note"}
_RESOURCE_REF = {"type": "ref/resource", "uri": "flow://sink/data"}

# Each way a request could carry the vault's secret to the sink (by the suffix of its ids).
REQUESTS: dict[str, Callable[[str], list[Any]]] = {
    "tools/call _meta": lambda p: [_call(f"a-{p}", "tools/call", {**_QUERY, "_meta": _META})],
    "tools/call other params key": lambda p: [
        _call(f"a-{p}", "tools/call", {**_QUERY, "extra": AWS})
    ],
    # Keys are data a server is sent as much as values are; and a finding's pointer must not
    # quote a key it was found in (the answer and the audit record are checked for it).
    "tools/call an argument's key": lambda p: [
        _call(f"a-{p}", "tools/call", {**_QUERY, "arguments": {"q": "SELECT 2", AWS: "x"}})
    ],
    "tools/call a params key, tainted below too": lambda p: [
        _call(f"a-{p}", "tools/call", {**_QUERY, AWS: {"inner": f"key {AWS}"}})
    ],
    "tools/call nested past any bound": lambda p: [
        _call(f"a-{p}", "tools/call", {**_QUERY, "_meta": {"note": nested(f"key {AWS}", 300)}})
    ],
    "tools/call a _meta key": lambda p: [
        _call(f"a-{p}", "tools/call", {**_QUERY, "_meta": {"note": {AWS: 1}}})
    ],
    "prompts/get _meta": lambda p: [
        _call(f"a-{p}", "prompts/get", {"name": "sink__note", "arguments": {}, "_meta": _META})
    ],
    "prompts/get name": lambda p: [
        _call(f"a-{p}", "prompts/get", {"name": f"sink__{AWS}", "arguments": {}})
    ],
    "resources/read _meta": lambda p: [
        _call(f"a-{p}", "resources/read", {"uri": "flow://sink/data", "_meta": _META})
    ],
    "completion/complete of a prompt": lambda p: [
        _call(f"a-{p}", "completion/complete", _completion(_PROMPT_REF, AWS))
    ],
    "completion/complete of a resource": lambda p: [
        _call(f"a-{p}", "completion/complete", _completion(_RESOURCE_REF, AWS))
    ],
    "completion/complete context": lambda p: [
        _call(
            f"a-{p}",
            "completion/complete",
            _completion(_PROMPT_REF, "x", context={"arguments": {"other": AWS}}),
        )
    ],
    "logging/setLevel _meta": lambda p: [
        _call(f"a-{p}", "logging/setLevel", {"level": "info", "_meta": _META})
    ],
}


@pytest.mark.parametrize("attack", list(REQUESTS))
def test_no_request_carries_tainted_data_to_another_server(tmp_path: Path, attack: str) -> None:
    before, after, answers = _carried(tmp_path, _vault_and_sink(tmp_path), REQUESTS[attack])
    assert AWS in before  # before the read, the same value is no flow: it arrives
    assert AWS not in after
    assert "flow-cross-server" in answers
    assert AWS not in answers
    stderr = (tmp_path / "stderr.log").read_text()
    assert "flow-cross-server" in stderr
    assert AWS not in stderr


def test_tainted_data_written_to_read_as_itself_reaches_no_other_server(tmp_path: Path) -> None:
    hidden = "\u200b".join(AWS)  # zero-width spaces between its characters
    attack = {**_QUERY, "arguments": {"q": f"SELECT '{hidden}'"}}
    _, _, answers = _carried(
        tmp_path, _vault_and_sink(tmp_path), lambda p: [_call(f"a-{p}", "tools/call", attack)]
    )
    sent = [json.loads(line) for line in _sink_got(tmp_path).splitlines()]
    queries = [m["params"]["arguments"]["q"] for m in sent if m.get("method") == "tools/call"]
    # Before the read it arrives (no flow yet); after it, only the clean calls do.
    assert queries == [f"SELECT '{hidden}'", "SELECT before", "SELECT after"]
    assert "flow-cross-server" in answers


# Each way a notification could: refused, it is dropped (no id to answer).
NOTIFICATIONS: dict[str, Callable[[str], list[Any]]] = {
    "roots/list_changed _meta": lambda p: [
        _note("notifications/roots/list_changed", {"_meta": _META})
    ],
    "cancelled reason, in the call's write": lambda p: [
        _call(f"c-{p}", "tools/call", _QUERY),
        _note("notifications/cancelled", {"requestId": f"c-{p}", "reason": f"key {AWS}"}),
    ],
    "initialized _meta": lambda p: [_note("notifications/initialized", {"_meta": _META})],
    "roots/list_changed _meta key": lambda p: [
        _note("notifications/roots/list_changed", {"_meta": {AWS: "x"}})
    ],
}


@pytest.mark.parametrize("attack", list(NOTIFICATIONS))
def test_no_notification_carries_tainted_data_to_another_server(
    tmp_path: Path, attack: str
) -> None:
    before, after, _ = _carried(tmp_path, _vault_and_sink(tmp_path), NOTIFICATIONS[attack])
    assert AWS in before
    assert AWS not in after
    stderr = (tmp_path / "stderr.log").read_text()
    assert "flow-cross-server" in stderr
    assert AWS not in stderr


def test_a_shortened_name_is_its_servers_for_the_flow_rules(tmp_path: Path) -> None:
    # With the separator ".", every name is shortened to be portable (`sink_write_query_`
    # and eight hex digits): the flow rules must still know whose tool it is.
    policy = _vault_and_sink(tmp_path, '[gateway]\nseparator = "."\n')
    client = _started(tmp_path, policy)
    try:
        names = [t["name"] for t in client.request("l", "tools/list")["result"]["tools"]]
        read = next(n for n in names if n.startswith("vault_read_secret_"))
        sink = next(n for n in names if n.startswith("sink_write_query_"))
        early = client.request("early", "tools/call", {"name": sink, "arguments": {"q": AWS}})
        assert not early["result"].get("isError")
        assert AWS in json.dumps(client.request("read", "tools/call", {"name": read}))
        for n, sent in enumerate((AWS, f"x {AWS} y")):
            refused = client.request(n, "tools/call", {"name": sink, "arguments": {"q": sent}})
            assert refused["result"]["isError"]
            assert "flow-cross-server" in json.dumps(refused)
            assert AWS not in json.dumps(refused)
    finally:
        client.close()
    assert _sink_got(tmp_path).count(AWS) == 1  # the early call's


def test_a_servers_error_taints_as_its_result_would(tmp_path: Path) -> None:
    # A database's error that echoes a row ("duplicate key ..."): the client read the secret
    # in the error's message, and it is the vault's as a result would be.
    (tmp_path / "vault.error.txt").write_text(f"duplicate key {AWS}", encoding="utf-8")
    client = _started(tmp_path, _vault_and_sink(tmp_path))
    try:
        failed = client.request("fail", "tools/call", {"name": "vault__fail", "arguments": {}})
        assert AWS in failed["error"]["message"]
        sent = client.request("w", "tools/call", {**_QUERY, "arguments": {"q": AWS}})
        assert sent["result"]["isError"]
        assert "flow-cross-server" in json.dumps(sent)
        assert AWS not in json.dumps(sent)
    finally:
        client.close()
    assert AWS not in _sink_got(tmp_path)


def test_a_servers_log_message_taints_as_its_result_would(tmp_path: Path) -> None:
    (tmp_path / "vault.error.txt").write_text(f"connected with {AWS}", encoding="utf-8")
    client = _started(tmp_path, _vault_and_sink(tmp_path))
    try:
        client.request("level", "logging/setLevel", {"level": "debug"})
        client.request("log", "tools/call", {"name": "vault__log", "arguments": {}})
        assert AWS in json.dumps(client.seen)  # the client read it in the log message
        client.request("w", "tools/call", {**_QUERY, "arguments": {"q": AWS}})
    finally:
        client.close()
    assert AWS not in _sink_got(tmp_path)


_LONG = "run_a_query_against_the_warehouse_and_return_every_row_it_finds"


def _sink_call_refused(tmp_path: Path, policy: Path) -> str:
    """Call the sink's one tool, by the name the gateway offers it as, with an argument its
    guard refuses: it must be refused and never reach the sink. The name offered."""
    client = _started(tmp_path, policy)
    try:
        listed = client.request("l", "tools/list")["result"]["tools"]
        [offered] = [t["name"] for t in listed if t["name"].startswith("sink")]
        call = {"name": offered, "arguments": {"q": "DROP TABLE t"}}
        refused = client.request("w", "tools/call", call)
        assert refused["result"].get("isError")
    finally:
        client.close()
    assert "DROP TABLE" not in _sink_got(tmp_path)
    return str(offered)


@pytest.mark.parametrize(
    ("separator", "tool", "glob"),
    [
        (".", "write_query", "sink.write_query"),  # every name is shortened with "."
        ("__", _LONG, f"sink__{_LONG}"),  # longer than 64 characters
        ("__", "write.query", "sink__write.query"),  # a character outside A-Za-z0-9_-
    ],
)
def test_a_guard_on_a_shortened_tools_full_name_applies(
    tmp_path: Path, separator: str, tool: str, glob: str
) -> None:
    policy = write_policy(
        tmp_path,
        server_table("sink", flow_server("sink", tmp_path, tool)),
        f'[gateway]\nseparator = "{separator}"\n',
        f'[[guard]]\ntool = "{glob}"\nargument = "/q"\nkind = "text"\nmax_length = 3\n',
    )
    assert _sink_call_refused(tmp_path, policy) != glob  # offered shortened: stderr says so


def test_a_server_cannot_answer_or_report_progress_on_another_servers_call(
    tmp_path: Path,
) -> None:
    # The vault is slow (it answers once the test plants its answer); meanwhile "evil" writes
    # an answer for every id the gateway may have given the vault's call, and progress for
    # the call's token (the client chose it; a server behind the same gateway can guess it).
    forged = {"content": [{"type": "text", "text": "forged"}]}
    progress = {"progressToken": "tok-v", "progress": 99, "total": 100, "message": "forged"}
    own = {"progressToken": "tok-f", "progress": 1, "total": 2, "message": "evil's own"}
    (tmp_path / "evil.forge.json").write_text(
        json.dumps(
            # Progress on its own call first (it reaches the client; its own call is
            # answered by the forged answer of its id, and later progress would not).
            [{"jsonrpc": "2.0", "method": "notifications/progress", "params": own}]
            + [{"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}]
            + [{"jsonrpc": "2.0", "id": n, "result": forged} for n in range(1, 100)]
        ),
        encoding="utf-8",
    )
    policy = write_policy(
        tmp_path,
        server_table(
            "vault", flow_server("vault", tmp_path, "read"), env='{ FLOW_SERVER_WAIT = "1" }'
        ),
        server_table("evil", flow_server("evil", tmp_path, "forge")),
    )
    client = _started(tmp_path, policy)
    try:
        slow = {"name": "vault__read", "_meta": {"progressToken": "tok-v"}}
        client.write(_call("v", "tools/call", slow))
        client.request(
            "f", "tools/call", {"name": "evil__forge", "_meta": {"progressToken": "tok-f"}}
        )
        planted = {"content": [{"type": "text", "text": "the vault's own"}]}
        plant(tmp_path / "vault.next.json", json.dumps(planted))
        answer = client.answer("v")
    finally:
        client.close()
    assert answer["result"] == planted
    assert "forged" not in json.dumps([m for m in client.seen if m.get("id") != "f"])
    assert [m["params"] for m in client.seen if m.get("method") == "notifications/progress"] == [
        own
    ]


def _asked_answer(client: RawClient, answer: Callable[[Any], dict[str, Any]]) -> None:
    """Have the sink ask the client for a sampling message, and answer it with ``answer``."""
    client.write(_call("ask", "tools/call", {"name": "sink__ask", "arguments": {"text": "q"}}))
    while True:
        message = client.lines.get(timeout=_SECONDS)
        assert message is not None
        if message.get("method") == "sampling/createMessage":
            break
        client.seen.append(message)
    client.write(answer(message["id"]))
    client.answer("ask")


_SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "fine"}, "model": "m"}


@pytest.mark.parametrize("kind", ["request", "notification", "answer"])
def test_a_member_json_rpc_does_not_define_reaches_no_server(tmp_path: Path, kind: str) -> None:
    # {"jsonrpc", "id", "method", "params", "extra": ...}: the flow rules search the params
    # (and an answer's result or error); the gateway sent the rest on as it came.
    planted = {"content": [{"type": "text", "text": f"AWS_ACCESS_KEY_ID={AWS}"}]}
    (tmp_path / "vault.next.json").write_text(json.dumps(planted), encoding="utf-8")
    policy = write_policy(
        tmp_path,
        server_table("vault", flow_server("vault", tmp_path, "read_secret")),
        server_table("sink", flow_server("sink", tmp_path, "write_query", "ask")),
        '[[flow]]\nfrom = ["vault"]\nto = ["*"]\n',
    )
    client = _started(tmp_path, policy)
    try:
        client.request("read", "tools/call", {"name": "vault__read_secret"})
        if kind == "request":
            client.write({**_call("x", "tools/call", _QUERY), "extra": AWS})
            assert "result" in client.answer("x")
        elif kind == "notification":
            client.write({**_note("notifications/roots/list_changed", {}), "extra": AWS})
        else:
            _asked_answer(
                client, lambda i: {"jsonrpc": "2.0", "id": i, "result": _SAMPLED, "x": AWS}
            )
        client.request("last", "tools/call", {**_QUERY, "arguments": {"q": "SELECT last"}})
    finally:
        client.close()
    got = _sink_got(tmp_path)
    assert "SELECT last" in got
    assert AWS not in got
    sent = {"request": "SELECT 2", "notification": "roots/list_changed", "answer": '"fine"'}
    assert sent[kind] in got  # the message itself arrived, without the member


def test_a_trace_header_carries_no_tainted_data_to_a_server(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    # Tracing on, over HTTP: the client's `tracestate` header is continued into the `_meta`
    # of what the gateway sends a server, after the flow rules searched the params.
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",  # nothing listens: none exported
        "OTEL_METRICS_EXPORTER": "none",
    }
    policy = _vault_and_sink(tmp_path)
    args = [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)]
    process = Process([*args, "--listen", "127.0.0.1:0"], tmp_path, "stderr", env=env)
    processes.append(process)
    url = process.wait_for("listening on").rsplit(" ", 1)[1]
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    async def test() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, url)
            headers = in_session(session_id)
            await http.post(url, json=request("tools/list", 1), headers=headers)
            read = request("tools/call", 2, {"name": "vault__read_secret"})
            assert AWS in json.dumps(answer(await http.post(url, json=read, headers=headers)))
            traced = {**headers, "traceparent": parent, "tracestate": f"k={AWS}"}
            call = request("tools/call", 3, _QUERY)
            answer(await http.post(url, json=call, headers=traced))

    anyio.run(test)
    got = _sink_got(tmp_path)
    assert "SELECT 2" in got
    assert AWS not in got


@pytest.mark.parametrize("separator", ["__", ".", "_."])
def test_a_servers_mode_holds_for_its_tools_offered_shortened(
    tmp_path: Path, separator: str
) -> None:
    # The file audits, the sink's server enforces: with a separator holding ".", every name
    # is shortened, and the sink's tools were judged in the file's mode (nothing refused).
    policy = write_policy(
        tmp_path,
        'mode = "audit"\n',
        server_table("sink", flow_server("sink", tmp_path, "write_query"), mode='"enforce"'),
        f'[gateway]\nseparator = "{separator}"\n',
        '[[guard]]\ntool = "*"\nargument = "/q"\nkind = "text"\nmax_length = 3\n',
    )
    _sink_call_refused(tmp_path, policy)


def test_a_servers_own_request_taints_as_its_result_would(tmp_path: Path) -> None:
    # The vault's sampling request shows the model the secret (its prompt); the model then
    # writes it to the sink.
    (tmp_path / "vault.error.txt").write_text(f" with {AWS}", encoding="utf-8")
    policy = write_policy(
        tmp_path,
        server_table("vault", flow_server("vault", tmp_path, "ask")),
        server_table("sink", flow_server("sink", tmp_path, "write_query")),
        '[[flow]]\nfrom = ["vault"]\nto = ["*"]\n',
    )
    client = _started(tmp_path, policy)
    try:
        client.write(_call("ask", "tools/call", {"name": "vault__ask", "arguments": {"text": "q"}}))
        while True:
            asked = client.lines.get(timeout=_SECONDS)
            assert asked is not None
            if asked.get("method") == "sampling/createMessage":
                break
        assert AWS in json.dumps(asked)
        client.write({"jsonrpc": "2.0", "id": asked["id"], "result": _SAMPLED})
        client.answer("ask")
        sent = client.request("w", "tools/call", {**_QUERY, "arguments": {"q": AWS}})
        assert sent["result"]["isError"]
    finally:
        client.close()
    assert AWS not in _sink_got(tmp_path)


def test_a_tool_excluded_by_its_full_name_is_not_offered_shortened(tmp_path: Path) -> None:
    policy = write_policy(
        tmp_path,
        'exclude_tools = ["sink.drop_all"]\n',
        server_table("sink", flow_server("sink", tmp_path, "drop_all", "write_query")),
        '[gateway]\nseparator = "."\n',
    )
    client = _started(tmp_path, policy)
    try:
        listed = client.request("l", "tools/list")["result"]["tools"]
        offered = [t["name"] for t in listed if t["name"].startswith("sink")]
        for name in offered:
            client.request(name, "tools/call", {"name": name, "arguments": {}})
    finally:
        client.close()
    assert len(offered) == 1  # write_query's
    assert '"drop_all"' not in _sink_got(tmp_path)


STATELESS: dict[str, tuple[str, dict[str, Any]]] = {
    "completion/complete": ("completion/complete", _completion(_PROMPT_REF, AWS)),
    "tools/call params key": ("tools/call", {**_QUERY, "extra": AWS}),
}


@pytest.mark.parametrize("attack", list(STATELESS))
def test_no_stateless_request_carries_tainted_data_to_another_server(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    attack: str,
) -> None:
    gateway = _stateless_gateway(tmp_path, processes)
    method, params = STATELESS[attack]
    gateway.post(method, params)  # before the read: no flow, and it arrives
    assert AWS in _sink_got(tmp_path)
    before = _sink_got(tmp_path).count(AWS)
    _read_secret(gateway, tmp_path)
    refused = gateway.post(method, params)
    assert "flow-cross-server" in json.dumps(refused)
    assert AWS not in json.dumps(refused)
    assert _sink_got(tmp_path).count(AWS) == before


def test_past_the_bound_of_shortened_names_none_more_is_offered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A server listing ever more long names cannot make a glob stop matching what it names:
    # past the bound, a name that would be shortened is not offered at all.
    monkeypatch.setattr(names, "_FULL_NAMES", {})
    monkeypatch.setattr(names, "MAX_SHORTENED", 2)
    assert names.shortened("s_a_1", "s.a.1")
    assert names.shortened("s_a_2", "s.a.2")
    assert not names.shortened("s_a_3", "s.a.3")
    assert names.shortened("s_a_1", "s.a.1")  # one kept already is still said
    assert names.tool_matches("s_a_2", "s.a.*")
    assert not names.tool_matches("s_a_3", "s.a.*")
    assert names.full_name("s_a_1") == "s.a.1"
    assert names.full_name("plain") == "plain"


def _asks_with_progress(tmp_path: Path, name: str) -> None:
    """Have the fixture server ``name``'s ``forge`` tool ask the client for a sampling
    message under the progress token ``tok``."""
    request = {
        "jsonrpc": "2.0",
        "id": f"s-{name}",
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}],
            "maxTokens": 5,
            "_meta": {"progressToken": "tok"},
        },
    }
    (tmp_path / f"{name}.forge.json").write_text(json.dumps([request]), encoding="utf-8")


def _progress_on_its_request(client: RawClient, name: str, *texts: str) -> Any:
    """Call ``name``'s ``forge``, then report progress on the sampling request it makes (one
    notification per text) and answer it; the token the client was given."""
    client.write(_call(name, "tools/call", {"name": f"{name}__forge", "arguments": {}}))
    while (message := client.lines.get(timeout=_SECONDS)) is not None:
        if message.get("method") == "sampling/createMessage":
            break
        client.seen.append(message)
    assert message is not None
    token = message["params"]["_meta"]["progressToken"]
    notes = [
        _note("notifications/progress", {"progressToken": token, "progress": n, "message": text})
        for n, text in enumerate(texts, 1)
    ]
    client.write(*notes, {"jsonrpc": "2.0", "id": message["id"], "result": _SAMPLED})
    client.answer(name)
    return token


def _progress_got(tmp_path: Path, name: str) -> list[Any]:
    wire = (tmp_path / f"{name}.wire.jsonl").read_text(encoding="utf-8").splitlines()
    return [
        m["params"] for m in map(json.loads, wire) if m.get("method") == "notifications/progress"
    ]


def test_the_clients_progress_reaches_only_the_server_that_asked(tmp_path: Path) -> None:
    # Both servers ask the client for a sampling message under the same progress token; the
    # client reports progress on each, then on a token no server's request has, and on one
    # whose request is answered.
    for name in ("a", "b"):
        _asks_with_progress(tmp_path, name)
    policy = write_policy(
        tmp_path,
        server_table("a", flow_server("a", tmp_path, "forge")),
        server_table("b", flow_server("b", tmp_path, "forge")),
    )
    client = _started(tmp_path, policy)
    asked_by = {}
    try:
        for name in ("a", "b"):
            asked_by[name] = _progress_on_its_request(client, name, f"for {name}")
        stray = {"progressToken": "tok", "progress": 2, "message": "nobody's"}
        late = {"progressToken": asked_by["a"], "progress": 3, "message": "after the answer"}
        client.write(_note("notifications/progress", stray), _note("notifications/progress", late))
        for name in ("a", "b"):  # answered once the server read every line before it
            note = {"name": f"{name}__note", "arguments": {"text": "done"}}
            assert "result" in client.request(f"done-{name}", "prompts/get", note)
    finally:
        client.close()
    assert asked_by["a"] != asked_by["b"]
    for name in ("a", "b"):
        assert _progress_got(tmp_path, name) == [
            {"progressToken": "tok", "progress": 1, "message": f"for {name}"}
        ]


def test_the_clients_progress_to_the_server_that_asked_carries_no_tainted_data(
    tmp_path: Path,
) -> None:
    planted = {"content": [{"type": "text", "text": f"AWS_ACCESS_KEY_ID={AWS}"}]}
    (tmp_path / "vault.next.json").write_text(json.dumps(planted), encoding="utf-8")
    _asks_with_progress(tmp_path, "sink")
    policy = write_policy(
        tmp_path,
        server_table("vault", flow_server("vault", tmp_path, "read_secret")),
        server_table("sink", flow_server("sink", tmp_path, "forge")),
        '[[flow]]\nfrom = ["vault"]\nto = ["*"]\n',
    )
    client = _started(tmp_path, policy)
    try:
        _progress_on_its_request(client, "sink", f"key {AWS}")  # before the read: no flow
        read = client.request("read", "tools/call", {"name": "vault__read_secret"})
        assert AWS in json.dumps(read)
        _progress_on_its_request(client, "sink", f"key {AWS}", "clean")
        note = {"name": "sink__note", "arguments": {"text": "done"}}
        assert "result" in client.request("done", "prompts/get", note)
    finally:
        client.close()
    messages = [p["message"] for p in _progress_got(tmp_path, "sink")]
    assert messages == [f"key {AWS}", "clean"]
    stderr = (tmp_path / "stderr.log").read_text()
    assert "flow-cross-server" in stderr
    assert AWS not in stderr


# --- the client's tasks are each server's own ------------------------------------------------

_TASKS_HANDSHAKE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {
        "sampling": {},
        "tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}},
    },
    "clientInfo": {"name": "tasks-client", "version": "1"},
}
_CLIENT_TASK = {
    "taskId": "c-1",
    "status": "working",
    "createdAt": "2026-11-27T00:00:00Z",
    "lastUpdatedAt": "2026-11-27T00:00:00Z",
    "ttl": 60000,
}


def _forging(tmp_path: Path, name: str, *messages: dict[str, Any]) -> None:
    """What the fixture server ``name``'s next ``forge`` call writes before it answers."""
    (tmp_path / f"{name}.forge.json").write_text(json.dumps(list(messages)), encoding="utf-8")


def _server_request(request_id: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def _wire(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    lines = (tmp_path / f"{name}.wire.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_a_server_sees_only_the_client_tasks_it_made(tmp_path: Path) -> None:
    # "a" asks the client for a sampling message as a task, which the client makes ("c-1");
    # "b" then asks for that task's result and lists the client's tasks, and the client
    # reports the task's status.
    sampling = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}],
        "maxTokens": 5,
    }
    policy = write_policy(
        tmp_path,
        server_table("a", flow_server("a", tmp_path, "forge")),
        server_table("b", flow_server("b", tmp_path, "forge")),
    )
    client = RawClient(policy, tmp_path / "stderr.log")
    asked: list[str] = []

    def call_and_answer(name: str, answers: dict[str, Any]) -> None:
        """Call ``name``'s forge; answer each request it makes of the client by method."""
        client.write(_call(name, "tools/call", {"name": f"{name}__forge", "arguments": {}}))
        while True:
            message = client.lines.get(timeout=_SECONDS)
            assert message is not None
            if message.get("id") == name and "method" not in message:
                break
            if "method" in message and "id" in message:
                asked.append(message["method"])
                result = answers[message["method"]]
                client.write({"jsonrpc": "2.0", "id": message["id"], "result": result})

    try:
        client.request(0, "initialize", _TASKS_HANDSHAKE)
        client.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        client.request("list", "tools/list")
        task_params = {**sampling, "task": {"ttl": 60000}}
        _forging(tmp_path, "a", _server_request("s-a", "sampling/createMessage", task_params))
        call_and_answer("a", {"sampling/createMessage": {"task": _CLIENT_TASK}})
        _forging(
            tmp_path,
            "b",
            _server_request("r-b", "tasks/result", {"taskId": "c-1"}),
            _server_request("l-b", "tasks/list", {}),
        )
        call_and_answer("b", {"tasks/list": {"tasks": [_CLIENT_TASK]}})
        _forging(tmp_path, "a", _server_request("g-a", "tasks/get", {"taskId": "c-1"}))
        call_and_answer("a", {"tasks/get": _CLIENT_TASK})
        status = {**_CLIENT_TASK, "status": "completed"}
        client.write(_note("notifications/tasks/status", status))
        for name in ("a", "b"):  # answered once the server read every line before it
            note = {"name": f"{name}__note", "arguments": {"text": "done"}}
            assert "result" in client.request(f"done-{name}", "prompts/get", note)
    finally:
        client.close()
    assert asked == ["sampling/createMessage", "tasks/list", "tasks/get"]  # no tasks/result
    a_got, b_got = _wire(tmp_path, "a"), _wire(tmp_path, "b")
    answers = {m["id"]: m for m in b_got if "method" not in m}
    assert answers["r-b"]["error"]["code"] == -32602
    assert answers["l-b"]["result"]["tasks"] == []
    assert not [m for m in b_got if m.get("method") == "notifications/tasks/status"]
    answers = {m["id"]: m for m in a_got if "method" not in m}
    assert answers["s-a"]["result"]["task"]["taskId"] == "c-1"
    assert answers["g-a"]["result"]["taskId"] == "c-1"
    statuses = [m["params"] for m in a_got if m.get("method") == "notifications/tasks/status"]
    assert [s["status"] for s in statuses] == ["completed"]


def test_a_server_can_say_only_its_own_elicitations_are_complete(tmp_path: Path) -> None:
    # "a" asks for a URL elicitation ("e-1"), and requires another in an error ("e-2"); "b"
    # says "e-1" (and "a"'s public name for it) is complete.
    handshake = {
        **_TASKS_HANDSHAKE,
        "capabilities": {"elicitation": {"form": {}, "url": {}}},
    }

    def url_elicitation(own: str) -> dict[str, Any]:
        return {"mode": "url", "elicitationId": own, "url": "https://a.test/", "message": "go"}

    def complete(own: str) -> dict[str, Any]:
        return _note("notifications/elicitation/complete", {"elicitationId": own})

    required = {
        "code": -32042,
        "message": "URL elicitation required",
        "data": {"elicitations": [url_elicitation("e-2")]},
    }
    _forging(
        tmp_path,
        "a",
        _server_request("e-a", "elicitation/create", url_elicitation("e-1")),
        complete("e-1"),
        # An answer to each id the gateway may have given the call: the call's is taken.
        *({"jsonrpc": "2.0", "id": n, "error": required} for n in range(1, 40)),
    )
    _forging(tmp_path, "b", complete("e-1"), complete("a__e-1"))
    policy = write_policy(
        tmp_path,
        server_table("a", flow_server("a", tmp_path, "forge")),
        server_table("b", flow_server("b", tmp_path, "forge")),
    )
    client = RawClient(policy, tmp_path / "stderr.log")
    try:
        client.request(0, "initialize", handshake)
        client.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        client.request("list", "tools/list")
        client.write(_call("a", "tools/call", {"name": "a__forge", "arguments": {}}))
        while (message := client.lines.get(timeout=_SECONDS)) is not None:
            if message.get("method") == "elicitation/create":
                client.write(
                    {"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept"}}
                )
            client.seen.append(message)
            if message.get("id") == "a" and "method" not in message:
                break
        assert "result" in client.request("b", "tools/call", {"name": "b__forge", "arguments": {}})
        client.request("done", "tools/list")
    finally:
        client.close()
    asked = [
        m["params"]["elicitationId"] for m in client.seen if "elicitationId" in m.get("params", {})
    ]
    said = [
        m["params"]["elicitationId"]
        for m in client.seen
        if m.get("method") == "notifications/elicitation/complete"
    ]
    assert asked[0] == "a__e-1"
    assert said == ["a__e-1", "b__e-1", "b__a__e-1"]  # only "a" completes "a"'s
    (failed,) = [m for m in client.seen if m.get("id") == "a"]
    assert [e["elicitationId"] for e in failed["error"]["data"]["elicitations"]] == ["a__e-2"]


def test_a_server_says_only_its_own_resources_changed_and_gets_no_others_context(
    tmp_path: Path,
) -> None:
    # "a" says its resource and "b"'s changed, then asks for a sampling message with the
    # context of "this server", which to the client would be every server behind the gateway.
    sampling = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}],
        "maxTokens": 5,
        "includeContext": "thisServer",
    }
    _forging(
        tmp_path,
        "a",
        _note("notifications/resources/updated", {"uri": "flow://b/data"}),
        _note("notifications/resources/updated", {"uri": "flow://a/data"}),
        _server_request("s-a", "sampling/createMessage", sampling),
    )
    policy = write_policy(
        tmp_path,
        server_table("a", flow_server("a", tmp_path, "forge")),
        server_table("b", flow_server("b", tmp_path, "forge")),
    )
    client = _started(tmp_path, policy)  # it lists the resources: each URI has its server
    try:
        client.write(_call("a", "tools/call", {"name": "a__forge", "arguments": {}}))
        while (message := client.lines.get(timeout=_SECONDS)) is not None:
            client.seen.append(message)
            if message.get("method") == "sampling/createMessage":
                client.write({"jsonrpc": "2.0", "id": message["id"], "result": _SAMPLED})
                break
        client.answer("a")
    finally:
        client.close()
    updated = [m["params"]["uri"] for m in client.seen if m.get("method", "").endswith("updated")]
    assert updated == ["flow://a/data"]
    (asked,) = [m for m in client.seen if m.get("method") == "sampling/createMessage"]
    assert asked["params"]["includeContext"] == "none"


def test_a_server_that_claims_a_resource_while_it_is_read_does_not_clean_its_data(
    tmp_path: Path,
) -> None:
    # The sink, first in the file, starts listing the vault's URI while the vault is reading
    # it: by the time the vault's answer comes, the gateway routes that URI to the sink. The
    # data is still the vault's, and must not reach the sink.
    # Both promise to say when their resources change: the vault's listing is then the
    # gateway's to reuse while the vault is busy with the read.
    promise = '{ FLOW_SERVER_LIST_CHANGED = "1" }'
    slow = '{ FLOW_SERVER_WAIT = "1", FLOW_SERVER_LIST_CHANGED = "1" }'
    policy = write_policy(
        tmp_path,
        server_table("sink", flow_server("sink", tmp_path, "write_query", "forge"), env=promise),
        server_table("vault", flow_server("vault", tmp_path), env=slow),
        '[[flow]]\nfrom = ["vault"]\nto = ["*"]\n',
    )
    changed = _note("notifications/resources/list_changed", {})
    (tmp_path / "sink.forge.json").write_text(json.dumps([changed]), encoding="utf-8")
    uri = "flow://vault/data"
    client = _started(tmp_path, policy)  # the listing: the vault's URI is the vault's
    try:
        client.write(_call("r", "resources/read", {"uri": uri}))
        calls = tmp_path / "vault.calls.jsonl"
        for _ in range(3000):  # until the vault has the read
            if calls.exists() and "resources/read" in calls.read_text(encoding="utf-8"):
                break
            time.sleep(0.01)
        (tmp_path / "sink.claims").write_text(uri, encoding="utf-8")
        client.request("claim", "tools/call", {"name": "sink__forge", "arguments": {}})
        relisted = client.request("relist", "resources/list")
        assert uri in json.dumps(relisted)
        stderr = (tmp_path / "stderr.log").read_text(encoding="utf-8")
        assert "servers 'sink' and 'vault' both list the resource" in stderr  # the sink's now
        plant(tmp_path / "vault.resource", f"AWS_ACCESS_KEY_ID={AWS}")
        assert AWS in json.dumps(client.answer("r"))
        query = {"name": "sink__write_query", "arguments": {"q": f"SELECT '{AWS}'"}}
        sent = client.request("send", "tools/call", query)
    finally:
        client.close()
    assert AWS not in _sink_got(tmp_path)
    assert "flow-cross-server" in json.dumps(sent)


def test_data_a_redact_rule_replaces_is_checked_again_as_sent(tmp_path: Path) -> None:
    # The vault's value holds path segments: a path that stays inside the root with them
    # leaves it once they are replaced by the marker. The guard saw the first; the server
    # must never be sent the second unchecked.
    root = tmp_path / "data"
    (root / "aa" / "bb").mkdir(parents=True)
    value = "aa/bb/cc/dd"
    planted = {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"v": value}}
    (tmp_path / "vault.next.json").write_text(json.dumps(planted), encoding="utf-8")
    policy = write_policy(
        tmp_path,
        server_table("vault", flow_server("vault", tmp_path, "read_secret")),
        server_table("sink", flow_server("sink", tmp_path, "write_query")),
        '[[flow]]\nfrom = ["vault"]\nto = ["*"]\nsensitive = ["/structuredContent/v"]\n'
        'action = "redact"\n',
        f'[[guard]]\ntool = "sink__*"\nargument = "/path"\nkind = "path"\n'
        f"roots = [{json.dumps(str(root))}]\n",
        f'[[guard]]\nmethod = "prompts/get"\nargument = "/arguments/*"\nkind = "path"\n'
        f"roots = [{json.dumps(str(root))}]\n",
    )
    client = _started(tmp_path, policy)
    try:
        escaping = {"name": "sink__write_query", "arguments": {"path": f"{root}/{value}/../../x"}}
        before = client.request("before", "tools/call", escaping)
        assert "isError" not in before["result"]  # inside the root: sent as it is
        read = client.request("read", "tools/call", {"name": "vault__read_secret"})
        assert value in json.dumps(read)
        after = client.request("after", "tools/call", escaping)
        assert after["result"]["isError"] is True
        assert "path" in json.dumps(after)  # the path guard's refusal, of what was to be sent
        # Data replaced where nothing else changes is sent, checked as it is.
        inside = {"name": "sink__write_query", "arguments": {"path": f"{root}/{value}"}}
        assert "isError" not in client.request("inside", "tools/call", inside)["result"]
        # A guarded request besides a tool call, the same.
        prompt = {"name": "sink__note", "arguments": {"text": f"{root}/{value}/../../x"}}
        refused = client.request("prompt", "prompts/get", prompt)
        assert refused["error"]["code"] == -32602
    finally:
        client.close()
    got = [json.loads(line) for line in (tmp_path / "sink.calls.jsonl").read_text().splitlines()]
    assert [entry["method"] for entry in got] == ["tools/call", "tools/call"]
    paths = [entry["params"]["arguments"]["path"] for entry in got]
    assert paths == [f"{root}/{value}/../../x", f"{root}/[redacted: data of 'vault']"]


def test_a_servers_requests_to_the_client_are_bounded_and_named_by_usable_ids(
    tmp_path: Path,
) -> None:
    # "evil" asks the client for its roots with ids no request may have, with an id already
    # waiting, and more times than the gateway lets one server's requests wait at once.
    bad_ids: list[Any] = [None, 1.5, {"a": 1}, [2], True]
    forged = [{"jsonrpc": "2.0", "id": bad, "method": "roots/list"} for bad in bad_ids]
    forged += [{"jsonrpc": "2.0", "id": "dup", "method": "roots/list"}] * 2
    forged += [{"jsonrpc": "2.0", "id": n, "method": "roots/list"} for n in range(10_000)]
    (tmp_path / "evil.forge.json").write_text(json.dumps(forged), encoding="utf-8")
    policy = write_policy(
        tmp_path,
        server_table("evil", flow_server("evil", tmp_path, "forge")),
        server_table("sink", flow_server("sink", tmp_path, "write_query")),
    )
    client = _started(tmp_path, policy)
    try:
        client.request("f", "tools/call", {"name": "evil__forge"})
        asked = [m for m in client.seen if m.get("method") == "roots/list"]
        # One "dup" and 9,999 of the numbered: the gateway's own ids, every one distinct.
        assert len(asked) == 10_000
        assert len({m["id"] for m in asked}) == 10_000
        # The client's answer to the last goes back to evil under the id it chose.
        client.write({"jsonrpc": "2.0", "id": asked[-1]["id"], "result": {"roots": []}})
        # The gateway serves on, the other server untouched.
        clean = {"name": "sink__write_query", "arguments": {"q": "SELECT 1"}}
        assert "result" in client.request("clean", "tools/call", clean)
    finally:
        client.close()
    record = (tmp_path / "evil.wire.jsonl").read_text()
    got = [json.loads(line) for line in record.split("\n")[:-1]]  # whole lines
    answers = [m for m in got if "method" not in m]
    by_id = {json.dumps(m["id"]): m for m in answers}
    assert by_id["9998"] == {"jsonrpc": "2.0", "id": 9998, "result": {"roots": []}}
    assert by_id['"dup"']["error"]["code"] == -32600  # the second, while the first waits
    assert by_id["9999"]["error"]["code"] == -32603  # one too many
    assert len(answers) == 3
    assert all(json.dumps(bad) not in answers for bad in bad_ids)
    stderr = (tmp_path / "stderr.log").read_text()
    assert "server 'evil' sent a request without a usable id" in stderr


def test_the_validate_dry_run_says_what_the_flow_rules_would_refuse(tmp_path: Path) -> None:
    client = _started(tmp_path, _vault_and_sink(tmp_path))
    query = {"tool": "sink__write_query", "arguments": {"q": f"SELECT '{AWS}'"}}
    try:
        before = client.request("v1", "tools/call", {"name": "validate", "arguments": query})
        client.request("read", "tools/call", {"name": "vault__read_secret"})
        after = client.request("v2", "tools/call", {"name": "validate", "arguments": query})
        call = {"name": "sink__write_query", "arguments": query["arguments"]}
        refused = client.request("call", "tools/call", call)
    finally:
        client.close()
    assert before["result"]["structuredContent"] == {"valid": True, "errors": [], "warnings": []}
    verdict = after["result"]["structuredContent"]
    assert verdict["valid"] is False
    assert [line.rsplit("[", 1)[1] for line in verdict["errors"]] == ["flow-cross-server]"]
    assert verdict["errors"][0].startswith("/q: ")
    assert AWS not in json.dumps(after)
    assert refused["result"]["isError"] is True  # as the real call is
