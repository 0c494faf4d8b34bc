"""The streamable HTTP proxy against hostile clients and servers: every bad input gets a
structured answer, never a crash (uvicorn's 500 and a traceback), a hang or a lost answer.

End to end through ``strictmcp proxy --listen`` (the fixtures of ``test_proxy_http``), and in
process where a client or server misbehaves below what an HTTP library lets one send.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx2
import pytest

import test_proxy_http
from auth_support import free_port
from strictmcp.connect import http_serving
from strictmcp.connect.http_upstream import HttpUpstream
from strictmcp.connect.sse import EventReader
from strictmcp.proxy.http_server import App, Limits
from strictmcp.proxy.http_streams import MAX_UNREAD, MAX_UNREAD_BYTES, AnswerLines, Exchange, Router
from test_gateway import _rss, fixture
from test_proxy_http import (
    _ACCEPT,
    _LEGACY_INIT,
    Proxy,
    StartProxy,
    handshake,
    in_session,
    modern,
    request,
    run,
)

_REQUEST: dict[str, Any] = {"jsonrpc": "2.0", "id": 1}

# The fixtures that start proxies, and stop them.
launch = test_proxy_http.launch
processes = test_proxy_http.processes


def no_crash(stderr: str) -> None:
    """Nothing escaped to uvicorn: it would have logged a traceback and answered 500."""
    assert "Traceback" not in stderr, stderr


# ---------------------------------------------------------------------------------------------
# Hostile clients, end to end


def test_stateless_request_with_a_non_string_method_is_refused(launch: StartProxy) -> None:
    proxy = launch()

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            message, headers = modern("tools/call", 1, {"name": "echo", "arguments": {}})
            for method in (["tools/call"], {"a": 1}):
                response = await http.post(
                    proxy.url, json={**message, "method": method}, headers=headers
                )
                assert response.status_code == 400
                assert response.json()["error"]["code"] < 0

    run(body)
    no_crash(proxy.stderr())


def test_json_that_is_no_message_is_an_invalid_request_not_a_parse_error(
    launch: StartProxy,
) -> None:
    proxy = launch()

    async def body() -> None:
        _, stateless = modern("tools/call", 1, {"name": "echo"})
        async with httpx2.AsyncClient(timeout=30) as http:
            for headers in (_ACCEPT, stateless):
                for content in (b"null", b"42", b'"text"', b"[]"):
                    response = await http.post(proxy.url, content=content, headers=headers)
                    assert response.status_code == 400
                    assert response.json()["error"]["code"] == -32600, content

    run(body)
    no_crash(proxy.stderr())


def test_lone_surrogates_are_refused(launch: StartProxy) -> None:
    """JSON may escape a lone surrogate, which is not Unicode text and has no UTF-8 form:
    such a message is refused, with a structured error naming where it stands, before the
    proxy renames, splits or sends on anything (the stateless request, the batch)."""
    proxy = launch()
    dry_run = {"name": "validate", "arguments": {"tool": "echo", "arguments": {"text": ""}}}
    surrogate = ('"text": ""', '"text": "\\ud800"')

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            message, headers = modern("tools/call", 1, dry_run)
            raw = json.dumps(message).replace(*surrogate).encode()
            response = await http.post(proxy.url, content=raw, headers=headers)
            assert response.status_code == 400
            answer = response.json()
            assert answer["id"] == 1
            assert answer["error"]["code"] == -32602
            assert [d["pointer"] for d in answer["error"]["data"]] == [
                "/params/arguments/arguments/text"
            ]
            session_id = await handshake(http, proxy.url, "2025-03-26")
            headers = {**in_session(session_id, "2025-03-26"), "accept": "application/json"}
            batch = json.dumps([request("tools/call", 2, dry_run)]).replace(*surrogate)
            response = await http.post(proxy.url, content=batch.encode(), headers=headers)
            assert response.status_code == 200
            (refused,) = response.json()
            assert refused["id"] is None
            assert refused["error"]["code"] == -32600
            assert refused["error"]["data"][0]["code"] == "jsonrpc-unpaired-surrogate"

    run(body)
    no_crash(proxy.stderr())


def test_deeply_nested_body_is_a_parse_error_and_the_session_goes_on(launch: StartProxy) -> None:
    proxy = launch()

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, proxy.url)
            headers = in_session(session_id)
            deep = b"[" * 100_000 + b"]" * 100_000
            response = await http.post(proxy.url, content=deep, headers=headers)
            assert response.status_code == 400
            assert response.json()["error"]["code"] == -32700
            ping = await http.post(proxy.url, json=request("ping", 2), headers=headers)
            assert ping.status_code == 200

    run(body)
    no_crash(proxy.stderr())


async def _received(proxy: Proxy, name: str) -> None:
    """Return once the server behind ``proxy`` got a call of ``name``."""
    while name not in [call["name"] for call in proxy.calls()]:
        await asyncio.sleep(0.02)


def test_an_id_still_pending_is_refused_and_the_first_request_still_ends(
    launch: StartProxy,
) -> None:
    """A second request with the id of one still waiting would take its answer's route: the
    first request's POST would never end."""
    # The timeout bounds the server's start (the handshake) too: 10 s, for a loaded machine.
    proxy = launch("--timeout", "10")

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=60) as http:
            session_id = await handshake(http, proxy.url)
            headers = {**in_session(session_id), "accept": "application/json"}
            hang = request("tools/call", 5, {"name": "hang", "arguments": {}})
            first = asyncio.ensure_future(http.post(proxy.url, json=hang, headers=headers))
            # Pending once the server got it (a loaded machine may take any time to get it
            # there), and until the proxy's timeout.
            await asyncio.wait_for(_received(proxy, "hang"), 30)
            second = await http.post(proxy.url, json=request("ping", 5), headers=headers)
            assert second.status_code == 400
            assert second.json() == {
                "jsonrpc": "2.0",
                "id": 5,
                "error": {
                    "code": -32600,
                    "message": "Request id already in use by a pending request",
                },
            }
            timed_out = await asyncio.wait_for(first, 40)
            assert timed_out.json()["error"]["code"] == -32001

    run(body)
    no_crash(proxy.stderr())


