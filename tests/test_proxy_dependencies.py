"""A slow dependency stalls only what needs it: ``strictmcp proxy --listen`` with a hung
Redis (the rate limit store, its process stopped with SIGSTOP: connections are accepted and
never answered) and a hung URL behind a deep check (a loopback server that accepts and never
answers).

Stateless (2026-07-28) requests are independent of each other: each limited call waits for
the store at most its own ``timeout_ms`` (not its place in a queue times it), and a call that
needs no dependency is answered at once. A session keeps its order: its messages reach the
server in the order they were sent, however long one of them is awaited. The bounds are
generous; what they tell apart is one timeout from a queue of them.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from redis_support import redis_server
from test_proxy_http import (  # noqa: F401 - launch and processes are fixtures
    Proxy,
    StartProxy,
    answer,
    handshake,
    in_session,
    launch,
    modern,
    processes,
    request,
    run,
)

_CONCURRENT = 8
_HUNG_URLS = 12


async def _timed(
    http: httpx2.AsyncClient, url: str, tool: str, arguments: dict[str, Any]
) -> tuple[float, Any]:
    """One stateless call of ``tool``: how long its answer took, and the answer."""
    call, headers = modern("tools/call", 1, {"name": tool, "arguments": arguments})
    began = time.monotonic()
    response = await http.post(url, json=call, headers=headers)
    return time.monotonic() - began, answer(response)


async def _stalled(
    proxy: Proxy, texts: list[str], hello: Path
) -> tuple[list[tuple[float, Any]], tuple[int, Any]]:
    """The calls of echo with ``texts``, all at once, and during them a call of read_file
    (which needs no dependency) reading ``hello``: each echo call's time and answer; and how
    many of them were answered before the read_file call was, with its answer. That count,
    not the read_file call's time, says whether it waited for them: on a loaded machine any
    fixed time may pass."""
    got: list[tuple[float, Any]] = []
    free: list[tuple[int, Any]] = []

    async def one(http: httpx2.AsyncClient, text: str) -> None:
        got.append(await _timed(http, proxy.url, "echo", {"text": text}))

    async def unlimited(http: httpx2.AsyncClient) -> None:
        await anyio.sleep(0.3)  # the others are waiting by now
        _, answered = await _timed(http, proxy.url, "read_file", {"path": str(hello)})
        free.append((len(got), answered))

    async with httpx2.AsyncClient(timeout=60) as http, anyio.create_task_group() as group:
        for text in texts:
            group.start_soon(one, http, text)
        group.start_soon(unlimited, http)
    return got, free[0]


def _first(proxy: Proxy, tool: str, arguments: dict[str, Any]) -> Any:
    """The answer to one stateless call, made before the test's (the tools get listed)."""
    call, headers = modern("tools/call", 1, {"name": tool, "arguments": arguments})
    return answer(httpx2.post(proxy.url, json=call, headers=headers, timeout=60))


def _hello(workspace: Path) -> Path:
    hello = workspace / "hello.txt"
    hello.write_text("hello", encoding="utf-8")
    return hello


def _store_policy(path: Path, url: str, *, unavailable: str = "closed") -> Path:
    path.write_text(
        '[[rate_limit]]\ntools = ["echo"]\ncalls = 1000\nperiod = 60\n'
        f'[rate_store]\nurl = "{url}"\ntimeout_ms = 2000\non_unavailable = "{unavailable}"\n',
        encoding="utf-8",
    )
    return path


