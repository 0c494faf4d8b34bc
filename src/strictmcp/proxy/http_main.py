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
from collections.abc import Callable, Sequence

import httpx2

from ..connect.http_upstream import HttpUpstream
from ..connect.upstream import Upstream
from ..guards.policy import AuthSettings, UpstreamSettings, is_loopback
from ..identity import TokenVerifier, UpstreamAuth
from .http_auth import Gate
from .http_server import App, Limits, serve
from .http_sessions import Channel, NewSession, NewUpstream
from .listing import input_schema
from .session import ProxySession
from .stdio import run_upstream, spawn

__all__ = ["Limits", "gate", "listen", "stdio_to", "upstreams", "workers"]


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
    at once when the introspection secret it names cannot be read."""
    return Gate(TokenVerifier(auth))


async def stdio_to(session: ProxySession, reach: NewUpstream, *, timeout: float) -> int:
    """Our stdio in front of the server ``reach`` gives; the exit status."""
    return await run_upstream(session, await reach(session), timeout=timeout)


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
) -> int:
    """Streamable HTTP on ``address`` at ``path`` until interrupted, as a protected resource
    when ``gate`` is given; 0. With ``sock``, the listening socket of several workers, this
    is one of them: it serves the stateless revision only."""
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
    await serve(app, host, port, announce, sock)
    return 0


WORKER_STOP_SECONDS = 10.0
"""How long workers told to stop may take (closing their sessions and servers) before they
are killed."""


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
    connection to whichever worker accepts it first. In a worker, its exit status; in this
    process, once every worker is gone: 0 when they were stopped (SIGTERM or SIGINT here,
    passed on to each), else the status of the first that exited on its own (the others are
    then stopped: a supervisor restarts the whole, as it would one process)."""
    host, port = address
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.create_server((host, port), family=family, backlog=_BACKLOG)
    bound = listener.getsockname()
    pids: set[int] = set()
    for _ in range(count):
        pid = os.fork()
        if pid == 0:
            return work(listener)
        pids.add(pid)
    listener.close()  # the workers hold it: the port is free again once they are gone
    where = f"[{bound[0]}]" if family == socket.AF_INET6 else bound[0]
    announce(f"http://{where}:{bound[1]}{path}")
    return _supervise(pids)


_BACKLOG = 2048  # uvicorn's own default


def _supervise(pids: set[int]) -> int:
    """Wait for every worker; see :func:`workers`."""
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
        if not stopping:
            code = os.waitstatus_to_exitcode(raw)
            print(
                f"strictmcp proxy: worker {pid} exited with status {code}; stopping the others",
                file=sys.stderr,
                flush=True,
            )
            status = code if code > 0 else 1
            stop()
    return status
