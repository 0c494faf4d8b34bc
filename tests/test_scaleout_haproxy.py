"""Scale-out: Debian's HAProxy on loopback in front of two ``strictmcp proxy --listen``
replicas, with the configuration that ships in examples/haproxy/haproxy.cfg, unchanged.

Each replica fronts its own copy of the stdio fixture server, which records the calls it
executes in a file of its own: where a call ran is read from those files, and where one was
refused from each replica's log. 2026-07-28 requests go round robin and are checked on the
replica they reach (one that never listed the tools for the client included); a session
sticks to the replica that answered its ``initialize``; a replica killed mid-run costs the
request in flight on it a 502 from HAProxy, stateless clients nothing, and session clients a
404, after which they initialize again on the other. ``make install-test`` installs HAProxy;
without it these tests fail, never skip.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from strictmcp.protocol.tasks import EXTENSION
from test_proxy_http import (  # noqa: F401 - processes is a fixture
    _ACCEPT,
    FIXTURES,
    Process,
    _free_port,
    _wait_for_port,
    answer,
    handshake,
    in_session,
    modern,
    processes,
    request,
    run,
)

CONFIG = Path(__file__).resolve().parents[1] / "examples" / "haproxy" / "haproxy.cfg"


def _haproxy() -> str:
    found = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
    assert found is not None, "HAProxy is missing: run `make install-test` (Debian's haproxy)"
    return found


@dataclass
class Replica:
    process: Process
    address: str
    calls: Path

    def received(self) -> list[dict[str, Any]]:
        """The calls its server received."""
        lines = self.calls.read_text().splitlines() if self.calls.exists() else []
        return [json.loads(line) for line in lines]

    def executed(self) -> list[str]:
        """The texts of the echo calls its server executed."""
        return [call["arguments"]["text"] for call in self.received() if call["name"] == "echo"]

    def refusals(self) -> int:
        return self.process.output().count('c2s tools/call "echo" refused')


def _refusals(replicas: list[Replica], expected: list[int]) -> list[int]:
    """Each replica's refusals, read again until they are ``expected`` or 30 s have passed:
    a thread of the test's reads each replica's stderr, and may be behind its answers."""
    deadline = time.monotonic() + 30
    while (counted := [r.refusals() for r in replicas]) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return counted


@dataclass
class Balanced:
    url: str
    replicas: list[Replica]


@pytest.fixture
def balanced(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> Balanced:
    return _balance(tmp_path, processes, "sdk_server.py")


@pytest.fixture
def balanced_tasks(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> Balanced:
    return _balance(tmp_path, processes, "task_server.py")


def _balance(tmp_path: Path, processes: list[Process], fixture: str) -> Balanced:  # noqa: F811
    """Two replicas, each named as its ``server`` line in the configuration, behind HAProxy."""
    replicas = []
    for number in (1, 2):
        calls = tmp_path / f"calls{number}"
        server = [sys.executable, str(FIXTURES / fixture), str(calls)]
        args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0"]
        args += ["--replica", f"replica{number}", "--"]
        process = Process([*args, *server], tmp_path, "stderr")
        processes.append(process)
        url = process.wait_for("listening on").rsplit(" ", 1)[1]
        replicas.append(Replica(process, url.split("/")[2], calls))
    port = _free_port()
    environment = {
        **os.environ,
        "MCP_LISTEN": f"127.0.0.1:{port}",
        "STRICTMCP_REPLICA1": replicas[0].address,
        "STRICTMCP_REPLICA2": replicas[1].address,
    }
    # -db: in the foreground, so that stopping the process stops HAProxy.
    haproxy = Process([_haproxy(), "-db", "-f", str(CONFIG)], tmp_path, "stderr", env=environment)
    processes.append(haproxy)
    _wait_for_port(port)
    return Balanced(f"http://127.0.0.1:{port}/mcp", replicas)


def _call(text: Any, request_id: int = 1) -> tuple[dict[str, Any], dict[str, str]]:
    return modern("tools/call", request_id, {"name": "echo", "arguments": {"text": text}})


def test_stateless_requests_go_round_robin_and_are_checked_where_they_land(
    balanced: Balanced,
) -> None:
    one, two = balanced.replicas

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            # The tools listed through one replica; the invalid call reaches the other, which
            # has listed nothing for anyone yet, and checks it all the same.
            listing, headers = modern("tools/list", 1, {})
            tools = (await http.post(balanced.url, json=listing, headers=headers)).json()
            assert "echo" in [tool["name"] for tool in tools["result"]["tools"]]
            bad, headers = _call(5, 2)
            refused = await http.post(balanced.url, json=bad, headers=headers)
            assert refused.json()["result"]["isError"] is True
            for number in range(4):
                good, headers = _call(f"s{number}", 3 + number)
                passed = (await http.post(balanced.url, json=good, headers=headers)).json()
                assert passed["result"]["content"][0]["text"] == f"s{number}"
            bad, headers = _call(6, 7)
            refused = await http.post(balanced.url, json=bad, headers=headers)
            assert refused.json()["result"]["isError"] is True

    run(body)
    # In turn: the invalid calls (second and seventh) on different replicas, each valid one
    # on the replica after the last.
    assert sorted([one.executed(), two.executed()]) == [["s0", "s2"], ["s1", "s3"]]
    assert _refusals([one, two], [1, 1]) == [1, 1]


def test_sessions_stick_to_the_replica_that_made_them(balanced: Balanced) -> None:
    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            for session in ("a", "b"):
                headers = in_session(await handshake(http, balanced.url))
                for number in range(3):
                    good = request("tools/call", number, echo(f"{session}{number}"))
                    passed = answer(await http.post(balanced.url, json=good, headers=headers))
                    assert passed["result"]["content"][0]["text"] == f"{session}{number}"
                bad = request("tools/call", 9, echo(5))
                refused = answer(await http.post(balanced.url, json=bad, headers=headers))
                assert refused["result"]["isError"] is True

    run(body)
    executed = [replica.executed() for replica in balanced.replicas]
    # Each session's calls all ran where it was made (round robin put the two apart).
    assert sorted(executed) == [["a0", "a1", "a2"], ["b0", "b1", "b2"]]
    assert _refusals(balanced.replicas, [1, 1]) == [1, 1]


def test_a_replica_killed_mid_run(balanced: Balanced) -> None:
    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, balanced.url)
            headers = in_session(session_id)
            first = request("tools/call", 1, echo("before"))
            answer(await http.post(balanced.url, json=first, headers=headers))
            home = next(r for r in balanced.replicas if r.executed() == ["before"])
            other = next(r for r in balanced.replicas if r is not home)
            # A call in flight on the session's replica when it dies: the client gets an
            # error from HAProxy, never another replica's answer: 502, or (the request went
            # on a server connection kept from an earlier one) its connection closed, as
            # the replica's own would have been.
            hang = request("tools/call", 2, {"name": "hang", "arguments": {}})
            outcome: list[int | str] = []
            async with anyio.create_task_group() as group:

                async def in_flight() -> None:
                    try:
                        response = await http.post(balanced.url, json=hang, headers=headers)
                    except httpx2.RemoteProtocolError:
                        outcome.append("closed")
                    else:
                        outcome.append(response.status_code)

                group.start_soon(in_flight)
                with anyio.fail_after(30):
                    while len(home.received()) < 2:
                        await anyio.sleep(0.05)  # until the server has the call
                home.process.popen.send_signal(signal.SIGKILL)
            assert outcome in ([502], ["closed"])
            # Stateless clients: every next request is answered, by the other replica.
            for number in range(4):
                good, modern_headers = _call(f"after{number}", 10 + number)
                passed = await http.post(balanced.url, json=good, headers=modern_headers)
                assert passed.json()["result"]["content"][0]["text"] == f"after{number}"
            # The session is gone with its replica: 404, and the client initializes again.
            lost = await http.post(balanced.url, json=request("ping", 3), headers=headers)
            assert lost.status_code == 404
            again = in_session(await handshake(http, balanced.url))
            call = request("tools/call", 4, echo("again"))
            passed = answer(await http.post(balanced.url, json=call, headers=again))
            assert passed["result"]["content"][0]["text"] == "again"
            assert other.executed() == [*(f"after{n}" for n in range(4)), "again"]

    run(body)


def echo(text: Any) -> dict[str, Any]:
    return {"name": "echo", "arguments": {"text": text}}


def test_a_task_is_found_again_on_the_replica_that_made_it(balanced_tasks: Balanced) -> None:
    """Tasks made round robin, two on each replica: every tasks/get goes back to the replica
    that has the task, by its Mcp-Name (the task id, which starts with the replica's name);
    round robin would send half of them to the other, which knows none of them."""
    made: list[str] = []

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            for number in range(4):
                call, headers = tasks_request("tools/call", number, {"name": "report"})
                created = (await http.post(balanced_tasks.url, json=call, headers=headers)).json()
                assert created["result"]["resultType"] == "task", created
                made.append(created["result"]["taskId"])
            # One request more, so that round robin alone would send each get to the other.
            listing, headers = tasks_request("tools/list", 9, {})
            assert (await http.post(balanced_tasks.url, json=listing, headers=headers)).is_success
            for round_ in range(2):
                for number, task in enumerate(made):
                    ask, headers = tasks_request(
                        "tasks/get", 10 * round_ + number, {"taskId": task}
                    )
                    got = (await http.post(balanced_tasks.url, json=ask, headers=headers)).json()
                    assert got["result"]["status"] == "completed", got
                    assert got["result"]["result"]["structuredContent"] == {"total": 3}

    run(body)
    assert sorted(task.split(".", 1)[0] for task in made) == ["replica1"] * 2 + ["replica2"] * 2
    for replica in balanced_tasks.replicas:
        methods = [call["method"] for call in replica.received()]
        assert methods.count("tools/call") == 2
        assert methods.count("tasks/get") == 4  # each of its two tasks, asked twice


def tasks_request(
    method: str, request_id: int, params: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request of a client that declares the tasks extension."""
    body, headers = modern(method, request_id, params)
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {
        "extensions": {EXTENSION: {}}
    }
    named = params.get("name", params.get("taskId"))
    if named is not None:
        headers["mcp-name"] = str(named)
    return body, headers
