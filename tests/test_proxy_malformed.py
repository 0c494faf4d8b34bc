"""The proxy under malformed input: one strict reading, a structured answer for every bad
message, nothing of it reaching the server, and the next valid call still served.

Over stdio, every message of ``malformed_corpus`` goes to ``strictmcp proxy`` in front of the
line-level fixture that records every byte it receives, each followed by a ping; over HTTP,
the same bodies (and HTTP's own: empty bodies, wrong content types, every revision's route)
go to ``strictmcp proxy --listen`` in front of that fixture. A differential test checks that
what the proxy sends on reads as exactly what it checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from malformed_corpus import corpus
from strictmcp.connect.lines import framed
from strictmcp.protocol import decode
from strictmcp.proxy import Auditor, ProxySession
from test_proxy_http import _ACCEPT, Process, in_session, modern, request, run

FIXTURES = Path(__file__).resolve().parent / "proxy_fixtures"
_HANDSHAKE = [
    {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "hostile", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def _recorded(path: Path) -> list[Any]:
    """What the fixture server received, one message a line (it fails on anything else)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines()]


# ---------------------------------------------------------------------------------------------
# stdio


def test_stdio_every_malformed_line_is_answered_and_none_reaches_the_server(
    tmp_path: Path,
) -> None:
    record = tmp_path / "received"
    bad = corpus()
    assert len(bad) >= 150
    lines = [json.dumps(m).encode() for m in _HANDSHAKE]
    for number, (_, raw) in enumerate(bad):
        lines += [
            raw,
            json.dumps({"jsonrpc": "2.0", "id": f"p{number}", "method": "ping"}).encode(),
        ]
    proxy = subprocess.run(
        [
            sys.executable,
            "-m",
            "strictmcp.proxy",
            "--",
            sys.executable,
            str(FIXTURES / "raw_server.py"),
            str(record),
        ],
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        timeout=120,
        check=False,
    )
    stderr = proxy.stderr.decode(errors="replace")
    assert "Traceback" not in stderr, stderr
    assert proxy.returncode == 0, stderr
    answers = [json.loads(line) for line in proxy.stdout.splitlines()]
    pings = {a["id"] for a in answers if isinstance(a.get("id"), str) and "result" in a}
    # Every ping after a malformed line went through: the proxy never stopped serving.
    assert pings == {f"p{number}" for number in range(len(bad))}
    refusals = [a for a in answers if "error" in a]
    # One structured error for each malformed line, in the order they came.
    assert len(refusals) == len(bad), [name for name, _ in bad]
    for (name, _), refusal in zip(bad, refusals, strict=True):
        assert refusal["error"]["code"] in (-32700, -32600, -32602), name
        assert refusal["error"]["data"], name
    # Nothing malformed reached the server: it got the handshake and the pings, no more.
    received = _recorded(record)
    assert received[:2] == _HANDSHAKE
    assert [m["method"] for m in received[2:]] == ["ping"] * len(bad)


# ---------------------------------------------------------------------------------------------
# HTTP


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (zombies are gone: they hold nothing)."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            children.append(int(entry))
    return children


def _listen(tmp_path: Path, record: Path, processes: list[Process]) -> tuple[str, Process]:
    server = [sys.executable, str(FIXTURES / "raw_server.py"), str(record)]
    args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0", "--timeout", "10"]
    process = Process([*args, "--", *server], tmp_path, "stderr")
    processes.append(process)
    url = process.wait_for("listening on").rsplit(" ", 1)[1]
    return url, process


async def _session(http: httpx2.AsyncClient, url: str, version: str) -> str:
    init = request(
        "initialize",
        0,
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    )
    response = await http.post(url, json=init, headers=_ACCEPT)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    sent = await http.post(url, json=initialized, headers=in_session(session_id, version))
    assert sent.status_code == 202
    return session_id


