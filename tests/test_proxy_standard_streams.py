"""The stdio proxy on every kind of standard stream a launcher may give it.

A pipe is what MCP clients use, but a shell gives files (``strictmcp proxy -- SERVER <
requests.jsonl > out.txt``), ``/dev/null``, a closed descriptor or a terminal. uvloop aborted
the process (SIGABRT, status 134, nothing said) on each of those where asyncio raises: every
test here runs the real command line on both loops (``test_proxy_uvloop._CHECKED`` fails the
child with status 3 on the wrong one), in front of the recording SDK fixture, and judges by
what reached the server and what came out.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from test_proxy_uvloop import _CHECKED

FIXTURES = Path(__file__).resolve().parent / "proxy_fixtures"
_SECONDS = 60.0

_HELLO = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "streams", "version": "1"},
}


@pytest.fixture(params=["installed", "blocked"], ids=["uvloop", "asyncio"])
def loop(request: pytest.FixtureRequest) -> str:
    """The event loop the proxy runs on: uvloop as installed, or asyncio's with it blocked."""
    return str(request.param)


def proxy_command(
    loop: str, workspace: Path, *options: str, server: list[str] | None = None
) -> list[str]:
    """The proxy's own command line on ``loop``, in front of the SDK fixture recording calls."""
    upstream = server or [sys.executable, str(FIXTURES / "sdk_server.py"), str(workspace / "calls")]
    return [sys.executable, "-c", _CHECKED, loop, *options, "--", *upstream]


def requests(count: int) -> list[dict[str, Any]]:
    """A session: initialize, initialized, then ``count`` tool calls (ids 1 to ``count``),
    every seventh with an argument of the wrong type, which the proxy refuses itself."""
    lines: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _HELLO},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for n in range(1, count + 1):
        text: Any = n if n % 7 == 0 else f"message {n}"
        call = {"name": "echo", "arguments": {"text": text}}
        lines.append({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call})
    return lines


