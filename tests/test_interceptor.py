"""``strictmcp interceptor``: strictmcp's checks as SEP-2624 interceptors, through a real
process over stdio (its answers are the ground truth), and its configuration errors.

Each test writes its requests to the process's stdin and reads every answer back by id: the
server answers in order and ends when its stdin does.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from strictmcp.interceptor import (
    Finding,
    Hook,
    Interceptor,
    InterceptorServer,
    Invocation,
    Mutation,
    Registry,
    StrictChecks,
    Validation,
    run_chain,
)

SECRET = "AKIA5MZXN8QRF3WBY6OE"  # an AWS access key id's shape, as the suite's fixtures use
TOOLS = {
    "tools": [
        {
            "name": "fs__read_file",
            "inputSchema": {
                "type": "object",
                "properties": {"path": {"type": "string", "maxLength": 256}},
                "required": ["path"],
            },
        },
        {
            "name": "db__write_query",
            "inputSchema": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
        {
            "name": "db__count",
            "inputSchema": {"type": "object"},
            "outputSchema": {
                "type": "object",
                "properties": {"count": {"type": "integer"}},
                "required": ["count"],
            },
        },
        {"name": "loose", "inputSchema": {"type": "object"}},
    ]
}
POLICY = """
[[server]]
name = "fs"
command = ["true"]

[[server]]
name = "db"
command = ["true"]

[[guard]]
tool = "fs__read_*"
argument = "/path"
kind = "path"
roots = ["{root}"]

[[result]]
tool = "*"
hygiene = "strip"
redact = true