def test_repeated_origin_or_host_headers_are_all_checked(launch: StartProxy) -> None:
    proxy = launch()

    async def body() -> None:
        init = json.dumps(request("initialize", 0, _LEGACY_INIT)).encode()
        base = list(_ACCEPT.items())
        async with httpx2.AsyncClient(timeout=30) as http:
            origins = [("origin", "http://evil.example"), ("origin", "http://localhost")]
            response = await http.post(proxy.url, content=init, headers=base + origins)
            assert response.status_code == 403
            hosts = [("host", "evil.example")]
            response = await http.post(proxy.url, content=init, headers=base + hosts)
            assert response.status_code == 421

    run(body)
    no_crash(proxy.stderr())


def test_unreadable_origin_or_host_headers_are_refused_not_crashed_on(launch: StartProxy) -> None:
    # urlsplit raises on an open bracket or a bracketed non-address: foreign, not a 500.
    proxy = launch()

    async def body() -> None:
        init = json.dumps(request("initialize", 0, _LEGACY_INIT)).encode()
        base = list(_ACCEPT.items())
        async with httpx2.AsyncClient(timeout=30) as http:
            # The last one is too long to be cached: decided all the same.
            long_name = "http://" + "a" * 600 + ".example"
            for origin in ("http://[::1", "http://[zz]", "http://a]b", long_name):
                headers = [*base, ("origin", origin)]
                response = await http.post(proxy.url, content=init, headers=headers)
                assert response.status_code == 403, origin
            for host in ("[::1", "[zz]"):
                headers = [*base, ("host", host)]
                response = await http.post(proxy.url, content=init, headers=headers)
                assert response.status_code == 421, host
            response = await http.post(proxy.url, content=init, headers=base)
            assert response.status_code == 200

    run(body)
    no_crash(proxy.stderr())


