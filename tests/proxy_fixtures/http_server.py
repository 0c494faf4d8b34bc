"""The SDK fixture server of ``sdk_server.py``, served over streamable HTTP by the official SDK.

    python http_server.py CALLS_FILE

It listens on a free loopback port and says where on its stdout (``http://127.0.0.1:PORT/mcp``)
once it accepts connections; it records calls as ``sdk_server.py`` does, and the
``Authorization`` header of every HTTP request (``""`` when there is none) as one JSON string
a line in ``CALLS_FILE.authorization``: what the proxy sends upstream, which must never be
the client's token.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from proxy_fixtures.sdk_server import build  # found through the path just set


class _Announcing(uvicorn.Server):
    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        port = self.servers[0].sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}/mcp", flush=True)


async def serve(app: Any) -> None:
    """Serve the ASGI ``app`` on a free loopback port until killed; print its URL once up."""
    # h11, as the SDK is tested on (see conformance_server.py's serve_http).
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", http="h11")
    await _Announcing(config).serve()


def recording(app: Any, log: Path) -> Any:
    """``app``, the ``Authorization`` header of each HTTP request written to ``log`` first."""

    async def recorded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            value = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            with log.open("a", encoding="utf-8") as out:
                out.write(json.dumps(value) + "\n")
        await app(scope, receive, send)

    return recorded


async def main() -> None:
    """Serve until killed."""
    calls = Path(sys.argv[1])
    app = build(calls).streamable_http_app(host="127.0.0.1")
    await serve(recording(app, calls.with_name(calls.name + ".authorization")))


if __name__ == "__main__":
    anyio.run(main)