[[flow]]
from = ["fs"]
to = ["db"]
"""


def serve(
    lines: list[Any], *args: str, cwd: Path | None = None
) -> tuple[dict[Any, Any], subprocess.CompletedProcess[bytes]]:
    """Run ``strictmcp interceptor ARGS`` on ``lines`` (objects, or raw bytes); the answers
    by id (``None``: the ones to unreadable lines, in order, as a list)."""
    data = b"".join(
        line if isinstance(line, bytes) else json.dumps(line).encode() + b"\n" for line in lines
    )
    done = subprocess.run(
        [sys.executable, "-m", "strictmcp", "interceptor", *args],
        input=data,
        capture_output=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )
    answers: dict[Any, Any] = {None: []}
    for line in done.stdout.splitlines():
        answer = json.loads(line)
        if answer.get("id") is None:
            answers[None].append(answer)
        else:
            answers[answer["id"]] = answer
    return answers, done


def invoke(
    id_: int, name: str, event: str, phase: str, payload: Any, session: str | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "event": event, "phase": phase, "payload": payload}
    if session is not None:
        params["context"] = {"sessionId": session}
    return {"jsonrpc": "2.0", "id": id_, "method": "interceptor/invoke", "params": params}


def call(id_: int, name: str, tool: str, arguments: Any, session: str | None = None) -> Any:
    return invoke(
        id_, name, "tools/call", "request", {"name": tool, "arguments": arguments}, session
    )


def result(id_: int, name: str, payload: Any, session: str | None = None) -> dict[str, Any]:
    return invoke(id_, name, "tools/call", "response", payload, session)


@pytest.fixture
def setup(tmp_path: Path) -> list[str]:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (tmp_path / "policy.toml").write_text(POLICY.format(root=tmp_path), encoding="utf-8")
    return ["--policy", str(tmp_path / "policy.toml"), "--tools", str(tmp_path / "tools.json")]


def codes(answer: dict[str, Any]) -> list[str]:
    return list(answer["result"].get("info", {}).get("codes", []))


def test_the_handshake_declares_the_extension_and_lists_the_five(setup: list[str]) -> None:
    answers, done = serve(
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "interceptors/list"},
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "interceptors/list",
                "params": {"event": "tools/list"},
            },
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "interceptors/list",
                "params": {"event": "resources/read"},
            },
        ],
        *setup,
    )
    assert done.returncode == 0
    init = answers[1]["result"]
    assert init["protocolVersion"] == "2025-06-18"
    assert init["capabilities"]["interceptor"]["supportedEvents"] == ["tools/call", "tools/list"]
    listed = answers[2]["result"]["interceptors"]
    assert [(i["name"], i["type"]) for i in listed] == [
        ("strictmcp/schema", "validation"),
        ("strictmcp/guards", "validation"),
        ("strictmcp/hygiene", "mutation"),
        ("strictmcp/flow", "validation"),
        ("strictmcp/listing", "validation"),
    ]
    assert all("mode" not in i and "failOpen" not in i for i in listed)
    names = [i["name"] for i in answers[3]["result"]["interceptors"]]
    assert names == ["strictmcp/schema", "strictmcp/listing"]
    assert answers[4]["result"] == {"interceptors": []}


def test_schema_judges_arguments_and_results_without_echoing_values(setup: list[str]) -> None:
    long_path = "/" + SECRET * 16  # over the maxLength: its value must not come back
    answers, _ = serve(
        [
            call(1, "strictmcp/schema", "fs__read_file", {"path": "/tmp/x"}),
            call(2, "strictmcp/schema", "fs__read_file", {"path": long_path}),
            call(3, "strictmcp/schema", "fs__read_file", {}),
            call(4, "strictmcp/schema", "no_such_tool", {}),
            call(5, "strictmcp/schema", "db__count", {}),
            result(6, "strictmcp/schema", {"content": [], "structuredContent": {"count": "x"}}),
            result(7, "strictmcp/schema", {"content": [], "structuredContent": {"count": 3}}),
        ],
        *setup,
    )
    assert answers[1]["result"] == {
        "interceptor": "strictmcp/schema",
        "type": "validation",
        "phase": "request",
        "valid": True,
    }
    too_long = answers[2]["result"]
    assert too_long["valid"] is False
    assert too_long["severity"] == "error"
    assert too_long["messages"][0]["path"] == "/arguments"
    assert SECRET not in json.dumps(answers[2])
    assert answers[3]["result"]["valid"] is False
    assert codes(answers[4]) == ["tool-unknown"]
    assert answers[5]["result"]["valid"] is True
    assert answers[6]["result"]["valid"] is False  # structuredContent against the outputSchema
    assert answers[6]["result"]["phase"] == "response"
    assert answers[7]["result"]["valid"] is True


def test_without_tools_a_call_is_judged_by_the_listing_the_session_saw(tmp_path: Path) -> None:
    listing = {"tools": [TOOLS["tools"][0]]}
    answers, _ = serve(
        [
            call(1, "strictmcp/schema", "fs__read_file", {"path": "/tmp/x"}, "a"),
            invoke(2, "strictmcp/schema", "tools/list", "response", listing, "a"),
            call(3, "strictmcp/schema", "fs__read_file", {"path": "/tmp/x"}, "a"),
            call(4, "strictmcp/schema", "fs__read_file", {"path": 7}, "a"),
            call(5, "strictmcp/schema", "fs__read_file", {"path": "/tmp/x"}, "b"),
        ]
    )
    assert codes(answers[1]) == ["tool-unknown"]  # nothing listed yet
    assert answers[2]["result"]["valid"] is True
    assert answers[3]["result"]["valid"] is True
    assert answers[4]["result"]["valid"] is False
    assert codes(answers[5]) == ["tool-unknown"]  # another session saw no listing


def test_guards_run_the_policy_on_arguments(setup: list[str], tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_text("x")
    answers, _ = serve(
        [
            call(1, "strictmcp/guards", "fs__read_file", {"path": str(tmp_path / "in.txt")}),
            call(2, "strictmcp/guards", "fs__read_file", {"path": "/etc/passwd"}),
            call(3, "strictmcp/guards", "fs__read_file", {"path": f"{tmp_path}/../{SECRET}"}),
            call(4, "strictmcp/guards", "no_such_tool", {}),
        ],
        *setup,
    )
    assert answers[1]["result"]["valid"] is True
    for refused in (answers[2], answers[3]):
        assert refused["result"]["valid"] is False
        assert refused["result"]["messages"][0]["path"].startswith("/arguments/path")
        assert all(code.startswith("path-") for code in codes(refused)), codes(refused)
    assert SECRET not in json.dumps(answers[3])
    assert answers[4]["result"]["valid"] is False


def test_hygiene_strips_and_redacts_a_result(setup: list[str]) -> None:
    hidden = "read me\u200b\U000e0041 now"
    answers, _ = serve(
        [
            call(1, "strictmcp/schema", "fs__read_file", {"path": "/tmp/x"}),
            result(2, "strictmcp/hygiene", {"content": [{"type": "text", "text": hidden}]}),
            result(3, "strictmcp/hygiene", {"content": [{"type": "text", "text": f"k={SECRET}"}]}),
            result(4, "strictmcp/hygiene", {"content": [{"type": "text", "text": "plain"}]}),
        ],
        *setup,
    )
    stripped = answers[2]["result"]
    assert stripped["type"] == "mutation"
    assert stripped["modified"] is True
    assert stripped["payload"]["content"][0]["text"] == "read me now"
    assert codes(answers[2])
    redacted = answers[3]["result"]
    assert redacted["modified"] is True
    assert SECRET not in json.dumps(redacted)
    assert answers[4]["result"] == {
        "interceptor": "strictmcp/hygiene",
        "type": "mutation",
        "phase": "response",
        "modified": False,
        "payload": {"content": [{"type": "text", "text": "plain"}]},
    }


def test_flow_refuses_what_one_server_returned_on_its_way_to_another(setup: list[str]) -> None:
    read = {"content": [{"type": "text", "text": f"KEY={SECRET}"}]}
    query = {"query": f"INSERT INTO t VALUES ('{SECRET}')"}
    answers, _ = serve(
        [
            call(1, "strictmcp/flow", "fs__read_file", {"path": "/tmp/.env"}, "a"),
            result(2, "strictmcp/flow", read, "a"),
            call(3, "strictmcp/flow", "db__write_query", query, "a"),
            call(4, "strictmcp/flow", "db__write_query", query, "b"),  # session isolation
            call(5, "strictmcp/flow", "fs__read_file", {"path": SECRET}, "a"),  # same origin
            call(6, "strictmcp/flow", "loose", {"x": SECRET}, "a"),  # no server to tell
            call(7, "strictmcp/flow", "db__write_query", {"query": "SELECT 1"}, "a"),
        ],
        *setup,
    )
    assert answers[2]["result"]["valid"] is True
    refused = answers[3]["result"]
    assert refused["valid"] is False
    assert refused["messages"][0]["path"] == "/arguments/query"
    assert SECRET not in json.dumps(answers[3])
    assert answers[4]["result"]["valid"] is True
    assert answers[5]["result"]["valid"] is True
    assert codes(answers[6]) == ["interceptor-server-unknown"]
    assert answers[7]["result"]["valid"] is True


def test_listing_runs_the_listing_rules(setup: list[str]) -> None:
    poisoned = {
        "name": "t",
        "description": "Fine.\U000e0049\U000e0047",
        "inputSchema": {"type": "object"},
    }
    clean = {"name": "u", "description": "Fine.", "inputSchema": {"type": "object"}}
    answers, _ = serve(
        [
            invoke(1, "strictmcp/listing", "tools/list", "response", {"tools": [clean, poisoned]}),
            invoke(2, "strictmcp/listing", "tools/list", "response", {"tools": [clean]}),
        ],
        *setup,
    )
    found = answers[1]["result"]
    assert found["valid"] is False
    assert "SMT401" in codes(answers[1])
    assert found["messages"][0]["path"].startswith("/tools/1")
    assert answers[2]["result"]["valid"] is True


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"not json\n", -32700),
        (b'{"jsonrpc": "2.0", "id": 9}\n', -32600),
        (b"[]\n", -32600),
        (b'{"jsonrpc":"2.0","id":9,"method":"interceptor/invoke"}\n', -32602),
        (b'{"jsonrpc":"2.0","id":9,"method":"interceptor/invoke","params":[1]}\n', -32600),
        (
            b'{"jsonrpc":"2.0","id":9,"method":"interceptor/invoke","params":{"name":"strictmcp/schema"'
            b',"event":"tools/call","phase":"later","payload":{}}}\n',
            -32602,
        ),
        (
            b'{"jsonrpc":"2.0","id":9,"method":"interceptor/invoke","params":{"name":"strictmcp/schema"'
            b',"event":"tools/call","phase":"request"}}\n',
            -32602,
        ),
        (
            b'{"jsonrpc":"2.0","id":9,"method":"interceptor/invoke","params":{"name":"strictmcp/hygiene"'
            b',"event":"tools/call","phase":"request","payload":{}}}\n',
            -32602,
        ),
        (
            b'{"jsonrpc":"2.0","id":9,"method":"interceptor/invoke","params":{"name":"strictmcp/nope"'
            b',"event":"tools/call","phase":"request","payload":{}}}\n',
            -32602,
        ),
        (b'{"jsonrpc":"2.0","id":9,"method":"interceptors/list","params":{"event":3}}\n', -32602),
        (b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}}\n', -32601),
        (
            b'{"jsonrpc":"2.0","id":9,"method":"interceptor/invoke","params":{"name":"strictmcp/schema"'
            b',"event":"tools/call","phase":"request","payload":{},"context":"x"}}\n',
            -32602,
        ),
        (
            b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"'
            + b"a" * (5 << 20)
            + b'"}}\n',
            -32600,
        ),
    ],
)
def test_a_malformed_message_gets_its_error_and_the_server_goes_on(
    setup: list[str], line: bytes, code: int
) -> None:
    after = {"jsonrpc": "2.0", "id": 10, "method": "ping"}
    answers, done = serve([line, after], *setup)
    got = answers[9] if 9 in answers else answers[None][0]
    assert got["error"]["code"] == code
    assert answers[10]["result"] == {}  # still serving, in order
    assert done.returncode == 0
    assert b"Traceback" not in done.stderr


def test_a_payload_no_check_can_read_is_refused_never_passed_on(setup: list[str]) -> None:
    answers, done = serve(
        [
            invoke(1, "strictmcp/listing", "tools/list", "response", {"tools": [1, None, "x"]}),
            invoke(2, "strictmcp/schema", "tools/list", "response", [SECRET]),
            result(3, "strictmcp/hygiene", {"content": []}),  # no call named its tool
            call(4, "strictmcp/schema", "fs__read_file", {"path": "/tmp/x"}),
            result(5, "strictmcp/hygiene", [SECRET]),
            result(6, "strictmcp/schema", [SECRET]),
            call(7, "strictmcp/flow", "fs__read_file", "not arguments"),
            {"jsonrpc": "2.0", "id": 8, "method": "ping"},
        ],
        *setup,
    )
    assert answers[1]["result"]["valid"] is False
    assert answers[2]["result"]["valid"] is False
    assert answers[3]["error"]["code"] == -32602
    assert answers[5]["error"]["code"] == -32602
    assert answers[6]["result"]["valid"] is False
    assert answers[7]["result"]["valid"] is True  # nothing read yet: no flow to refuse
    for id_ in (1, 2, 3, 5, 6, 7):
        assert SECRET not in json.dumps(answers[id_])
    assert answers[8]["result"] == {}
    assert done.returncode == 0
    assert done.stderr == b""


@pytest.mark.parametrize(
    ("option", "content", "said"),
    [
        ("--policy", "[[guard]\n", "--policy:"),
        ("--tools", '{"not": "tools"}', "--tools:"),
        ("--pin", "{}", "--pin:"),
    ],
)
def test_a_configuration_that_does_not_load_is_exit_2(
    tmp_path: Path, option: str, content: str, said: str
) -> None:
    bad = tmp_path / "bad"
    bad.write_text(content, encoding="utf-8")
    _, done = serve([], option, str(bad))
    assert done.returncode == 2
    assert said in done.stderr.decode()
    assert b"Traceback" not in done.stderr


# --- the chain executor, sans I/O ------------------------------------------------------------


def _chain_registry(ran: list[str], *, audit_crash: bool = False) -> Registry:
    hooks = (Hook(("tools/call",), "request"), Hook(("tools/call",), "response"))

    async def deny(_: Any) -> Validation:
        ran.append("deny")
        return Validation((Finding("no", "error"),))

    async def mutate(_: Any) -> Mutation:
        ran.append("mutate")
        return Mutation({"changed": True}, True)

    async def crash(_: Any) -> Validation:
        ran.append("crash")
        raise RuntimeError(SECRET)

    if audit_crash:
        return Registry([Interceptor("c", "validation", hooks, crash, mode="audit")])
    return Registry(
        [Interceptor("d", "validation", hooks, deny), Interceptor("m", "mutation", hooks, mutate)]
    )


def test_a_response_a_validator_refuses_is_never_mutated() -> None:
    ran: list[str] = []
    done = anyio.run(run_chain, _chain_registry(ran), Invocation("tools/call", "response", {}))
    assert done.decision == "deny"
    assert ran == ["deny"]  # validations first, and the mutator never ran
    ran.clear()
    done = anyio.run(run_chain, _chain_registry(ran), Invocation("tools/call", "request", {}))
    assert (done.decision, ran) == ("deny", ["mutate", "deny"])


def test_an_audit_interceptor_that_crashes_never_blocks_and_says_no_cause() -> None:
    ran: list[str] = []
    registry = _chain_registry(ran, audit_crash=True)
    done = anyio.run(run_chain, registry, Invocation("tools/call", "request", {"a": 1}))
    assert (done.decision, done.payload) == ("allow", {"a": 1})
    line = json.dumps(invoke(1, "c", "tools/call", "request", {}))
    answered = anyio.run(InterceptorServer(registry).answer, line)
    assert answered["error"]["code"] == -32603
    assert SECRET not in json.dumps(answered)


# --- over streamable HTTP (--listen) ---------------------------------------------------------


@contextmanager
def listening(*args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``strictmcp interceptor ARGS --listen`` on a free loopback port: its URL (said on its
    stderr's first line) and the process, ended when done."""
    process = subprocess.Popen(
        [sys.executable, "-m", "strictmcp", "interceptor", *args, "--listen", "127.0.0.1:0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stderr is not None
        said = process.stderr.readline().decode()
        assert said.startswith("strictmcp interceptor: listening on http://127.0.0.1:"), said
        yield said.split()[-1], process
    finally:
        process.kill()
        process.wait()


def _initialize(client: httpx2.Client, url: str) -> str:
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    answer = client.post(url, json=hello)
    assert answer.status_code == 200
    assert answer.json()["result"]["capabilities"]["interceptor"]["supportedEvents"]
    return answer.headers["mcp-session-id"]


def test_over_http_each_session_is_a_connection_of_its_own(tmp_path: Path) -> None:
    """Without a context ``sessionId``, state is the connection's: a listing one HTTP session
    saw judges its calls, and never another session's."""
    listing = {"tools": [TOOLS["tools"][0]]}
    with listening() as (url, _), httpx2.Client(timeout=30) as client:
        first, second = _initialize(client, url), _initialize(client, url)
        assert first != second

        def post(session: str, message: Any) -> dict[str, Any]:
            answer = client.post(url, json=message, headers={"mcp-session-id": session})
            assert answer.status_code == 200
            return answer.json()  # type: ignore[no-any-return]

        listed = post(first, invoke(1, "strictmcp/schema", "tools/list", "response", listing))
        assert listed["result"]["valid"] is True
        judged = post(first, call(2, "strictmcp/schema", "fs__read_file", {"path": 7}))
        assert codes(judged) != ["tool-unknown"]
        assert judged["result"]["valid"] is False
        assert post(first, call(3, "strictmcp/schema", "fs__read_file", {"path": "/x"}))["result"][
            "valid"
        ]
        other = post(second, call(4, "strictmcp/schema", "fs__read_file", {"path": "/x"}))
        assert codes(other) == ["tool-unknown"]


def test_over_http_what_no_session_may_send_is_refused_and_the_server_goes_on() -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with listening() as (url, process), httpx2.Client(timeout=30) as client:
        session = _initialize(client, url)
        ours = {"mcp-session-id": session}
        # A page of another origin, or a name rebound to loopback, reads nothing.
        assert (
            client.post(
                url, json=ping, headers={**ours, "origin": "http://evil.example"}
            ).status_code
            == 403
        )
        assert (
            client.post(url, json=ping, headers={**ours, "host": "evil.example"}).status_code == 421
        )
        assert client.get(url.removesuffix("/mcp") + "/other").status_code == 404
        assert client.get(url, headers=ours).status_code == 405
        unasked = client.post(url, json=ping)
        assert unasked.status_code == 400
        assert unasked.json()["error"]["code"] == -32600
        assert client.post(url, json=ping, headers={"mcp-session-id": "made-up"}).status_code == 404
        huge = b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "x": "' + b"a" * (5 << 20) + b'"}'
        assert client.post(url, content=huge, headers=ours).status_code == 413
        garbage = client.post(url, content=b"{not json", headers=ours)
        assert garbage.status_code == 400
        assert garbage.json()["error"]["code"] == -32700
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert client.post(url, json=note, headers=ours).status_code == 202
        assert client.post(url, json=ping, headers=ours).json() == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {},
        }
        assert client.delete(url, headers=ours).status_code == 204
        assert client.post(url, json=ping, headers=ours).status_code == 404  # ended
        assert _initialize(client, url)
        assert process.poll() is None
    assert process.stderr is not None
    assert b"Traceback" not in process.stderr.read()