def test_a_declared_version_no_header_can_carry_reaches_an_http_server(
    launch: StartProxy,
) -> None:
    proxy = launch("--timeout", "10", upstream="http")
    meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": "\u00e9"}}

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, proxy.url)
            headers = in_session(session_id)
            note = {"jsonrpc": "2.0", "method": "notifications/x", "params": meta}
            assert (await http.post(proxy.url, json=note, headers=headers)).status_code == 202
            ping = await asyncio.wait_for(
                http.post(proxy.url, json=request("ping", 7, meta), headers=headers), 8
            )
            assert ping.status_code == 200

    run(body)
    no_crash(proxy.stderr())


# ---------------------------------------------------------------------------------------------
# Hostile clients, in process


class _Client:
    """An ASGI client: ``chunks`` of body come when asked for, then ``after`` (a disconnect,
    or nothing ever); what the app sends is kept."""

    def __init__(self, chunks: list[bytes], after: str) -> None:
        self._chunks = chunks
        self._after = after
        self.sent: list[MutableMapping[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        if self._chunks:
            return {"type": "http.request", "body": self._chunks.pop(0), "more_body": True}
        if self._after == "disconnect":
            return {"type": "http.disconnect"}
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.sent.append(message)


def _post_scope() -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1:1"), *((k.encode(), v.encode()) for k, v in _ACCEPT.items())]
    return {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}


def _app() -> App:
    async def start(shared: bool) -> Any:
        raise AssertionError("no message should have been read")

    return App(start, path="/mcp", loopback=True, limits=Limits(4096))


def test_a_body_trickling_in_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_serving, "BODY_SECONDS", 0.2)
    client = _Client([b'{"jsonrpc":'], "never")

    async def body() -> None:
        await asyncio.wait_for(_app()(_post_scope(), client.receive, client.send), 5)

    asyncio.run(body())
    assert client.sent[0]["status"] == 408


def test_a_body_cut_by_a_disconnect_is_not_a_message() -> None:
    """``12`` is valid JSON, and so is the start of ``123``: what a client that went away had
    sent so far is nothing to act on."""
    client = _Client([b"12"], "disconnect")

    async def body() -> None:
        await asyncio.wait_for(_app()(_post_scope(), client.receive, client.send), 5)

    asyncio.run(body())
    assert client.sent == []


def test_a_get_stream_never_read_holds_a_bounded_backlog() -> None:
    """A client that opens its GET stream and never reads (its connection stalled): the lines
    for it stay bounded; its stream ends, the rest waits, in order, for the next one."""

    async def body() -> None:
        router = Router(3)
        stalled = router.listen()
        assert stalled is not None
        for n in range(5 * MAX_UNREAD):
            router.deliver(json.dumps({"jsonrpc": "2.0", "method": f"n/{n}"}).encode())
        assert len(stalled) <= MAX_UNREAD + 1
        assert not router.busy
        again = router.listen()
        assert again is not None
        kept = [json.loads(line or b"")["method"] for line in again.take_all()]
        assert kept == [f"n/{n}" for n in range(5 * MAX_UNREAD - 3, 5 * MAX_UNREAD)]

    asyncio.run(body())


def test_a_post_stream_never_read_is_ended_holding_a_bounded_backlog() -> None:
    """A POST's answer stream whose client reads nothing (its connection stalled): what waits
    for it stays bounded, the answer is ended as if the client had gone away (naming the
    requests still waiting), and what comes for it after goes to the GET stream's buffer."""

    async def body() -> None:
        router = Router(3)
        exchange = router.open(Exchange({7: 7}, {}, streaming=True))
        for n in range(5 * MAX_UNREAD):
            router.deliver(json.dumps({"jsonrpc": "2.0", "method": f"n/{n}"}).encode())
        assert len(exchange.lines) <= MAX_UNREAD + 1
        assert exchange.stalled == {7}
        assert not router.pending(7)
        numbered = [json.loads(line)["method"] for line in exchange.lines.take_all() if line]
        assert numbered == [f"n/{n}" for n in range(len(numbered))]
        router.deliver(json.dumps({"jsonrpc": "2.0", "id": 7, "result": {}}).encode())
        again = router.listen()
        assert again is not None
        assert json.loads(again.take_all()[-1] or b"") == {"jsonrpc": "2.0", "id": 7, "result": {}}

    asyncio.run(body())


def test_a_stream_of_few_large_lines_is_bounded_by_its_bytes() -> None:
    lines = AnswerLines()
    lines.put(b"x" * (MAX_UNREAD_BYTES + 1))
    assert not lines.stalled  # a line alone always goes
    lines.put(b"{}")
    assert lines.stalled


def test_a_client_that_never_reads_its_answer_cannot_fill_the_proxy(
    tmp_path: Path,
    processes: list[test_proxy_http.Process],
) -> None:
    # A real proxy over HTTP in front of a server that writes 80 MB for one call, and a client
    # that sends the call and reads nothing: the proxy drains the server and keeps little.
    port, count = free_port(), tmp_path / "flood.count"
    args = ["proxy", "--listen", f"127.0.0.1:{port}", "--", *fixture("a")]
    proxy = test_proxy_http.Process([sys.executable, "-m", "strictmcp", *args], tmp_path, "stderr")
    processes.append(proxy)
    proxy.wait_for("listening on")
    url = f"http://127.0.0.1:{port}/mcp"
    with httpx2.Client(timeout=30) as client:
        init = _LEGACY_INIT
        started = client.post(
            url, headers=_ACCEPT, json={**_REQUEST, "method": "initialize", "params": init}
        )
        headers = {**_ACCEPT, "mcp-session-id": started.headers["mcp-session-id"]}
        headers["mcp-protocol-version"] = init["protocolVersion"]
        client.post(
            url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        client.post(url, headers=headers, json={**_REQUEST, "id": 2, "method": "tools/list"})
        before = _rss(proxy.popen.pid)
        call = {"name": "flood", "arguments": {"text": f"40000 {count}"}}
        body = json.dumps({**_REQUEST, "id": 3, "method": "tools/call", "params": call}).encode()
        with socket.create_connection(("127.0.0.1", port)) as stalled:
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            said = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
            head = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n{said}"
            stalled.sendall(f"{head}content-length: {len(body)}\r\n\r\n".encode() + body)
            deadline = time.monotonic() + 60
            while not (count.exists() and count.read_text(encoding="utf-8") == "40000"):
                assert time.monotonic() < deadline, "the server was not drained"
                time.sleep(0.1)
            grown = _rss(proxy.popen.pid) - before
            assert grown < 40 * 1024 * 1024, f"the proxy grew by {grown // 2**20} MB"
            # The session goes on for the client's other requests.
            echo = {"name": "echo", "arguments": {"text": "still here"}}
            answer = client.post(
                url,
                headers=headers,
                json={**_REQUEST, "id": 4, "method": "tools/call", "params": echo},
            )
            assert "still here" in answer.text
            # The stalled answer, read at last: messages in order from the first, then its end.
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
            stalled.settimeout(30)
            received = b""
            while not received.endswith(b"\r\n0\r\n\r\n"):
                chunk = stalled.recv(1 << 16)
                assert chunk, "the connection closed before the answer ended"
                received += chunk
    numbers = [int(n) for n in re.findall(rb'"data": "(\d+) x', received)]
    assert numbers == list(range(len(numbers)))
    assert 0 < len(numbers) < 40000
    no_crash(proxy.output())


# ---------------------------------------------------------------------------------------------
# Hostile servers, in process
# ---------------------------------------------------------------------------------------------
# Hostile servers, in process


def _upstream(answer: Any) -> HttpUpstream:
    """An :class:`HttpUpstream` whose server answers every POST with ``answer(request)``."""

    async def handle(sent: httpx2.Request) -> httpx2.Response:
        if sent.method != "POST":
            return httpx2.Response(405)
        response: httpx2.Response = answer(json.loads(sent.content))
        return response

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handle))
    return HttpUpstream("http://upstream.test/mcp", client=client)


