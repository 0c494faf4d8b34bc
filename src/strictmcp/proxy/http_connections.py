"""Connections to the HTTP endpoint, bounded before a byte of a request is read.

uvicorn reads a request's line and headers inside its protocol, before the application sees
anything, and waits for them as long as a client cares to take: a thousand connections that
send half a request and idle hold the port (slowloris), before any authentication. Its
``limit_concurrency`` answers 503 only once the headers are in, and its keep-alive timeout
covers only the wait between requests. So the protocol itself is extended (:func:`guarded`,
over httptools' or h11's, whichever uvicorn uses):

- a connection beyond :attr:`ConnectionLimits.total` open at once, or beyond
  :attr:`ConnectionLimits.per_client` from one client address, is answered ``503`` with
  ``Retry-After: 1`` and closed as it is accepted (``http-too-many-connections``,
  ``http-too-many-connections-per-client``). Behind a balancer every client has the
  balancer's address: connections from :attr:`ConnectionLimits.trusted` networks count
  towards the total only;
- a request's line and headers must be in within :attr:`ConnectionLimits.header_seconds`
  of the connection's start, or, on a kept-alive connection, of the first byte of the next
  request; the connection is closed otherwise (``http-header-timeout``). Its body has a
  deadline of its own (:data:`~strictmcp.connect.http_serving.BODY_SECONDS`).

Each is said on stderr with its code, at most once a second per code (with how many went
unsaid): a flood of refusals must not become a flood of lines. The deadlines share the event
loop's one timer (:mod:`~strictmcp.connect.alarms`). The bounds are per process: each of
``--workers`` has its own.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import math
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..connect.alarms import Alarm, alarms
from ..enforce import logs

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

TOO_MANY = "http-too-many-connections"
TOO_MANY_FROM_CLIENT = "http-too-many-connections-per-client"
HEADER_TIMEOUT = "http-header-timeout"

DEFAULT_CONNECTIONS = 512
DEFAULT_CONNECTIONS_PER_CLIENT = 64
DEFAULT_HEADER_SECONDS = 10.0

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 1\r\ncontent-length: 0\r\n"
    b"connection: close\r\n\r\n"
)


@dataclass(frozen=True)
class ConnectionLimits:
    """What a connection may hold: see the module documentation."""

    total: int = DEFAULT_CONNECTIONS
    per_client: int = DEFAULT_CONNECTIONS_PER_CLIENT
    header_seconds: float = DEFAULT_HEADER_SECONDS
    trusted: tuple[Network, ...] = ()


FDS_PER_SESSION = 3
"""File descriptors a session may hold besides its client's connection: a spawned server's
stdin and stdout pipes and its process handle, or an HTTP upstream's connections."""
FDS_SPARE = 64
"""File descriptors for the rest: the listening socket, the event loop, logs, the policy's."""


def descriptors_needed(limits: ConnectionLimits, max_sessions: int) -> int:
    """File descriptors the proxy may hold at once with these bounds."""
    return limits.total + FDS_PER_SESSION * max_sessions + FDS_SPARE


def descriptor_problem(
    limits: ConnectionLimits, max_sessions: int, endpoints: int = 1
) -> str | None:
    """Why the process's file descriptor limit cannot hold these bounds (``max_sessions`` at
    each of ``endpoints``), or None: past it, accepting fails (EMFILE) for every client, not
    only the one over a bound."""
    try:
        import resource  # noqa: PLC0415 (Unix only)
    except ImportError:
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = descriptors_needed(limits, max_sessions * endpoints)
    if soft == resource.RLIM_INFINITY or needed <= soft:
        return None
    each = f" at each of {endpoints} endpoints" if endpoints > 1 else ""
    return (
        f"--max-connections {limits.total} and --max-sessions {max_sessions}{each} need about "
        f"{needed} file descriptors, over this process's limit of {soft} (ulimit -n): "
        "lower them, or raise the limit"
    )


BACKLOG = 2048  # uvicorn's own default


class ListenError(RuntimeError):
    """The ``--listen`` address cannot be listened on; the message says why and what to do."""


_LISTEN_FIXES = {
    errno.EADDRINUSE: "the port is in use; stop what listens there, or choose another port "
    "(0: any free one)",
    errno.EADDRNOTAVAIL: "no interface of this machine has that address; listen on one it has "
    "(127.0.0.1 for this machine only)",
    errno.EACCES: "permission denied (ports below 1024 need privileges); choose a port above 1023",
}


