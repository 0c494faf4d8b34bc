"""``MCP-Protocol-Version`` on a session, end to end through ``strictmcp proxy --listen``.

The transport's rules (2025-06-18 on, "Protocol Version Header"): a client sends the version
it negotiated on every request after ``initialize``; a server answers an invalid or
unsupported one with 400 Bad Request; without the header it assumes the negotiated version
(2025-03-26 has no header). The proxy refuses, on POST, GET and DELETE alike, a header that
names anything but the session's negotiated version, with ``INVALID_REQUEST`` and without
repeating the value; the request never reaches the server, and the session goes on.
"""

from __future__ import annotations

import httpx2
import pytest

import test_proxy_http
from test_proxy_http import (
    _ACCEPT,
    StartProxy,
    answer,
    handshake,
    in_session,
    request,
    run,
)

launch = test_proxy_http.launch
processes = test_proxy_http.processes

_BOGUS = "1999-01-01"
_CALL = {"name": "echo", "arguments": {"text": "through"}}


def refused(response: httpx2.Response, given: str) -> None:
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32600
    assert "MCP-Protocol-Version" in error["message"]
    if given:
        assert given not in response.text


@pytest.mark.parametrize(
    ("negotiated", "given"),
    [
        ("2025-11-25", _BOGUS),
        ("2025-11-25", "2026-07-28"),  # known, but the stateless revision
        ("2025-11-25", "2025-06-18"),  # known, but not the one negotiated
        ("2025-11-25", ""),
        ("2025-11-25", "2025-11-25x"),
        ("2025-03-26", "2025-06-18"),  # a revision without the header, then one
    ],
)
def test_a_post_naming_another_version_is_refused_and_never_reaches_the_server(
    launch: StartProxy, negotiated: str, given: str
) -> None:
    proxy = launch()

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, proxy.url, negotiated)
            headers = {**in_session(session_id, negotiated), "mcp-protocol-version": given}
            call = request("tools/call", 1, {**_CALL, "arguments": {"text": "refused"}})
            refused(await http.post(proxy.url, json=call, headers=headers), given)
            # The session goes on, with the version it negotiated, or with none.
            good = await http.post(
                proxy.url,
                json=request("tools/call", 2, _CALL),
                headers=in_session(session_id, negotiated),
            )
            assert answer(good)["result"]["content"][0]["text"] == "through"
            bare = {**_ACCEPT, "mcp-session-id": session_id}
            assert (
                await http.post(proxy.url, json=request("ping", 3), headers=bare)
            ).status_code == 200

    run(body)
    assert [call["arguments"]["text"] for call in proxy.calls()] == ["through"]


def test_a_repeated_version_header_is_refused(launch: StartProxy) -> None:
    """Two headers are one value joined with a comma, which names no version: no check
    reads one of them and the server another."""
    proxy = launch()

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, proxy.url)
            headers = [
                *_ACCEPT.items(),
                ("mcp-session-id", session_id),
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-protocol-version", "2025-11-25"),
            ]
            call = request("tools/call", 1, _CALL)
            refused(await http.post(proxy.url, json=call, headers=headers), "")

    run(body)
    assert proxy.calls() == []


def test_get_and_delete_naming_another_version_are_refused(launch: StartProxy) -> None:
    proxy = launch()

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, proxy.url)
            headers = {**in_session(session_id), "mcp-protocol-version": _BOGUS}
            refused(await http.get(proxy.url, headers=headers), _BOGUS)
            refused(await http.delete(proxy.url, headers=headers), _BOGUS)
            # Not ended by the refused DELETE.
            good = await http.post(
                proxy.url, json=request("tools/call", 1, _CALL), headers=in_session(session_id)
            )
            assert answer(good)["result"]["content"][0]["text"] == "through"
            assert (await http.delete(proxy.url, headers=in_session(session_id))).status_code == 200

    run(body)