@pytest.mark.parametrize(
    ("listen", "said"),
    [
        ("0.0.0.0:0", "--allow-unauthenticated"),
        ("[::]:0", "--allow-unauthenticated"),
        ("nonsense", "HOST:PORT"),
        ("127.0.0.1:99999", "HOST:PORT"),
    ],
)
def test_listen_beyond_loopback_or_malformed_is_exit_2(listen: str, said: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "strictmcp", "interceptor", "--listen", listen],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert said in done.stderr.decode()


def test_listen_on_a_port_in_use_is_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "strictmcp", "interceptor", "--listen", f"127.0.0.1:{port}"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert "cannot listen" in done.stderr.decode()
    assert b"Traceback" not in done.stderr


class _HttpClient:
    """A client of an interceptor app in this process: starts sessions, pings them."""

    def __init__(self, client: httpx2.AsyncClient) -> None:
        self.client = client

    async def start(self) -> str:
        hello = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
        answer = await self.client.post("/mcp", json=hello)
        return str(answer.headers["mcp-session-id"])

    async def status(self, session: str) -> int:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        answer = await self.client.post("/mcp", json=ping, headers={"mcp-session-id": session})
        return int(answer.status_code)


def test_over_http_the_least_recently_used_session_is_ended_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from strictmcp.interceptor import http  # noqa: PLC0415 - the module under test

    monkeypatch.setattr(http, "MAX_SESSIONS", 2)
    app = http.InterceptorApp(
        lambda: InterceptorServer(StrictChecks().registry()), path="/mcp", loopback=True
    )

    async def test() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            http_client = _HttpClient(client)
            start, status = http_client.start, http_client.status
            first, second = await start(), await start()
            assert await status(first) == 200  # now the second is the least recently used
            third = await start()
            assert [await status(s) for s in (first, second, third)] == [200, 404, 200]

    anyio.run(test)


