"""The modes of ``strictmcp proxy`` that involve HTTP, put together from its options.

Loaded only for those modes: the HTTP client and server take a while to import.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence

import httpx2

from ..connect.http_upstream import HttpUpstream
from ..connect.upstream import Upstream
from ..identity.upstream import UpstreamAuth
from ..policy import AuthSettings, UpstreamSettings, is_loopback
from .http_auth import Gate
from .http_connections import listening_socket
from .http_observe import Observed
from .http_server import App, Limits, _headers, serve
from .http_sessions import Channel, NewSession, NewUpstream
from .listing import input_schema
from .observe import Telemetry
from .session import ProxySession
from .stdio import spawn

__all__ = ["Limits", "gate", "listen", "upstreams", "workers"]


def upstreams(
    command: Sequence[str],
    url: str | None,
    *,
    max_size: int,
    timeout: float,
    credentials: UpstreamSettings | None = None,
) -> NewUpstream:
    """How each proxy session reaches a server of its own: ``command`` spawned, or ``url``
    (with the proxy's own ``credentials``; never the client's).

    :class:`~strictmcp.identity.CredentialsError` at once when a static token named by
    ``credentials`` cannot be read.
    """
    # One for every session: a client-credentials token is fetched once and shared; so is
    # the TLS context (each holds its own copy of the CA certificates otherwise).
    auth = UpstreamAuth(credentials) if credentials is not None else None
    tls = httpx2.create_ssl_context() if url is not None else None

    async def http(session: ProxySession) -> Upstream:
        assert url is not None
        return HttpUpstream(
            url,
            max_size=max_size,
            timeout=timeout,
            input_schema=functools.partial(input_schema, session),
            auth=auth,
            tls=tls,
        )

    async def spawned(session: ProxySession) -> Upstream:
        return await spawn(session, command)

    return http if url is not None else spawned


def gate(auth: AuthSettings) -> Gate:
    """The protected-resource step for ``auth``; :class:`~strictmcp.identity.CredentialsError`
    at once when the introspection secret it names cannot be read; MissingExtra without the
    [auth] extra."""
    from ..identity.tokens import TokenVerifier  # noqa: PLC0415 - the [auth] extra's

    return Gate(TokenVerifier(auth))


async def listen(
    new_session: NewSession,
    reach: NewUpstream,
    address: tuple[str, int],
    *,
    path: str,
    limits: Limits,
    timeout: float,
    announce: Callable[[str], None],
    gate: Gate | None = None,
    sock: socket.socket | None = None,
    telemetry: Telemetry | None = None,
    open_metrics: bool = True,
) -> int:
    """Streamable HTTP on ``address`` at ``path`` until interrupted, as a protected resource
    when ``gate`` is given; 0. With ``sock``, the listening socket of several workers, this
    is one of them: it serves the stateless revision only. With ``telemetry``, ``/metrics``,
    ``/healthz`` and ``/readyz`` are served beside ``path`` (``/metrics`` behind ``gate``
    unless ``open_metrics``)."""
    host, port = address

    async def start(shared: bool) -> Channel:
        return await Channel.start(
            new_session, reach, timeout=timeout, buffered=limits.buffered, shared=shared
        )

    app = App(
        start,
        path=path,
        loopback=is_loopback(host),
        limits=limits,
        gate=gate,
        stateful=sock is None,
    )
    around = None
    if telemetry is not None:
        admit = gate.admit if gate is not None and not open_metrics else None
        around = Observed(
            app,
            telemetry.metrics,
            admit=admit,
            headers=_headers,
            tracing=telemetry.tracing is not None,
        )
    await serve(app, host, port, announce, sock, around)
    return 0


WORKER_STOP_SECONDS = 10.0
"""How long workers told to stop may take (closing their sessions and servers) before they
are killed."""

RESTARTS = 5
"""Workers that may exit on their own within :data:`RESTART_WINDOW` seconds, each replaced at
once; one more and the proxy stops, failing: a worker that dies as soon as it starts would
otherwise be started again forever."""
RESTART_WINDOW = 60.0


def workers(
    count: int,
    address: tuple[str, int],
    work: Callable[[socket.socket], int],
    announce: Callable[[str], None],
    *,
    path: str,
) -> int:
    """Listen on ``address`` and fork ``count`` workers that each run ``work`` on that one
    listening socket, as uvicorn's own ``--workers`` shares its socket: the kernel hands each
    connection to whichever worker accepts it first. A worker that exits on its own (a crash,
    a kill) is replaced by a new one while the others go on serving, up to :data:`RESTARTS`
    within :data:`RESTART_WINDOW` seconds; past that every worker is stopped. The status, once
    every worker is gone: 0 when they were stopped (SIGTERM or SIGINT here, passed on to
    each, whatever was replaced before), else that of the worker whose exit stopped them."""
    # Kept open here for the workers that replace others; the port is free once this ends.
    with listening_socket(*address) as listener:
        bound = listener.getsockname()
        pids = {_fork(work, listener) for _ in range(count)}
        where = f"[{bound[0]}]" if listener.family == socket.AF_INET6 else bound[0]
        announce(f"http://{where}:{bound[1]}{path}")
        return _supervise(pids, lambda: _fork(work, listener))


def _fork(work: Callable[[socket.socket], int], listener: socket.socket) -> int:
    """A worker running ``work`` on ``listener``; its pid. The worker never returns here."""
    pid = os.fork()
    if pid != 0:
        return pid
    # The supervisor's handlers are not a worker's: uvicorn sets its own once it serves.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    status = 1
    try:
        status = work(listener)
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else 1
    except BaseException:
        traceback.print_exc()  # for the operator; the supervisor reports the status
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _supervise(pids: set[int], replace: Callable[[], int]) -> int:
    """Wait for every worker, replacing those that exit on their own; see :func:`workers`."""
    stopping: list[bool] = []  # set once the workers are told to stop

    def stop(signum: int = signal.SIGTERM, frame: object = None) -> None:
        if not stopping:
            stopping.append(True)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    status = 0
    deadline: float | None = None
    exits: deque[float] = deque()  # when workers exited on their own, within the window
    while pids:
        pid, raw = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            if stopping and deadline is None:
                deadline = time.monotonic() + WORKER_STOP_SECONDS
            if deadline is not None and time.monotonic() > deadline:
                for late in pids:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(late, signal.SIGKILL)
            time.sleep(0.05)
            continue
        pids.discard(pid)
        if stopping:
            continue
        code = os.waitstatus_to_exitcode(raw)
        now = time.monotonic()
        exits.append(now)
        while exits and exits[0] < now - RESTART_WINDOW:
            exits.popleft()
        if len(exits) > RESTARTS:
            status = code if code > 0 else 1
            _say(
                f"worker {pid} exited with status {code}, the {len(exits)}th within "
                f"{RESTART_WINDOW:g} s; stopping the others"
            )
            stop()
            continue
        new = replace()
        pids.add(new)
        _say(f"worker {pid} exited with status {code}; worker {new} started in its place")
    return status


def _say(text: str) -> None:
    print(f"strictmcp proxy: {text}", file=sys.stderr, flush=True)
