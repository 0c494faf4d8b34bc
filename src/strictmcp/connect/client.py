"""The MCP client over any :class:`~.upstream.Upstream`, for the tools that test servers.

It is built to survive the servers it tests: every request ends in an :data:`Outcome` (a
result, a JSON-RPC error, or a transport failure such as a timeout or a server that exited),
never in an exception for something the server did. Requests the server sends are answered
at once (``ping`` with ``{}``, anything else with "method not found") so that a server never
waits on us; its notifications are ignored. A server that crashed can be restarted.

>>> async def main() -> None:  # doctest: +SKIP
...     async with open_client(command=["mcp-server-time"]) as client:
...         tools = await client.list_tools()
...         outcome = await client.call_tool("get_current_time", {"timezone": "UTC"})
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .. import __version__
from ..lint.model import printable
from ..protocol import Revision
from ..protocol.jsonrpc import DEFAULT_MAX_SIZE
from ..protocol.tasks import EXTENSION as TASKS_EXTENSION
from ..protocol.tasks import created_task
from ..protocol.wire import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
)
from .lines import line_of
from .paging import follow_pages
from .process import ProcessUpstream
from .upstream import Upstream

if TYPE_CHECKING:
    import httpx2

DEFAULT_OFFER = Revision.V2025_11_25
"""The revision offered in ``initialize`` when none is asked for."""

METHOD_NOT_FOUND = -32601
_EXIT_POLLS = 20
_EXIT_POLL_SECONDS = 0.05
_MAX_TOOLS = 10_000
_CLIENT_INFO = {"name": "strictmcp", "version": __version__}
_STDERR_LINES = 10
_STDERR_WIDTH = 200

EXIT_CANNOT_START = 127
"""Every command's exit status when its server cannot be started (as a shell says of a
command it cannot run): ``docs/cli.md``."""
REFUSED_STATUSES = (401, 403)
"""The HTTP statuses of a server that refused the credentials sent (or asked for some)."""
_CREDENTIALS_FIX = "give or correct them with --bearer-env VAR or --header NAME:VALUE"
_RELAYED_FIX = (
    "the server passed on its own upstream's refusal: give it credentials of its own "
    "(a strictmcp proxy's [upstream], docs/policy.md)"
)


@dataclass(frozen=True)
class Success:
    """The server answered with a result."""

    result: dict[str, Any]


@dataclass(frozen=True)
class RpcError:
    """The server answered with a JSON-RPC error."""

    code: int | None
    message: str
    data: Any = None


@dataclass(frozen=True)
class TransportFailure:
    """No answer: ``timeout`` (none in time) or ``gone`` (the server exited or hung up).

    ``stderr`` holds the last lines the server wrote there, when the transport keeps them.
    """

    reason: Literal["timeout", "gone"]
    message: str
    stderr: tuple[str, ...] = ()


Outcome = Success | RpcError | TransportFailure
"""How one request ended."""


class ClientError(RuntimeError):
    """The connection could not be made or used: the server cannot be tested at all.

    ``starting``: it failed before the handshake was done (the command cannot run, the URL
    cannot be reached, the server exited or did not answer ``initialize``), but not because
    the server refused the credentials (:attr:`refused`: the command's configuration is what
    is wrong, not the server). ``stderr``: the last lines the server wrote there, kept apart
    from the one-line message.
    """

    def __init__(
        self, message: str, outcome: Outcome | None = None, *, starting: bool = False
    ) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.starting = starting
        self.stderr = outcome.stderr if isinstance(outcome, TransportFailure) else ()

    @property
    def refused(self) -> bool:
        """Whether the server refused the request over HTTP 401 or 403 (its credentials)."""
        return _refused(self.outcome)


def failure_text(message: str, stderr: Sequence[str] = ()) -> str:
    """How a command tells a person about a server that failed: ``message`` as one line,
    then the last lines the server wrote to stderr (a crash's traceback), indented, at most
    ten of them and each cut short. Every line is escaped on its own (``printable``): the
    message may quote the server, whose text could otherwise redraw the terminal."""
    lines = [printable(message)]
    if stderr:
        lines.append("  the server's stderr ended with:")
        for line in stderr[-_STDERR_LINES:]:
            shown = printable(line.rstrip())
            cut = shown[:_STDERR_WIDTH] + " ..." if len(shown) > _STDERR_WIDTH else shown
            lines.append(f"    {cut}")
    return "\n".join(lines)


UpstreamFactory = Callable[[], Awaitable[Upstream]]
"""Makes a fresh, started connection to the server (called again by :meth:`restart`)."""


@dataclass
class _Connection:
    upstream: Upstream
    reader: asyncio.Task[None] = field(init=False)
    pending: dict[int, asyncio.Future[dict[str, Any] | None]] = field(default_factory=dict)


class McpClient:
    """An MCP client on one server at a time, reconnectable.

    ``revision``: None offers :data:`DEFAULT_OFFER` in ``initialize`` and accepts the
    revision the server answers; a stateless revision (2026-07-28) uses ``server/discover``
    and stamps every request's ``_meta`` instead. ``timeout`` is the default per request.
    """

    def __init__(
        self,
        connect: UpstreamFactory,
        *,
        revision: Revision | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._connect = connect
        self._asked = revision
        self.timeout = timeout
        self.revision: Revision = revision or DEFAULT_OFFER
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.instructions: str | None = None
        self.restarts = 0
        self._conn: _Connection | None = None
        self._next_id = 0

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Connect and shake hands; :class:`ClientError` when that fails."""
        try:
            upstream = await self._connect()
        except OSError as error:
            raise ClientError(
                f"cannot start the server: {error.strerror or error}", starting=True
            ) from None
        conn = _Connection(upstream)
        conn.reader = asyncio.create_task(self._read(conn))
        self._conn = conn
        try:
            await self._handshake()
        except ClientError as error:
            await self.aclose()
            raise ClientError(str(error), error.outcome, starting=not error.refused) from None
        except BaseException:
            await self.aclose()
            raise

    async def restart(self) -> None:
        """End the current connection (whatever state it is in) and start a new one."""
        await self.aclose()
        self.restarts += 1
        await self.start()

    @property
    def alive(self) -> bool:
        """Whether the server is still connected (its output has not ended)."""
        return self._conn is not None and not self._conn.reader.done()

    @property
    def stderr(self) -> list[str]:
        """The last lines the server wrote to stderr, for transports that keep them."""
        tail = getattr(self._conn.upstream, "stderr", None) if self._conn else None
        return list(tail.lines()) if tail is not None else []

    async def aclose(self) -> int:
        """Disconnect; the server's exit status (0 if it was not a process)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return 0
        try:
            return await conn.upstream.aclose()
        finally:
            conn.reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await conn.reader
            _settle(conn.pending)

    async def _handshake(self) -> None:
        asked = self._asked
        if asked is not None and asked.stateless:
            await self._discover(asked)
            return
        offer = asked or DEFAULT_OFFER
        params = {"protocolVersion": offer.value, "capabilities": {}, "clientInfo": _CLIENT_INFO}
        result = self._required(await self.request("initialize", params), "initialize")
        version = result.get("protocolVersion")
        try:
            self.revision = Revision.parse(version if isinstance(version, str) else "")
        except ValueError:
            raise ClientError(
                f"the server answered initialize with protocol version {version!r}, "
                "which strictmcp does not know"
            ) from None
        self._learn(result, result.get("serverInfo"))
        await self.notify("notifications/initialized")

    async def _discover(self, revision: Revision) -> None:
        self.revision = revision
        result = self._required(await self.request("server/discover"), "server/discover")
        supported = result.get("supportedVersions")
        if not isinstance(supported, list) or revision.value not in supported:
            raise ClientError(
                f"the server does not support {revision.value} (it supports {supported!r})"
            )
        meta = result.get("_meta")
        self._learn(result, meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None)

    def _learn(self, result: Mapping[str, Any], server_info: Any) -> None:
        capabilities = result.get("capabilities")
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.server_info = server_info if isinstance(server_info, dict) else {}
        instructions = result.get("instructions")
        self.instructions = instructions if isinstance(instructions, str) else None

    # --- requests ----------------------------------------------------------------------

    async def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None
    ) -> Outcome:
        """Send one request and wait for how it ends, at most ``timeout`` seconds."""
        conn = self._conn
        if conn is None or conn.reader.done():
            return await self._gone_failure()
        self._next_id += 1
        request_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        body = self._stamped(params)
        if body is not None:
            message["params"] = body
        future: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
        conn.pending[request_id] = future
        if not await self._send(conn, message):
            conn.pending.pop(request_id, None)
            return await self._gone_failure()
        wait = self.timeout if timeout is None else timeout
        try:
            response = await asyncio.wait_for(asyncio.shield(future), wait)
        except asyncio.TimeoutError:
            conn.pending.pop(request_id, None)
            if method not in ("initialize", "server/discover"):
                cancel = {"requestId": request_id, "reason": "timed out"}
                await self.notify("notifications/cancelled", cancel)
            return TransportFailure(
                "timeout", f"no answer to {method} within {wait:g} seconds", tuple(self.stderr)
            )
        if response is None:
            return await self._gone_failure()
        return _outcome(response)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send one notification; a server that is gone is not an error here."""
        conn = self._conn
        if conn is None:
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._send(conn, message)

    async def list_tools(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every tool the server lists, all pages (bounded); :class:`ClientError` on failure."""
        return await self._list_all("tools", timeout)

    async def list_prompts(self, *, timeout: float | None = None) -> list[dict[str, Any]]:
        """Every prompt the server lists, all pages (bounded); :class:`ClientError` on
        failure."""
        return await self._list_all("prompts", timeout)

    async def _list_all(self, what: str, timeout: float | None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        method = f"{what}/list"

        async def fetch(cursor: str | None) -> object:
            params = {"cursor": cursor} if cursor is not None else None
            result = self._required(await self.request(method, params, timeout=timeout), "list")
            page = result.get(what)
            if not isinstance(page, list):
                raise ClientError(f"the {method} result has no {what} array")
            found.extend(item for item in page if isinstance(item, dict))
            return result.get("nextCursor") if len(found) < _MAX_TOOLS else None

        # A listing cut short is still what the server listed: tested as far as it goes.
        await follow_pages(fetch)
        return found[:_MAX_TOOLS]

    async def call_tool(
        self, name: str, arguments: Any, *, timeout: float | None = None, as_task: bool = False
    ) -> Outcome:
        """Call tool ``name`` with ``arguments`` (sent as they are, even when not an object).

        A call answered with a task is followed to its end (``tasks/get`` at the interval the
        server asks for, then 2025-11-25's ``tasks/result``, or 2026-07-28's inline result),
        within ``timeout`` in all: the outcome is the final result, as a direct answer's.
        ``as_task`` asks a 2025-11-25 server for a task (a tool whose ``taskSupport`` is
        ``required`` needs it); from 2026-07-28 the client always declares the tasks
        extension, and the server decides."""
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if as_task and not self.revision.stateless:
            params["task"] = {}
        wait = self.timeout if timeout is None else timeout
        deadline = asyncio.get_running_loop().time() + wait
        outcome = await self.request("tools/call", params, timeout=wait)
        if not isinstance(outcome, Success):
            return outcome
        task = created_task(outcome.result)
        if task is None:
            return outcome
        return await self._follow(task, deadline)

    async def _follow(self, task: Mapping[str, Any], deadline: float) -> Outcome:
        """Poll a task until it ends, then its final result (see :meth:`call_tool`)."""
        loop = asyncio.get_running_loop()
        task_id = task.get("taskId")
        while True:
            status = task.get("status")
            if status in ("completed", "failed", "cancelled"):
                break
            left = deadline - loop.time()
            if left <= 0 or not isinstance(task_id, str):
                return TransportFailure(
                    "timeout", "the task did not end in time", tuple(self.stderr)
                )
            interval = task.get("pollIntervalMs", task.get("pollInterval"))
            pause = interval / 1000 if isinstance(interval, int) and interval > 0 else 0.05
            await asyncio.sleep(min(pause, 1.0, left))
            polled = await self.request("tasks/get", {"taskId": task_id}, timeout=left)
            if not isinstance(polled, Success):
                return polled
            task = polled.result
        if self.revision.stateless:
            if isinstance(task.get("result"), dict):
                return Success(task["result"])
            error = task.get("error")
            error = error if isinstance(error, dict) else {}
            code = error.get("code")
            return RpcError(code if isinstance(code, int) else None, str(error.get("message", "")))
        left = max(deadline - loop.time(), 0.001)
        return await self.request("tasks/result", {"taskId": task_id}, timeout=left)

    # --- internals ---------------------------------------------------------------------

    def _required(self, outcome: Outcome, what: str) -> dict[str, Any]:
        """The result of ``outcome``; :class:`ClientError` saying how it failed otherwise."""
        if isinstance(outcome, Success):
            return outcome.result
        if isinstance(outcome, RpcError) and _refused(outcome):
            # Over stdio the refusal is a proxy's, relayed: this command's options cannot help.
            upstream = self._conn.upstream if self._conn is not None else None
            fix = _RELAYED_FIX if isinstance(upstream, ProcessUpstream) else _CREDENTIALS_FIX
            raise ClientError(f"{what} failed: {outcome.message}; {fix}", outcome)
        if isinstance(outcome, RpcError):
            raise ClientError(f"{what} failed: {outcome.message} ({outcome.code})", outcome)
        raise ClientError(f"{what} failed: {outcome.message}", outcome)

    def _stamped(self, params: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if not self.revision.stateless:
            return dict(params) if params is not None else None
        body = dict(params or {})
        meta = dict(body.get("_meta") or {})
        meta[META_PROTOCOL_VERSION] = self.revision.value
        meta[META_CLIENT_INFO] = _CLIENT_INFO
        # The tasks extension is declared: a call the server answers with a task is followed.
        meta[META_CLIENT_CAPABILITIES] = {"extensions": {TASKS_EXTENSION: {}}}
        body["_meta"] = meta
        return body

    async def _send(self, conn: _Connection, message: dict[str, Any]) -> bool:
        line = line_of(message)
        try:
            await conn.upstream.send(line)
        except Exception:
            # However the transport failed, the server cannot be reached: a "gone" outcome.
            return False
        return True

    async def _read(self, conn: _Connection) -> None:
        try:
            while (line := await conn.upstream.receive()) is not None:
                if isinstance(line, str):
                    continue  # over the size bound, dropped unread
                try:
                    message = json.loads(line)
                except ValueError:
                    continue  # not ours to judge here: the proxy and lint check the wire
                if isinstance(message, dict):
                    await self._dispatch(conn, message)
        except Exception:
            # A transport that broke has lost the server: the same as its output ending.
            _settle(conn.pending)
            return
        _settle(conn.pending)

    async def _dispatch(self, conn: _Connection, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:
                await self._answer(conn, message)
            return
        request_id = message.get("id")
        future = conn.pending.pop(request_id, None) if isinstance(request_id, int) else None
        if future is not None and not future.done():
            future.set_result(message)

    async def _answer(self, conn: _Connection, request: dict[str, Any]) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request["id"]}
        if request["method"] == "ping":
            reply["result"] = {}
        else:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": "Method not found"}
        await self._send(conn, reply)

    async def _gone_failure(self) -> TransportFailure:
        upstream = self._conn.upstream if self._conn else None
        status = getattr(upstream, "returncode", None)
        # The output ends a moment before the exit is reaped: the status is worth a wait.
        for _ in range(_EXIT_POLLS):
            if status is not None or upstream is None:
                break
            await asyncio.sleep(_EXIT_POLL_SECONDS)
            status = getattr(upstream, "returncode", None)
        exited = f" (exit status {status})" if isinstance(status, int) else ""
        return TransportFailure("gone", f"the server is gone{exited}", tuple(self.stderr))


def _settle(pending: dict[int, asyncio.Future[dict[str, Any] | None]]) -> None:
    """Wake every waiting request with "no answer": the connection has ended."""
    for future in pending.values():
        if not future.done():
            future.set_result(None)
    pending.clear()


def _outcome(response: dict[str, Any]) -> Outcome:
    error = response.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        message = error.get("message")
        return RpcError(
            code if isinstance(code, int) and not isinstance(code, bool) else None,
            message if isinstance(message, str) else "",
            error.get("data"),
        )
    result = response.get("result")
    if isinstance(result, dict):
        return Success(result)
    return RpcError(None, "the response has neither a result object nor an error object")


def _refused(outcome: Outcome | None) -> bool:
    data = outcome.data if isinstance(outcome, RpcError) else None
    return isinstance(data, dict) and data.get("httpStatus") in REFUSED_STATUSES


@contextlib.asynccontextmanager
async def open_client(
    command: Sequence[str] | None = None,
    url: str | None = None,
    *,
    revision: Revision | str | None = None,
    timeout: float = 30.0,
    max_size: int = DEFAULT_MAX_SIZE,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[McpClient]:
    """A connected :class:`McpClient` on the stdio server ``command`` or the HTTP ``url``.

    Exactly one of them; ``auth`` gives each HTTP request its credentials (its ``aclose``,
    when it has one, is awaited once the block exits). Raises :class:`ClientError` when the
    server cannot be started or the handshake fails (or refused the credentials); the
    connection is closed when the block exits.
    """
    if (command is None) == (url is None):
        raise ValueError("give exactly one of command and url")
    if url is not None and not url.startswith(("http://", "https://")):
        # A usage error, not a server that cannot start: nothing was tried.
        raise ClientError("--url: an http:// or https:// URL is expected")
    if isinstance(revision, str):
        revision = Revision.parse(revision)
    connect: UpstreamFactory
    if command is not None:
        argv = list(command)

        async def connect() -> Upstream:
            return await ProcessUpstream.start(argv, max_size=max_size, keep_stderr=True)

    else:
        assert url is not None
        connect = _http_connector(url, max_size=max_size, timeout=timeout, auth=auth)
    client = McpClient(connect, revision=revision, timeout=timeout)
    try:
        await client.start()
        try:
            yield client
        finally:
            await client.aclose()
    finally:
        # The credentials may hold a client of their own (the token endpoint's).
        closing = getattr(auth, "aclose", None)
        if closing is not None:
            await closing()


def _http_connector(
    url: str, *, max_size: int, timeout: float, auth: httpx2.Auth | None
) -> UpstreamFactory:
    # Imported here: the HTTP client is heavy, and stdio users never need it.
    from .http_upstream import HttpUpstream  # noqa: PLC0415

    async def connect() -> Upstream:
        # Reads may take as long as the answer they wait for; the client times requests.
        return HttpUpstream(url, max_size=max_size, timeout=timeout + 5, auth=auth)

    return connect
