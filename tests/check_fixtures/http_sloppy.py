"""The fixture server of ``sloppy_server.py``, over streamable HTTP (the official SDK's app).

    python http_sloppy.py [--faults] [--validate | --lying-validate]

It listens on a free loopback port and prints its URL (``http://127.0.0.1:PORT/mcp``) once
it accepts connections.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from check_fixtures.sloppy_server import build, validate_mode  # found through the path just set


class _Announcing(uvicorn.Server):
    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        port = self.servers[0].sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}/mcp", flush=True)


async def main() -> None:
    """Serve until killed."""
    flags = set(sys.argv[1:])
    app = build("--faults" in flags, validate_mode(flags)).streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    await _Announcing(config).serve()


if __name__ == "__main__":
    anyio.run(main)
