"""Many servers behind one: the :class:`Gateway`, an :class:`~strictmcp.connect.upstream.Upstream`
made of the ``[[server]]`` tables' upstreams.

The gateway sits where a single server would: one :class:`~.relay.Relay` and one
:class:`~.session.ProxySession` (with its one :class:`~strictmcp.enforce.Enforcer`) in
front of it see one server whose tools and prompts are named ``server`` + separator +
``name``, so every check, guard, access rule and audit record of the proxy applies
unchanged, and a policy glob matches the full name. Behind it each server has its own
upstream (a spawned process or a streamable HTTP server, chosen in one place,
:func:`reach_server`), its own handshake and its own ids.

What the gateway does with each client message, by method (:data:`_CLIENT_REQUESTS`):

- ``initialize``: sent to every server that runs; answered with the union of their
  capabilities (tools, prompts and resources always with ``listChanged``, since servers come
  and go) and their ``instructions``, each under its server's name.
- ``tools/list``, ``prompts/list``, ``resources/list``, ``resources/templates/list``: every
  server asked (every page), the answers merged into one page.
- ``tools/call``, ``prompts/get``: routed by the name's server part, the server's own name
  restored; ``resources/read``, ``resources/subscribe``, ``resources/unsubscribe``: to the
  server that listed the URI (the first in file order; another listing it too is withheld
  from it, said once), else to the one server whose template matches it;
  ``completion/complete`` by its reference; ``logging/setLevel`` sent to every server;
  ``ping`` answered here.

Every request id is renamed on the way to a server and back, and every request a server makes
(sampling, elicitation, roots) is given an id of the gateway's before it reaches the client,
so that no two servers' ids meet; the progress token such a request carries is that id too,
and the client's progress on it reaches only the server that asked, under its own token
(progress naming no such request reaches none). The tasks the client runs for a server
are that server's: only it may ask about them, list them, or hear of their status; and a
URL elicitation's id is named after its server, as task ids are, so that a server can say
only its own elicitations are complete. It may say only its own resources changed, and
its sampling requests get no context of the client's beyond their own messages. A
server's log messages name it in ``logger``; its progress names only the tokens the client
gave its own calls (another server's is dropped).

A server that cannot start, exits or misses its handshake touches no other: its requests
waiting are answered with an error naming it, the client is told the listings changed, and
it is started again after a delay that doubles (``[gateway]``), until it has failed
``max_restarts`` starts in a row. Its stderr reaches ours line by line after its name.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import json
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..connect.lines import Backlog, Handoff, line_of
from ..connect.process import ProcessUpstream
from ..connect.upstream import UPSTREAM_CLOSED, UPSTREAM_INVALID, Upstream
from ..enforce import PinFile
from ..enforce.metrics import Metrics
from ..policy import GatewaySettings, Policy, PolicyError, ServerSettings
from ..policy.names import shortened
from ..protocol.jsonrpc import (
    DEFAULT_MAX_SIZE,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    URL_ELICITATION_REQUIRED,
    answer_digest,
    answer_id,
    answer_with_id,
    error_response,
)
from ..protocol.tasks import RELATED_TASK, UNKNOWN_TASK, UNKNOWN_TASK_TEXT, task_id_of
from ..protocol.wire import HANDSHAKE_VERSIONS
from ..schema.jsonio import JSONInputError, load_json
from ..schema.messages import quote_name
from .session import ProxySession

Reach = Callable[[ServerSettings], Awaitable[Upstream]]
"""How the gateway starts (or connects to) one of its servers; OSError when it cannot."""

RESOURCE_COLLISION = "gateway-resource-collision"
"""The code of the line said when two servers list one URI (the first in file order keeps it)."""

_PORTABLE = re.compile(r"[^A-Za-z0-9_-]")
_PORTABLE_LENGTH = 64
_NEWEST_HANDSHAKE = max(HANDSHAKE_VERSIONS)
_MAX_PAGES = 100
_MAX_TOKENS = 1024
# A server's requests waiting for the client, at most (as the session bounds the client's
# waiting for servers): past that, one more is answered with an error, and none of another
# server's is forgotten for it.
_MAX_ASKING = 10_000
_LISTED_BY = {
    "tools": "tools",
    "prompts": "prompts",
    "resources": "resources",
    "resourceTemplates": "resources",
}
"""The capability whose ``listChanged`` promise covers each listing (by its result key)."""
_CHANGED = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/prompts/list_changed": ("prompts",),
    "notifications/resources/list_changed": ("resources", "resourceTemplates"),
}
_ROUTED = frozenset({"tools", "prompts", "resources", "logging", "completions", "tasks"})
_NOTHING: Any = object()
_MEMBERS = frozenset({"jsonrpc", "id", "method", "params", "result", "error"})
"""The members of a JSON-RPC message: all the gateway sends a server of a client's."""
_ROUTED_BY_URI = frozenset({"resources/read", "completion/complete"})
"""The requests whose server is chosen by a URI the servers' listings give (a completion's
by its reference's), and whose answers carry data."""
_OTHERS_CONTEXT = frozenset({"thisServer", "allServers"})
"""What a sampling request's ``includeContext`` may ask for beyond its own messages."""
_CLIENT_TASK_REQUESTS = frozenset({"tasks/get", "tasks/result", "tasks/cancel"})
"""A server's requests about a task the client runs for it."""
_TASK_KEYS = frozenset({"taskId", "task", "tasks", "_meta"})
"""The keys of a result or params where :meth:`Gateway._tasks_public` may name a task."""


@dataclass(frozen=True)
class _Pages:
    """One server's listing: its items, and the page results they came from."""

    items: list[Any]
    made_of: tuple[dict[str, Any], ...]


