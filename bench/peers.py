"""Peers benchmark: strictmcp next to other MCP proxies, side by side in one run.

Run ``python bench/peers.py`` (``make bench-peers``) for the full run, ``--quick`` for a smoke
run, ``--rounds N`` to choose the rounds, ``--only NAME...`` to run some peers only (names as in
the table's ``key`` column: ``stdio-direct``, ``http-strictmcp`` and so on), ``--json FILE`` to
keep every sample, ``--install`` to (re)install the peers' environments first, ``--base REV``
to run strictmcp's rows a second time on git revision REV's code, in the same rounds (with
``--only http-strictmcp http-strictmcp@base``, say: an interleaved before/after over HTTP);
``--base DIR`` does the same with the package in a directory (``--base src`` with this run's
PYTHONPATH at a compiled build: compiled against pure Python, interleaved).

The peers (other projects' proxies) are never imported here: each lives in its own virtual
environment under ``bench/.peers/<name>/`` (gitignored), made with ``python3 -m venv`` and
``pip install`` of a pinned version on first use, and runs as a subprocess of that
environment's interpreter. Its installed version is read from inside that environment
(``importlib.metadata``) and recorded with every run. A peer that cannot be installed or does
not start gets a row saying so and why; no figure is ever made up for it.

Every peer fronts the same upstream, bench/echo_server.py over stdio (each peer its own copy,
started with ``--probe-log FILE``), and is driven by the same client, this process:

- stdio peers: raw JSON lines written with ``os.write``, answers read with a blocking
  ``readline`` (as bench/proxy.py does); 16 in flight by writing a new request as each answer
  comes back.
- HTTP peers (streamable HTTP): a minimal HTTP/1.1 client on asyncio streams, keep-alive
  connections, ``Content-Length`` or chunked bodies, JSON or SSE answers; one connection for
  the sequential calls, 16 connections with one request each in flight for the throughput.
  Session peers get ``initialize`` (revision 2025-06-18), ``notifications/initialized`` and
  ``tools/list`` first and then send ``Mcp-Session-Id``; the stateless row sends 2026-07-28
  requests (``_meta`` and the ``Mcp-Method``/``Mcp-Name`` headers), no handshake.

Before any timing each peer must list the tool and echo three argument sets intact; during the
timing every answer is checked (right id, ``structuredContent.received`` and the text content
equal to the arguments sent, ``isError`` false), and a peer with one wrong answer is reported
as failed, not timed. Whether a peer blocks an invalid call is read from the echo server's own
probe log, not from the answer: the client sends a probe call whose ``priority`` breaks the
tool's ``inputSchema``, then a valid probe; "yes" when the server executed the valid probe and
not the invalid one, "no" when it executed both.

Rounds are interleaved: each round runs every peer in turn, the order rotating by one each
round, so machine noise falls on all alike. Per peer and round: a batch of sequential calls,
each timed alone, and a batch with 16 in flight, timed whole. Figures: median latency over all
sequential calls, median over rounds of the calls per second with 16 in flight, and CPU time
(user + system from ``/proc``) of the peer's whole process tree (the peer and its children,
the echo server included) over its own timed batches, per call, with the echo server's share.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import json
import os
import secrets
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from compare import extract
from engine import VALID_INSTANCE, environment

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PEERS_DIR = BENCH / ".peers"
LAUNCH = BENCH / "peers_launch"
ECHO = [sys.executable, str(BENCH / "echo_server.py")]
DEPTH = 16
REVISION = "2025-06-18"
MODERN = "2026-07-28"
TOOL = "create_issue"
PROBE_TITLE = "strictmcp-bench-probe"  # as in bench/echo_server.py
START_SECONDS = 90.0
CALL_SECONDS = 30.0

# Each peer's environment: the package installed there, pinned, and its console entry points.
PINS: dict[str, tuple[str, str]] = {
    "fastmcp": ("fastmcp", "4.2.3"),
    "mcp-proxy": ("mcp-proxy", "0.13.0"),
    "contextforge": ("mcp-contextforge-gateway", "1.0.7.post20260921"),
}

ARGUMENTS: dict[str, Any] = VALID_INSTANCE
_ARGUMENTS_JSON = json.dumps(ARGUMENTS, separators=(",", ":"))


class Unavailable(Exception):
    """A peer that cannot run here; the message is the one-line reason shown in its row."""


def one_line(text: str, limit: int = 160) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[-1] if lines else "no output"
    return line if len(line) <= limit else line[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------
# The peers' environments


def venv_python(name: str) -> Path:
    return PEERS_DIR / name / "bin" / "python"


def installed_version(name: str) -> str | None:
    """The pinned package's version as installed in the peer's environment, or None."""
    python = venv_python(name)
    if not python.exists():
        return None
    package = PINS[name][0]
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    done = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    return done.stdout.strip() if done.returncode == 0 else None


def ensure_venv(name: str, force: bool) -> str:
    """The peer's environment, made and installed if missing (or with ``force``); its version."""
    package, pinned = PINS[name]
    have = installed_version(name)
    if have == pinned and not force:
        return have
    where = PEERS_DIR / name
    print(f"installing {package}=={pinned} into {where} ...", flush=True)
    PEERS_DIR.mkdir(exist_ok=True)
    steps = [
        ["python3", "-m", "venv", "--clear", str(where)],
        [str(venv_python(name)), "-m", "pip", "install", "--quiet", f"{package}=={pinned}"],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False, timeout=1800)
        if done.returncode != 0:
            raise Unavailable(f"`{' '.join(step[-3:])}` failed: {one_line(done.stderr)}")
    have = installed_version(name)
    if have is None:
        raise Unavailable(f"{package} is not importable after installing it")
    return have


