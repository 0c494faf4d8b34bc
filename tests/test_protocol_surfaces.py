"""strictmcp.protocol.surfaces names the models mcp-types' own surface maps hold, and each
revision's models are imported only when a message of that revision is checked."""

from __future__ import annotations

import json
import subprocess
import sys

import mcp_types.methods
import pytest

from strictmcp.protocol import methods as methods_module
from strictmcp.protocol import surfaces

MAPS = [
    "CLIENT_REQUESTS",
    "SERVER_REQUESTS",
    "CLIENT_NOTIFICATIONS",
    "SERVER_NOTIFICATIONS",
    "CLIENT_RESULTS",
    "SERVER_RESULTS",
]


@pytest.mark.parametrize("name", MAPS)
def test_each_table_names_the_models_of_mcp_types_surface_map(name: str) -> None:
    ours = {
        (method, revision.value): methods_module._model(methods_module._era(revision), model)
        for revision, models in getattr(surfaces, name).items()
        for method, model in models.items()
    }
    assert ours == dict(getattr(mcp_types.methods, name))


_ERAS_LOADED = """
import json, sys
from strictmcp.protocol import Revision, check_request, decode
import strictmcp.proxy

def eras():
    return sorted(m for m in sys.modules if m.startswith(("mcp_types._v", "mcp_types.methods")))

before = eras()
params = json.loads(sys.argv[3])
line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": sys.argv[1], "params": params})
revision = Revision(sys.argv[2])
(message,) = decode(line, revision).messages
assert check_request(message, revision, "client") == []
print(json.dumps([before, eras()]))
"""

INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "c", "version": "1"},
}
# websiteUrl is 2025-11-25's: in 2025-06-18 an unknown field, which passes but not plainly.
OFF_PLAIN_INITIALIZE = {
    **INITIALIZE,
    "clientInfo": {"name": "c", "version": "1", "websiteUrl": "https://example.com"},
}
OFF_PLAIN_CALL = {"name": "t", "arguments": {}, "_meta": {"progressToken": 1}}
MODERN_META: dict[str, object] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
MODERN_CALL = {"name": "t", "arguments": {}, "_meta": MODERN_META}


# A client's title is valid in 2026-07-28, but not on its fast path.
OFF_PLAIN_MODERN_CALL = {
    **MODERN_CALL,
    "_meta": {
        **MODERN_META,
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1", "title": "C"},
    },
}


# A plain shape of a message is checked without its model (methods._PLAIN): the first
# message a session checks with a model imports its revision's.
@pytest.mark.parametrize(
    ("method", "revision", "params", "eras"),
    [
        ("initialize", "2025-06-18", INITIALIZE, []),
        ("initialize", "2025-06-18", OFF_PLAIN_INITIALIZE, ["mcp_types._v2025_11_25"]),
        ("tools/call", "2024-11-05", {"name": "t", "arguments": {}}, []),
        ("tools/call", "2024-11-05", OFF_PLAIN_CALL, ["mcp_types._v2025_11_25"]),
        ("tools/list", "2025-11-25", {}, ["mcp_types._v2025_11_25"]),
        ("tools/call", "2026-07-28", MODERN_CALL, []),
        ("tools/call", "2026-07-28", OFF_PLAIN_MODERN_CALL, ["mcp_types._v2026_07_28"]),
    ],
)
def test_a_revision_s_models_are_imported_when_a_message_of_it_is_checked(
    method: str, revision: str, params: dict[str, object], eras: list[str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _ERAS_LOADED, method, revision, json.dumps(params)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    before, after = json.loads(done.stdout)
    assert before == []
    assert after == eras