async def _answered(upstream: HttpUpstream, message: dict[str, Any]) -> Any:
    await upstream.send(json.dumps(message).encode() + b"\n")
    line = await asyncio.wait_for(upstream.receive(), 5)
    assert line is not None
    return json.loads(line)


def _json(text: bytes) -> httpx2.Response:
    return httpx2.Response(200, content=text, headers={"content-type": "application/json"})


def test_a_deeply_nested_answer_fails_its_request() -> None:
    async def body() -> None:
        upstream = _upstream(lambda _: _json(b"[" * 100_000 + b"]" * 100_000))
        answer = await _answered(upstream, request("ping", 1))
        assert answer["id"] == 1
        assert answer["error"]["code"] == -32603
        await upstream.aclose()

    asyncio.run(body())


def test_a_lone_surrogate_in_an_answer_is_relayed() -> None:
    async def body() -> None:
        upstream = _upstream(lambda _: _json(b'{"jsonrpc":"2.0","id":1,"result":{"x":"\\ud800"}}'))
        answer = await _answered(upstream, request("ping", 1))
        assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"x": "\ud800"}}
        await upstream.aclose()

    asyncio.run(body())


def test_a_negotiated_version_no_header_can_carry_is_not_sent() -> None:
    def answer(message: dict[str, Any]) -> httpx2.Response:
        result = {"protocolVersion": "2025-11-25\u00e9", "capabilities": {}}
        if message["method"] != "initialize":
            result = {}
        return _json(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode())

    async def body() -> None:
        upstream = _upstream(answer)
        await _answered(upstream, request("initialize", 0, _LEGACY_INIT))
        assert (await _answered(upstream, request("ping", 1)))["result"] == {}
        await upstream.aclose()

    asyncio.run(body())


