"""The modes of ``strictmcp proxy`` that involve HTTP, put together from its options.

Loaded only for those modes: the HTTP client and server take a while to import.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import socket
import sys
import tempfile
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import httpx2

from ..connect import http_headers as h
from ..connect.http_upstream import HttpUpstream
from ..connect.upstream import Upstream
from ..enforce import Auditor, logs
from ..enforce.metrics import Metrics
from ..identity.upstream import UpstreamAuth
from ..policy import AuthSettings, UpstreamSettings, is_loopback
from .bridge import bridged
from .http_auth import Gate
from .http_connections import ListenError, listening_socket
from .http_observe import Observed, Peers
from .http_server import App, Limits, Routes, serve
from .http_sessions import Channel, NewSession, NewUpstream
from .listing import input_schema
from .observe import Telemetry
from .session import ProxySession
from .stdio import spawn

__all__ = ["Endpoint", "Limits", "Peers", "gate", "listen", "upstreams", "workers"]


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


def gate(auth: AuthSettings, auditor: Auditor | None = None) -> Gate:
    """The protected-resource step for ``auth``, its refusals told to ``auditor``;
    :class:`~strictmcp.identity.CredentialsError` at once when the introspection secret it
    names cannot be read; MissingExtra without the [auth] extra."""
    from ..identity.tokens import TokenVerifier  # noqa: PLC0415 - the [auth] extra's

    return Gate(TokenVerifier(auth), auditor)


@dataclass(frozen=True)
class Endpoint:
    """One MCP endpoint of the HTTP proxy: its ``path``, how each of its sessions is made
    (``new_session``) and reaches its server (``reach``), and who may use it (``gate``;
    anyone when None)."""

    path: str
    new_session: NewSession
    reach: NewUpstream
    gate: Gate | None = None


async def listen(
    endpoints: Sequence[Endpoint],
    address: tuple[str, int],
    *,
    limits: Limits,
    timeout: float,
    announce: Callable[[str], None],
    sock: socket.socket | None = None,
    telemetry: Telemetry | None = None,
    open_metrics: bool = True,
    peers: Peers | None = None,
) -> int:
    """Streamable HTTP on ``address`` at each endpoint's path (the main one first) until
    interrupted, each a protected resource of its own when it has a gate; 0. With ``sock``,
    the listening socket of several workers, this is one of them: it serves the stateless
    revision only. With ``telemetry``, ``/metrics``, ``/healthz`` and ``/readyz`` are served
    beside them (``/metrics`` behind the main endpoint's gate unless ``open_metrics``), and
    with ``peers`` (a worker's) a scrape sees every worker's counters."""
    host, port = address

    def app(endpoint: Endpoint) -> App:
        # Stateless clients share one channel; a server of a handshake revision is reached
        # through sessions the bridge holds for each caller (proxy/bridge.py).
        stateless = bridged(
            endpoint.reach, max_held=limits.max_sessions, idle=limits.idle, timeout=timeout
        )

        async def start(shared: bool) -> Channel:
            return await Channel.start(
                endpoint.new_session,
                stateless if shared else endpoint.reach,
                timeout=timeout,
                buffered=limits.buffered,
                shared=shared,
            )

        return App(
            start,
            path=endpoint.path,
            loopback=is_loopback(host),
            limits=limits,
            gate=endpoint.gate,
            stateful=sock is None,
        )

    routes = Routes([app(endpoint) for endpoint in endpoints])
    around = None
    if telemetry is not None:
        gate = endpoints[0].gate
        admit = gate.admit if gate is not None and not open_metrics else None
        around = Observed(
            routes,
            telemetry.metrics,
            admit=admit,
            headers=h.header_map,
            tracing=telemetry.tracing is not None,
            peers=peers,
        )
    counters = None
    if around is not None and peers is not None:
        counters = await _share(peers, around.metrics)
    try:
        await serve(routes, host, port, announce, sock, around)
    finally:
        if counters is not None:
            counters.close()
    return 0


async def _share(peers: Peers, metrics: Metrics) -> asyncio.Server | None:
    """This worker's counters served to the others (:class:`Peers`); None, once said on
    stderr, when they cannot be: scrapes it answers still sum the others'."""
    try:
        return await peers.serve(metrics)
    except OSError as error:
        why = error.strerror or str(error)  # "AF_UNIX path too long" has no errno
        _say(f"worker {os.getpid()} cannot share its counters: {why}", "warning")
        return None


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
    work: Callable[[socket.socket, Peers], int],
    announce: Callable[[str], None],
    *,
    paths: Sequence[str],
    reload: Callable[[], bool] | None = None,
    watch: bool = False,
    telemetry: Telemetry | None = None,
) -> int:
    """Listen on ``address`` and fork ``count`` workers that each run ``work`` on that one
    listening socket, as uvicorn's own ``--workers`` shares its socket: the kernel hands each
    connection to whichever worker accepts it first. A worker that exits on its own (a crash,
    a kill) is replaced by a new one while the others go on serving, up to :data:`RESTARTS`
    within :data:`RESTART_WINDOW` seconds; past that every worker is stopped. The status, once
    every worker is gone: 0 when they were stopped (SIGTERM or SIGINT here, passed on to
    each, whatever was replaced before), else that of the worker whose exit stopped them.
    ``work`` is also given the workers' :class:`Peers`, in a directory made here for them
    alone and removed once they are gone; ``telemetry``'s OTLP export, here, sends what
    they counted.

    On SIGHUP (and, with ``watch``, when the policy file changes) the supervisor runs
    ``reload`` itself first, and passes SIGHUP on to the workers only when the new policy
    loaded: none of them takes a policy that does not."""
    # Kept open here for the workers that replace others; the port is free once this ends.
    with listening_socket(*address) as listener, _private_directory() as directory:
        peers = Peers(directory)
        if telemetry is not None:
            telemetry.gather(peers.gather)
        bound = listener.getsockname()
        pids = {_fork(work, listener, peers) for _ in range(count)}
        where = f"[{bound[0]}]" if listener.family == socket.AF_INET6 else bound[0]
        for path in paths:
            announce(f"http://{where}:{bound[1]}{path}")
        return _supervise(pids, lambda: _fork(work, listener, peers), peers, reload, watch=watch)


@contextlib.contextmanager
def _private_directory() -> Iterator[str]:
    """A directory of the workers' own (mode 0700, removed when they are gone), or
    :class:`ListenError` saying why there cannot be one."""
    try:
        holder = tempfile.TemporaryDirectory(prefix="strictmcp-")
    except OSError as error:
        raise ListenError(
            f"--workers: cannot make a private directory for the workers: {error.strerror}"
        ) from None
    with holder as directory:
        yield directory


def _fork(
    work: Callable[[socket.socket, Peers], int], listener: socket.socket, peers: Peers
) -> int:
    """A worker running ``work`` on ``listener``; its pid. The worker never returns here."""
    pid = os.fork()
    if pid != 0:
        return pid
    # The supervisor's handlers are not a worker's: uvicorn sets its own once it serves.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # Until the worker's loop takes SIGHUP for a reload, one must not end it.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    status = 1
    try:
        status = work(listener, peers)
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else 1
    except BaseException:
        traceback.print_exc()  # for the operator; the supervisor reports the status
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _supervise(
    pids: set[int],
    replace: Callable[[], int],
    peers: Peers,
    reload: Callable[[], bool] | None = None,
    *,
    watch: bool = False,
) -> int:
    """Wait for every worker, replacing those that exit on their own; see :func:`workers`."""
    stopping: list[bool] = []  # set once the workers are told to stop
    reloads = _Reloads(pids, reload, watch=watch)

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
        reloads.tick()
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
        with contextlib.suppress(OSError):
            os.unlink(peers.path(pid))  # a scrape no longer asks it
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


class _Reloads:
    """The supervisor's reloads: on SIGHUP, or every second with ``watch``, the policy is
    reloaded here and, once it loads, each worker is sent SIGHUP to reload it too."""

    def __init__(self, pids: set[int], reload: Callable[[], bool] | None, *, watch: bool) -> None:
        self._pids = pids
        self._reload = reload
        self._watch = watch
        self._asked = False
        self._looked = time.monotonic()
        signal.signal(signal.SIGHUP, self._hangup)

    def _hangup(self, signum: int, frame: object) -> None:
        self._asked = True  # read in tick(): checking a policy is no work for a handler

    def tick(self) -> None:
        """Reload if asked to (or, watching, once a second: an unchanged file is not
        reloaded)."""
        due = self._watch and time.monotonic() - self._looked >= 1.0
        if not (self._asked or due) or self._reload is None:
            return
        self._asked, self._looked = False, time.monotonic()
        if self._reload():
            for pid in self._pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGHUP)


def _say(text: str, level: logs.Level = "info") -> None:
    logs.say("proxy", text, level=level, event="workers")
