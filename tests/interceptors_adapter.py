"""The adapter of the MCP interceptors extension's conformance suite for ``strictmcp gateway``
(``conformance/ADAPTER.md`` of ``modelcontextprotocol/experimental-ext-interceptors``; the
fixtures and their commit: tests/interceptors_conformance/README.md).

Each fixture step is replayed through a real gateway over streamable HTTP, its servers the
recording fixture server (tests/proxy_fixtures/flow_server.py) under the names the suite's
``server_of`` gives its tools (``read_file`` is the filesystem's, ``write_query`` sqlite's):

- ``createSession(interceptors)``: a policy whose ``[[flow]]`` binds the security behaviours
  (``cross-boundary-guard`` as ``action = "refuse"``, ``secretless-redactor`` as
  ``action = "redact"``, which composed with the guard wins: the secret is stripped, the call
  allowed), and a gateway process serving it. Each ``sessionId`` is an MCP session of its own.
- ``chain`` of a request: the ``tools/call`` is sent; ``allow`` iff it reached the server (its
  own record says so), and ``finalPayload`` is what the server got. The server holds its answer
  until the response step plants it.
- ``chain`` of a response: the payload is what the server answers the held call with;
  ``allow`` iff the client got it (not an ``isError`` replacement), ``finalPayload`` what it got.

The protocol fixtures (``list``, ``invoke``, and ``chain`` over the suite's test behaviours)
are replayed by :class:`InterceptorSession` against strictmcp's interceptor server
(:mod:`strictmcp.interceptor`): the fixture's interceptors are registered with the behaviours
ADAPTER.md defines, ``list`` and ``invoke`` are JSON-RPC lines through the server's
:meth:`~strictmcp.interceptor.InterceptorServer.answer` (what ``strictmcp interceptor`` puts
on the wire), and ``chain`` is :func:`~strictmcp.interceptor.run_chain`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

from strictmcp.interceptor import (
    Finding,
    Hook,
    Interceptor,
    InterceptorServer,
    Invocation,
    Mutation,
    Registry,
    StrictChecks,
    Validation,
    run_chain,
)
from strictmcp.policy import Policy
from test_flows import plant
from test_proxy_http import Process, answer, handshake, in_session, request

FIXTURES = Path(__file__).resolve().parent / "interceptors_conformance"
SERVER = Path(__file__).resolve().parent / "proxy_fixtures" / "flow_server.py"
#: The suite's server_of roster (conformance/adapters/python/.../security/server_of.py).
TOOL_SERVER = {
    "read_file": "filesystem",
    "write_file": "filesystem",
    "read_query": "sqlite",
    "write_query": "sqlite",
}
_ACTIONS = {"cross-boundary-guard": "refuse", "secretless-redactor": "redact"}
_STRICTNESS = ("refuse", "redact")  # a redactor composed with the guard strips first: redact wins
_SECONDS = 30.0


@dataclass
class ChainOutcome:
    """What ``chain`` answers: ``allow`` or ``deny``, and the payload after the chain."""

    decision: str
    final_payload: Any


class GatewaySession:
    """One ``createSession``: a gateway process and its MCP sessions, by ``sessionId``."""

    def __init__(self, workspace: Path, interceptors: list[dict[str, Any]]) -> None:
        actions = {_ACTIONS[i["behavior"]] for i in interceptors if i["behavior"] in _ACTIONS}
        self.action = max(actions, key=_STRICTNESS.index) if actions else None
        self.workspace = workspace
        self._process: Process | None = None
        self._http: httpx2.AsyncClient | None = None
        self._sessions: dict[str | None, dict[str, str]] = {}
        self._ids = iter(range(1, 1_000_000))
        self._held: asyncio.Task[httpx2.Response] | None = None
        self._held_server: str | None = None
        self._stack = AsyncExitStack()

    async def __aenter__(self) -> GatewaySession:
        servers = sorted(set(TOOL_SERVER.values()))
        tables = []
        for server in servers:
            tools = [tool for tool, owner in TOOL_SERVER.items() if owner == server]
            command = [sys.executable, str(SERVER), server, str(self.workspace), *tools]
            tables.append(
                f'[[server]]\nname = "{server}"\ncommand = {json.dumps(command)}\n'
                'env = { FLOW_SERVER_WAIT = "1" }\n'
            )
        if self.action is not None:
            tables.append(f'[[flow]]\nfrom = ["*"]\nto = ["*"]\naction = "{self.action}"\n')
        policy = self.workspace / "gateway.toml"
        policy.write_text("\n".join(tables), encoding="utf-8")
        args = [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)]
        self._process = Process([*args, "--listen", "127.0.0.1:0"], self.workspace, "stderr")
        self._stack.callback(self._process.stop)
        self.url = self._process.wait_for("listening on").rsplit(" ", 1)[1]
        self._http = await self._stack.enter_async_context(httpx2.AsyncClient(timeout=_SECONDS))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._held is not None:
            self._release(None)
            await asyncio.wait_for(self._held, _SECONDS)
        await self._stack.aclose()

    async def chain(
        self, event: str, phase: str, payload: Any, session_id: str | None
    ) -> ChainOutcome:
        """One lifecycle event of the fixture through the gateway."""
        assert event == "tools/call", event
        if phase == "response":
            return await self._respond(payload)
        if self._held is not None:  # a call no response step answers: answered plainly
            self._release(None)
            await asyncio.wait_for(self._held, _SECONDS)
        return await self._call(payload, session_id)

    async def _call(self, payload: dict[str, Any], session_id: str | None) -> ChainOutcome:
        assert self._http is not None
        headers = await self._session(session_id)
        own = payload["name"]
        server = TOOL_SERVER[own]
        public = {**payload, "name": f"{server}__{own}"}
        before = len(self._calls(server))
        message = request("tools/call", next(self._ids), public)
        sent = asyncio.ensure_future(self._http.post(self.url, json=message, headers=headers))
        arrived = await self._until(lambda: len(self._calls(server)) > before or sent.done())
        if not arrived or len(self._calls(server)) == before:
            await asyncio.wait_for(sent, _SECONDS)
            return ChainOutcome("deny", None)  # answered by the gateway, never sent on
        self._held, self._held_server = sent, server
        got = self._calls(server)[-1]["params"]
        return ChainOutcome("allow", {"name": got["name"], "arguments": got.get("arguments")})

    async def _respond(self, payload: dict[str, Any]) -> ChainOutcome:
        assert self._held is not None, "a response step follows a request that reached a server"
        self._release(payload)
        response = await asyncio.wait_for(self._held, _SECONDS)
        self._held = None
        answered = answer(response)
        assert "result" in answered, answered  # an error here is the gateway's: say which
        result = answered["result"]
        if result.get("isError") and not payload.get("isError"):
            return ChainOutcome("deny", result)
        return ChainOutcome("allow", result)

    def _release(self, payload: dict[str, Any] | None) -> None:
        """Plant the held call's answer (None: the server's own)."""
        assert self._held_server is not None
        planted = payload or {"content": [{"type": "text", "text": "done"}]}
        plant(self.workspace / f"{self._held_server}.next.json", json.dumps(planted))

    async def _session(self, session_id: str | None) -> dict[str, str]:
        headers = self._sessions.get(session_id)
        if headers is None:
            assert self._http is not None
            headers = in_session(await handshake(self._http, self.url))
            listed = request("tools/list", next(self._ids))
            await self._http.post(self.url, json=listed, headers=headers)
            self._sessions[session_id] = headers
        return headers

    def _calls(self, server: str) -> list[dict[str, Any]]:
        record = self.workspace / f"{server}.calls.jsonl"
        if not record.exists():
            return []
        return [json.loads(line) for line in record.read_text().splitlines() if line]

    @staticmethod
    async def _until(done: Callable[[], bool]) -> bool:
        for _ in range(int(_SECONDS / 0.01)):
            if done():
                return True
            await asyncio.sleep(0.01)
        return False


def canonical(value: Any) -> str:
    """RFC 8785 (JCS) for the values the fixtures hold: sorted keys, no whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def scrub(value: Any, volatile: list[str]) -> Any:
    if isinstance(value, list):
        return [scrub(item, volatile) for item in value]
    if isinstance(value, dict):
        return {k: scrub(v, volatile) for k, v in value.items() if k not in volatile}
    return value


