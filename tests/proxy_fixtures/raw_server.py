"""A line-level MCP server for transparency tests: it records every line it receives, byte
for byte, to the file named by its first argument and answers with lines spelled unusually.

- ``initialize``: a minimal result at the client's version; ``tools/list``: no tools;
- ``ask/client``: first sends the client a ``ping`` request (id ``"srv-1"``) and a
  ``notifications/message``, then answers;
- ``say/garbage``: a line that is not JSON, then an envelope with the request's id and
  neither result nor error;
- any other request: ``{"echo": METHOD}``, with extra spaces the proxy must keep;
- notifications and responses: recorded, not answered.
"""

from __future__ import annotations

import json
import sys

_HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def main() -> None:
    """Serve stdin and stdout, one line at a time."""
    out = sys.stdout.buffer
    with open(sys.argv[1], "ab") as record:
        for line in sys.stdin.buffer:
            record.write(line)
            record.flush()
            message = json.loads(line)
            if "method" not in message or "id" not in message:
                continue
            method, ident = message["method"], json.dumps(message["id"])
            if method == "initialize":
                # The client's version when it is one of the handshake's, as a server that
                # speaks them all answers (the session then speaks it, headers included).
                asked = (message.get("params") or {}).get("protocolVersion")
                version = asked if asked in _HANDSHAKE else "2025-11-25"
                result = (
                    f'{{"protocolVersion": "{version}", "capabilities": {{"tools": {{}}}}, '
                    '"serverInfo": {"name": "raw", "version": "1"}}'
                )
            elif method == "tools/list":
                result = '{"tools": []}'
            elif method == "say/garbage":
                out.write(b"garbage\n" + f'{{"jsonrpc": "2.0", "id": {ident}}}\n'.encode())
                out.flush()
                continue
            else:
                if method == "ask/client":
                    out.write(b'{"jsonrpc":"2.0", "id":"srv-1", "method":"ping"}\n')
                    out.write(
                        b'{"jsonrpc":"2.0","method":"notifications/message",'
                        b' "params":{"level":"info","data":"hi"}}\n'
                    )
                result = '{ "echo" :  ' + json.dumps(method) + " }"
            out.write(f'{{"jsonrpc": "2.0",  "id": {ident}, "result": {result}}}\n'.encode())
            out.flush()


if __name__ == "__main__":
    main()