_RESOLVER_CODES = frozenset(
    getattr(socket, name)
    for name in ("EAI_NONAME", "EAI_AGAIN", "EAI_NODATA", "EAI_FAIL")
    if hasattr(socket, name)
)


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket listening on ``host``:``port``, bound here rather than by uvicorn, which logs
    a failure to bind and exits on its own; :class:`ListenError` naming the address and the
    fix when it cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=BACKLOG)
    except OSError as error:
        where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
        # create_server re-raises a resolver failure as a plain OSError with its EAI code.
        if isinstance(error, socket.gaierror) or error.errno in _RESOLVER_CODES:
            why = "no such host name; give an IP address or a name this machine resolves"
        else:
            why = _LISTEN_FIXES.get(error.errno or 0, error.strerror or "cannot listen")
        raise ListenError(f"--listen {where}: {why}") from None


class _Notices:
    """Lines on stderr, at most one a second per code, each saying how many went unsaid."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._last: dict[str, float] = {}
        self._unsaid: dict[str, int] = {}

    def say(self, code: str, text: str) -> None:
        now = self._clock()
        if now - self._last.get(code, -math.inf) < 1.0:
            self._unsaid[code] = self._unsaid.get(code, 0) + 1
            return
        self._last[code] = now
        more = self._unsaid.pop(code, 0)
        tail = f" (and {more} more since the last such line)" if more else ""
        logs.say("proxy", f"{text}{tail}", level="warning", event="connections", code=code)


class Admission:
    """The connections open, in all and per client address, against ``limits``."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.notices = _Notices()
        self.open = 0
        self._by_client: dict[Address, int] = {}

    def admit(self, client: Address | None) -> bool:
        """Count a new connection from ``client`` (None: no IP address), or refuse it."""
        limits = self.limits
        if self.open >= limits.total:
            self.notices.say(
                TOO_MANY, f"refused a connection: {limits.total} are open (--max-connections)"
            )
            return False
        if client is not None and not any(client in net for net in limits.trusted):
            count = self._by_client.get(client, 0)
            if count >= limits.per_client:
                self.notices.say(
                    TOO_MANY_FROM_CLIENT,
                    f"refused a connection: {limits.per_client} are open from its address "
                    "(--max-connections-per-client)",
                )
                return False
            self._by_client[client] = count + 1
        self.open += 1
        return True

    def release(self, client: Address | None) -> None:
        """A connection :meth:`admit` counted is closed."""
        self.open -= 1
        if client is None:
            return
        count = self._by_client.get(client)
        if count is None:
            return  # trusted: not counted per client
        if count > 1:
            self._by_client[client] = count - 1
        else:
            del self._by_client[client]


def client_address(transport: asyncio.BaseTransport) -> Address | None:
    """The IP address a connection comes from (an IPv4 one mapped into IPv6 as IPv4)."""
    peer = transport.get_extra_info("peername")
    if not isinstance(peer, tuple) or not peer:
        return None
    try:
        address = ipaddress.ip_address(peer[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class _Guarded(asyncio.Protocol):
    """What :func:`guarded` adds to one of uvicorn's HTTP protocols (listed first among its
    bases, so that its methods wrap uvicorn's)."""

    admission: Admission
    # uvicorn's: the request being answered, made once its headers are read.
    cycle: Any
    transport: Any

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._client = client_address(transport)
        self._alarms = alarms()
        self._alarm: Alarm | None = None
        self._armed_for: Any = None
        self._admitted = self.admission.admit(self._client)
        if not self._admitted:
            self.transport.write(_BUSY)
            self.transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        if not self._admitted:
            return
        cycle = self.cycle
        if self._alarm is None and (cycle is None or cycle.response_complete):
            self._arm()  # the first bytes of the next request on a kept-alive connection
        super().data_received(data)
        if self._alarm is not None and self.cycle is not self._armed_for:
            self._disarm()  # its headers are in

    def connection_lost(self, exc: Exception | None) -> None:
        if self._admitted:
            self._disarm()
            self.admission.release(self._client)
            self._admitted = False
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._armed_for = self.cycle
        self._alarm = self._alarms.set(self.admission.limits.header_seconds, self._expired)

    def _disarm(self) -> None:
        if self._alarm is not None:
            self._alarms.cancel(self._alarm)
            self._alarm = None

    def _expired(self) -> None:
        self._alarm = None
        # A request whose headers uvicorn took in without a read of ours (h11 starts a
        # pipelined one when the previous answer ends) made a cycle of its own.
        if self.cycle is self._armed_for and not self.transport.is_closing():
            self.admission.notices.say(
                HEADER_TIMEOUT,
                f"closed a connection whose request headers were not in within "
                f"{self.admission.limits.header_seconds:g} s (--header-timeout)",
            )
            self.transport.close()


def guarded(base: type[asyncio.Protocol], admission: Admission) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol ``base`` with the bounds of ``admission`` (see the module
    documentation); one class per server, as uvicorn makes each connection's protocol from
    the class it is given."""
    return type(f"Guarded{base.__name__}", (_Guarded, base), {"admission": admission})
