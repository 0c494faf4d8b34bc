"""Ask before calling: the Validation Protocol from the client's side, with a local fallback.

:func:`validate_call` asks the server's validate tool when the server advertises
``capabilities.experimental.toolValidation``, under the tool name the capability gives. When it
does not, or its validate tool fails or answers something that is not ``{valid, errors,
warnings}``, the arguments are checked here against the ``inputSchema`` the tool is listed
with, and the answer's warnings say why the server's was not used. A local check knows only
the schema; a server's answer can also reflect its policy guards and deep checks.

It works with any ``ClientSession``. A :class:`~strictmcp.integrations.client.StrictClientSession`
lends its listing to local checks; a plain session lists the tools for each one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types
from pydantic import ValidationError

from ..enforce import Enforcer
from ..extras import needs
from ..guards.validation import CAPABILITY, OUTPUT_SCHEMA
from ..schema import compile_schema, quote_name
from .client import StrictClientSession, fetch_tool_registry

with needs("mcp"):
    from mcp import ClientSession, MCPError

# Issues of a malformed answer named in its warning; the rest are counted.
_ISSUES_SHOWN = 3


@dataclass(frozen=True)
class ValidationAnswer:
    """Whether a call to a tool with some arguments would be accepted, and who said so.

    ``errors`` and ``warnings`` are the Validation Protocol's strings (``pointer: message
    [code]``). ``source`` is ``"server"`` when the server's validate tool answered, ``"local"``
    when the arguments were checked here against the tool's ``inputSchema``.
    """

    valid: bool
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    source: Literal["server", "local"]


async def validate_call(
    session: ClientSession, tool: str, arguments: Mapping[str, Any]
) -> ValidationAnswer:
    """Whether calling ``tool`` with ``arguments`` would be accepted, without calling it.

    The session must be past its handshake. The server's validate tool answers when the
    server advertises one; otherwise, or when it fails or answers malformed, the arguments are
    checked locally and a warning says why. Errors of the session itself (a closed
    connection, a failing ``tools/list``) propagate.
    """
    notes: list[str] = []
    validator = _advertised_validator(session, notes)
    if validator is not None:
        answer = await _ask_server(session, validator, tool, dict(arguments), notes)
        if answer is not None:
            return answer
    if isinstance(session, StrictClientSession):
        registry = await session.tool_registry(tool)
    else:
        registry = await fetch_tool_registry(session)
    verdict = await Enforcer().dry_run(registry).check(tool, dict(arguments))
    return ValidationAnswer(verdict.valid, verdict.errors, (*notes, *verdict.warnings), "local")


def _advertised_validator(session: ClientSession, notes: list[str]) -> str | None:
    capabilities = session.server_capabilities
    experimental = capabilities.experimental if capabilities is not None else None
    if not experimental or CAPABILITY not in experimental:
        return None
    name = experimental[CAPABILITY].get("tool")
    if isinstance(name, str) and name:
        return name
    notes.append(_fallback(f"it advertises {CAPABILITY} without naming its validate tool"))
    return None


async def _ask_server(
    session: ClientSession,
    validator: str,
    tool: str,
    arguments: dict[str, Any],
    notes: list[str],
) -> ValidationAnswer | None:
    """The server's answer, or None with the reason in ``notes``."""
    quoted = quote_name(validator)
    request = types.CallToolRequest(
        params=types.CallToolRequestParams(
            name=validator, arguments={"tool": tool, "arguments": arguments}
        )
    )
    try:
        # send_request, not call_tool: the answer is checked below against the protocol's own
        # outputSchema, whatever the server lists, so the session's result check (and the
        # tools/list it may send first) has nothing to add.
        result = await session.send_request(request, types.CallToolResult)
    except MCPError as error:
        notes.append(_fallback(f"its validate tool {quoted} failed (JSON-RPC {error.code})"))
        return None
    except ValidationError:
        notes.append(_fallback(f"its validate tool {quoted} answered no tool result"))
        return None
    answer = _answer_in(result)
    if isinstance(answer, str):
        notes.append(_fallback(f"its validate tool {quoted} {answer}"))
        return None
    return answer


def _answer_in(result: types.CallToolResult) -> ValidationAnswer | str:
    """The Validation Protocol answer ``result`` carries, or why it carries none."""
    if result.is_error:
        return "answered with an error result"
    content = result.structured_content
    if content is None:
        return "answered without structuredContent"
    verdict = compile_schema(OUTPUT_SCHEMA).validate(content)
    if not verdict.valid or not isinstance(content, dict):
        shown = "; ".join(str(issue) for issue in verdict.issues[:_ISSUES_SHOWN])
        more = "; and more" if len(verdict.issues) > _ISSUES_SHOWN or verdict.truncated else ""
        return f"answered something other than {{valid, errors, warnings}}: {shown}{more}"
    valid, errors, warnings = content["valid"], content["errors"], content["warnings"]
    if valid == bool(errors):
        return "answered a verdict its own errors contradict"
    return ValidationAnswer(valid, tuple(errors), tuple(warnings), "server")


def _fallback(why: str) -> str:
    return f"server validation not used: {why}; checked locally against the inputSchema only"