async def replay(fixture: dict[str, Any], workspace: Path) -> list[str]:
    """Replay one behaviour fixture (ADAPTER.md's algorithm); the failed steps' details."""
    failures = []
    async with GatewaySession(workspace, fixture["interceptors"]) as session:
        for index, step in enumerate(fixture["steps"]):
            # "chain" is the newest vocabulary; "apply" the name the suite used before.
            assert step["op"] in ("chain", "apply"), step["op"]
            context = step.get("context") or {}
            outcome = await session.chain(
                step["event"], step["phase"], step["payload"], context.get("sessionId")
            )
            expect = step["expect"]
            final = canonical(scrub(outcome.final_payload, fixture["volatile"]))
            if outcome.decision != expect["decision"]:
                failures.append(f"step {index}: {outcome.decision} for {expect['decision']}")
            forbids, requires = expect.get("forbids", ()), expect.get("requires", ())
            failures += [f"step {index}: holds {s!r}" for s in forbids if s in final]
            failures += [f"step {index}: lacks {s!r}" for s in requires if s not in final]
    return failures


# --- the protocol fixtures: strictmcp's interceptor server ---------------------------------------


def _note(payload: Any) -> Any:
    arguments = payload.get("arguments") if isinstance(payload, dict) else None
    return arguments.get("note") if isinstance(arguments, dict) else None


