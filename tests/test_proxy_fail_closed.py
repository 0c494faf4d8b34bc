"""Fail closed: what is not checked does not pass, made as an attacker would make it.

A real ``strictmcp proxy`` runs in front of ``proxy_fixtures/hostile_server.py``, which records
every line it receives (the ground truth: a refused message never arrives) and answers as an
attacker's server would. Over stdio and over HTTP sessions, every handshake revision:

- a request without an ``id`` (a notification by JSON-RPC's letter, run anyway by many
  hand-written servers) never reaches the server, nor does any client message with an error
  finding; each is refused with a ``refused`` audit record and one stderr line;
- an answer the proxy cannot match exactly to a request it forwarded (``"7"`` for 7, ``" 07 "``,
  a second answer, an id never sent, ``null``) never reaches the client, and the request it
  could be mistaken for is failed at once with the proxy's own -32603;
- an answer that cannot be read (not JSON, duplicate keys, ``NaN``, too large) fails its
  request at once rather than at the timeout;
- ids a client reads alike are refused as duplicates while one is in flight, and a second
  ``initialize`` is refused;
- a server's request with an error finding (an elicitation whose schema breaks the rules) is
  answered to the server with an error and never reaches the client.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from test_proxy_http import _ACCEPT, Process, in_session, request

FIXTURES = Path(__file__).resolve().parent / "proxy_fixtures"
SERVER = [sys.executable, str(FIXTURES / "hostile_server.py")]
HANDSHAKE_REVISIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
# The proxy's own error for a server answer it could not hand on (not -32002, MCP's "resource
# not found").
UPSTREAM_INVALID = -32603
# Generous: a refusal "at once" is far below it, the timeout far above.
PROMPTLY = 10.0


def _recorded(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def _audit(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class StdioProxy:
    """``strictmcp proxy`` over pipes, in front of the hostile server: lines in, lines out."""

    def __init__(self, tmp_path: Path, *options: str) -> None:
        self.record = tmp_path / "received"
        self.audit = tmp_path / "audit.jsonl"
        args = [sys.executable, "-m", "strictmcp.proxy", "--audit-log", str(self.audit)]
        self.process = subprocess.Popen(
            [*args, *options, "--", *SERVER, str(self.record)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(json.loads(line))

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.process.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def answer(self, request_id: Any, within: float = PROMPTLY) -> dict[str, Any]:
        """The first line with ``request_id`` (exactly: 7 is not "7"), every line kept."""
        deadline = time.monotonic() + within
        for seen in self.seen:
            if _same(seen.get("id"), request_id):
                self.seen.remove(seen)
                return seen
        while True:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            if _same(line.get("id"), request_id):
                return line
            self.seen.append(line)

    def handshake(self, revision: str = "2025-11-25") -> None:
        params = {
            "protocolVersion": revision,
            # Elicitation came with 2025-06-18: --strict refuses it in an older handshake.
            "capabilities": {"elicitation": {}} if revision >= "2025-06-18" else {},
            "clientInfo": {"name": "attacker", "version": "1"},
        }
        self.send(request("initialize", 0, params))
        assert "result" in self.answer(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.send(request("tools/list", "list", {}))
        assert "result" in self.answer("list")

    def close(self) -> str:
        """End the session; what the proxy said on stderr."""
        assert self.process.stdin is not None
        assert self.process.stderr is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)
        return self.process.stderr.read().decode(errors="replace")


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


@pytest.fixture
def stdio(tmp_path: Path) -> Any:
    started: list[StdioProxy] = []

    def start(*options: str) -> StdioProxy:
        proxy = StdioProxy(tmp_path, *options)
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        if proxy.process.poll() is None:
            proxy.process.kill()
            proxy.process.wait()


def _call(request_id: Any, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return request("tools/call", request_id, {"name": tool, "arguments": arguments})


def _without_id(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "id"}


# What an attacker sends without an id, hoping the server runs it anyway.
ID_LESS = [
    _without_id(_call(1, "run", {"argv": ["sh", "-c", "id"]})),
    _without_id(_call(1, "no-such-tool", {})),
    _without_id(request("tools/list", 1, {})),
    _without_id(request("resources/read", 1, {"uri": "file:///etc/passwd"})),
    _without_id(request("prompts/get", 1, {"name": "p", "arguments": {"a": "b"}})),
    _without_id(request("completion/complete", 1, {"ref": {}, "argument": {}})),
]


# ---------------------------------------------------------------------------------------------
# 1. Client messages with error findings


@pytest.mark.parametrize("strict", [False, True], ids=["lenient", "strict"])
@pytest.mark.parametrize("revision", HANDSHAKE_REVISIONS)
def test_stdio_requests_without_an_id_never_reach_the_server(
    stdio: Any, revision: str, strict: bool
) -> None:
    proxy = stdio(*(["--strict"] if strict else []))
    proxy.handshake(revision)
    for number, message in enumerate(ID_LESS):
        proxy.send(message)
        proxy.send(request("ping", f"after-{number}", {}))
        assert "result" in proxy.answer(f"after-{number}")  # still serving, in order
    stderr = proxy.close()
    received = _recorded(proxy.record)
    methods = [m.get("method") for m in received]
    assert "tools/call" not in methods, methods
    assert "resources/read" not in methods, methods
    assert all("id" in m or m["method"] == "notifications/initialized" for m in received)
    refused = [r for r in _audit(proxy.audit) if r["action"] == "refused"]
    assert len({(r["method"], r["pointer"]) for r in refused}) >= len(ID_LESS) - 1
    assert all(r["direction"] == "c2s" for r in refused)
    assert stderr.count("refused") >= len(ID_LESS), stderr
    assert "Traceback" not in stderr


def test_stdio_audit_mode_reports_what_enforce_refuses(stdio: Any) -> None:
    proxy = stdio("--mode", "audit")
    proxy.handshake()
    proxy.send(ID_LESS[0])
    proxy.send(request("ping", "after", {}))
    proxy.answer("after")
    proxy.close()
    assert any(m.get("method") == "tools/call" for m in _recorded(proxy.record))
    records = [r for r in _audit(proxy.audit) if r["method"] == "tools/call"]
    assert records
    assert all(r["action"] != "refused" for r in records)


# ---------------------------------------------------------------------------------------------
# 2. Answers matched as strictly as the loosest client would read them


@pytest.mark.parametrize("mode", ["string-id", "padded-id"])
def test_stdio_an_answer_a_client_could_misread_fails_the_request_at_once(
    stdio: Any, mode: str
) -> None:
    proxy = stdio("--timeout", "120")
    proxy.handshake()
    started = time.monotonic()
    proxy.send(_call(7, "answer", {"mode": mode}))
    answer = proxy.answer(7)
    assert time.monotonic() - started < PROMPTLY
    assert answer["error"]["code"] == UPSTREAM_INVALID
    assert "jsonrpc-unmatched-response" in json.dumps(answer["error"]["data"])
    proxy.send(request("ping", "after", {}))
    proxy.answer("after")
    # The misspelled answer itself never came through, in any spelling.
    assert all(m.get("id") in (None, "after") for m in proxy.seen), proxy.seen
    stderr = proxy.close()
    assert "refused" in stderr


@pytest.mark.parametrize("mode", ["twice", "other-id", "null-id"])
def test_stdio_answers_to_nothing_forwarded_never_reach_the_client(stdio: Any, mode: str) -> None:
    proxy = stdio("--timeout", "3")
    proxy.handshake()
    proxy.send(_call(7, "answer", {"mode": mode}))
    first = proxy.answer(7)
    if mode == "twice":
        assert first["result"]["content"][0]["text"] == "answered"
    elif mode == "other-id":
        assert first["error"]["code"] == -32001  # nothing answered it: the timeout did
    proxy.send(request("ping", "after", {}))
    proxy.answer("after")
    time.sleep(0.3)
    assert proxy.seen == [], proxy.seen  # no second answer, no 424242, no null
    proxy.close()
    assert any(r["code"] == "jsonrpc-unmatched-response" for r in _audit(proxy.audit))


def test_stdio_ids_a_client_reads_alike_are_refused_while_one_is_in_flight(stdio: Any) -> None:
    proxy = stdio()
    proxy.handshake()
    proxy.send(_call(7, "answer", {"mode": "slow"}))
    for number, alias in enumerate(["7", " 07", "7e0", 7]):
        proxy.send(_call(alias, "run", {"argv": [f"second-{number}"]}))
        refusal = proxy.answer(alias)
        assert refusal["error"]["code"] == -32600, refusal
    # The first is still answered, by the server, once.
    assert proxy.answer(7)["result"]["content"][0]["text"] == "answered"
    proxy.send(_call("7", "run", {"argv": ["now-free"]}))
    assert "result" in proxy.answer("7")
    proxy.close()
    argvs = [
        m["params"]["arguments"].get("argv")
        for m in _recorded(proxy.record)
        if m.get("method") == "tools/call"
    ]
    assert argvs == [None, ["now-free"]], argvs


def test_stdio_a_second_initialize_is_refused(stdio: Any) -> None:
    proxy = stdio()
    proxy.handshake()
    params = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "x"}}
    proxy.send(
        request("initialize", "again", {**params, "clientInfo": {"name": "x", "version": "1"}})
    )
    assert proxy.answer("again")["error"]["code"] == -32600
    proxy.close()
    assert [m.get("method") for m in _recorded(proxy.record)].count("initialize") == 1


# ---------------------------------------------------------------------------------------------
# 9. Bad answers fail their request at once


@pytest.mark.parametrize("mode", ["garbage", "dupkeys", "nan", "huge"])
def test_stdio_an_unreadable_answer_fails_its_request_at_once(stdio: Any, mode: str) -> None:
    proxy = stdio("--timeout", "120", "--max-size", "65536")
    proxy.handshake()
    started = time.monotonic()
    proxy.send(_call(7, "answer", {"mode": mode}))
    answer = proxy.answer(7)
    assert time.monotonic() - started < PROMPTLY
    assert answer["error"]["code"] == UPSTREAM_INVALID
    assert answer["error"]["data"], answer
    proxy.send(request("ping", "after", {}))
    assert "result" in proxy.answer("after")
    assert "Traceback" not in proxy.close()


# ---------------------------------------------------------------------------------------------
# 13. A server's request with an error finding


def test_stdio_an_elicitation_with_a_broken_schema_never_reaches_the_client(stdio: Any) -> None:
    proxy = stdio()
    proxy.handshake("2025-06-18")
    proxy.send(_call(7, "answer", {"mode": "elicit-bad"}))
    assert "result" in proxy.answer(7)
    assert not any(m.get("method") == "elicitation/create" for m in proxy.seen), proxy.seen
    proxy.close()
    answers = [m for m in _recorded(proxy.record) if m.get("id") == "e1"]
    assert len(answers) == 1, answers
    assert answers[0]["error"]["code"] == -32602, answers


# ---------------------------------------------------------------------------------------------
# Over HTTP sessions


@pytest.fixture
def http_proxy(tmp_path: Path) -> Any:
    record = tmp_path / "received"
    args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0", "--timeout", "60"]
    process = Process([*args, "--", *SERVER, str(record)], tmp_path, "stderr")
    url = process.wait_for("listening on").rsplit(" ", 1)[1]
    yield url, record
    process.stop()


async def _session(http: httpx2.AsyncClient, url: str, version: str) -> dict[str, str]:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "1"},
    }
    response = await http.post(url, json=request("initialize", 0, params), headers=_ACCEPT)
    assert response.status_code == 200, response.text
    headers = in_session(response.headers["mcp-session-id"], version)
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await http.post(url, json=initialized, headers=headers)).status_code == 202
    listed = await http.post(url, json=request("tools/list", 1, {}), headers=headers)
    assert listed.status_code == 200
    return headers


def _body(response: httpx2.Response) -> Any:
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    return json.loads(text)


@pytest.mark.parametrize("revision", HANDSHAKE_REVISIONS)
def test_http_requests_without_an_id_never_reach_the_server(
    http_proxy: tuple[str, Path], revision: str
) -> None:
    url, record = http_proxy

    async def attack() -> None:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(PROMPTLY)) as http:
            headers = await _session(http, url, revision)
            for message in ID_LESS:
                response = await http.post(url, json=message, headers=headers)
                assert response.status_code in (202, 400), response.text
            ping = await http.post(url, json=request("ping", 9, {}), headers=headers)
            assert "result" in _body(ping)

    anyio.run(attack)
    methods = [m.get("method") for m in _recorded(record)]
    assert "tools/call" not in methods, methods
    assert "resources/read" not in methods, methods


@pytest.mark.parametrize("mode", ["string-id", "garbage", "dupkeys"])
def test_http_a_bad_answer_fails_its_request_at_once(
    http_proxy: tuple[str, Path], mode: str
) -> None:
    url, _record = http_proxy

    async def attack() -> None:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(PROMPTLY)) as http:
            headers = await _session(http, url, "2025-06-18")
            call = _call(7, "answer", {"mode": mode})
            answer = _body(await http.post(url, json=call, headers=headers))
            assert answer["id"] == 7, answer
            assert answer["error"]["code"] == UPSTREAM_INVALID, answer

    anyio.run(attack)
