"""The stdio floor: strictmcp's own stdio transport with every check switched off.

``python stdio_floor.py -- COMMAND...`` relays lines between our stdin/stdout and a spawned
``COMMAND`` through the very pieces ``strictmcp proxy`` runs on (its event loop, its line
framing, its pipe reader and writer, its process upstream), and nothing else: no JSON is
read, no session is kept, no decision is made. What the proxy costs above this row is the
cost of its checks; what this row costs above the direct server is the transport's.
"""

from __future__ import annotations

import asyncio
import sys

from strictmcp.connect.lines import OVERSIZED, Lines
from strictmcp.connect.process import ProcessUpstream
from strictmcp.proxy.cli import run_loop

# The proxy's own client side (stdin read through its line splitter, stdout written through
# its pipe sink): private, but the floor must be the same code, not a copy of it.
from strictmcp.proxy.stdio import _client_reader, _client_writer

_LIMIT = 4 * 1024 * 1024


async def _main(command: list[str]) -> int:
    client_in = Lines(_LIMIT + 2)
    await _client_reader(client_in)
    client_out = await _client_writer()
    upstream = await ProcessUpstream.start(command, max_size=_LIMIT)

    async def to_server() -> None:
        held: list[bytes] = []
        while (line := await client_in.next()) is not None:
            if line != OVERSIZED:
                held.append(line)
            if client_in.waiting:
                continue
            upstream.write(held)
            held = []
            if upstream.blocked:
                await upstream.drain()
        await upstream.aclose()

    async def to_client() -> None:
        held: list[bytes] = []
        while (line := await upstream.receive()) is not None:
            if isinstance(line, bytes):
                held.append(line)
            if upstream.waiting:
                continue
            client_out.write(held)
            held = []
            if client_out.blocked:
                await client_out.drain()

    relay = asyncio.ensure_future(to_server())
    await to_client()
    relay.cancel()
    await client_out.drain()
    return await upstream.aclose()


if __name__ == "__main__":
    argv = sys.argv[1:]
    if not argv or argv[0] != "--" or len(argv) < 2:
        sys.exit("usage: stdio_floor.py -- COMMAND...")
    sys.exit(run_loop(_main(argv[1:])))