def test_a_hung_rate_store_bounds_each_stateless_call_by_its_own_timeout(
    launch: StartProxy,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    with redis_server() as redis:
        policy = _store_policy(tmp_path / "policy.toml", redis.url)
        proxy = launch("--policy", str(policy))
        # The tools listed, a connection to Redis made.
        assert _first(proxy, "echo", {"text": "warm"})["result"]["isError"] is False
        redis.freeze()
        texts = [f"limited-{n}" for n in range(_CONCURRENT)]
        found: list[Any] = []

        async def body() -> None:
            found.append(await _stalled(proxy, texts, _hello(tmp_path)))

        run(body)
        limited, (answered_before, free_answer) = found[0]
        # The call no limit names never waited for the store (2 s): it was answered while
        # every limited call still waited.
        assert free_answer["result"]["content"][0]["text"] == "hello"
        assert answered_before == 0
        # Each refused (fail closed) after about its own 2 s: in a queue the eighth would
        # have waited 16 s, twice the bound.
        assert len(limited) == _CONCURRENT
        for took, refused in limited:
            assert refused["error"]["code"] == -32004
            assert "cannot be checked" in refused["error"]["message"]
            assert took < 2.0 * _CONCURRENT / 2, took
        redis.thaw()
    received = [call["name"] for call in proxy.calls()]
    assert received == ["echo", "read_file"]  # no limited call went through unchecked


def test_a_session_keeps_its_order_while_the_store_hangs(
    launch: StartProxy,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    with redis_server() as redis:
        # Open: the limited call goes on after the timeout, so that its place shows.
        policy = _store_policy(tmp_path / "policy.toml", redis.url, unavailable="open")
        proxy = launch("--policy", str(policy))
        answers: dict[str, Any] = {}
        hello = _hello(tmp_path)

        async def body() -> None:
            async with httpx2.AsyncClient(timeout=60) as http:
                headers = in_session(await handshake(http, proxy.url))
                listing = await http.post(proxy.url, json=request("tools/list", 1), headers=headers)
                assert answer(listing)["id"] == 1
                redis.freeze()

                async def post(name: str, number: int, arguments: dict[str, Any]) -> None:
                    params = {"name": name, "arguments": arguments}
                    call = request("tools/call", number, params)
                    answers[name] = answer(await http.post(proxy.url, json=call, headers=headers))

                async with anyio.create_task_group() as group:
                    group.start_soon(post, "echo", 2, {"text": "first"})
                    await anyio.sleep(0.3)  # sent second, while the first is awaited
                    group.start_soon(post, "read_file", 3, {"path": str(hello)})

        run(body)
        redis.thaw()
    assert answers["echo"]["result"]["isError"] is False
    assert answers["read_file"]["result"]["content"][0]["text"] == "hello"
    assert [call["name"] for call in proxy.calls()] == ["echo", "read_file"]


@pytest.fixture
def hung_url() -> Iterator[str]:
    """A loopback HTTP server that accepts every connection and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/slow"
    stop.set()
    thread.join(timeout=5)
    for connection in held:
        connection.close()
    listener.close()


def test_a_hung_deep_check_bounds_each_stateless_call_by_its_own_timeout(
    launch: StartProxy,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
    hung_url: str,
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[[deep]]\ntool = "echo"\nargument = "/text"\nkind = "url"\non_calls = true\n'
        'schemes = ["http"]\nallow_private = true\nhosts = ["127.0.0.1"]\n'
        "reachable = true\nrequest_timeout_ms = 1000\nmax_redirects = 0\ntimeout = 2\n",
        encoding="utf-8",
    )
    proxy = launch("--policy", str(policy))
    hello = _hello(tmp_path)
    assert _first(proxy, "read_file", {"path": str(hello)})["result"]["isError"] is False
    found: list[Any] = []

    async def body() -> None:
        found.append(await _stalled(proxy, [hung_url] * _HUNG_URLS, hello))

    run(body)
    checked, (answered_before, free_answer) = found[0]
    # The call without deep checks never waited for the URL (1 s): it was answered while
    # every checked call still waited.
    assert free_answer["result"]["content"][0]["text"] == "hello"
    assert answered_before == 0
    # Each refused after its own check's second (its timeout 2 s): in a queue the twelfth
    # would have waited twelve, twice the bound.
    assert len(checked) == _HUNG_URLS
    for took, refused in checked:
        assert refused["result"]["isError"] is True
        assert took < 1.0 * _HUNG_URLS / 2, took
    assert [call["name"] for call in proxy.calls()] == ["read_file", "read_file"]
