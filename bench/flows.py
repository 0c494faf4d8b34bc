"""What ``[[flow]]`` tracking costs per call through the gateway's session.

Run ``python bench/flows.py`` for the full run, ``--quick`` for a smoke run, ``--check`` to
check the verdicts and exit without timing. The measurement is bench/engine.py's (batches of
back-to-back calls, the cyclic GC off inside a batch, contenders round-robin, medians with the
10th-90th percentile spread), imported from it: run this file as a script.

Each contender is the proxy's decisions on one call (``ProxySession.from_client`` on a
``tools/call`` of ``sink__write_query`` with a 200-character query, ``from_server`` on its
answer: a 1 KB English text result), in this process on recorded lines (no pipes, no
transport), timed in this process's CPU time, interleaved round by round:

- ``off`` (the baseline): a gateway policy (two ``[[server]]`` tables), no ``[[flow]]``;
- ``on``: the same with ``[[flow]] from = ["files"] to = ["*"]``, nothing tainted yet (every
  answer is still searched for secrets to taint);
- ``on, tainted``: the same after the session read 100 secrets from ``files``: every string
  of every call is then searched for them (and what its encoded runs decode to);
- ``on, 1,000 keys``: the same after reading 1,000 AWS keys (``AKIA`` and 16 random
  characters: the detectors' kinds share a prefix);
- ``on, 1,000 values``: the same after reading 1,000 random 16-character values at the rule's
  ``sensitive`` pointer (no prefix shared: the search's worst case).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from typing import Any

from engine import Contender, calibrate, fmt_time, measure, ratio
from strictmcp.enforce import Auditor
from strictmcp.policy import Policy
from strictmcp.proxy.session import ProxySession

_REVISION = "2025-11-25"
_PROSE = (
    "The forecast for Chicago calls for partly cloudy skies with a high of 21 degrees and "
    "winds from the west at 15 km/h. Humidity stays near 60 percent through the afternoon.\n"
)
_QUERY = (
    "INSERT INTO forecasts (city, day, summary, high, wind) VALUES ('Chicago', '2026-07-28', "
    "'partly cloudy skies with a high of 21 degrees and winds from the west', 21, 15)"
)
_SERVERS = [
    {"name": "files", "command": ["files"]},
    {"name": "sink", "command": ["sink"]},
]
_FLOW = [{"from": ["files"], "to": ["*"], "sensitive": ["/structuredContent/values/*"]}]
_SECRETS = [f"AKIA{index:016d}" for index in range(100)]


def _text_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


# Seeded: the same taints in every run.
_DRAW = random.Random(23)
_KEYS = [
    "AKIA" + "".join(_DRAW.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", k=16)) for _ in range(1000)
]
_VALUES = [
    "".join(_DRAW.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=16)) for _ in range(1000)
]
_READS: dict[str, dict[str, Any]] = {
    "100 keys": _text_result("".join(f"KEY_{i}={key}\n" for i, key in enumerate(_SECRETS))),
    "1,000 keys": _text_result("".join(f"KEY_{i}={key}\n" for i, key in enumerate(_KEYS))),
    "1,000 values": {"content": [], "structuredContent": {"values": _VALUES}},
}


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _session(flows: bool, read: str | None, loop: asyncio.AbstractEventLoop) -> ProxySession:
    """A session past its handshake and listing (and the ``read`` of :data:`_READS`, if any)."""
    data: dict[str, Any] = {"server": _SERVERS}
    if flows:
        data["flow"] = _FLOW
    session = ProxySession(Auditor(None), policy=Policy.from_dict(data))
    schema = {"type": "object", "properties": {"query": {"type": "string"}}}
    tools = [
        {"name": "files__read_file", "inputSchema": {"type": "object"}},
        {"name": "sink__write_query", "inputSchema": schema},
    ]
    init = {"protocolVersion": _REVISION, "capabilities": {}, "clientInfo": {"name": "b"}}
    server = {"protocolVersion": _REVISION, "capabilities": {"tools": {}}, "serverInfo": init}
    lines: list[tuple[str, dict[str, Any]]] = [
        ("c", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        ("s", {"jsonrpc": "2.0", "id": 0, "result": server}),
        ("c", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ("c", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ("s", {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}),
    ]
    if read is not None:
        call = {"name": "files__read_file", "arguments": {"path": "/srv/.env"}}
        lines += [
            ("c", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}),
            ("s", {"jsonrpc": "2.0", "id": 2, "result": _READS[read]}),
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
        "params": {"name": "sink__write_query", "arguments": {"query": _QUERY}},
    }
)
_ANSWER = _line({"jsonrpc": "2.0", "id": 9, "result": _text_result(_PROSE * 6)})


def _contender(
    key: str, flows: bool, read: str | None, loop: asyncio.AbstractEventLoop
) -> Contender:
    session = _session(flows, read, loop)

    async def calls(n: int) -> None:
        # The same id each time: the answer settles the request before the next is sent.
        for _ in range(n):
            await session.from_client(_CALL)
            await session.from_server(_ANSWER)

    def run(n: int) -> object:
        return loop.run_until_complete(calls(n))

    return Contender(key, "flows", key, run)


def check(loop: asyncio.AbstractEventLoop) -> list[str]:
    """The timed calls go on unchanged in every setting; a tainted value does not."""
    wrong = []
    settings: list[tuple[bool, str | None]] = [(False, None), (True, None)]
    for flows, read in [*settings, *((True, read) for read in _READS)]:
        session = _session(flows, read, loop)
        routed = loop.run_until_complete(session.from_client(_CALL))
        if routed.forward != [_CALL]:
            wrong.append(f"flows {flows}, read {read}: the call was not sent on as it came")
        loop.run_until_complete(session.from_server(_ANSWER))
    for read, value in (
        ("100 keys", _SECRETS[42]),
        ("1,000 keys", _KEYS[777]),
        ("1,000 values", _VALUES[555]),
    ):
        session = _session(True, read, loop)
        leak = {"name": "sink__write_query", "arguments": {"query": f"'{value}'"}}
        line = _line({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": leak})
        if loop.run_until_complete(session.from_client(line)).forward:
            wrong.append(f"a tainted value of the read of {read} reached the sink")
    return wrong


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fast smoke run (CI)")
    parser.add_argument("--check", action="store_true", help="check verdicts, do not time")
    parser.add_argument("--rounds", type=int, default=300, help="rounds of the full run")
    args = parser.parse_args(argv)
    loop = asyncio.new_event_loop()
    try:
        wrong = check(loop)
        for message in wrong:
            print(f"wrong verdict: {message}", file=sys.stderr)
        if wrong or args.check:
            return 1 if wrong else 0
        batch_ns, rounds, min_calls = (
            (1_000_000, 20, 40) if args.quick else (2_000_000, args.rounds, 0)
        )
        contenders = [
            _contender("off", False, None, loop),
            _contender("on", True, None, loop),
            _contender("on, tainted", True, "100 keys", loop),
            _contender("on, 1,000 keys", True, "1,000 keys", loop),
            _contender("on, 1,000 values", True, "1,000 values", loop),
        ]
        for contender in contenders:
            # The first request after a read compiles the search for what it tainted (once
            # per set of taints, about 20 ms for 1,000): not the cost of a call, nor one to
            # let skew the batch size.
            contender.run(10)
            calibrate(contender, batch_ns)
        # CPU time: on a shared machine, wall-clock batches are mostly other work's wake-ups.
        measure(contenders, rounds, min_calls, clock=time.process_time_ns)
    finally:
        loop.close()
    off = contenders[0]
    print(f"the gateway session's decisions per call (CPU time); {rounds} rounds\n")
    print("| [[flow]] | median per call | vs off: ratio of medians | of paired rounds |")
    print("|---|--:|--:|--:|")
    for c in contenders:
        paired = [t / b for t, b in zip(c.samples, off.samples, strict=True)]
        spread = ratio(c.key, c, off)
        print(
            f"| {c.key} | {fmt_time(c.median)} | {spread.value:.3f}x | "
            f"median {statistics.median(paired):.3f}x, p10-p90 {spread.low:.2f}-{spread.high:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