@dataclass(eq=False)
class _Member:
    """One server behind the gateway and what the gateway knows of it."""

    settings: ServerSettings
    upstream: Upstream | None = None
    #: Its answer to the gateway's ``initialize`` (None: no handshake done in this run).
    result: dict[str, Any] | None = None
    #: Its own names of the tools and prompts last listed, by the public name.
    tools: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    #: The URI templates it last listed, as patterns.
    templates: list[re.Pattern[str]] = field(default_factory=list)
    #: Its listings (all pages) by result key, while it has not said they changed.
    listed: dict[str, _Pages] = field(default_factory=dict)
    #: The listing pages it last answered, by request (method and cursor): the answer's
    #: digest (less its id) and its result, read strictly once. The same answer again is not
    #: read again.
    pages: dict[str, tuple[bytes, dict[str, Any]]] = field(default_factory=dict)
    #: Left down for good after too many failed starts.
    given_up: bool = False
    #: The progress tokens the client gave its calls, the latest few: its progress may name
    #: only these (a task's goes on after its call is answered).
    tokens: OrderedDict[int | str, None] = field(default_factory=OrderedDict)
    #: The tasks the client runs for it (its task-augmented requests answered with a task),
    #: the latest few: it may ask about only these, and only their status reaches it.
    client_tasks: OrderedDict[str, None] = field(default_factory=OrderedDict)
    #: Its requests waiting for the client's answer: its own id -> the gateway's.
    asking: dict[Any, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.settings.name

    @property
    def ready(self) -> bool:
        """Whether it runs and has answered its handshake."""
        return self.upstream is not None and self.result is not None

    def says_changed(self, capability: str) -> bool:
        """Whether its handshake promised ``notifications/{capability}/list_changed``."""
        capabilities = (self.result or {}).get("capabilities")
        declared = capabilities.get(capability) if isinstance(capabilities, dict) else None
        return isinstance(declared, dict) and declared.get("listChanged") is True

    def has(self, capability: str) -> bool:
        """Whether its handshake declared ``capability``."""
        capabilities = (self.result or {}).get("capabilities")
        return isinstance(capabilities, dict) and capability in capabilities


@dataclass
class _Call:
    """A request sent to a server: for the client (``client_id``) or the gateway's own
    (``answer`` takes the server's message, None when there is none)."""

    member: _Member
    method: str
    client_id: Any = _NOTHING
    answer: asyncio.Future[dict[str, Any] | None] | None = None
    #: For a listing page the gateway asked for: its key in the member's ``pages``.
    page: str | None = None


@dataclass(frozen=True)
class _Asked:
    """A server's request of the client, waiting for its answer."""

    member: _Member
    own_id: Any
    method: str
    #: Whether it asked the client to run it as a task (its answer may make one).
    augmented: bool
    #: Its own progress token (_NOTHING when it gave none): the client is given our id.
    token: Any


class Gateway:
    """The servers of ``servers`` as one :class:`~strictmcp.connect.upstream.Upstream`; see
    the module documentation. Start them with :meth:`start`."""

    def __init__(
        self,
        servers: tuple[ServerSettings, ...],
        settings: GatewaySettings,
        reach: Reach,
        say: Callable[[str], None],
        metrics: Metrics | None = None,
        max_size: int = DEFAULT_MAX_SIZE,
    ) -> None:
        self._metrics = metrics
        self._members = [_Member(server) for server in servers]
        self._by_name = {member.name: member for member in self._members}
        self._settings = settings
        self._separator = settings.separator
        self._reach = reach
        self._say = say
        # What waits for the client is bounded as a single server's unread lines are.
        self._out = Backlog(2 * max_size)
        self._closed = False
        self._ids = itertools.count(1)
        self._calls: dict[int, _Call] = {}
        self._by_client: dict[Any, int] = {}  # the client's request id -> the gateway's
        self._asked: dict[int, _Asked] = {}  # a server's request to the client, by our id
        # The server each answer to a request routed by a URI came from, by the client's id,
        # until the session asks (answering_server).
        self._answered_from: OrderedDict[Any, str] = OrderedDict()
        self._client_init: dict[str, Any] | None = None  # the params of its initialize
        self._client_ready = False  # it sent notifications/initialized
        self._resources: dict[str, _Member] = {}
        self._said: set[str] = set()
        self._keepers: list[asyncio.Task[None]] = []
        self._batch: dict[_Member, list[bytes]] | None = None  # during write()
        self._paging = 0  # listing pages asked for, not answered yet (else no line is one)
        # Each merged listing last answered, by result key: the page results it was made of
        # (held, so that they are the same objects while it is kept) and its encoded result.
        self._merged_as: dict[str, tuple[tuple[tuple[dict[str, Any], ...] | None, ...], bytes]] = {}
        #: The session in front and the gateway each read every line the other writes: each
        #: hands the other the values its lines were written from.
        self.from_session = Handoff()
        self.to_session = Handoff()

    # --- the Upstream the relay sees ---------------------------------------------------------

    async def start(self) -> None:
        """Start every server (each keeps being restarted on its own from now on) and wait
        until each has started or failed its first start."""
        started = [asyncio.Event() for _ in self._members]
        self._keepers = [
            asyncio.create_task(self._keep(member, event))
            for member, event in zip(self._members, started, strict=True)
        ]
        await asyncio.gather(*(event.wait() for event in started))

    @property
    def blocked(self) -> bool:
        for member in self._members:
            if member.upstream is not None and member.upstream.blocked:
                return True
        return False

    def write(self, lines: list[bytes]) -> None:
        # What one write of the relay's sends a server goes in one write of its own.
        self._batch = {}
        try:
            for line in lines:
                self._from_client(line)
        finally:
            batch, self._batch = self._batch, None
            for member, held in batch.items():
                if member.upstream is not None:
                    member.upstream.write(held)

    async def drain(self) -> None:
        blocked = [m.upstream for m in self._members if m.upstream is not None]
        blocked = [upstream for upstream in blocked if upstream.blocked]
        if blocked:  # over HTTP this is awaited after every request: most often none is
            await asyncio.gather(*(upstream.drain() for upstream in blocked))

    async def send(self, line: bytes) -> None:
        self.write([line])
        if self.blocked:
            await self.drain()

    @property
    def waiting(self) -> bool:
        return self._out.waiting

    async def receive(self) -> bytes | str | None:
        if self._closed and not self._out.waiting:
            return None  # asked again after the end
        return await self._out.get()

    async def aclose(self) -> int:
        """Stop every server; 0 (the gateway's servers' statuses are said as they exit)."""
        if not self._closed:
            self._closed = True
            for keeper in self._keepers:
                keeper.cancel()
            await asyncio.gather(*self._keepers, return_exceptions=True)
            self._out.put(None)
        return 0

    # --- the servers' lives ------------------------------------------------------------------

    async def _keep(self, member: _Member, started: asyncio.Event) -> None:
        """Run ``member`` until the gateway closes: start it, shake hands when the client
        has, relay what it says, and start it again after it ends, with backoff."""
        settings = self._settings
        failures = 0
        delay = settings.restart_delay
        try:
            while True:
                handshaken = await self._run(member, started)
                if handshaken:
                    failures, delay = 0, settings.restart_delay
                else:
                    failures += 1
                if failures > settings.max_restarts:
                    member.given_up = True
                    self._say(
                        f"server {member.name!r} failed {failures} starts in a row: left down"
                    )
                    return
                self._say(f"server {member.name!r} starts again in {delay:g} s")
                await asyncio.sleep(delay)
                delay = min(delay * 2, settings.restart_max_delay)
                if self._metrics is not None:
                    self._metrics.restarts.add((member.name,))
        finally:
            started.set()

    async def _run(self, member: _Member, started: asyncio.Event) -> bool:
        """One run of ``member``, from its start to its end; whether it shook hands."""
        try:
            upstream = await self._reach(member.settings)
        except (OSError, PolicyError, ValueError) as error:
            self._say(f"server {member.name!r} cannot start: {_reason(error)}")
            if self._metrics is not None:
                self._metrics.health.down(member.name, was_up=False)
            started.set()
            return False
        member.upstream = upstream
        if self._metrics is not None:
            self._metrics.health.up(member.name)
        started.set()
        handshaken = False
        reader = asyncio.create_task(self._read(member, upstream))
        # The server's end is handled after the try, then what ended the run raised again,
        # rather than in a finally: compiled, awaiting the exit in a finally lost the
        # cancellation that closes the gateway, and the server was started again.
        ended: BaseException | None = None
        try:
            if self._client_init is not None:
                handshaken = await self._handshake(member, notify=True)
                if handshaken:
                    self._changed(member)
            await reader
            handshaken = handshaken or member.result is not None
        except BaseException as error:  # raised again below, once cleaned up
            ended = error
        reader.cancel()
        member.upstream = None
        was_ready = member.result is not None
        member.result = None
        self._lost(member)
        status = await upstream.aclose()
        if self._metrics is not None:
            if self._closed:
                self._metrics.health.stopped(member.name)
            else:
                self._metrics.health.down(member.name, was_up=True)
        if not self._closed:
            self._say(f"server {member.name!r} exited (status {status})")
            if was_ready and self._client_ready:
                self._changed(member)
        if ended is not None:
            raise ended
        return handshaken

    async def _read(self, member: _Member, upstream: Upstream) -> None:
        while (line := await upstream.receive()) is not None:
            await self._out.room()
            if isinstance(line, str):
                self._to_client(line)  # too long to read: the session says so
                continue
            page, digest = self._page_of(member, line)
            if page is not None and digest is not None:
                kept = member.pages.get(page)
                if kept is not None and kept[0] == digest:
                    # The same answer, but for its id, as one read strictly before.
                    self._from_server(
                        member, {"jsonrpc": "2.0", "id": answer_id(line), "result": kept[1]}
                    )
                    continue
            try:
                # As strictly as the session reads: what the gateway writes anew from it
                # must be what was there (no second value of a duplicate key, no number
                # a reader could take otherwise).
                body = load_json(line, max_size=len(line))
            except JSONInputError as error:
                self._unreadable(member, line, error.code)
                continue
            if page is not None and digest is not None and isinstance(body, dict):
                result = body.get("result")
                if isinstance(result, dict):
                    if len(member.pages) >= _MAX_PAGES:
                        member.pages.clear()
                    member.pages[page] = (digest, result)
            if isinstance(body, dict):
                self._from_server(member, body, line)
            elif isinstance(body, list):
                for message in body:
                    if isinstance(message, dict):
                        self._from_server(member, message)

    def _page_of(self, member: _Member, line: bytes) -> tuple[str | None, bytes | None]:
        """For an answer of ``member``'s to a listing page the gateway asked for: the page's
        key in its ``pages``, and the answer's digest (less its id)."""
        if not self._paging:
            return None, None
        gid = answer_id(line)
        call = self._calls.get(gid) if type(gid) is int else None
        if call is None or call.member is not member or call.page is None:
            return None, None
        return call.page, answer_digest(line)

    def _unreadable(self, member: _Member, line: bytes, code: str) -> None:
        """``member`` sent ``line``, which is not strict JSON: dropped, and the request it
        answers, if its id can be told, answered with an error naming the code."""
        self._say(f"server {member.name!r} sent a message that cannot be read [{code}]; dropped")
        try:
            loose = json.loads(line)
        except ValueError:
            return
        gid = loose.get("id") if isinstance(loose, dict) and "method" not in loose else None
        if type(gid) is not int:
            return
        call = self._calls.get(gid)
        if call is None or call.member is not member:
            return
        del self._calls[gid]
        if call.answer is not None:
            if not call.answer.done():
                call.answer.set_result(None)
            return
        self._by_client.pop(call.client_id, None)
        text = f"The server {member.name!r} answered with a message that cannot be read"
        data = {"codes": [code]}
        self._tell(error_response(call.client_id, UPSTREAM_INVALID, text, data))

    async def _handshake(self, member: _Member, *, notify: bool) -> bool:
        """Send ``member`` the client's ``initialize``; whether it answered with a result.
        With ``notify``, the client's handshake is over: ``member`` is told so at once."""
        assert self._client_init is not None
        answer = await self._ask(member, "initialize", self._client_init)
        result = answer.get("result") if answer is not None else None
        if not isinstance(result, dict):
            why = "did not answer" if answer is None else "refused"
            self._say(f"server {member.name!r} {why} initialize; stopping it")
            if member.upstream is not None:
                await member.upstream.aclose()
            return False
        member.result = result
        if notify:
            self._send(member, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        return True

    def _lost(self, member: _Member) -> None:
        """``member`` is gone: what waits for it is answered, what it asked forgotten."""
        for gid, call in list(self._calls.items()):
            if call.member is not member:
                continue
            del self._calls[gid]
            if call.answer is not None:
                if not call.answer.done():
                    call.answer.set_result(None)
            else:
                self._by_client.pop(call.client_id, None)
                self._tell(self._unavailable(call.client_id, member))
                if self._metrics is not None:
                    self._metrics.upstream_errors.add(("closed", member.name))
        for gid in member.asking.values():
            self._asked.pop(gid, None)
        member.asking.clear()
        member.tools.clear()
        member.prompts.clear()
        member.templates.clear()
        member.listed.clear()
        member.pages.clear()
        for uri in [uri for uri, owner in self._resources.items() if owner is member]:
            del self._resources[uri]

    def _changed(self, member: _Member) -> None:
        """Tell the client the listings changed (``member`` came or went)."""
        for kind in ("tools", "prompts", "resources"):
            method = f"notifications/{kind}/list_changed"
            self._tell({"jsonrpc": "2.0", "method": method})

    # --- sending -------------------------------------------------------------------------------

    def _send(self, member: _Member, message: dict[str, Any]) -> bool:
        if member.upstream is None:
            return False
        if self._batch is not None:
            self._batch.setdefault(member, []).append(line_of(message))
        else:
            member.upstream.write([line_of(message)])
        return True

    def _to_client(self, line: bytes | str) -> None:
        self._out.put(line)

    def _tell(self, message: dict[str, Any], line: bytes | None = None) -> None:
        """Send the client ``message`` (``line``: its JSON text, when known): the session in
        front reads it without parsing it."""
        if line is None:
            line = line_of(message)
        self.to_session.give(line, message)
        self._to_client(line)

    def _answer(self, client_id: Any, result: dict[str, Any]) -> None:
        self._tell({"jsonrpc": "2.0", "id": client_id, "result": result})

    def _error(self, client_id: Any, code: int, text: str) -> None:
        self._tell(error_response(client_id, code, text))

    def _unavailable(self, client_id: Any, member: _Member) -> dict[str, Any]:
        text = f"The server {member.name!r} is not available (strictmcp gateway)"
        return error_response(client_id, UPSTREAM_CLOSED, text)

    def _forward(self, member: _Member, message: dict[str, Any], params: Any = _NOTHING) -> None:
        """Send the client's request ``message`` to ``member`` under an id of ours (with
        ``params`` in place of its own, when given)."""
        client_id = message["id"]
        if not member.ready:
            self._tell(self._unavailable(client_id, member))
            return
        gid = next(self._ids)
        self._calls[gid] = _Call(member, message["method"], client_id)
        sent = message.get("params") if params is _NOTHING else params
        meta = sent.get("_meta") if isinstance(sent, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if isinstance(token, (int, str)) and not isinstance(token, bool):
            _remember(member.tokens, token)
        self._by_client[client_id] = gid
        forwarded = {**message, "id": gid}
        if params is not _NOTHING:
            forwarded["params"] = params
        self._send(member, forwarded)

    async def _ask(
        self,
        member: _Member,
        method: str,
        params: dict[str, Any] | None = None,
        page: str | None = None,
    ) -> dict[str, Any] | None:
        """The gateway's own request to ``member``: its answer, or None (gone, or no answer
        within ``start_timeout``). ``page`` names a listing page (:attr:`_Member.pages`)."""
        gid = next(self._ids)
        answer: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
        self._calls[gid] = _Call(member, method, answer=answer, page=page)
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": gid, "method": method}
        if params is not None:
            request["params"] = params
        if not self._send(member, request):
            self._calls.pop(gid, None)
            return None
        paging = 1 if page is not None else 0
        self._paging += paging
        try:
            return await asyncio.wait_for(answer, self._settings.start_timeout)
        except asyncio.TimeoutError:
            self._calls.pop(gid, None)
            reason = "no answer in time (strictmcp gateway)"
            self._send(member, _cancelled(gid, reason))
            return None
        finally:
            self._paging -= paging

    # --- the client's messages -----------------------------------------------------------------

    def _from_client(self, line: bytes) -> None:
        body = self.from_session.take(line)
        if body is None:  # not a message the session decided on: read it here
            try:
                body = json.loads(line)
            except ValueError:
                return  # the session refused it already; nothing unreadable is sent on
        for came in body if isinstance(body, list) else [body]:
            if not isinstance(came, dict):
                continue
            message = came
            if not _MEMBERS.issuperset(came):
                # A key JSON-RPC does not define is no server's: the flow rules search the
                # params, the result and the error, and what else came would go unsearched.
                message = {key: value for key, value in came.items() if key in _MEMBERS}
            method = message.get("method")
            if isinstance(method, str) and "id" in message:
                handler = _CLIENT_REQUESTS.get(method, Gateway._unknown_method)
                handler(self, message)
            elif isinstance(method, str):
                self._client_notification(message)
            elif "id" in message:
                self._client_answer(message)

    def _client_answer(self, message: dict[str, Any]) -> None:
        """The client's answer to a server's request: back to that server, its id restored."""
        asked = self._asked.pop(message["id"], None) if _is_id(message["id"]) else None
        if asked is None:
            return
        member = asked.member
        member.asking.pop(asked.own_id, None)
        result = message.get("result")
        if isinstance(result, dict) and asked.method == "tasks/list":
            # The client's tasks are every server's: this one sees its own.
            tasks = result.get("tasks")
            if isinstance(tasks, list):
                mine = [t for t in tasks if _task_id(t) in member.client_tasks]
                message = {**message, "result": {**result, "tasks": mine}}
        elif isinstance(result, dict) and asked.augmented:
            task_id = _task_id(result.get("task"))
            if task_id is not None:
                _remember(member.client_tasks, task_id)
        self._send(member, {**message, "id": asked.own_id})

    def _client_notification(self, message: dict[str, Any]) -> None:
        method = message["method"]
        params = message.get("params")
        if method == "notifications/initialized":
            self._client_ready = True
            for member in self._members:
                if member.ready:
                    self._send(member, message)
        elif method == "notifications/cancelled" and isinstance(params, dict):
            gid = self._by_client.get(params.get("requestId"))
            call = self._calls.get(gid) if gid is not None else None
            if call is not None:
                self._send(call.member, {**message, "params": {**params, "requestId": gid}})
        elif method == "notifications/progress":
            asked = self._progressed(params)
            if asked is not None and isinstance(params, dict):
                progress = {**params, "progressToken": asked.token}
                self._send(asked.member, {**message, "params": progress})
        elif method == "notifications/tasks/status":
            owner = self._task_owner(params)
            if owner is not None:
                self._send(owner, message)
        else:
            for member in self._members:
                if member.ready:
                    self._send(member, message)

    def _unknown_method(self, message: dict[str, Any]) -> None:
        text = f"The gateway does not route {quote_name(message['method'])} (strictmcp gateway)"
        self._error(message["id"], METHOD_NOT_FOUND, text)

    def _ping(self, message: dict[str, Any]) -> None:
        self._answer(message["id"], {})

    def _initialize(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        self._client_init = dict(params) if isinstance(params, dict) else {}
        self._spawn(self._initialized(message["id"]))

    async def _initialized(self, client_id: Any) -> None:
        running = [m for m in self._members if m.upstream is not None and m.result is None]
        await asyncio.gather(*(self._handshake(m, notify=False) for m in running))
        requested = (self._client_init or {}).get("protocolVersion")
        version = requested if requested in HANDSHAKE_VERSIONS else _NEWEST_HANDSHAKE
        capabilities: dict[str, Any] = {"tools": {"listChanged": True}}
        instructions = []
        for member in self._members:
            result = member.result or {}
            theirs = result.get("capabilities")
            if isinstance(theirs, dict):
                # Only what the gateway routes: a client must not be promised tasks it
                # cannot reach, or an experimental feature no one here understands.
                _merge(capabilities, {k: v for k, v in theirs.items() if k in _ROUTED})
            said = result.get("instructions")
            if isinstance(said, str) and said.strip():
                instructions.append(f"[{member.name}] {said.strip()}")
        for kind in ("prompts", "resources"):
            if isinstance(capabilities.get(kind), dict):
                capabilities[kind]["listChanged"] = True
        answer: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {"name": "strictmcp-gateway", "version": __version__},
        }
        if instructions:
            answer["instructions"] = "\n\n".join(instructions)
        self._answer(client_id, answer)

    # --- merged listings ------------------------------------------------------------------------

    def _tools_list(self, message: dict[str, Any]) -> None:
        self._listing(message, "tools", "tools")

    def _prompts_list(self, message: dict[str, Any]) -> None:
        self._listing(message, "prompts", "prompts")

    def _resources_list(self, message: dict[str, Any]) -> None:
        self._listing(message, "resources", "resources")

    def _templates_list(self, message: dict[str, Any]) -> None:
        self._listing(message, "resources", "resourceTemplates")

    def _listing(self, message: dict[str, Any], capability: str, key: str) -> None:
        params = message.get("params")
        if isinstance(params, dict) and params.get("cursor") is not None:
            # Every listing is one page: no cursor of ours was ever given out.
            self._error(message["id"], INVALID_PARAMS, "Invalid cursor (strictmcp gateway)")
            return
        self._spawn(self._merged(message["id"], message["method"], capability, key))

    async def _merged(self, client_id: Any, method: str, capability: str, key: str) -> None:
        members = [m for m in self._members if m.ready and m.has(capability)]
        parts = await asyncio.gather(*(self._pages(m, method, key) for m in members))
        items: list[Any] = []
        if key == "resources":
            self._resources.clear()
        for member, part in zip(members, parts, strict=True):
            if part is None:
                continue  # it went away, or did not answer in time: said already
            items += self._adopt(member, key, part.items)
        # The same pages as the last merged listing's make the same listing: its text is
        # reused rather than 1 MB encoded again for a large one.
        made_of = tuple(part.made_of if part is not None else None for part in parts)
        kept = self._merged_as.get(key)
        if kept is None or not _same_pages(kept[0], made_of):
            kept = (made_of, line_of({key: items})[:-1])
            self._merged_as[key] = kept
        head = line_of({"jsonrpc": "2.0", "id": client_id, "result": None})[: -len(b"null}\n")]
        self._to_client(head + kept[1] + b"}\n")

    async def _pages(self, member: _Member, method: str, key: str) -> _Pages | None:
        """Every page of ``member``'s listing; None when it did not give them all. A listing
        the server promised to say it changed (``listChanged``) is asked once, then reused
        until it says so, or restarts."""
        kept = member.listed.get(key)
        if kept is not None:
            return kept
        items = await self._fetch_pages(member, method, key)
        capability = _LISTED_BY.get(key)
        if items is not None and capability is not None and member.says_changed(capability):
            member.listed[key] = items
        return items

    async def _fetch_pages(self, member: _Member, method: str, key: str) -> _Pages | None:
        items: list[Any] = []
        made_of: list[dict[str, Any]] = []
        cursor: Any = None
        for _ in range(_MAX_PAGES):
            params = {"cursor": cursor} if cursor else None
            answer = await self._ask(member, method, params, f"{method} {cursor or ''}")
            result = answer.get("result") if answer is not None else None
            if not isinstance(result, dict) or not isinstance(result.get(key), list):
                self._say(f"server {member.name!r} did not list its {key}; left out")
                return None
            items += result[key]
            made_of.append(result)
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return _Pages(items, tuple(made_of))
        self._say(f"server {member.name!r} lists {key} in over {_MAX_PAGES} pages; left out")
        return None

    def _adopt(self, member: _Member, key: str, items: list[Any]) -> list[Any]:
        """``member``'s listed ``items`` as the client sees them, remembered for routing."""
        kept: list[Any] = []
        if key in ("tools", "prompts"):
            names = member.tools if key == "tools" else member.prompts
            names.clear()
            for item in items:
                own = item.get("name") if isinstance(item, dict) else None
                if not isinstance(own, str):
                    kept.append(item)  # the session refuses it as it would the server's
                    continue
                if key == "tools" and not member.settings.offers(own):
                    continue
                public = self._public(member, own)
                if public is None:
                    continue
                names[public] = own
                kept.append({**item, "name": public})
        elif key == "resources":
            for item in items:
                uri = item.get("uri") if isinstance(item, dict) else None
                owner = member
                if isinstance(uri, str):
                    owner = self._resources.setdefault(uri, member)
                if owner is not member:
                    self._once(
                        f"{RESOURCE_COLLISION}: servers {owner.name!r} and {member.name!r} both "
                        f"list the resource {quote_name(str(uri))}; {owner.name!r}'s is offered"
                    )
                    continue
                kept.append(item)
        elif key == "tasks":
            rename = functools.partial(public_task, member.name, self._separator)
            kept = [_with_task_id(t, rename) if isinstance(t, dict) else t for t in items]
        else:
            member.templates = []
            for item in items:
                template = item.get("uriTemplate") if isinstance(item, dict) else None
                if isinstance(template, str):
                    member.templates.append(_template_pattern(template))
                kept.append(item)
        return kept

    def _public(self, member: _Member, own: str) -> str | None:
        """The name the client sees for ``member``'s tool or prompt ``own`` (said once when
        it had to be shortened; the policy's globs match its full name too); None when it is
        not offered, having to be shortened past the bound of names kept so."""
        full = f"{member.name}{self._separator}{own}"
        public = public_name(member.name, own, self._separator)
        if public != full:
            if not shortened(public, full):
                self._once(f"{quote_name(full)} is not offered: too many names were shortened")
                return None
            self._once(f"{quote_name(full)} is offered as {public!r} (not a portable tool name)")
        return public

    def _once(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            self._say(text)

    # --- routed requests ------------------------------------------------------------------------

    def _by_public(self, message: dict[str, Any], kind: str) -> None:
        """A ``tools/call`` or ``prompts/get``, to the server its name names."""
        params = message.get("params")
        public = params.get("name") if isinstance(params, dict) else None
        if not isinstance(public, str):
            self._error(message["id"], INVALID_PARAMS, "The request names no tool or prompt")
            return
        assert isinstance(params, dict)
        found = self._owner_of(public, kind)
        if found is None:
            noun = "tool" if kind == "tools" else "prompt"
            self._error(message["id"], INVALID_PARAMS, f"Unknown {noun}: {quote_name(public)}")
            return
        member, own = found
        self._forward(member, message, {**params, "name": own})

    def _owner_of(self, public: str, kind: str) -> tuple[_Member, str] | None:
        for member in self._members:
            names = member.tools if kind == "tools" else member.prompts
            if public in names:
                return member, names[public]
        # Not listed since it (re)started: the name itself says which server it is for.
        server, separator, own = public.partition(self._separator)
        named = self._by_name.get(server)
        if not separator or named is None or not own:
            return None
        if kind == "tools" and not named.settings.offers(own):
            return None
        return named, own

    def _tools_call(self, message: dict[str, Any]) -> None:
        self._by_public(message, "tools")

    def _prompts_get(self, message: dict[str, Any]) -> None:
        self._by_public(message, "prompts")

    def _by_uri(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        uri = params.get("uri") if isinstance(params, dict) else None
        member = self._uri_owner(message["id"], uri)
        if member is not None:
            self._forward(member, message)

    def _uri_owner(self, client_id: Any, uri: Any) -> _Member | None:
        """The server ``uri`` is routed to; None (the client answered) when there is none."""
        if not isinstance(uri, str):
            self._error(client_id, INVALID_PARAMS, "The request names no resource URI")
            return None
        owners = self._owners(uri)
        if len(owners) == 1:
            return owners[0]
        if owners:
            names = ", ".join(repr(m.name) for m in owners)
            text = f"The resource URI matches templates of several servers ({names}); refused"
            self._error(client_id, INVALID_PARAMS, text)
            return None
        self._error(client_id, -32002, "Resource not found (strictmcp gateway)")
        return None

    def _owners(self, uri: str) -> list[_Member]:
        """The servers ``uri`` may be routed to: the one that listed it, else those whose
        templates match it, else the one server with resources."""
        owner = self._resources.get(uri)
        if owner is not None:
            return [owner]
        matching = [m for m in self._members if any(p.fullmatch(uri) for p in m.templates)]
        if matching:
            return matching
        serving = [m for m in self._members if m.ready and m.has("resources")]
        return serving if len(serving) == 1 else []  # the one server there is to ask

    def resource_server(self, uri: str) -> str | None:
        """The name of the server a request for ``uri`` goes to now (None: none, or several):
        the ``[[flow]]`` rules' source of a resource's contents, and its destination."""
        owners = self._owners(uri)
        return owners[0].name if len(owners) == 1 else None

    def answering_server(self, request_id: int | str) -> str | None:
        """The name of the server whose answer to the client's ``request_id`` (a request
        routed by a URI: ``resources/read``, ``completion/complete``) the gateway passed on
        last; None when there is none. Forgotten once asked: the ``[[flow]]`` rules' source
        of what it answered, which a listing changed meanwhile cannot move."""
        return self._answered_from.pop(request_id, None)

    def asking_server(self, request_id: int | str) -> str | None:
        """The name of the server whose request went to the client as ``request_id`` and
        is not answered yet (None: none): the ``[[flow]]`` rules' destination of the
        client's answer."""
        if isinstance(request_id, bool) or not isinstance(request_id, int):
            return None  # the gateway's own ids are integers
        asked = self._asked.get(request_id)
        return asked.member.name if asked is not None else None

    def servers_sent(self, method: str | None, params: Any) -> tuple[str, ...]:
        """The names of the servers the client's message ``method`` may go to when it names
        none (the ``[[flow]]`` rules' destinations): the server of the call a
        ``notifications/cancelled`` cancels; for ``logging/setLevel`` and any other
        notification, every server, running or not (one may finish its handshake between
        the check and the sending); the server whose request a ``notifications/progress``
        is about (none when it is no request's); none for a request routed by what it
        names."""
        if method == "notifications/progress":
            asked = self._progressed(params)
            return (asked.member.name,) if asked is not None else ()
        if method == "notifications/tasks/status":
            owner = self._task_owner(params)
            return (owner.name,) if owner is not None else ()
        if method == "notifications/cancelled":
            cancelled = params.get("requestId") if isinstance(params, dict) else None
            gid = self._by_client.get(cancelled) if _is_id(cancelled) else None
            call = self._calls.get(gid) if gid is not None else None
            if call is not None:
                return (call.member.name,)
        if method == "logging/setLevel" or (
            isinstance(method, str) and method.startswith("notifications/")
        ):
            return tuple(self._by_name)
        return ()

    def _complete(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        ref = params.get("ref") if isinstance(params, dict) else None
        if not isinstance(ref, dict) or not isinstance(params, dict):
            self._error(message["id"], INVALID_PARAMS, "The request names no reference")
            return
        if ref.get("type") == "ref/resource":
            member = self._uri_owner(message["id"], ref.get("uri"))
            if member is not None:
                self._forward(member, message)
            return
        name = ref.get("name")
        found = self._owner_of(name, "prompts") if isinstance(name, str) else None
        if found is None:
            self._error(message["id"], INVALID_PARAMS, "Unknown prompt")
            return
        member, own = found
        self._forward(member, message, {**params, "ref": {**ref, "name": own}})

    def _set_level(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        self._spawn(self._fanned(message["id"], "logging/setLevel", params))

    async def _fanned(self, client_id: Any, method: str, params: Any) -> None:
        members = [m for m in self._members if m.ready and m.has("logging")]
        await asyncio.gather(*(self._ask(m, method, params) for m in members))
        self._answer(client_id, {})

    # --- the servers' messages ------------------------------------------------------------------

    def _from_server(
        self, member: _Member, message: dict[str, Any], line: bytes | None = None
    ) -> None:
        """``member``'s ``message`` (the whole of its ``line``, when given) to the client,
        named as the client knows it, or to the gateway's own request it answers."""
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._server_request(member, message)
            else:
                self._server_notification(member, message)
            return
        gid = message.get("id")
        # Ours are numbers: "7" does not answer 7, however a lenient reader would read it.
        call = self._calls.get(gid) if type(gid) is int else None
        if call is None or call.member is not member or type(gid) is not int:
            return  # not an answer to anything it was asked: dropped, as the session would
        del self._calls[gid]
        if call.answer is not None:
            if not call.answer.done():
                call.answer.set_result(message)
            return
        self._by_client.pop(call.client_id, None)
        if call.method in _ROUTED_BY_URI:
            # Where its data came from, whoever the URI is routed to by the time it is read.
            _remember(self._answered_from, call.client_id, member.name)
        message = {**message, "id": call.client_id}
        result = message.get("result")
        named = self._tasks_public(member, result, top=True) if isinstance(result, dict) else None
        error = message.get("error")
        if named is not None and named is not result:
            message["result"] = named
        elif isinstance(error, dict) and error.get("code") == URL_ELICITATION_REQUIRED:
            message["error"] = self._elicitations_public(member, error)
        elif line is not None:
            # Only the id differs from what the server wrote: its text, under the client's id.
            self._tell(message, answer_with_id(line, call.client_id))
            return
        self._tell(message)

    def _server_request(self, member: _Member, message: dict[str, Any]) -> None:
        if not _is_id(message["id"]):
            # Renamed, it would reach the session as a request it checks like any other.
            self._once(f"server {member.name!r} sent a request without a usable id: not sent on")
            return
        if message["method"] == "ping":
            self._send(member, {"jsonrpc": "2.0", "id": message["id"], "result": {}})
            return
        params = message.get("params")
        if message["method"] in _CLIENT_TASK_REQUESTS and self._task_owner(params) is not member:
            # The client's task ids are every server's to guess: only the server that made a
            # task may ask about it. Answered here; the client never sees the request.
            text = UNKNOWN_TASK_TEXT
            self._send(member, error_response(message["id"], UNKNOWN_TASK, text))
            return
        refused = self._unaskable(member, message["id"])
        if refused is not None:
            self._send(member, refused)
            return
        gid = next(self._ids)
        token = _NOTHING
        if isinstance(params, dict):
            # Only the task it is about is the server's: a taskId in a server's tasks/get
            # names a task of the client's.
            params = self._tasks_public(member, params, top=False)
            meta = params.get("_meta")
            own = meta.get("progressToken") if isinstance(meta, dict) else None
            if isinstance(meta, dict) and _is_id(own):
                # Two servers may choose one token: the client is given our id in its place,
                # and its progress goes back to the one server that asked, by that id.
                params = {**params, "_meta": {**meta, "progressToken": gid}}
                token = own
            if message["method"] == "elicitation/create":
                params = self._elicitation_public(member, params)
            elif (
                message["method"] == "sampling/createMessage"
                and params.get("includeContext") in _OTHERS_CONTEXT
            ):
                # To the client the gateway is one server: "this server's" context would be
                # every server's. The client may leave it out anyway (soft-deprecated).
                params = {**params, "includeContext": "none"}
            message = {**message, "params": params}
        augmented = isinstance(params, dict) and isinstance(params.get("task"), dict)
        self._asked[gid] = _Asked(member, message["id"], message["method"], augmented, token)
        member.asking[message["id"]] = gid
        self._tell({**message, "id": gid})

    def _unaskable(self, member: _Member, own_id: Any) -> dict[str, Any] | None:
        """The error to answer ``member``'s request ``own_id`` with instead of asking the
        client, or None: an id its request still waiting has, or one request too many."""
        if own_id in member.asking:
            text = "The id is that of a request still waiting for the client (strictmcp gateway)"
            return error_response(own_id, INVALID_REQUEST, text)
        if len(member.asking) >= _MAX_ASKING:
            text = "Too many requests of this server wait for the client (strictmcp gateway)"
            return error_response(own_id, INTERNAL_ERROR, text)
        return None

    def _task_owner(self, params: Any) -> _Member | None:
        """The server a task of the client's (``params``' ``taskId``) runs for; None when it
        is no server's the gateway knows of."""
        task_id = params.get("taskId") if isinstance(params, dict) else None
        if not isinstance(task_id, str):
            return None
        return next((m for m in self._members if task_id in m.client_tasks), None)

    def _progressed(self, params: Any) -> _Asked | None:
        """The server's request the client's progress ``params`` is about, while it waits
        for its answer; None for a token the gateway gave no request of a server."""
        token = params.get("progressToken") if isinstance(params, dict) else None
        if not isinstance(token, int) or isinstance(token, bool):
            return None  # our ids are integers
        asked = self._asked.get(token)
        return asked if asked is not None and asked.token is not _NOTHING else None

    def _server_notification(self, member: _Member, message: dict[str, Any]) -> None:
        method = message["method"]
        params = message.get("params")
        for key in _CHANGED.get(method, ()):
            member.listed.pop(key, None)
        if method == "notifications/message" and isinstance(params, dict):
            logger = params.get("logger")
            named = f"{member.name}/{logger}" if isinstance(logger, str) else member.name
            message = {**message, "params": {**params, "logger": named}}
        elif method == "notifications/progress" and isinstance(params, dict):
            # Only for a token given to this server: the token is the client's, and another
            # server behind the gateway can guess it.
            token = params.get("progressToken")
            if not _is_id(token) or token not in member.tokens:
                return
            message = {**message, "params": self._tasks_public(member, params, top=True)}
        elif method == "notifications/resources/updated" and isinstance(params, dict):
            uri = params.get("uri")
            if not isinstance(uri, str) or self._owners(uri) != [member]:
                return  # another server's resource is not this one's to say changed
        elif method == "notifications/elicitation/complete" and isinstance(params, dict):
            message = {**message, "params": self._elicitation_public(member, params)}
        elif method == "notifications/cancelled" and isinstance(params, dict):
            own = params.get("requestId")
            gid = member.asking.pop(own, None) if _is_id(own) else None
            if gid is None:
                return
            del self._asked[gid]
            message = {**message, "params": {**params, "requestId": gid}}
        elif isinstance(params, dict):
            message = {**message, "params": self._tasks_public(member, params, top=True)}
        self._tell(message)

    # --- tasks (2025-11-25) ---------------------------------------------------------------------

    def _tasks_public(self, member: _Member, body: dict[str, Any], *, top: bool) -> dict[str, Any]:
        """``body`` (a result, or a notification's params) with each of ``member``'s task ids
        named as the client sees them, ``server`` + separator + id, so that two servers' ids
        never meet and a request naming one is routed by it; with ``top``, the body's own
        ``taskId``, its ``task``'s and its ``tasks``' too, else only the related task."""
        if _TASK_KEYS.isdisjoint(body):  # most results: nothing to name
            return body
        public = functools.partial(public_task, member.name, self._separator)
        if top:
            body = _with_task_id(body, public)
            task = body.get("task")
            if isinstance(task, dict):
                body = {**body, "task": _with_task_id(task, public)}
            tasks = body.get("tasks")
            if isinstance(tasks, list):
                named = [_with_task_id(t, public) if isinstance(t, dict) else t for t in tasks]
                body = {**body, "tasks": named}
        meta = body.get("_meta")
        related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
        if isinstance(meta, dict) and isinstance(related, dict):
            body = {**body, "_meta": {**meta, RELATED_TASK: _with_task_id(related, public)}}
        return body

    def _elicitation_public(self, member: _Member, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` (a URL elicitation's params, or its completion's) with ``member``'s
        elicitation id named as the client sees it, ``server`` + separator + id: a server
        can then say only its own elicitations are complete, and two servers' ids never
        meet. No message of the client's names one back."""
        rename = functools.partial(public_task, member.name, self._separator)
        return _with_task_id(body, rename, "elicitationId")

    def _elicitations_public(self, member: _Member, error: dict[str, Any]) -> dict[str, Any]:
        """A URL-elicitation-required ``error`` with its elicitations' ids named."""
        data = error.get("data")
        listed = data.get("elicitations") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(listed, list):
            return error
        named = [self._elicitation_public(member, e) if isinstance(e, dict) else e for e in listed]
        return {**error, "data": {**data, "elicitations": named}}

    def _by_task(self, message: dict[str, Any]) -> None:
        """A request naming a task: to the server whose task it is, with its own id."""
        params = message.get("params")
        task_id = task_id_of(params) if isinstance(params, dict) else None
        server, separator, own = (task_id or "").partition(self._separator)
        member = self._by_name.get(server)
        if member is None or not separator or not own or not isinstance(params, dict):
            self._error(message["id"], UNKNOWN_TASK, UNKNOWN_TASK_TEXT)
            return
        self._forward(member, message, {**params, "taskId": own})

    def _tasks_list(self, message: dict[str, Any]) -> None:
        self._listing(message, "tasks", "tasks")

    # --- helpers --------------------------------------------------------------------------------

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._keepers.append(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Future[None]) -> None:
        with contextlib.suppress(ValueError):
            self._keepers.remove(task)  # type: ignore[arg-type]
        if not task.cancelled() and task.exception() is not None:
            self._say(f"gateway error: {type(task.exception()).__name__}")


_CLIENT_REQUESTS: dict[str, Callable[[Gateway, dict[str, Any]], None]] = {
    "initialize": Gateway._initialize,
    "ping": Gateway._ping,
    "tools/list": Gateway._tools_list,
    "tools/call": Gateway._tools_call,
    "prompts/list": Gateway._prompts_list,
    "prompts/get": Gateway._prompts_get,
    "resources/list": Gateway._resources_list,
    "resources/templates/list": Gateway._templates_list,
    "resources/read": Gateway._by_uri,
    "resources/subscribe": Gateway._by_uri,
    "resources/unsubscribe": Gateway._by_uri,
    "completion/complete": Gateway._complete,
    "logging/setLevel": Gateway._set_level,
    "tasks/get": Gateway._by_task,
    "tasks/result": Gateway._by_task,
    "tasks/cancel": Gateway._by_task,
    "tasks/list": Gateway._tasks_list,
}
"""What the gateway does with each client request, by method; any other is refused."""


def public_name(server: str, own: str, separator: str = "__") -> str:
    """The name a client sees for the tool or prompt ``own`` of ``server``: the two joined
    by ``separator``, shortened on the wire (cut, then ``_`` and eight hex digits of the full
    name's SHA-256) where that would be longer than 64 characters or hold a character
    outside ``A-Za-z0-9_-``."""
    full = f"{server}{separator}{own}"
    if len(full) <= _PORTABLE_LENGTH and not _PORTABLE.search(full):
        return full
    digest = hashlib.sha256(full.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return _PORTABLE.sub("_", full)[: _PORTABLE_LENGTH - 9] + "_" + digest


def public_task(server: str, separator: str, task_id: str) -> str:
    """The id a client sees for ``server``'s task ``task_id`` (or its elicitation)."""
    return f"{server}{separator}{task_id}"


def _with_task_id(
    body: dict[str, Any], rename: Callable[[str], str], key: str = "taskId"
) -> dict[str, Any]:
    own = body.get(key)
    return {**body, key: rename(own)} if isinstance(own, str) else body


def gateway_pins(policy: Policy) -> PinFile | None:
    """The lock files of the policy's ``[[server]]`` tables (``pin``) as one, by the names
    the client sees; None when no server has one. :class:`PinError` when one cannot be read."""
    separator = (policy.gateway or GatewaySettings()).separator
    parts = [(s.name, PinFile.load(s.pin)) for s in policy.servers if s.pin is not None]
    if not parts:
        return None
    return PinFile.merged(parts, lambda server, own: public_name(server, own, separator))


def _same_pages(
    one: tuple[tuple[dict[str, Any], ...] | None, ...],
    other: tuple[tuple[dict[str, Any], ...] | None, ...],
) -> bool:
    """Whether two merged listings were made of the very same page results (objects held
    by the gateway, read strictly once), member by member."""
    if len(one) != len(other):
        return False
    for mine, theirs in zip(one, other, strict=True):
        if mine is None or theirs is None or len(mine) != len(theirs):
            return False
        if any(a is not b for a, b in zip(mine, theirs, strict=True)):
            return False
    return True


def _cancelled(request_id: int, reason: str) -> dict[str, Any]:
    params = {"requestId": request_id, "reason": reason}
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


def _is_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _remember(latest: OrderedDict[Any, Any], key: Any, value: Any = None) -> None:
    """``key`` (with ``value``) as the newest of ``latest``, which keeps the last
    :data:`_MAX_TOKENS`."""
    latest[key] = value
    latest.move_to_end(key)
    if len(latest) > _MAX_TOKENS:
        latest.popitem(last=False)


def _task_id(task: Any) -> str | None:
    task_id = task.get("taskId") if isinstance(task, dict) else None
    return task_id if isinstance(task_id, str) else None


def _merge(into: dict[str, Any], other: dict[str, Any]) -> None:
    """``other``'s capabilities added to ``into``: tables merged, a flag true if either is."""
    for key, value in other.items():
        mine = into.get(key)
        if isinstance(mine, dict) and isinstance(value, dict):
            _merge(mine, value)
        elif isinstance(value, dict):
            into[key] = {}
            _merge(into[key], value)
        elif isinstance(value, bool):
            into[key] = bool(mine) or value
        elif key not in into:
            into[key] = value


_EXPRESSION = re.compile(r"\{([+#./;?&]?)[^}]*\}")


def _template_pattern(template: str) -> re.Pattern[str]:
    """An RFC 6570 template as a pattern its URIs match: a simple expression stands for one
    path segment, a reserved one (``{+path}``) for any text."""
    parts: list[str] = []
    last = 0
    for found in _EXPRESSION.finditer(template):
        parts.append(re.escape(template[last : found.start()]))
        parts.append(".*" if found.group(1) in ("+", "#") else "[^/?#]*")
        last = found.end()
    parts.append(re.escape(template[last:]))
    return re.compile("".join(parts))


def _reason(error: BaseException) -> str:
    """Why a server could not start, without a path or value it was given."""
    if isinstance(error, PolicyError):
        return str(error)
    if isinstance(error, FileNotFoundError):
        return "its command was not found"
    if isinstance(error, PermissionError):
        return "its command may not be run"
    return type(error).__name__


def reach_gateway(
    policy: Policy,
    *,
    max_size: int,
    timeout: float,
    only: tuple[str, ...] | None = None,
    metrics: Metrics | None = None,
) -> Callable[[ProxySession], Awaitable[Upstream]]:
    """How each proxy session reaches the policy's servers (those named in ``only``, an
    ``[[endpoint]]``'s, when given): a started :class:`Gateway` of its own. The one place a
    server's upstream is chosen: its ``command`` spawned (its
    stderr labelled with its name, ``env`` and ``env_from`` set), or its ``url`` reached as
    ``strictmcp proxy --upstream`` reaches one, with the server's own ``upstream``
    credentials; each server's runs, restarts and lost requests counted in ``metrics``. A
    :class:`PolicyError` at once for a variable ``env_from`` names that is
    not set, or a secret ``upstream`` names that cannot be read."""
    settings = policy.gateway or GatewaySettings()
    servers = tuple(s for s in policy.servers if only is None or s.name in only)
    for server in servers:
        server.environment()
    reached: dict[str, Callable[[ProxySession], Awaitable[Upstream]]] = {}
    if any(server.url is not None for server in servers):
        # Only then: the HTTP client takes a while to import.
        from ..identity import CredentialsError  # noqa: PLC0415
        from . import http_main  # noqa: PLC0415

        for server in servers:
            if server.url is None:
                continue
            try:
                reached[server.name] = http_main.upstreams(
                    (), server.url, max_size=max_size, timeout=timeout, credentials=server.upstream
                )
            except CredentialsError as error:
                raise PolicyError(f"[[server]] {server.name!r} upstream: {error}") from None

    # The variables env_from reads are the gateway's secrets for one server each: no server
    # inherits them, each is given only its own, under the names it expects.
    sources = frozenset(source for s in policy.servers for _, source in s.env_from)

    async def reach(session: ProxySession) -> Upstream:
        async def server_upstream(server: ServerSettings) -> Upstream:
            if server.command is not None:
                return await ProcessUpstream.start(
                    server.command,
                    max_size=max_size,
                    label=server.name,
                    env=server.environment(),
                    unset=sources,
                )
            return await reached[server.name](session)

        gateway = Gateway(
            servers, settings, server_upstream, session.auditor.say, metrics, max_size
        )
        if not session.shared:
            # The session reads this gateway's lines and writes it its own. A shared session's
            # upstream is a bridge (or the probe of one), which reads and writes for it.
            session.handoff_out, session.handoff_in = gateway.from_session, gateway.to_session
        session.enforcer.routes = gateway
        await gateway.start()
        return gateway

    return reach
