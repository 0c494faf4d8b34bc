"""A line-level MCP server for the gateway's tests, one of several behind one gateway.

Run as ``gateway_server.py NAME [MODE]``. Its tools: ``echo`` (says NAME and the text), ``env``
(the variables ``GW_PLAIN`` and ``GW_SECRET`` it was given, and the names of those it sees
starting ``STRICTMCP_TEST_``), ``crash`` (exits at once, status 3, after a line on stderr),
``ask`` (asks the client for a sampling message with the id ``"s-1"``, which every such server
uses, and answers with the client's text), ``grow`` (adds the tool ``extra`` and says the list
changed), ``log`` (a log message from the logger ``core``), ``listings`` (how many
``tools/list`` it answered), ``dup`` (answers with a result holding ``isError`` twice, true then
false), ``tail`` (answers with its id written last, as the TypeScript SDK writes it), ``lone``
(answers with a text holding an unpaired surrogate, escaped), ``flood`` (its ``text`` is ``N
FILE``: writes N log messages of 2 KB, numbered from 0, as fast as its stdout takes them,
saying in FILE every 100 how many it has written, then answers). MODE ``hang``: it answers
``initialize`` and nothing after.
"""

from __future__ import annotations

import json
import os
import sys

_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def _tool(name: str) -> dict[str, object]:
    return {"name": name, "description": f"The {name} tool.", "inputSchema": _SCHEMA}


def main() -> None:  # noqa: PLR0915 - one loop over the methods, as a reader would follow it
    """Serve stdin and stdout, one line at a time."""
    name = sys.argv[1]
    hang = sys.argv[2:] == ["hang"]
    tools = ["echo", "env", "crash", "ask", "grow", "log", "dup", "listings", "tail", "lone"]
    tools.append("flood")
    listings = 0
    asked: dict[str, object] = {}  # our request's id -> the call waiting for its answer
    out = sys.stdout

    def send(message: dict[str, object]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    def result(request_id: object, text: str) -> None:
        content = [{"type": "text", "text": text}]
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": content}})

    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method is None and message.get("id") in asked:
            answer = message.get("result", {}).get("content", {}).get("text", "?")
            result(asked.pop(message["id"]), f"{name} was told: {answer}")
            continue
        if "id" not in message or method is None:
            continue
        request_id = message["id"]
        if method == "initialize":
            version = message["params"]["protocolVersion"]
            capabilities = {"tools": {"listChanged": True}, "logging": {}}
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {
                        "protocolVersion": version,
                        "capabilities": capabilities,
                        "serverInfo": {"name": name, "version": "1"},
                        "instructions": f"Use {name} for tests.",
                    },
                }
            )
        elif hang:
            continue
        elif method == "tools/list":
            listings += 1
            listed = [_tool(tool) for tool in tools]
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": listed}})
        elif method == "logging/setLevel":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "tools/call":
            tool = message["params"]["name"]
            text = message["params"].get("arguments", {}).get("text", "")
            if tool == "echo":
                result(request_id, f"{name}: {text}")
            elif tool == "env":
                plain, secret = os.environ.get("GW_PLAIN"), os.environ.get("GW_SECRET")
                seen = sorted(name for name in os.environ if name.startswith("STRICTMCP_TEST_"))
                result(request_id, f"plain={plain} secret={secret} seen={','.join(seen)}")
            elif tool == "crash":
                print(f"{name} is crashing now", file=sys.stderr, flush=True)
                sys.exit(3)
            elif tool == "ask":
                asked["s-1"] = request_id
                params = {
                    "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
                    "maxTokens": 10,
                }
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": "s-1",
                        "method": "sampling/createMessage",
                        "params": params,
                    }
                )
            elif tool == "grow":
                tools.append("extra")
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                result(request_id, "grown")
            elif tool == "listings":
                result(request_id, f"{name} listed its tools {listings} times")
            elif tool == "dup":
                # Two readers, two answers: a lenient one keeps the last isError, another the
                # first.
                content = '[{"type": "text", "text": "dup"}]'
                body = f'{{"content": {content}, "isError": true, "isError": false}}'
                out.write(
                    f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "result": {body}}}\n'
                )
                out.flush()
            elif tool == "tail":
                said = {"content": [{"type": "text", "text": f"{name}: {text}"}]}
                send({"result": said, "jsonrpc": "2.0", "id": request_id})
            elif tool == "lone":
                result(request_id, "half of a pair: \ud800")
            elif tool == "flood":
                many, count = text.split(" ", 1)
                for n in range(int(many)):
                    data = f"{n} " + "x" * 2048
                    params = {"level": "info", "logger": "flood", "data": data}
                    send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
                    if n % 100 == 99:
                        with open(count, "w", encoding="utf-8") as progress:
                            progress.write(str(n + 1))
                result(request_id, "flooded")
            elif tool == "log":
                params = {"level": "warning", "logger": "core", "data": f"{name} logs"}
                send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})
                result(request_id, "logged")
            else:
                result(request_id, f"{name} ran {tool}")
        else:
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})


if __name__ == "__main__":
    main()