def encoded(lines: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def recorded(workspace: Path) -> list[Any]:
    """The texts of the calls that reached the server, in order."""
    path = workspace / "calls"
    if not path.exists():
        return []
    return [json.loads(line)["arguments"]["text"] for line in path.read_text().splitlines()]


def valid_texts(count: int) -> list[str]:
    return [f"message {n}" for n in range(1, count + 1) if n % 7 != 0]


def check_answers(output: bytes, count: int) -> None:
    """One answer per request: the server's echo, or the proxy's refusal (at once, so ahead
    of the server's answers); each kind in the order its requests were given."""
    answers = [json.loads(line) for line in output.splitlines()]
    ids = [answer["id"] for answer in answers]
    assert sorted(ids) == list(range(count + 1))
    assert "protocolVersion" in answers[0]["result"]
    refused = [n for n in ids if n % 7 == 0 and n > 0]
    echoed = [n for n in ids if n % 7 != 0]
    assert refused == sorted(refused)
    assert echoed == sorted(echoed)
    for answer in answers[1:]:
        n, result = answer["id"], answer["result"]
        if n % 7 == 0:
            assert result["isError"] is True, answer
        else:
            assert result["content"][0]["text"] == f"message {n}", answer


def said(workspace: Path) -> str:
    text = (workspace / "stderr").read_text(errors="replace")
    assert "Traceback" not in text, text
    assert "Fatal" not in text, text
    return text


def run(
    command: list[str], workspace: Path, *, stdin: Any, stdout: Any, input: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    with (workspace / "stderr").open("wb") as stderr:
        return subprocess.run(
            command,
            stdin=None if input is not None else stdin,
            stdout=stdout,
            stderr=stderr,
            input=input,
            cwd=workspace,
            timeout=_SECONDS,
            check=False,
        )


# ---------------------------------------------------------------------------------------------
# Files


def test_a_requests_file_is_answered_in_order_into_a_file(tmp_path: Path, loop: str) -> None:
    """200 requests read from a file, answered into a file: every answer, in order, and the
    server stopped cleanly once the last is out (the end of a file is not its client going
    away: the requests still in flight are waited for)."""
    (tmp_path / "requests.jsonl").write_bytes(encoded(requests(200)))
    with (
        (tmp_path / "requests.jsonl").open("rb") as stdin,
        (tmp_path / "out.txt").open("wb") as out,
    ):
        done = run(proxy_command(loop, tmp_path), tmp_path, stdin=stdin, stdout=out)
    assert done.returncode == 0, said(tmp_path)
    check_answers((tmp_path / "out.txt").read_bytes(), 200)
    assert recorded(tmp_path) == valid_texts(200)
    said(tmp_path)


@pytest.mark.parametrize("stdout", ["pipe", "devnull"])
def test_a_requests_file_to_a_pipe_or_dev_null(tmp_path: Path, loop: str, stdout: str) -> None:
    (tmp_path / "requests.jsonl").write_bytes(encoded(requests(30)))
    out = subprocess.PIPE if stdout == "pipe" else subprocess.DEVNULL
    with (tmp_path / "requests.jsonl").open("rb") as stdin:
        done = run(proxy_command(loop, tmp_path), tmp_path, stdin=stdin, stdout=out)
    assert done.returncode == 0, said(tmp_path)
    if stdout == "pipe":
        check_answers(done.stdout, 30)
    assert recorded(tmp_path) == valid_texts(30)
    said(tmp_path)


def test_a_pipe_answered_into_a_file(tmp_path: Path, loop: str) -> None:
    """stdin a pipe the client keeps open until its answers are written to the file."""
    out_path = tmp_path / "out.txt"
    with out_path.open("wb") as out, (tmp_path / "stderr").open("wb") as stderr:
        process = subprocess.Popen(
            proxy_command(loop, tmp_path),
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=stderr,
            cwd=tmp_path,
        )
        try:
            assert process.stdin is not None
            process.stdin.write(encoded(requests(20)))
            process.stdin.flush()
            deadline = time.monotonic() + _SECONDS
            while out_path.read_bytes().count(b"\n") < 21 and time.monotonic() < deadline:
                time.sleep(0.05)
            process.stdin.close()
            assert process.wait(timeout=_SECONDS) == 0, said(tmp_path)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    check_answers(out_path.read_bytes(), 20)
    assert recorded(tmp_path) == valid_texts(20)


def test_a_long_line_in_a_file_is_refused_unread_and_the_rest_goes_on(
    tmp_path: Path, loop: str
) -> None:
    """A file is read through the same bounded line splitter as a pipe."""
    lines = encoded(requests(3)).splitlines(keepends=True)
    huge = (
        b'{"jsonrpc": "2.0", "id": 99, "method": "ping", "params": {"x": "' + b"a" * 5000 + b'"}}\n'
    )
    (tmp_path / "requests.jsonl").write_bytes(b"".join([*lines[:3], huge, *lines[3:]]))
    with (tmp_path / "requests.jsonl").open("rb") as stdin:
        done = run(
            proxy_command(loop, tmp_path, "--max-size", "1024"),
            tmp_path,
            stdin=stdin,
            stdout=subprocess.PIPE,
        )
    assert done.returncode == 0, said(tmp_path)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    (refused,) = [answer for answer in answers if answer["id"] is None]
    assert refused["error"]["code"] < 0
    assert [answer["id"] for answer in answers if answer is not refused] == [0, 1, 2, 3]
    assert recorded(tmp_path) == valid_texts(3)


def test_the_wait_for_a_file_s_answers_is_bounded_by_the_timeout(tmp_path: Path, loop: str) -> None:
    hang = {"name": "hang", "arguments": {}}
    lines = [*requests(0), {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": hang}]
    (tmp_path / "requests.jsonl").write_bytes(encoded(lines))
    with (tmp_path / "requests.jsonl").open("rb") as stdin:
        done = run(
            proxy_command(loop, tmp_path, "--timeout", "8"),
            tmp_path,
            stdin=stdin,
            stdout=subprocess.PIPE,
        )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [0, 1]
    assert answers[1]["error"]["code"] == -32001
    said(tmp_path)


# ---------------------------------------------------------------------------------------------
# Nothing there


@pytest.mark.parametrize("stdin", ["devnull", "closed"])
def test_an_empty_or_closed_stdin_is_the_end_of_input(
    tmp_path: Path, loop: str, stdin: str
) -> None:
    marker = tmp_path / "started"
    server = [sys.executable, "-c", f"open({str(marker)!r}, 'w'); import sys; sys.stdin.read()"]
    command = proxy_command(loop, tmp_path, server=server)
    if stdin == "closed":
        command = ["sh", "-c", '"$@" <&-', "sh", *command]
    done = run(command, tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert done.returncode == 0, said(tmp_path)
    assert done.stdout == b""
    assert marker.exists()  # started, and ended by the end of its input
    said(tmp_path)


def test_a_closed_stdout_is_refused_before_the_server_starts(tmp_path: Path, loop: str) -> None:
    marker = tmp_path / "started"
    server = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    command = ["sh", "-c", '"$@" >&-', "sh", *proxy_command(loop, tmp_path, server=server)]
    done = run(command, tmp_path, stdin=subprocess.PIPE, stdout=None, input=encoded(requests(1)))
    assert done.returncode == 2
    assert "standard output is closed" in said(tmp_path)
    assert not marker.exists()


def test_a_stdout_that_fails_stops_the_server_and_says_so(tmp_path: Path, loop: str) -> None:
    """/dev/full takes no write: the answers are lost, which the status and stderr say."""
    (tmp_path / "requests.jsonl").write_bytes(encoded(requests(5)))
    with (tmp_path / "requests.jsonl").open("rb") as stdin, open("/dev/full", "wb") as full:
        done = run(proxy_command(loop, tmp_path), tmp_path, stdin=stdin, stdout=full)
    assert done.returncode == 1
    assert "standard output is closed: answers were lost" in said(tmp_path)


def test_a_client_that_stops_reading_stops_the_server_and_says_so(
    tmp_path: Path, loop: str
) -> None:
    with (tmp_path / "stderr").open("wb") as stderr:
        process = subprocess.Popen(
            proxy_command(loop, tmp_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=tmp_path,
        )
        try:
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write(encoded(requests(0)))
            process.stdin.flush()
            assert b"protocolVersion" in process.stdout.readline()
            process.stdout.close()  # the client stops reading, its requests keep coming
            process.stdin.write(encoded(requests(20)[2:]))
            process.stdin.flush()
            status = process.wait(timeout=_SECONDS)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert status == 1
    assert "standard output is closed: answers were lost" in said(tmp_path)


@pytest.mark.parametrize("stdin", ["pipe", "file"])
def test_a_missing_command_exits_127_naming_it(tmp_path: Path, loop: str, stdin: str) -> None:
    (tmp_path / "requests.jsonl").write_bytes(encoded(requests(1)))
    command = proxy_command(loop, tmp_path, server=["no-such-server-xyz"])
    with (tmp_path / "requests.jsonl").open("rb") as file:
        source: Any = file if stdin == "file" else subprocess.PIPE
        data = None if stdin == "file" else encoded(requests(1))
        done = run(command, tmp_path, stdin=source, stdout=subprocess.PIPE, input=data)
    assert done.returncode == 127
    assert "cannot start no-such-server-xyz" in said(tmp_path)


# ---------------------------------------------------------------------------------------------
# A terminal


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[list[str]]:
    """A tmux server of this test's own (its socket under tmp_path), killed at the end."""
    if shutil.which("tmux") is None:
        pytest.fail("tmux is missing: apt-get install tmux")
    base = ["tmux", "-S", str(tmp_path / "tmux.sock")]
    yield base
    subprocess.run([*base, "kill-server"], capture_output=True, check=False)


def _wait_for(path: Path, condition: Any) -> bytes:
    deadline = time.monotonic() + _SECONDS
    while time.monotonic() < deadline:
        data = path.read_bytes() if path.exists() else b""
        if condition(data):
            return data
        time.sleep(0.1)
    raise AssertionError(f"timed out; {path.name}: {data[-500:]!r}")


def _json_objects(line: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages a terminal line shows, in order: an echo the shell's ``stty
    -echo`` came too late for can share a line with the answer it got, with no line break
    between."""
    text = line.decode("utf-8", "replace")
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = text.find("{")
    while at >= 0:
        try:
            value, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict) and "jsonrpc" in value:
            found.append(value)
            at = text.find("{", end)
        else:  # a part of a message cut by the terminal: what follows may be whole
            at = text.find("{", at + 1)
    return found


def test_a_terminal_under_tmux(tmp_path: Path, loop: str, tmux: list[str]) -> None:
    """stdin and stdout one terminal, as a person typing gives it: each request typed is
    answered on the terminal, and ^D ends the session."""
    command = " ".join(f"'{part}'" for part in proxy_command(loop, tmp_path))
    shell = f"stty -echo; {command} 2>stderr; echo $? > status; sleep 60"
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "300", "-y", "50", "-c", str(tmp_path), shell],
        check=True,
        cwd=tmp_path,
    )
    subprocess.run([*tmux, "pipe-pane", "-o", f"cat >> {tmp_path / 'screen'}"], check=True)
    screen = tmp_path / "screen"
    for line in requests(3):
        subprocess.run([*tmux, "send-keys", "-l", json.dumps(line)], check=True)
        subprocess.run([*tmux, "send-keys", "Enter"], check=True)
        if "id" in line:
            answer = f'"id":{line["id"]},'.encode()
            _wait_for(screen, lambda data, answer=answer: answer in data)
    subprocess.run([*tmux, "send-keys", "C-d"], check=True)
    assert _wait_for(tmp_path / "status", lambda data: data.endswith(b"\n")).strip() == b"0"
    # A request typed before the shell's stty -echo took effect is echoed too: only
    # responses are the proxy's answers.
    lines = [obj for line in screen.read_bytes().splitlines() for obj in _json_objects(line)]
    answers = [line for line in lines if "method" not in line]
    assert [answer["id"] for answer in answers] == [0, 1, 2, 3]
    assert recorded(tmp_path) == valid_texts(3)
    said(tmp_path)