async def _allow_all(_: Invocation) -> Validation:
    return Validation()


async def _deny_all(_: Invocation) -> Validation:
    return Validation((Finding("denied by policy", "error"),))


async def _require_note(invocation: Invocation) -> Validation:
    note = _note(invocation.payload)
    if isinstance(note, str) and note:
        return Validation()
    return Validation((Finding("note is required", "error"),))


async def _require_uppercase_note(invocation: Invocation) -> Validation:
    note = _note(invocation.payload)
    if isinstance(note, str) and note == note.upper():
        return Validation()
    return Validation((Finding("note must be uppercase", "error"),))


async def _uppercase_note(invocation: Invocation) -> Mutation:
    payload, note = invocation.payload, _note(invocation.payload)
    if not isinstance(note, str):
        return Mutation(payload, False)
    return Mutation({**payload, "arguments": {**payload["arguments"], "note": note.upper()}}, True)


async def _crash(_: Invocation) -> Validation:
    raise RuntimeError("the crash behaviour")


BEHAVIOURS = {
    "allow-all": _allow_all,
    "deny-all": _deny_all,
    "require-note": _require_note,
    "require-uppercase-note": _require_uppercase_note,
    "uppercase-note": _uppercase_note,
    "crash": _crash,
}


class InterceptorSession:
    """One ``createSession`` of a protocol fixture: its interceptors, registered in order."""

    def __init__(self, interceptors: list[dict[str, Any]]) -> None:
        registry = Registry()
        for spec in interceptors:
            phases: tuple[Any, ...] = (
                ("request", "response") if spec["phases"] == "both" else (spec["phases"],)
            )
            registry.add(
                Interceptor(
                    spec["name"],
                    spec["type"],
                    tuple(Hook(tuple(spec["events"]), phase) for phase in phases),
                    BEHAVIOURS[spec["behavior"]],  # type: ignore[arg-type]
                    mode=spec.get("mode", "enforce"),
                    fail_open=spec.get("failOpen", False),
                )
            )
        self.registry = registry
        self.server = InterceptorServer(registry)
        self._ids = iter(range(1, 1_000_000))

    async def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        line = json.dumps(request(method, next(self._ids), params))
        answered = await self.server.answer(line)
        wire: dict[str, Any] = json.loads(json.dumps(answered))  # exactly what goes on the wire
        return wire

    async def list(self, event: str | None) -> Any:
        answered = await self._call("interceptors/list", {} if event is None else {"event": event})
        return answered["result"]

    async def invoke(self, params: dict[str, Any]) -> tuple[bool, Any]:
        """``(True, result)`` or ``(False, the JSON-RPC error code)``."""
        answered = await self._call("interceptor/invoke", params)
        if "error" in answered:
            return False, answered["error"]["code"]
        return True, answered["result"]

    async def chain(
        self, event: str, phase: str, payload: Any, session_id: str | None
    ) -> ChainOutcome:
        context = {"sessionId": session_id} if session_id is not None else {}
        ran = await run_chain(self.registry, Invocation(event, phase, payload, context))  # type: ignore[arg-type]
        return ChainOutcome(ran.decision, ran.payload)


