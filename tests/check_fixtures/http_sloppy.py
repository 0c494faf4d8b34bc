"""The fixture server of ``sloppy_server.py``, over streamable HTTP (the official SDK's app).

    python http_sloppy.py [--faults] [--validate | --lying-validate]

It listens on a free loopback port and prints its URL (``http://127.0.0.1:PORT/mcp``) once
it accepts connections.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
# Found through the path just set.
from check_fixtures.sloppy_server import build, validate_mode
from proxy_fixtures.http_server import serve


async def main() -> None:
    """Serve until killed."""
    flags = set(sys.argv[1:])
    await serve(
        build("--faults" in flags, validate_mode(flags)).streamable_http_app(host="127.0.0.1")
    )


if __name__ == "__main__":
    anyio.run(main)
