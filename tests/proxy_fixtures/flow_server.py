"""A line-level MCP server for the gateway's flow tests: a source or a sink of data.

Run as ``flow_server.py NAME DIR TOOL...``. It lists the tools named (any arguments), and
records every ``tools/call``, ``prompts/get`` and ``resources/read`` it is sent, as it got
them, in ``DIR/NAME.calls.jsonl``: the ground truth of what reached it. A tool call is
answered with the result in ``DIR/NAME.next.json`` (then removed) when there is one, else
with ``NAME ran TOOL``; with ``FLOW_SERVER_WAIT`` set, it waits for that file (the test plants
the answer once it has seen the call arrive) for up to 30 s. The tool ``ask`` instead asks the
client for a sampling message (its argument ``text`` as the prompt, then
``DIR/NAME.error.txt``'s text when there is one), records the client's
answer as it got it (``{"answer": ...}``), and then answers the call. The tool ``fail``
answers with a JSON-RPC error whose message is ``DIR/NAME.error.txt``'s text, and the tool
``log`` sends that text in a log message (``notifications/message``) before it answers; the
tool ``forge`` writes each message of ``DIR/NAME.forge.json`` (a list) before it answers. It
offers the resource ``flow://NAME/data`` (``DIR/NAME.resource``'s text; with
``FLOW_SERVER_WAIT``, read once that file exists), and lists too each URI of
``DIR/NAME.claims`` (with ``FLOW_SERVER_LIST_CHANGED`` set, it promises to say when its
resources change); the prompt ``note``
(its argument ``text`` said back) and completions of anything. Every line it is sent, whatever
its method, is also kept as it came in ``DIR/NAME.wire.jsonl``: what a flow could carry
anywhere in a message.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any


def main() -> None:  # noqa: PLR0915 - one loop over the methods, as gateway_server.py
    """Serve stdin and stdout, one line at a time."""
    name, where, tools = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    calls = where / f"{name}.calls.jsonl"
    wire = where / f"{name}.wire.jsonl"
    planted = where / f"{name}.next.json"
    resource = where / f"{name}.resource"
    uri = f"flow://{name}/data"
    wait = bool(os.environ.get("FLOW_SERVER_WAIT"))
    promises = bool(os.environ.get("FLOW_SERVER_LIST_CHANGED"))

    def send(request_id: object, result: dict[str, object]) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
        sys.stdout.flush()

    asked: dict[str, object] = {}  # our sampling request's id -> the call waiting for it

    def record(entry: dict[str, object]) -> None:
        with calls.open("a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")

    for line in sys.stdin:
        with wire.open("a", encoding="utf-8") as log:
            log.write(line)
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method is None and request_id in asked:
            record({"answer": message})
            send(asked.pop(request_id), {"content": [{"type": "text", "text": "answered"}]})
            continue
        if method is None or request_id is None:
            continue
        params = message.get("params") or {}
        if method in ("tools/call", "prompts/get", "resources/read"):
            record({"method": method, "params": params})
        if method == "initialize":
            capabilities: dict[str, Any] = {
                "tools": {},
                "resources": {"listChanged": True} if promises else {},
                "prompts": {},
                "logging": {},
                "completions": {},
            }
            send(
                request_id,
                {
                    "protocolVersion": params["protocolVersion"],
                    "capabilities": capabilities,
                    "serverInfo": {"name": name, "version": "1"},
                },
            )
        elif method == "tools/list":
            schema = {"type": "object"}
            listed = [{"name": tool, "inputSchema": schema} for tool in tools]
            send(request_id, {"tools": listed})
        elif method == "tools/call" and params["name"] == "ask":
            asked[f"ask-{request_id}"] = request_id
            text = (params.get("arguments") or {}).get("text", "")
            if (where / f"{name}.error.txt").exists():
                text += (where / f"{name}.error.txt").read_text(encoding="utf-8")
            sampled = {
                "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
                "maxTokens": 10,
            }
            out = {
                "jsonrpc": "2.0",
                "id": f"ask-{request_id}",
                "method": "sampling/createMessage",
                "params": sampled,
            }
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
        elif method == "tools/call" and params["name"] == "fail":
            text = (where / f"{name}.error.txt").read_text(encoding="utf-8")
            out = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": text}}
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
        elif method == "tools/call" and params["name"] == "forge":
            forged = json.loads((where / f"{name}.forge.json").read_text(encoding="utf-8"))
            sys.stdout.write("".join(json.dumps(m) + "\n" for m in forged))
            sys.stdout.flush()
            send(request_id, {"content": [{"type": "text", "text": "forged"}]})
        elif method == "tools/call" and params["name"] == "log":
            text = (where / f"{name}.error.txt").read_text(encoding="utf-8")
            logged = {"level": "info", "logger": "db", "data": text}
            out = {"jsonrpc": "2.0", "method": "notifications/message", "params": logged}
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
            send(request_id, {"content": [{"type": "text", "text": "logged"}]})
        elif method == "tools/call":
            waited = 0
            while wait and not planted.exists() and waited < 3000:
                time.sleep(0.01)
                waited += 1
            if planted.exists():
                result = json.loads(planted.read_text(encoding="utf-8"))
                planted.unlink()
            else:
                result = {"content": [{"type": "text", "text": f"{name} ran {params['name']}"}]}
            send(request_id, result)
        elif method == "resources/list":
            claims = where / f"{name}.claims"
            claimed = claims.read_text(encoding="utf-8").split() if claims.exists() else []
            listed = [{"uri": u, "name": "data"} for u in [uri, *claimed]]
            send(request_id, {"resources": listed})
        elif method == "resources/templates/list":
            send(request_id, {"resourceTemplates": []})
        elif method == "resources/read":
            waited = 0
            while wait and not resource.exists() and waited < 3000:
                time.sleep(0.01)
                waited += 1
            text = resource.read_text(encoding="utf-8") if resource.exists() else ""
            send(request_id, {"contents": [{"uri": params["uri"], "text": text}]})
        elif method == "prompts/list":
            argument = {"name": "text", "required": False}
            send(request_id, {"prompts": [{"name": "note", "arguments": [argument]}]})
        elif method == "completion/complete":
            send(request_id, {"completion": {"values": [f"{name} completes"]}})
        elif method == "logging/setLevel":
            send(request_id, {})
        elif method == "prompts/get":
            text = (params.get("arguments") or {}).get("text", "")
            content = {"type": "text", "text": f"{name} notes: {text}"}
            send(request_id, {"messages": [{"role": "user", "content": content}]})
        else:
            error = {"code": -32601, "message": "Method not found"}
            out = {"jsonrpc": "2.0", "id": request_id, "error": error}
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