def test_a_stateless_method_no_header_can_carry_is_sent_encoded() -> None:
    def answer(message: dict[str, Any]) -> httpx2.Response:
        return _json(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {}}).encode())

    async def body() -> None:
        upstream = _upstream(answer)
        message, _ = modern("\u00e9/x", 1, {})
        assert (await _answered(upstream, message))["result"] == {}
        await upstream.aclose()

    asyncio.run(body())


def test_an_endless_retry_field_is_ignored() -> None:
    reader = EventReader(1 << 20)
    primed = list(reader.feed(b"id: 1\nretry: " + b"9" * 5000 + b"\ndata: \n\n"))
    assert [event.data for event in primed] == [b""]
    assert (reader.last_id, reader.retry) == ("1", None)


def test_an_answer_s_lines_wake_their_reader_once_each_way() -> None:
    """What a POST's answer waits on: the next line, a ping when none comes in time, the
    end, and the client going away, whichever comes first; no line is lost or reordered."""

    async def body() -> None:
        loop = asyncio.get_running_loop()
        lines = AnswerLines()
        gone: asyncio.Future[None] = loop.create_future()
        assert await lines.next(gone, 0.01) == b""  # nothing came in time: a ping
        loop.call_later(0.01, lines.put, b"late")
        assert await lines.next(gone, 5) == b"late"  # woken by the line, not the timer
        lines.put(b"one")
        lines.put(b"two")
        assert [await lines.next(gone), await lines.next(gone)] == [b"one", b"two"]
        loop.call_later(0.01, gone.set_result, None)
        assert await lines.next(gone) is None  # the client went away while it waited
        assert await lines.next(gone) is None
        ended = AnswerLines()
        ended.put(None)
        assert await ended.next(loop.create_future()) is None

    asyncio.run(body())