# Bodies a line-based transport could not even carry whole: line breaks inside a string are
# invalid JSON, which a lenient reframing (line breaks made spaces) would make valid.
_HTTP_ONLY = [
    (
        "newline-in-string",
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a\nb"}}}',
    ),
    ("cr-in-string", b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"a\rb"}}'),
    ("crlf-in-key", b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x\r\n":1}}'),
]


def _judge(name: str, response: httpx2.Response) -> None:
    """A 4xx, or a JSON-RPC error; never a 5xx, a success, or a traceback."""
    assert response.status_code < 500, (name, response.status_code)
    assert "Traceback" not in response.text, name
    if response.status_code >= 400 and not response.content:
        return  # a status alone (415, 406) is the answer
    body = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        body = [line[5:] for line in body.splitlines() if line.startswith("data:")][-1]
    answer = json.loads(body)
    answers = answer if isinstance(answer, list) else [answer]
    assert answers, name
    for item in answers:
        assert "error" in item, (name, item)
        assert item["error"]["code"] < 0, name


@pytest.fixture
def processes() -> Any:
    started: list[Process] = []
    yield started
    for process in reversed(started):
        process.stop()


def test_http_every_malformed_body_is_answered_and_none_reaches_the_server(
    tmp_path: Path, processes: list[Process]
) -> None:
    record = tmp_path / "received"
    url, proxy = _listen(tmp_path, record, processes)
    bad = corpus()
    stateless_headers = modern("ping", 1, {})[1]

    async def body() -> None:
        timeout = httpx2.Timeout(5.0)
        async with httpx2.AsyncClient(timeout=timeout) as http:
            sessions = {v: await _session(http, url, v) for v in ("2025-06-18", "2025-03-26")}
            routes: dict[str, dict[str, str]] = {
                "new-session": _ACCEPT,
                "json-only": {**_ACCEPT, "accept": "application/json"},
                "stateless": stateless_headers,
                **{f"session-{v}": in_session(s, v) for v, s in sessions.items()},
            }
            posted = 0
            for route, headers in routes.items():
                for name, raw in bad:
                    if route == "session-2025-03-26" and name == "envelope-batch":
                        continue  # a valid batch in that revision
                    started = time.monotonic()
                    response = await http.post(url, content=raw, headers=headers)
                    assert time.monotonic() - started < 20  # answered, not hung
                    _judge(f"{route}/{name}", response)
                    posted += 1
                for name, raw in _HTTP_ONLY:
                    _judge(f"{route}/{name}", await http.post(url, content=raw, headers=headers))
                    posted += 1
                for empty in (b"", b" ", b"\r\n", b"\t \n"):
                    _judge(f"{route}/empty", await http.post(url, content=empty, headers=headers))
                    posted += 1
                for kind in ("text/plain", "application/x-www-form-urlencoded", ""):
                    wrong = {**headers, "content-type": kind}
                    refused = await http.post(
                        url, content=b'{"jsonrpc":"2.0","id":1,"method":"ping"}', headers=wrong
                    )
                    assert refused.status_code == 415, (route, kind)
                # Valid clients are served throughout.
                for version, session_id in sessions.items():
                    # Spelled with a BOM and line breaks between tokens, which the proxy
                    # must not pass on as they are to a server that reads lines.
                    spelled = json.dumps(request("ping", f"{route}-ok"), indent=1)
                    ping = await http.post(
                        url,
                        content=b"\xef\xbb\xbf" + spelled.replace("\n", "\r\n").encode(),
                        headers=in_session(session_id, version),
                    )
                    assert ping.status_code == 200, (route, version)
                    assert "error" not in ping.text, (route, version)
            assert posted > 700

    run(body)
    stderr = proxy.output()
    assert "Traceback" not in stderr, stderr
    # Only the two real sessions started a server; garbage opened none.
    assert len(_children(proxy.popen.pid)) == 2
    received = _recorded(record)
    methods = [m.get("method") for m in received]
    assert methods.count("initialize") == 2
    assert set(methods) == {"initialize", "notifications/initialized", "ping"}, methods
    assert methods.count("ping") == 2 * 5  # each session's ping after each route, one line each


