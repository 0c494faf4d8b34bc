"""What an external interceptor (``[[interceptor]]``) adds per call to the proxy's decisions.

Run ``python bench/interceptors.py`` for the full run, ``--quick`` for a smoke run, ``--check``
to check the verdicts and exit without timing. The measurement is bench/engine.py's (batches
of back-to-back calls, the cyclic GC off inside a batch, contenders round-robin, medians with
the 10th-90th percentile spread), imported from it: run this file as a script.

Each contender is the proxy's decisions on one call (``ProxySession.from_client`` on a
``tools/call`` with a 200-character argument, ``from_server`` on its answer: a 1 KB text
result), in this process on recorded lines, timed in wall-clock time (the interceptor's work
is another process's and the pipes'), interleaved round by round:

- ``none`` (the baseline): no ``[[interceptor]]``;
- ``request``: an allow-all validation interceptor on the call's request: one
  ``interceptor/invoke`` round trip per call, over stdio, to
  tests/proxy_fixtures/external_interceptor.py (Python, no dependencies);
- ``both``: the same on the request and on the response: two round trips per call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from engine import Contender, calibrate, fmt_time, measure, ratio
from strictmcp.enforce import Auditor
from strictmcp.policy import Policy
from strictmcp.proxy.session import ProxySession

_REVISION = "2025-11-25"
_FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "proxy_fixtures"
_INTERCEPTOR = [sys.executable, str(_FIXTURE / "external_interceptor.py"), "allow"]
_TEXT = "The forecast for Chicago calls for partly cloudy skies with a high of 21 degrees. " * 12


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _session(phase: str | None, loop: asyncio.AbstractEventLoop) -> ProxySession:
    """A session past its handshake and listing."""
    data: dict[str, Any] = {}
    if phase is not None:
        data["interceptor"] = [
            {"name": "allow", "type": "validation", "command": _INTERCEPTOR, "phase": phase}
        ]
    session = ProxySession(Auditor(None), policy=Policy.from_dict(data))
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    tools = [{"name": "write", "inputSchema": schema}]
    init = {"protocolVersion": _REVISION, "capabilities": {}, "clientInfo": {"name": "b"}}
    server = {"protocolVersion": _REVISION, "capabilities": {"tools": {}}, "serverInfo": init}
    lines: list[tuple[str, dict[str, Any]]] = [
        ("c", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        ("s", {"jsonrpc": "2.0", "id": 0, "result": server}),
        ("c", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ("c", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ("s", {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}),
    ]

    async def start() -> None:
        for side, message in lines:
            await (session.from_server if side == "s" else session.from_client)(_line(message))

    loop.run_until_complete(start())
    return session


_CALL = _line(
    {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "write", "arguments": {"text": _TEXT[:200]}},
    }
)
_ANSWER = _line(
    {"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": _TEXT}]}}
)


def _contender(key: str, phase: str | None, loop: asyncio.AbstractEventLoop) -> Contender:
    session = _session(phase, loop)

    async def calls(n: int) -> None:
        # The same id each time: the answer settles the request before the next is sent.
        for _ in range(n):
            await session.from_client(_CALL)
            await session.from_server(_ANSWER)

    def run(n: int) -> object:
        return loop.run_until_complete(calls(n))

    return Contender(key, "interceptors", key, run)


def check(loop: asyncio.AbstractEventLoop) -> list[str]:
    """The timed calls and answers go on unchanged in every setting."""
    wrong = []
    for phase in (None, "request", "both"):
        session = _session(phase, loop)
        routed = loop.run_until_complete(session.from_client(_CALL))
        if routed.forward != [_CALL]:
            wrong.append(f"{phase}: the call was not sent on as it came")
        answered = loop.run_until_complete(session.from_server(_ANSWER))
        if answered.forward != [_ANSWER]:
            wrong.append(f"{phase}: the answer was not sent on as it came")
    return wrong


def _new_loop(kind: str) -> asyncio.AbstractEventLoop:
    if kind == "uvloop":
        import uvloop  # noqa: PLC0415 - only for this choice

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fast smoke run (CI)")
    parser.add_argument("--check", action="store_true", help="check verdicts, do not time")
    parser.add_argument(
        "--loop",
        choices=("uvloop", "asyncio"),
        default="uvloop",
        help="the event loop (the proxy runs on uvloop where it is installed, as it is here)",
    )
    args = parser.parse_args(argv)
    loop = _new_loop(args.loop)
    try:
        wrong = check(loop)
        for message in wrong:
            print(f"wrong verdict: {message}", file=sys.stderr)
        if wrong or args.check:
            return 1 if wrong else 0
        batch_ns, rounds, min_calls = (2_000_000, 20, 20) if args.quick else (5_000_000, 200, 0)
        contenders = [
            _contender("none", None, loop),
            _contender("request", "request", loop),
            _contender("both", "both", loop),
        ]
        for contender in contenders:
            calibrate(contender, batch_ns)
        measure(contenders, rounds, min_calls, clock=time.perf_counter_ns)
    finally:
        loop.close()
    base = contenders[0]
    print(f"the proxy session's decisions per call (wall clock); {rounds} rounds\n")
    print("| [[interceptor]] | median per call | added vs none | of paired rounds |")
    print("|---|--:|--:|--:|")
    for c in contenders:
        added = [t - b for t, b in zip(c.samples, base.samples, strict=True)]
        spread = ratio(c.key, c, base)
        print(
            f"| {c.key} | {fmt_time(c.median)} | {fmt_time(c.median - base.median)} | "
            f"median {fmt_time(statistics.median(added))}, ratio {spread.value:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