async def replay_protocol(fixture: dict[str, Any]) -> list[str]:
    """Replay one protocol fixture (ADAPTER.md's algorithm); the failed steps' details."""
    failures = []
    session = InterceptorSession(fixture["interceptors"])
    volatile = fixture["volatile"]
    for index, step in enumerate(fixture["steps"]):
        expect = step["expect"]
        if step["op"] == "list":
            actual = canonical(scrub(await session.list(step["event"]), volatile))
            if actual != expect["canonical"]:
                failures.append(f"step {index}: {actual} for {expect['canonical']}")
        elif step["op"] == "invoke":
            ok, got = await session.invoke(step["params"])
            if "errorCode" in expect:
                if ok or got != expect["errorCode"]:
                    failures.append(f"step {index}: {got!r} for error {expect['errorCode']}")
            elif not ok:
                failures.append(f"step {index}: error {got} for a result")
            elif (actual := canonical(scrub(got, volatile))) != expect["canonical"]:
                failures.append(f"step {index}: {actual} for {expect['canonical']}")
        else:
            # "chain" is the newest vocabulary; "apply" the name the suite used before.
            assert step["op"] in ("chain", "apply"), step["op"]
            context = step.get("context") or {}
            outcome = await session.chain(
                step["event"], step["phase"], step["payload"], context.get("sessionId")
            )
            final = (
                "null"
                if outcome.final_payload is None
                else canonical(scrub(outcome.final_payload, volatile))
            )
            if outcome.decision != expect["decision"]:
                failures.append(f"step {index}: {outcome.decision} for {expect['decision']}")
            elif "finalPayloadCanonical" in expect and final != expect["finalPayloadCanonical"]:
                failures.append(f"step {index}: {final} for {expect['finalPayloadCanonical']}")
            forbids = expect.get("forbids", ())
            failures += [f"step {index}: holds {s!r}" for s in forbids if s in final]
            failures += [
                f"step {index}: lacks {s!r}" for s in expect.get("requires", ()) if s not in final
            ]
    return failures


# --- the behaviour fixtures of the guard alone: strictmcp's interceptor server ------------------

#: The gateway policy strictmcp/flow judges by: the suite's two servers, every flow refused.
_FLOW_POLICY = (
    "".join(
        f'[[server]]\nname = "{server}"\ncommand = ["true"]\n\n'
        for server in sorted(set(TOOL_SERVER.values()))
    )
    + '[[flow]]\nfrom = ["*"]\nto = ["*"]\n'
)


class StrictFlowSession:
    """One ``createSession`` of a behaviour fixture whose one interceptor is
    ``cross-boundary-guard``, bound to ``strictmcp/flow``: ``chain`` runs it through
    :func:`~strictmcp.interceptor.run_chain`, a request's tool named as the gateway names it
    (``server__tool``, the suite's ``server_of``)."""

    def __init__(self, interceptors: list[dict[str, Any]]) -> None:
        assert [i["behavior"] for i in interceptors] == ["cross-boundary-guard"]
        checks = StrictChecks(Policy.loads(_FLOW_POLICY.encode()))
        self.registry = Registry(i for i in checks.registry() if i.name == "strictmcp/flow")

    async def chain(
        self, event: str, phase: str, payload: Any, session_id: str | None
    ) -> ChainOutcome:
        sent = payload
        if phase == "request":
            own = payload["name"]
            sent = {**payload, "name": f"{TOOL_SERVER[own]}__{own}"}
        context = {"sessionId": session_id} if session_id is not None else {}
        ran = await run_chain(self.registry, Invocation(event, phase, sent, context))  # type: ignore[arg-type]
        return ChainOutcome(ran.decision, None if ran.payload is None else payload)


async def replay_strict_flow(fixture: dict[str, Any]) -> list[str]:
    """Replay a behaviour fixture of the guard alone against ``strictmcp/flow``."""
    failures = []
    session = StrictFlowSession(fixture["interceptors"])
    for index, step in enumerate(fixture["steps"]):
        assert step["op"] in ("chain", "apply"), step["op"]
        context = step.get("context") or {}
        outcome = await session.chain(
            step["event"], step["phase"], step["payload"], context.get("sessionId")
        )
        expect = step["expect"]
        final = canonical(scrub(outcome.final_payload, fixture["volatile"]))
        if outcome.decision != expect["decision"]:
            failures.append(f"step {index}: {outcome.decision} for {expect['decision']}")
        failures += [f"step {index}: holds {s!r}" for s in expect.get("forbids", ()) if s in final]
        failures += [
            f"step {index}: lacks {s!r}" for s in expect.get("requires", ()) if s not in final
        ]
    return failures