def test_over_http_a_session_unused_for_its_idle_time_is_ended() -> None:
    from strictmcp.interceptor import http  # noqa: PLC0415 - the module under test

    app = http.InterceptorApp(
        lambda: InterceptorServer(StrictChecks().registry()), path="/mcp", loopback=True, idle=1.0
    )

    async def test() -> None:
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            http_client = _HttpClient(client)
            start, status = http_client.start, http_client.status
            used, unused = await start(), await start()
            # Until the unused one was idle half as long again as its idle time (measured, as
            # a loaded machine may stretch each pause), the used one is used every 0.1 s:
            # never idle for its 1 s.
            idle_since = time.monotonic()
            while time.monotonic() - idle_since < 1.5:
                await anyio.sleep(0.1)
                assert await status(used) == 200
            assert await status(unused) == 404  # ended: its client starts anew
            assert await status(used) == 200
            assert await status(await start()) == 200

    anyio.run(test)


def test_listen_takes_a_session_idle_time() -> None:
    command = [sys.executable, "-m", "strictmcp", "interceptor"]
    shown = subprocess.run([*command, "--help"], capture_output=True, text=True, check=False)
    assert shown.returncode == 0
    assert "--session-idle" in shown.stdout
    idle = ["--session-idle", "0", "--listen", "127.0.0.1:0"]
    refused = subprocess.run([*command, *idle], capture_output=True, text=True, check=False)
    assert refused.returncode == 2
    assert "--session-idle" in refused.stderr