# ---------------------------------------------------------------------------------------------
# Messages


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def call_message(
    request_id: int, arguments: dict[str, Any] | None = None, tool: str = TOOL
) -> dict[str, Any]:
    params = {"name": tool, "arguments": ARGUMENTS if arguments is None else arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


_MODERN_META = (
    ',"_meta":{"io.modelcontextprotocol/protocolVersion":"' + MODERN + '",'
    '"io.modelcontextprotocol/clientCapabilities":{}}'
)


@functools.cache
def _call_template(tool: str, modern: bool) -> str:
    call = (
        '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"' + tool + '",'
        '"arguments":' + _ARGUMENTS_JSON.replace("%", "%%") + "}}"
    )
    return call[:-2] + _MODERN_META + "}}" if modern else call


def call_body(request_id: int, modern: bool, tool: str = TOOL) -> bytes:
    """A prebuilt ``tools/call`` of ``tool`` with ``ARGUMENTS`` (no trailing newline)."""
    return (_call_template(tool, modern) % request_id).encode()


def initialize(request_id: str | int = "init") -> dict[str, Any]:
    params = {
        "protocolVersion": REVISION,
        "capabilities": {},
        "clientInfo": {"name": "strictmcp-bench-peers", "version": "1.0.0"},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


def intact(message: Any, request_id: int, arguments: dict[str, Any] = ARGUMENTS) -> str | None:
    """None when ``message`` is the echo of ``arguments`` answering ``request_id``; else why not."""
    if not isinstance(message, dict) or message.get("id") != request_id:
        return f"wrong id: {str(message)[:200]}"
    result = message.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return f"not a result: {str(message)[:200]}"
    structured = result.get("structuredContent")
    if not isinstance(structured, dict) or structured.get("received") != arguments:
        return f"structuredContent changed: {str(result)[:200]}"
    content = result.get("content")
    try:
        text = json.loads(content[0]["text"])  # type: ignore[index]
    except (TypeError, KeyError, IndexError, ValueError):
        return f"text content missing: {str(content)[:200]}"
    return None if text == arguments else f"text content changed: {str(content)[:200]}"


class WrongAnswer(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Processes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _proc_stat(pid: int) -> tuple[int, float, float] | None:
    """(parent pid, CPU seconds user + system, CPU seconds of its children that have ended
    and been waited for) of a live process, or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    tick = os.sysconf("SC_CLK_TCK")
    own = (int(fields[11]) + int(fields[12])) / tick
    return int(fields[1]), own, (int(fields[13]) + int(fields[14])) / tick


def _is_echo(pid: int) -> bool:
    """Whether the process runs bench/echo_server.py (as its script, not as an argument)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return len(argv) > 1 and argv[1].endswith(b"echo_server.py")


def tree_cpu(root: int) -> tuple[float, float]:
    """CPU seconds of ``root`` and its live descendants, and of the echo servers among them.
    The total counts the descendants that have ended too (FastMCP's multi-server proxy starts
    a server for each call): their CPU is spent because of the peer, so it is the peer's."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    ended: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _proc_stat(int(entry))
            if stat is not None:
                parents[int(entry)], cpu[int(entry)], ended[int(entry)] = stat
    members = {root}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in members and pid not in members:
                members.add(pid)
                grew = True
    total = sum(cpu.get(pid, 0.0) + ended.get(pid, 0.0) for pid in members)
    echo = sum(cpu.get(pid, 0.0) for pid in members if _is_echo(pid))
    return total, echo


@dataclass
class Launched:
    process: subprocess.Popen[bytes]
    log: Path

    def failure(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        status = self.process.poll()
        where = f"exited with status {status}" if status is not None else "still running"
        return f"{where}: {one_line(text)}"

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def rooted(env: Mapping[str, str] | None) -> dict[str, str]:
    """``env`` (None: this process's) with each ``PYTHONPATH`` entry made absolute from this
    process's working directory. A child started elsewhere would resolve a relative entry
    from its own (Python makes ``sys.path`` absolute at start) and silently run the code
    installed instead: ``PYTHONPATH=build/compiled`` timed pure Python."""
    rooted = dict(os.environ if env is None else env)
    entries = rooted.get("PYTHONPATH")
    if entries:
        absolute = [os.path.abspath(entry) for entry in entries.split(os.pathsep) if entry]
        rooted["PYTHONPATH"] = os.pathsep.join(absolute)
    return rooted


def launch(
    argv: Sequence[str], log: Path, *, stdio: bool, env: dict[str, str] | None, cwd: Path
) -> Launched:
    """Start a peer in its own process group (so that stopping it stops its children), in
    ``cwd``, with this run's ``PYTHONPATH`` made absolute (see :func:`rooted`)."""
    pipe = subprocess.PIPE if stdio else subprocess.DEVNULL
    with log.open("wb") as err:
        process = subprocess.Popen(
            list(argv),
            stdin=pipe,
            stdout=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stderr=err,
            env=rooted(env),
            cwd=cwd,
            start_new_session=True,
        )
    return Launched(process, log)


# ---------------------------------------------------------------------------------------------
# Clients


class Client:
    """What the rounds need from a connected peer; ``tool`` is the name it offers the echo
    server's tool under (a gateway prefixes the server's name)."""

    tool: str = TOOL

    def ask(self, message: dict[str, Any]) -> Any:
        raise NotImplementedError

    def sequential(self, n: int) -> list[float]:
        raise NotImplementedError

    def pipelined(self, n: int) -> float:
        raise NotImplementedError

    def refresh(self) -> None:
        """Get ready for a turn, untimed."""

    def close(self) -> None:
        raise NotImplementedError


class StdioClient(Client):
    """A stdio peer on raw pipes: blocking writes of whole lines, buffered reads."""

    def __init__(self, launched: Launched) -> None:
        process = launched.process
        assert process.stdin is not None
        assert process.stdout is not None
        self.launched = launched
        self._fd = process.stdin.fileno()
        self._reader = process.stdout
        self.next_id = 1
        self.ask(initialize())
        self.write(_dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + b"\n")

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def read(self) -> Any:
        """The next response; requests from the peer are refused, notifications skipped."""
        while True:
            line = self._reader.readline()
            if not line:
                raise Unavailable(f"closed its output; {self.launched.failure()}")
            message = json.loads(line)
            if "method" not in message:
                return message
            if "id" in message:
                error = {"code": -32601, "message": "not supported by the benchmark client"}
                self.write(_dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + b"\n")

    def ask(self, message: dict[str, Any]) -> Any:
        self.write(_dumps(message) + b"\n")
        return self.read()

    def ids(self, n: int) -> range:
        first = self.next_id
        self.next_id += n
        return range(first, first + n)

    def sequential(self, n: int) -> list[float]:
        ids = self.ids(n)
        lines = [call_body(i, False, self.tool) + b"\n" for i in ids]
        write, read, clock = self.write, self.read, time.perf_counter_ns
        times: list[float] = []
        answers: list[Any] = []
        gc.disable()
        try:
            for line in lines:
                start = clock()
                write(line)
                answers.append(read())
                times.append(clock() - start)
        finally:
            gc.enable()
        check_answers(answers, ids)
        return times

    def pipelined(self, n: int) -> float:
        ids = self.ids(n)
        lines = [call_body(i, False, self.tool) + b"\n" for i in ids]
        write, read = self.write, self.read
        answers: list[Any] = []
        gc.disable()
        try:
            start = time.perf_counter_ns()
            write(b"".join(lines[:DEPTH]))
            for line in lines[DEPTH:]:
                answers.append(read())
                write(line)
            for _ in range(min(DEPTH, n)):
                answers.append(read())
            elapsed = time.perf_counter_ns() - start
        finally:
            gc.enable()
        check_answers(sorted(answers, key=lambda a: a.get("id", 0)), ids)
        return elapsed / n

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def check_answers(answers: list[Any], ids: range) -> None:
    if len(answers) != len(ids):
        raise WrongAnswer(f"{len(answers)} answers to {len(ids)} calls")
    for answer, request_id in zip(answers, ids, strict=True):
        wrong = intact(answer, request_id)
        if wrong is not None:
            raise WrongAnswer(wrong)


class HttpConnection:
    """One keep-alive HTTP/1.1 connection: POST a body, read the whole response."""

    def __init__(self, host: str, port: int, path: str) -> None:
        self.host, self.port, self.path = host, port, path
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        await self.close()
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)

    async def post(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """Send one POST and read its response; a reused connection the server has closed in
        the meantime (keep-alive timeout) is opened again and the request sent once more."""
        if self.writer is None:
            await self.open()
            return await self._post(body, headers)
        try:
            return await self._post(body, headers)
        except (ConnectionError, asyncio.IncompleteReadError):
            await self.open()
            return await self._post(body, headers)

    async def _post(
        self, body: bytes, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        assert self.reader is not None
        assert self.writer is not None
        extra = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n"
        )
        self.writer.write(head.encode() + body)
        reader = self.reader
        try:
            head_bytes = await reader.readuntil(b"\r\n\r\n")  # one await for the whole head
        except asyncio.IncompleteReadError as error:
            raise ConnectionError("the peer closed the connection") from error
        status_line, *header_lines = head_bytes.decode("latin-1").split("\r\n")
        status = int(status_line.split()[1])
        answer_headers: dict[str, str] = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                answer_headers[name.strip().lower()] = value.strip()
        if answer_headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readline()).split(b";")[0], 16)
                if size == 0:
                    while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
            data = b"".join(parts)
        elif "content-length" in answer_headers:
            data = await reader.readexactly(int(answer_headers["content-length"]))
        elif status in (202, 204, 304):
            data = b""
        else:
            data = await reader.read()
            await self.close()
        if answer_headers.get("connection", "").lower() == "close":
            await self.close()
        return status, answer_headers, data

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await self.writer.wait_closed()
        self.reader = self.writer = None


def decode_answer(headers: dict[str, str], data: bytes, request_id: Any) -> Any:
    """The JSON-RPC answer to ``request_id`` in a JSON or SSE response body."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        event: list[bytes] = []
        found: Any = None
        for raw in [*data.split(b"\n"), b""]:
            line = raw.rstrip(b"\r")
            if line.startswith(b"data:"):
                event.append(line[5:].lstrip(b" "))
            elif not line and event:
                message = json.loads(b"\n".join(event))
                event = []
                if isinstance(message, dict) and message.get("id") == request_id:
                    found = message
        return found
    return json.loads(data) if data else None


class HttpClient(Client):
    """A streamable HTTP peer: a session (2025-06-18 handshake) or stateless 2026-07-28."""

    def __init__(self, url: str, modern: bool) -> None:
        rest = url.split("://", 1)[1]
        hostport, _, path = rest.partition("/")
        host, _, port = hostport.rpartition(":")
        if host not in ("127.0.0.1", "localhost", "[::1]"):
            raise Unavailable(f"not a loopback URL: {url}")
        self.host, self.port, self.path = host, int(port), "/" + path
        self.modern = modern
        self.loop = asyncio.new_event_loop()
        self.connections = [HttpConnection(host, self.port, self.path) for _ in range(DEPTH)]
        self.headers: dict[str, str] = {}
        self.next_id = 1
        if modern:
            self.headers = {"mcp-protocol-version": MODERN}
            return
        status, headers, data = self.run(self._post(_dumps(initialize()), self.headers))
        if status != 200:
            raise Unavailable(
                f"initialize: HTTP {status}: {one_line(data.decode(errors='replace'))}"
            )
        answer = decode_answer(headers, data, "init")
        if not isinstance(answer, dict) or "result" not in answer:
            raise Unavailable(f"initialize: no result: {str(answer)[:150]}")
        self.headers = {"mcp-protocol-version": REVISION}
        if "mcp-session-id" in headers:
            self.headers["mcp-session-id"] = headers["mcp-session-id"]
        note = _dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        status, _, data = self.run(self._post(note, self.headers))
        if status not in (200, 202):
            raise Unavailable(f"notifications/initialized: HTTP {status}")

    def run(self, work: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(work, CALL_SECONDS * 4))

    async def _post(
        self, body: bytes, headers: dict[str, str], connection: int = 0
    ) -> tuple[int, dict[str, str], bytes]:
        return await self.connections[connection].post(body, headers)

    def call_headers(self, message: dict[str, Any] | None) -> dict[str, str]:
        if not self.modern:
            return self.headers
        headers = {**self.headers, "mcp-method": "tools/call", "mcp-name": self.tool}
        if message is not None and message.get("method") != "tools/call":
            del headers["mcp-name"]
            headers["mcp-method"] = message["method"]
        return headers

    def ask(self, message: dict[str, Any]) -> Any:
        if self.modern:
            meta = json.loads(_MODERN_META[len(',"_meta":') :])
            message = {**message, "params": {**message.get("params", {}), "_meta": meta}}
        _, headers, data = self.run(self._post(_dumps(message), self.call_headers(message)))
        return decode_answer(headers, data, message.get("id"))

    def ids(self, n: int) -> range:
        first = self.next_id
        self.next_id += n
        return range(first, first + n)

    def refresh(self) -> None:
        """Open every connection afresh, untimed: servers close idle ones between turns."""

        async def reopen() -> None:
            for connection in self.connections:
                await connection.open()

        self.run(reopen())

    def sequential(self, n: int) -> list[float]:
        ids = self.ids(n)
        bodies = [call_body(i, self.modern, self.tool) for i in ids]
        headers = self.call_headers(None)
        connection = self.connections[0]

        async def work() -> tuple[list[float], list[Any]]:
            clock = time.perf_counter_ns
            times: list[float] = []
            answers: list[Any] = []
            for body, request_id in zip(bodies, ids, strict=True):
                start = clock()
                _, answer_headers, data = await connection.post(body, headers)
                answers.append(decode_answer(answer_headers, data, request_id))
                times.append(clock() - start)
            return times, answers

        gc.disable()
        try:
            timed: tuple[list[float], list[Any]] = self.run(work())
        finally:
            gc.enable()
        times, answers = timed
        check_answers(answers, ids)
        return times

    def pipelined(self, n: int) -> float:
        ids = self.ids(n)
        bodies = [call_body(i, self.modern, self.tool) for i in ids]
        headers = self.call_headers(None)
        answers: list[Any] = [None] * n

        async def worker(connection: HttpConnection, lane: int) -> None:
            for index in range(lane, n, DEPTH):
                _, answer_headers, data = await connection.post(bodies[index], headers)
                answers[index] = decode_answer(answer_headers, data, ids[index])

        async def work() -> int:
            start = time.perf_counter_ns()
            await asyncio.gather(*(worker(c, i) for i, c in enumerate(self.connections)))
            return time.perf_counter_ns() - start

        gc.disable()
        try:
            elapsed: int = self.run(work())
        finally:
            gc.enable()
        check_answers(answers, ids)
        return elapsed / n

    def close(self) -> None:
        async def close_all() -> None:
            for connection in self.connections:
                await connection.close()

        with contextlib.suppress(Exception):
            self.loop.run_until_complete(close_all())
        self.loop.close()


# ---------------------------------------------------------------------------------------------
# The peers


@dataclass
class Setup:
    """Where a run keeps its files."""

    tmp: Path
    install: bool
    versions: dict[str, str] = field(default_factory=dict)

    def echo(self, key: str) -> list[str]:
        return [*ECHO, "--probe-log", str(self.probe_log(key))]

    def probe_log(self, key: str) -> Path:
        return self.tmp / f"{key}.probes"

    def version_of(self, venv: str) -> str:
        if venv not in self.versions:
            self.versions[venv] = ensure_venv(venv, self.install)
        return self.versions[venv]


@dataclass
class Spec:
    key: str
    mode: str  # "stdio" or "HTTP"
    label: str
    start: Callable[[Setup, Path], tuple[Launched, Client]]
    version: Callable[[Setup], str]
    baseline: bool = False


def strictmcp_version(setup: Setup) -> str:
    """This checkout's version, commit and the build its processes run (``compiled`` or
    ``pure Python``, asked of a child started as the rows' are)."""
    try:
        own = version("strictmcp")
    except PackageNotFoundError:
        own = "?"
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    built = subprocess.run(
        [sys.executable, "-c", "import strictmcp; print(strictmcp.build())"],
        capture_output=True,
        text=True,
        check=False,
        env=rooted(None),
        cwd=setup.tmp,
    )
    commit = done.stdout.strip() if done.returncode == 0 else "?"
    return f"{own} ({commit}, {built.stdout.strip() or '?'})"


def wait_http(launched: Launched, port: int) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if launched.process.poll() is not None:
            raise Unavailable(launched.failure())
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise Unavailable(f"not listening on port {port} after {START_SECONDS:.0f} s")


def wait_announced(launched: Launched) -> str:
    """The URL ``strictmcp proxy --listen`` announces on its stderr."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        text = launched.log.read_text(errors="replace") if launched.log.exists() else ""
        for line in text.splitlines():
            if "listening on" in line:
                return line.rsplit(" ", 1)[1]
        if launched.process.poll() is not None:
            raise Unavailable(launched.failure())
        time.sleep(0.05)
    raise Unavailable("never said where it listens")


def stdio_peer(
    argv: Callable[[Setup, str], list[str]],
    key: str,
    env: Callable[[], dict[str, str]] | None = None,
    tool: str = TOOL,
) -> Callable[..., Any]:
    def start(setup: Setup, log: Path) -> tuple[Launched, Client]:
        environ = None if env is None else env()
        launched = launch(argv(setup, key), log, stdio=True, env=environ, cwd=setup.tmp)
        client = StdioClient(launched)
        client.tool = tool
        return launched, client

    return start


def http_peer(
    argv: Callable[[Setup, str, int], list[str]],
    key: str,
    path: str = "/mcp",
    *,
    modern: bool = False,
    announced: bool = False,
    env: Callable[[], dict[str, str]] | None = None,
    tool: str = TOOL,
) -> Callable[..., Any]:
    def start(setup: Setup, log: Path) -> tuple[Launched, Client]:
        port = 0 if announced else free_port()
        launched = launch(
            argv(setup, key, port),
            log,
            stdio=False,
            env=None if env is None else env(),
            cwd=setup.tmp,
        )
        try:
            if announced:
                url = wait_announced(launched)
            else:
                wait_http(launched, port)
                url = f"http://127.0.0.1:{port}{path}"
            client = HttpClient(url, modern)
            client.tool = tool
            return launched, client
        except BaseException:
            launched.stop()
            raise

    return start


def contextforge_env() -> dict[str, str]:
    # translate refuses to import without a signing secret, though the bridge never uses one.
    return {**os.environ, "JWT_SECRET_KEY": secrets.token_hex(32), "LOG_LEVEL": "WARNING"}


STRICTMCP = [sys.executable, "-m", "strictmcp.proxy"]
GATEWAY = [sys.executable, "-m", "strictmcp", "gateway"]
GATEWAY_SERVERS = ("one", "two", "three")
"""The servers of each gateway row, every one the echo server; the calls go to the first."""


def gateway_policy(directory: Path, servers: Sequence[tuple[str, Sequence[str]]]) -> Path:
    """A policy file of one ``[[server]]`` table per (name, command) of ``servers``."""
    path = directory / f"gateway-{secrets.token_hex(4)}.toml"
    tables = [
        f"[[server]]\nname = {json.dumps(name)}\ncommand = {json.dumps(list(command))}\n"
        for name, command in servers
    ]
    path.write_text("\n".join(tables))
    return path


def _gateway_argv(setup: Setup, key: str) -> list[str]:
    servers = [(name, setup.echo(key)) for name in GATEWAY_SERVERS]
    return [*GATEWAY, "--policy", str(gateway_policy(setup.tmp, servers))]


def _fastmcp_servers(setup: Setup, key: str) -> list[str]:
    """The echo server's command once per gateway server, each after ``--``."""
    return [arg for _ in GATEWAY_SERVERS for arg in ("--", *setup.echo(key))]


def _venv_bin(name: str, program: str) -> str:
    return str(PEERS_DIR / name / "bin" / program)


def _not_offered(setup: Setup, log: Path) -> tuple[Launched, Client]:
    raise Unavailable(
        "mcp-proxy has no stdio-to-stdio mode (it bridges stdio to SSE/streamable HTTP, or a "
        "remote server to stdio); see its HTTP row"
    )


def base_specs(specs: list[Spec], base: str, path: Path) -> list[Spec]:
    """strictmcp's rows again, on the code of ``base`` (a git revision, or a directory that
    holds a ``strictmcp`` package, such as a compiled build), importable from ``path``: each
    next to its own in the same rounds, for a before/after ratio."""

    def env() -> dict[str, str]:
        # Only the base's own code: not whatever else this run's PYTHONPATH adds.
        return {**os.environ, "PYTHONPATH": str(path)}

    def version(setup: Setup) -> str:
        return f"base {base}"

    based = []
    for spec in specs:
        if not spec.key.endswith(("-strictmcp", "-strictmcp-stateless", "-strictmcp-gateway")):
            continue
        key = f"{spec.key}@base"
        gateway = spec.key.endswith("-gateway")
        tool = f"{GATEWAY_SERVERS[0]}__{TOOL}" if gateway else TOOL
        if spec.mode == "stdio":
            argv = _gateway_argv if gateway else lambda s, k: [*STRICTMCP, "--", *s.echo(k)]
            start = stdio_peer(argv, key, env, tool=tool)
        else:
            start = http_peer(
                (lambda s, k, p: [*_gateway_argv(s, k), "--listen", "127.0.0.1:0"])
                if gateway
                else lambda s, k, p: [*STRICTMCP, "--listen", "127.0.0.1:0", "--", *s.echo(k)],
                key,
                modern=spec.key.endswith("-stateless"),
                announced=True,
                env=env,
                tool=tool,
            )
        based.append(Spec(key, spec.mode, f"{spec.label} at {base}", start, version))
    return based


def peer_specs() -> list[Spec]:
    def none(setup: Setup) -> str:
        return "-"

    def uvicorn_version(setup: Setup) -> str:
        return f"uvicorn {version('uvicorn')}, h11 {version('h11')}"

    def of(venv: str) -> Callable[[Setup], str]:
        return lambda setup: setup.version_of(venv)

    return [
        Spec(
            "stdio-direct",
            "stdio",
            "echo server, direct",
            stdio_peer(lambda s, k: s.echo(k), "stdio-direct"),
            none,
            baseline=True,
        ),
        Spec(
            "stdio-strictmcp",
            "stdio",
            "strictmcp `proxy`",
            stdio_peer(lambda s, k: [*STRICTMCP, "--", *s.echo(k)], "stdio-strictmcp"),
            strictmcp_version,
        ),
        Spec(
            "stdio-floor",
            "stdio",
            "strictmcp's stdio transport relaying lines, every check off (the floor)",
            stdio_peer(
                lambda s, k: [
                    sys.executable,
                    str(LAUNCH / "stdio_floor.py"),
                    "--",
                    *s.echo(k),
                ],
                "stdio-floor",
            ),
            strictmcp_version,
        ),
        Spec(
            "stdio-fastmcp",
            "stdio",
            "FastMCP proxy (`create_proxy`)",
            stdio_peer(
                lambda s, k: [
                    str(venv_python("fastmcp")),
                    str(LAUNCH / "fastmcp_proxy.py"),
                    "stdio",
                    "--",
                    *s.echo(k),
                ],
                "stdio-fastmcp",
            ),
            of("fastmcp"),
        ),
        Spec("stdio-mcp-proxy", "stdio", "mcp-proxy", _not_offered, of("mcp-proxy")),
        Spec(
            "http-floor",
            "HTTP",
            "bare ASGI app on uvicorn answering itself (no upstream)",
            http_peer(
                lambda s, k, p: [sys.executable, str(LAUNCH / "asgi_echo.py"), str(p)],
                "http-floor",
            ),
            uvicorn_version,
            baseline=True,
        ),
        Spec(
            "http-strictmcp",
            "HTTP",
            "strictmcp `proxy --listen`, session (2025-06-18)",
            http_peer(
                lambda s, k, p: [*STRICTMCP, "--listen", "127.0.0.1:0", "--", *s.echo(k)],
                "http-strictmcp",
                announced=True,
            ),
            strictmcp_version,
        ),
        Spec(
            "http-strictmcp-stateless",
            "HTTP",
            "strictmcp `proxy --listen`, stateless (2026-07-28)",
            http_peer(
                lambda s, k, p: [*STRICTMCP, "--listen", "127.0.0.1:0", "--", *s.echo(k)],
                "http-strictmcp-stateless",
                modern=True,
                announced=True,
            ),
            strictmcp_version,
        ),
        Spec(
            "http-strictmcp-stateless-workers",
            "HTTP",
            "strictmcp `proxy --listen --workers 2`, stateless (2026-07-28)",
            http_peer(
                lambda s, k, p: [
                    *STRICTMCP,
                    "--listen",
                    "127.0.0.1:0",
                    "--workers",
                    "2",
                    "--",
                    *s.echo(k),
                ],
                "http-strictmcp-stateless-workers",
                modern=True,
                announced=True,
            ),
            strictmcp_version,
        ),
        Spec(
            "http-mcp-proxy",
            "HTTP",
            "mcp-proxy (streamable HTTP)",
            http_peer(
                lambda s, k, p: [
                    _venv_bin("mcp-proxy", "mcp-proxy"),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(p),
                    "--",
                    *s.echo(k),
                ],
                "http-mcp-proxy",
            ),
            of("mcp-proxy"),
        ),
        Spec(
            "http-fastmcp",
            "HTTP",
            "FastMCP proxy (`create_proxy`, HTTP)",
            http_peer(
                lambda s, k, p: [
                    str(venv_python("fastmcp")),
                    str(LAUNCH / "fastmcp_proxy.py"),
                    "http",
                    str(p),
                    "--",
                    *s.echo(k),
                ],
                "http-fastmcp",
            ),
            of("fastmcp"),
        ),
        Spec(
            "http-contextforge",
            "HTTP",
            "ContextForge `mcpgateway.translate` (streamable HTTP)",
            http_peer(
                lambda s, k, p: [
                    str(venv_python("contextforge")),
                    "-m",
                    "mcpgateway.translate",
                    "--stdio",
                    shlex.join(s.echo(k)),
                    "--expose-streamable-http",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(p),
                    "--logLevel",
                    "warning",
                ],
                "http-contextforge",
                env=contextforge_env,
            ),
            of("contextforge"),
        ),
        *gateway_specs(of),
    ]


def gateway_specs(of: Callable[[str], Callable[[Setup], str]]) -> list[Spec]:
    """Many servers behind one endpoint (issue 22): three echo servers, every call to the first.
    Each row's key is its single-server row's key plus ``-gateway``: :func:`gateway_ratios`
    sets the two side by side."""
    first = GATEWAY_SERVERS[0]
    return [
        Spec(
            "stdio-strictmcp-gateway",
            "stdio",
            f"strictmcp `gateway`, {len(GATEWAY_SERVERS)} servers",
            stdio_peer(_gateway_argv, "stdio-strictmcp-gateway", tool=f"{first}__{TOOL}"),
            strictmcp_version,
        ),
        Spec(
            "stdio-fastmcp-gateway",
            "stdio",
            f"FastMCP multi-server proxy (`create_proxy` of an MCPConfig), "
            f"{len(GATEWAY_SERVERS)} servers",
            stdio_peer(
                lambda s, k: [
                    str(venv_python("fastmcp")),
                    str(LAUNCH / "fastmcp_proxy.py"),
                    "stdio",
                    *_fastmcp_servers(s, k),
                ],
                "stdio-fastmcp-gateway",
                tool=f"{first}_{TOOL}",
            ),
            of("fastmcp"),
        ),
        Spec(
            "http-strictmcp-gateway",
            "HTTP",
            f"strictmcp `gateway --listen`, session (2025-06-18), {len(GATEWAY_SERVERS)} servers",
            http_peer(
                lambda s, k, p: [*_gateway_argv(s, k), "--listen", "127.0.0.1:0"],
                "http-strictmcp-gateway",
                announced=True,
                tool=f"{first}__{TOOL}",
            ),
            strictmcp_version,
        ),
        Spec(
            "http-mcp-proxy-gateway",
            "HTTP",
            f"mcp-proxy named servers (`--named-server`), {len(GATEWAY_SERVERS)} servers",
            http_peer(
                lambda s, k, p: [
                    _venv_bin("mcp-proxy", "mcp-proxy"),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(p),
                    *[
                        arg
                        for name in GATEWAY_SERVERS
                        for arg in ("--named-server", name, shlex.join(s.echo(k)))
                    ],
                ],
                "http-mcp-proxy-gateway",
                path=f"/servers/{first}/mcp",
            ),
            of("mcp-proxy"),
        ),
        Spec(
            "http-fastmcp-gateway",
            "HTTP",
            f"FastMCP multi-server proxy (`create_proxy` of an MCPConfig, HTTP), "
            f"{len(GATEWAY_SERVERS)} servers",
            http_peer(
                lambda s, k, p: [
                    str(venv_python("fastmcp")),
                    str(LAUNCH / "fastmcp_proxy.py"),
                    "http",
                    str(p),
                    *_fastmcp_servers(s, k),
                ],
                "http-fastmcp-gateway",
                tool=f"{first}_{TOOL}",
            ),
            of("fastmcp"),
        ),
    ]


# ---------------------------------------------------------------------------------------------
# The run


@dataclass
class Row:
    spec: Spec
    version: str = "-"
    reason: str | None = None  # why the peer has no figures
    blocks: str = "-"
    launched: Launched | None = None
    command: list[str] = field(default_factory=list)  # how the peer was started
    client: Client | None = None
    latencies: list[float] = field(default_factory=list)  # ns per sequential call
    rates: list[float] = field(default_factory=list)  # calls/s with 16 in flight, per round
    cpu_total: float = 0.0  # seconds of the process tree over the timed batches
    cpu_echo: float = 0.0
    cpu_client: float = 0.0  # seconds of this process (the client) over the same batches
    calls: int = 0
    #: Per round: the round's number and the proxy's CPU seconds (the tree less the echo
    #: servers) over its batches.
    proxy_cpu_rounds: list[tuple[int, float]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.reason is None

    def fail(self, reason: str) -> None:
        self.reason = one_line(reason)
        self.stop()

    def stop(self) -> None:
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.close()
            self.client = None
        if self.launched is not None:
            self.launched.stop()
            self.launched = None


def check_peer(row: Row, setup: Setup) -> None:
    """The peer lists the tool, echoes three argument sets intact, and may block a bad call."""
    client = row.client
    assert client is not None
    listed = client.ask({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
    tools = (listed or {}).get("result", {}).get("tools", [])
    if client.tool not in [tool.get("name") for tool in tools]:
        raise WrongAnswer(f"tools/list lacks {client.tool}: {str(listed)[:150]}")
    minimal = {"repository": "octo/hello", "title": "x"}
    unicode = {**ARGUMENTS, "title": "Crash on startup — 設定ファイルが空 🙃", "labels": []}
    for number, arguments in enumerate((ARGUMENTS, minimal, unicode)):
        request_id = 90_000_000 + number
        answer = client.ask(call_message(request_id, arguments, client.tool))
        wrong = intact(answer, request_id, arguments)
        if wrong is not None:
            raise WrongAnswer(wrong)
    if row.spec.key == "http-floor":
        return  # no upstream to count calls: the floor runs the tool itself
    nonce = secrets.token_hex(4)
    invalid = {"repository": "octo/hello", "title": PROBE_TITLE, "priority": "urgent"}
    valid = {"repository": "octo/hello", "title": PROBE_TITLE, "priority": 1}
    client.ask(call_message(91_000_000, {**invalid, "body": f"invalid {nonce}"}, client.tool))
    client.ask(call_message(91_000_001, {**valid, "body": f"valid {nonce}"}, client.tool))
    time.sleep(0.2)
    log = setup.probe_log(row.spec.key)
    seen = log.read_text().splitlines() if log.exists() else []
    executed = {json.loads(line) for line in seen}
    if f"valid {nonce}" not in executed:
        row.blocks = "unknown (the valid probe never reached the echo server)"
    elif f"invalid {nonce}" in executed:
        row.blocks = "no"
    else:
        row.blocks = "yes"


def start_peers(specs: list[Spec], setup: Setup) -> list[Row]:
    rows = []
    for spec in specs:
        row = Row(spec)
        rows.append(row)
        print(f"starting {spec.key} ...", flush=True)
        try:
            row.version = spec.version(setup)
            row.launched, row.client = spec.start(setup, setup.tmp / f"{spec.key}.stderr")
            row.command = [str(arg) for arg in row.launched.process.args]  # type: ignore[union-attr]
            check_peer(row, setup)
        except (Unavailable, WrongAnswer, OSError, ValueError, KeyError, TimeoutError) as error:
            shown = (
                str(error) if isinstance(error, Unavailable) else f"{type(error).__name__}: {error}"
            )
            row.fail(shown)
        except subprocess.TimeoutExpired as error:
            row.fail(f"timed out: {error}")
    return rows


def measure(rows: list[Row], rounds: int, seq_n: int, pipe_n: int) -> None:
    live = [row for row in rows if row.ok]
    for row in live:  # warm up, untimed
        try:
            assert row.client is not None
            row.client.refresh()
            row.client.sequential(max(5, seq_n // 4))
            row.client.pipelined(max(DEPTH, pipe_n // 4))
        except (WrongAnswer, Unavailable, OSError, ValueError, TimeoutError) as error:
            row.fail(f"warm-up: {type(error).__name__}: {error}")
    for index in range(rounds):
        live = [row for row in rows if row.ok]
        if not live:
            return
        offset = index % len(live)
        order = live[offset:] + live[:offset]
        started = time.perf_counter()
        for row in order:
            assert row.client is not None
            assert row.launched is not None
            pid = row.launched.process.pid
            gc.collect()
            try:
                row.client.refresh()
                before = tree_cpu(pid)
                client_before = time.process_time()
                row.latencies += row.client.sequential(seq_n)
                row.rates.append(1e9 / row.client.pipelined(pipe_n))
            except (WrongAnswer, Unavailable, OSError, ValueError, TimeoutError) as error:
                row.fail(f"round {index + 1}: {type(error).__name__}: {error}")
                continue
            row.cpu_client += time.process_time() - client_before
            after = tree_cpu(pid)
            row.cpu_total += after[0] - before[0]
            row.cpu_echo += after[1] - before[1]
            row.calls += seq_n + pipe_n
            row.proxy_cpu_rounds.append((index, (after[0] - before[0]) - (after[1] - before[1])))
        print(f"round {index + 1}/{rounds}: {time.perf_counter() - started:.1f} s", flush=True)


def fmt_us(ns: float) -> str:
    return f"{ns / 1000:,.0f} µs"


def table(rows: list[Row]) -> str:
    lines = [
        "| mode | peer | version | calls/s, 16 in flight | median latency | "
        "CPU per call, process tree (echo server's share) | blocks invalid call |",
        "|---|---|---|--:|--:|--:|---|",
    ]
    for row in rows:
        head = f"| {row.spec.mode} | {row.spec.label} | {row.version} |"
        if not row.ok:
            lines.append(f"{head} unavailable: {row.reason} | | | |")
            continue
        rate = statistics.median(row.rates)
        latency = statistics.median(row.latencies)
        if row.calls:
            cpu = (
                f"{fmt_us(row.cpu_total / row.calls * 1e9)} "
                f"({fmt_us(row.cpu_echo / row.calls * 1e9)})"
            )
        else:
            cpu = "-"
        blocks = "- (baseline)" if row.spec.baseline else row.blocks
        lines.append(f"{head} {rate:,.0f} | {fmt_us(latency)} | {cpu} | {blocks} |")
    return "\n".join(lines)


def client_note(rows: list[Row]) -> str:
    """The client's own CPU per call against each peer: where it nears the time per call,
    the client, not the peer, bounds that row's throughput."""
    parts = [
        f"{row.spec.key} {fmt_us(row.cpu_client / row.calls * 1e9)}"
        for row in rows
        if row.ok and row.calls
    ]
    if not parts:
        return ""
    return "\nClient CPU per call (this process, same batches): " + ", ".join(parts) + "."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="smoke run: few rounds, few calls")
    parser.add_argument("--rounds", type=int, help="rounds (default: 2 quick, 8 full)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run these peers only")
    parser.add_argument("--json", metavar="FILE", type=Path, help="write every sample here")
    parser.add_argument("--install", action="store_true", help="(re)install the peers first")
    parser.add_argument(
        "--base",
        metavar="REV|DIR",
        help="also run strictmcp's rows on git revision REV's code, or on the strictmcp package "
        "in directory REV (a compiled build, say); their keys end in @base",
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="strictmcp-peers-") as tmp:
        return run(args, parser, Path(tmp))


def run(args: argparse.Namespace, parser: argparse.ArgumentParser, tmp: Path) -> int:
    """The run ``args`` ask for, its files under ``tmp``."""
    specs = peer_specs()
    if args.base:
        given = Path(args.base)
        path = given if given.is_dir() else extract(args.base, tmp / "base") / "src"
        specs += base_specs(specs, args.base, path)
    if args.only:
        known = {spec.key for spec in specs}
        unknown = [name for name in args.only if name not in known]
        if unknown:
            parser.error(f"unknown peers {unknown}; known: {', '.join(sorted(known))}")
        specs = [spec for spec in specs if spec.key in args.only]
    seq_n, pipe_n = (30, 160) if args.quick else (150, 800)
    rounds = args.rounds or (2 if args.quick else 8)

    started = time.perf_counter()
    setup = Setup(tmp, args.install)
    rows = start_peers(specs, setup)
    try:
        measure(rows, rounds, seq_n, pipe_n)
    finally:
        for row in rows:
            row.stop()
    elapsed = time.perf_counter() - started

    env = environment()
    mode = "quick" if args.quick else "full"
    print(
        f"\nstrictmcp peers benchmark ({mode}): Python {env['python']}, {env['cpus']} CPUs "
        f"({env['processor']}); {rounds} rounds of {seq_n} sequential and {pipe_n} calls with "
        f"{DEPTH} in flight per peer, {elapsed:.0f} s; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )
    print(table(rows))
    print(client_note(rows))
    if args.base:
        print(base_ratios(rows, seq_n))
    print(gateway_ratios(rows, seq_n))
    if args.json is not None:
        numbers = {
            "mode": mode,
            "rounds": rounds,
            "sequential_per_round": seq_n,
            "in_flight_per_round": pipe_n,
            "depth": DEPTH,
            "seconds": elapsed,
            "environment": env,
            "peers": [
                {
                    "key": row.spec.key,
                    "mode": row.spec.mode,
                    "label": row.spec.label,
                    "version": row.version,
                    "unavailable": row.reason,
                    "command": row.command,
                    "blocks_invalid_call": row.blocks,
                    "latency_ns": row.latencies,
                    "calls_per_second_per_round": row.rates,
                    "cpu_seconds_tree": row.cpu_total,
                    "cpu_seconds_echo_server": row.cpu_echo,
                    "cpu_seconds_client": row.cpu_client,
                    "timed_calls": row.calls,
                    "cpu_seconds_proxy_per_round": row.proxy_cpu_rounds,
                }
                for row in rows
            ],
        }
        args.json.write_text(json.dumps(numbers, indent=2) + "\n")
    return 0


def base_ratios(rows: list[Row], seq_n: int) -> str:
    """Each strictmcp row against its ``@base`` row, round by round (the two ran in the same
    round, so they share its noise): the median over rounds of this tree's figure over the
    base's, with the 10th and 90th percentiles of those ratios. Throughput above 1 is faster,
    latency above 1 slower."""
    by_key = {row.spec.key: row for row in rows}
    lines = ["| row | calls/s ratio, median (p10-p90) | median latency ratio (p10-p90) |"]
    lines.append("|---|--:|--:|")
    for row in rows:
        base = by_key.get(f"{row.spec.key}@base")
        if base is None or not row.rates or len(row.rates) != len(base.rates):
            continue
        rates = [now / then for now, then in zip(row.rates, base.rates, strict=True)]
        latencies = [
            statistics.median(row.latencies[i : i + seq_n])
            / statistics.median(base.latencies[i : i + seq_n])
            for i in range(0, len(row.latencies), seq_n)
        ]
        lines.append(f"| {row.spec.key} | {_spread(rates)} | {_spread(latencies)} |")
    return "\n".join(lines) + "\n"


def gateway_ratios(rows: list[Row], seq_n: int) -> str:
    """Each gateway row against the same peer's single-server row of the run: the proxy's CPU
    per call (the process tree less the echo servers) over all rounds, gateway over single,
    then the median over rounds of each round's ratio (p10-p90: its spread; one clock tick
    of ``/proc`` is 10 ms, a few percent of a round's figure), and the latency ratio."""
    by_key = {row.spec.key: row for row in rows}
    lines = [
        "| gateway row | proxy CPU per call, gateway / single: all rounds | "
        "per round, median (p10-p90) | median latency ratio (p10-p90) |",
        "|---|--:|--:|--:|",
    ]
    for row in rows:
        single = by_key.get(row.spec.key.removesuffix("-gateway"))
        if not row.spec.key.endswith("-gateway") or single is None:
            continue
        if not (row.ok and single.ok and row.calls and single.calls):
            continue
        mine = sum(cpu for _, cpu in row.proxy_cpu_rounds) / row.calls
        theirs = sum(cpu for _, cpu in single.proxy_cpu_rounds) / single.calls
        per_call = row.calls / len(row.proxy_cpu_rounds)
        single_rounds = dict(single.proxy_cpu_rounds)
        rounds = [
            (cpu / per_call) / (single_rounds[index] / per_call)
            for index, cpu in row.proxy_cpu_rounds
            if single_rounds.get(index)
        ]
        latencies = [
            statistics.median(row.latencies[i : i + seq_n])
            / statistics.median(single.latencies[i : i + seq_n])
            for i in range(0, min(len(row.latencies), len(single.latencies)), seq_n)
        ]
        total = f"{mine / theirs:.3f}" if theirs else "-"
        lines.append(
            f"| {row.spec.key} / {single.spec.key} | {total} | {_spread(rounds)} | "
            f"{_spread(latencies)} |"
        )
    return "\n".join(lines) + "\n" if len(lines) > 2 else ""


def _spread(ratios: list[float]) -> str:
    if len(ratios) < 2:
        return f"{ratios[0]:.3f}" if ratios else "-"
    # Inclusive: with a few rounds the default method extrapolates past the smallest and
    # largest ratio (below zero, even).
    deciles = statistics.quantiles(ratios, n=10, method="inclusive")
    return f"{statistics.median(ratios):.3f} ({deciles[0]:.3f}-{deciles[-1]:.3f})"


if __name__ == "__main__":
    sys.exit(main())
