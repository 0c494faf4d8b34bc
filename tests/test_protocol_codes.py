"""strictmcp's own copies of mcp-types' constants: the JSON-RPC and MCP error codes and the
``_meta`` keys of the request envelope.

strictmcp writes them itself (``strictmcp.protocol.jsonrpc``, ``strictmcp.protocol.wire``)
because importing any ``mcp_types`` module builds every model of ``mcp_types._types`` first,
most of the proxy's time to its first answer; these tests hold the copies equal to the
originals, so that a new mcp-types release that changed one would fail here.
"""

from __future__ import annotations

import mcp_types
import pytest
from mcp_types import jsonrpc as theirs

from strictmcp.protocol import jsonrpc as ours
from strictmcp.protocol import wire

CODES = [
    "JSONRPC_VERSION",
    "PARSE_ERROR",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "INVALID_PARAMS",
    "INTERNAL_ERROR",
    "CONNECTION_CLOSED",
    "REQUEST_TIMEOUT",
    "HEADER_MISMATCH",
    "MISSING_REQUIRED_CLIENT_CAPABILITY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "URL_ELICITATION_REQUIRED",
]


@pytest.mark.parametrize("name", CODES)
def test_each_code_is_mcp_types_own(name: str) -> None:
    assert getattr(ours, name) == getattr(theirs, name)


@pytest.mark.parametrize(
    ("ours_name", "theirs_name"),
    [
        ("META_PROTOCOL_VERSION", "PROTOCOL_VERSION_META_KEY"),
        ("META_CLIENT_CAPABILITIES", "CLIENT_CAPABILITIES_META_KEY"),
        ("META_CLIENT_INFO", "CLIENT_INFO_META_KEY"),
        ("META_SERVER_INFO", "SERVER_INFO_META_KEY"),
    ],
)
def test_each_meta_key_is_mcp_types_own(ours_name: str, theirs_name: str) -> None:
    assert getattr(wire, ours_name) == getattr(mcp_types, theirs_name)