def test_http_a_session_that_never_finishes_initializing_is_reclaimed(
    tmp_path: Path, processes: list[Process]
) -> None:
    record = tmp_path / "received"
    server = [sys.executable, str(FIXTURES / "raw_server.py"), str(record)]
    args = [
        sys.executable,
        "-m",
        "strictmcp.proxy",
        "--listen",
        "127.0.0.1:0",
        "--session-init",
        "0.5",
    ]
    proxy = Process([*args, "--", *server], tmp_path, "stderr")
    processes.append(proxy)
    url = proxy.wait_for("listening on").rsplit(" ", 1)[1]

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=5) as http:
            done = await _session(http, url, "2025-06-18")
            init = request(
                "initialize",
                0,
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            )
            half = await http.post(url, json=init, headers=_ACCEPT)
            half_id = half.headers["mcp-session-id"]
            assert len(_children(proxy.popen.pid)) == 2
            deadline = time.monotonic() + 30
            while len(_children(proxy.popen.pid)) > 1 and time.monotonic() < deadline:
                await anyio.sleep(0.1)
            assert len(_children(proxy.popen.pid)) == 1
            gone = await http.post(
                url, json=request("ping", 1), headers=in_session(half_id, "2025-06-18")
            )
            assert gone.status_code == 404
            kept = await http.post(
                url, json=request("ping", 2), headers=in_session(done, "2025-06-18")
            )
            assert kept.status_code == 200

    run(body)
    assert "never finished initializing" in proxy.output()


# ---------------------------------------------------------------------------------------------
# What is forwarded is what was checked

# Numbers a double holds: integers of at most 17 digits, or larger and exactly a double;
# floats as their shortest spelling writes them, subnormals aside (json-number-inexact).
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**17) + 1, 10**17 - 1)
    | st.integers(-(2**16), 2**16).map(lambda n: n << 54)
    | st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=False)
    | st.text(max_size=8)
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def _spelled(draw: st.DrawFn) -> bytes:
    """A valid client message, spelled in any of the ways JSON allows for the same value:
    whitespace (CR, LF and tabs included) between tokens, escaped characters, a BOM."""
    message = {
        "jsonrpc": "2.0",
        "id": draw(st.integers(0, 2**40) | st.text(min_size=1, max_size=6)),
        "method": draw(st.sampled_from(["ping", "tools/list", "resources/list", "custom/x"])),
        "params": draw(
            st.dictionaries(
                st.text(min_size=1, max_size=5).filter(lambda k: k != "_meta"), _values, max_size=3
            )
        ),
    }
    space = draw(st.sampled_from(["", " ", "\r\n", "\t", "\r", "\n "]))
    text = json.dumps(
        message,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 0, 2])),
        separators=("," + space, ":" + space),
    )
    data = text.encode()
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    return data


@settings(max_examples=300, deadline=None)
@given(_spelled())
def test_what_is_forwarded_reads_as_exactly_what_was_checked(data: bytes) -> None:
    checked = decode(data)
    assert checked.valid
    session = ProxySession(Auditor(None))
    routed = run_decide(session, data + b"\n")
    (line,) = routed.forward
    assert framed(line)  # one line, no CR, no BOM: no reader can split it otherwise
    forwarded = decode(line)
    assert _exact(forwarded.messages[0].raw) == _exact(checked.messages[0].raw)
    if framed(data + b"\n"):
        assert line == data + b"\n"  # untouched when nothing needed rewriting


def run_decide(session: ProxySession, line: bytes) -> Any:
    decided = session.decide(line, "c2s")
    assert not hasattr(decided, "__await__")
    return decided


def _exact(value: Any) -> str:
    """JSON text that tells 1 from 1.0 from true, and keeps key order out of it."""
    return json.dumps(value, sort_keys=True)
