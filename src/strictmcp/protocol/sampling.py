"""Sampling with tools (``sampling/createMessage``, SEP-1577, from 2025-11-25).

A server may offer the client's model tools and carry a tool loop in the message history: an
assistant message of ``tool_use`` blocks, then a user message of ``tool_result`` blocks
answering each of them by id. These checks hold the whole history to that, not only its last
two messages as the official Python SDK does, and check a result against the request it
answers. Content is a single block or a list of blocks; pointers name the block either way
(``/params/messages/3/content`` or ``/params/messages/3/content/1``).

The shape of each block (required fields, types) is the method schemas' business; here
malformed blocks and messages are skipped, and ids that are not strings match nothing.
In 2026-07-28 a sampling request travels inside an ``InputRequiredResult``; every check takes
``at``, the JSON Pointer of the part it checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..schema import quote_name
from .revisions import Revision
from .rules import Rule
from .tools import check_tools
from .violations import Severity, Violation

_Block = tuple[str, Mapping[str, Any]]
"""A content block and its pointer."""
_Turn = tuple[Any, list[_Block]]
"""A message's role and its content blocks."""


def _blocks(content: Any, pointer: str) -> list[_Block]:
    if isinstance(content, list):
        return [
            (f"{pointer}/{index}", block)
            for index, block in enumerate(content)
            if isinstance(block, Mapping)
        ]
    return [(pointer, content)] if isinstance(content, Mapping) else []


def _of_type(blocks: list[_Block], kind: str) -> list[_Block]:
    return [(pointer, block) for pointer, block in blocks if block.get("type") == kind]


def _string(block: Mapping[str, Any], key: str) -> str | None:
    value = block.get(key)
    return value if isinstance(value, str) else None


def _ids(blocks: list[_Block], kind: str, key: str) -> set[str]:
    return {
        value for _, block in _of_type(blocks, kind) if (value := _string(block, key)) is not None
    }


def _declares(client_capabilities: Mapping[str, Any], feature: str) -> bool:
    """Whether the client declared ``sampling.<feature>`` (``tools``, ``context``)."""
    sampling = client_capabilities.get("sampling")
    return isinstance(sampling, Mapping) and isinstance(sampling.get(feature), Mapping)


def _requires_tool_use(params: Mapping[str, Any]) -> bool:
    choice = params.get("toolChoice")
    return isinstance(choice, Mapping) and choice.get("mode") == "required"


def check_create_message(
    params: Mapping[str, Any],
    revision: Revision,
    client_capabilities: Mapping[str, Any] | None,
    *,
    at: str = "/params",
) -> list[Violation]:
    """Check the tool use in ``sampling/createMessage`` params.

    - ``tools`` and ``toolChoice`` need a revision with sampling tools and a client that
      declared ``sampling.tools``: :attr:`Rule.SAMPLING_TOOLS_NOT_DECLARED` otherwise.
      ``client_capabilities`` None means they are not known (a proxy that did not see the
      handshake), and only the revision is checked; pass ``{}`` for a client that declared none.
    - Each offered tool is checked as a ``tools/list`` entry would be (name, ``inputSchema``
      compiles and is object-rooted, no duplicate names): see :mod:`strictmcp.protocol.tools`.
    - ``toolChoice: {mode: "required"}`` ("the model MUST use at least one tool") needs at
      least one tool offered: :attr:`Rule.SAMPLING_TOOL_CHOICE_WITHOUT_TOOLS` otherwise.
    - ``includeContext`` ``"thisServer"`` or ``"allServers"`` (soft-deprecated from
      2025-11-25) needs a client that declared ``sampling.context``: "servers SHOULD only use
      these values if the client declares" it, so a warning
      (:attr:`Rule.SAMPLING_CONTEXT_NOT_DECLARED`). Before 2025-11-25 there is no such
      capability and any value goes.
    - A message with tool results holds only tool results
      (:attr:`Rule.SAMPLING_TOOL_RESULT_MIXED`).
    - Every ``tool_use`` is answered by exactly one ``tool_result`` with its id in the next
      message, which is a user message (:attr:`Rule.SAMPLING_TOOL_USE_UNANSWERED`); a tool
      use in the last message is unanswered too, since the model would be sampled past it.
      A ``tool_result`` outside a user message, answering no ``tool_use`` of the previous
      message, or answering one already answered is :attr:`Rule.SAMPLING_TOOL_RESULT_UNMATCHED`.

    Revisions before 2025-11-25 have no tool content blocks; the method schema refuses them.
    """
    found = _check_tool_fields(params, revision, client_capabilities, at)
    if not revision.has_sampling_tools:
        return found
    found += _check_context(params, client_capabilities, at)
    tools = params.get("tools")
    if _requires_tool_use(params) and not (isinstance(tools, list) and tools):
        found.append(
            Violation(
                Rule.SAMPLING_TOOL_CHOICE_WITHOUT_TOOLS,
                'toolChoice mode "required" makes the model use a tool, but no tool is offered',
                f"{at}/toolChoice/mode",
            )
        )
    if isinstance(tools, list):
        # check_tools points into a tools/list result (`/tools/<i>`); params hold `tools` too.
        # A tool that is not an object is the method schema's to report, as invalid params
        # rather than check_tools' invalid result.
        found += [
            replace(violation, pointer=at + violation.pointer)
            for checked in check_tools(tools, revision)
            for violation in checked.violations
            if violation.rule is not Rule.INVALID_RESULT
        ]
    messages = params.get("messages")
    if isinstance(messages, list):
        found += _check_tool_turns(messages, f"{at}/messages")
    return found


def _check_tool_fields(
    params: Mapping[str, Any],
    revision: Revision,
    client_capabilities: Mapping[str, Any] | None,
    at: str,
) -> list[Violation]:
    present = [key for key in ("tools", "toolChoice") if key in params]
    if not present:
        return []
    if not revision.has_sampling_tools:
        reason = (
            f"is not part of {revision.value}: tool use in sampling arrived in 2025-11-25 "
            "(SEP-1577)"
        )
    elif client_capabilities is None or _declares(client_capabilities, "tools"):
        return []
    else:
        reason = "needs the client's sampling.tools capability, which it did not declare"
    return [
        Violation(Rule.SAMPLING_TOOLS_NOT_DECLARED, f"{key} {reason}", f"{at}/{key}")
        for key in present
    ]


def _check_context(
    params: Mapping[str, Any], client_capabilities: Mapping[str, Any] | None, at: str
) -> list[Violation]:
    included = params.get("includeContext")
    if included not in ("thisServer", "allServers") or client_capabilities is None:
        return []
    if _declares(client_capabilities, "context"):
        return []
    message = (
        f'includeContext "{included}" needs the client\'s sampling.context capability, which '
        'it did not declare: use "none" or leave it out'
    )
    return [
        Violation(
            Rule.SAMPLING_CONTEXT_NOT_DECLARED, message, f"{at}/includeContext", Severity.WARNING
        )
    ]


def _check_tool_turns(messages: list[Any], at: str) -> list[Violation]:
    turns: list[_Turn] = [
        (message.get("role"), _blocks(message.get("content"), f"{at}/{index}/content"))
        if isinstance(message, Mapping)
        else (None, [])
        for index, message in enumerate(messages)
    ]
    found: list[Violation] = []
    for index, (role, blocks) in enumerate(turns):
        results = _of_type(blocks, "tool_result")
        if results:
            found.extend(
                Violation(
                    Rule.SAMPLING_TOOL_RESULT_MIXED,
                    "a message with tool results must hold only tool results",
                    pointer,
                )
                for pointer, block in blocks
                if block.get("type") != "tool_result"
            )
            found += _check_results(role, results, turns[index - 1][1] if index else [])
        uses = _of_type(blocks, "tool_use")
        if uses:
            following = turns[index + 1] if index + 1 < len(turns) else None
            found += _check_answers(uses, following)
    return found


def _check_results(role: Any, results: list[_Block], previous: list[_Block]) -> list[Violation]:
    asked = _ids(previous, "tool_use", "id")
    answered: set[str] = set()
    found: list[Violation] = []
    for pointer, block in results:
        use_id = _string(block, "toolUseId")
        if role != "user":
            reason = "tool results belong in a user message"
        elif use_id not in asked:
            reason = "tool result answers no tool use of the previous message"
        elif use_id in answered:
            reason = "tool result answers a tool use that this message already answered"
        else:
            answered.add(use_id)
            continue
        found.append(Violation(Rule.SAMPLING_TOOL_RESULT_UNMATCHED, reason, pointer))
    return found


def _check_answers(uses: list[_Block], following: _Turn | None) -> list[Violation]:
    given: set[str] = set()
    if following is None:
        every = "tool use is never answered: the conversation ends before its tool result"
    elif following[0] != "user":
        every = "tool use must be followed by a user message of tool results"
    else:
        every = ""
        given = _ids(following[1], "tool_result", "toolUseId")
    return [
        Violation(
            Rule.SAMPLING_TOOL_USE_UNANSWERED,
            every or "tool use has no tool result with its id in the next message",
            pointer,
        )
        for pointer, block in uses
        if every or _string(block, "id") not in given
    ]


def check_create_message_result(
    result: Mapping[str, Any],
    request_params: Mapping[str, Any],
    revision: Revision,
    *,
    at: str = "/result",
) -> list[Violation]:
    """Check a ``CreateMessageResult`` against the request it answers (2025-11-25+).

    - A ``tool_use`` block needs the request to have offered tools, not to have forbidden
      them (``toolChoice: {mode: "none"}``: "the model MUST NOT use any tools"), and to have
      offered one of that name: :attr:`Rule.SAMPLING_TOOL_USE_NOT_OFFERED`. Its ``input``
      must validate against that tool's ``inputSchema``, the parameters the tool expects
      (:attr:`Rule.TOOL_ARGUMENTS_INVALID`, with the engine's value-free issues).
    - A request with ``toolChoice: {mode: "required"}`` ("the model MUST use at least one
      tool before completing") needs a ``tool_use`` block in the result, unless the model
      was cut short (``stopReason`` ``"maxTokens"``): :attr:`Rule.SAMPLING_TOOL_USE_REQUIRED`.
    - ``stopReason`` ``"toolUse"`` means "the model wants to use one or more tools", so
      ``"toolUse"`` without a ``tool_use`` block, or ``tool_use`` blocks with ``"endTurn"``,
      is a warning (:attr:`Rule.SAMPLING_STOP_REASON_INCONSISTENT`). ``stopReason`` is an
      open string; other values (``"maxTokens"`` may cut a turn short) say nothing here.

    Revisions before 2025-11-25 have no tool use in sampling: nothing to check here.
    """
    if not revision.has_sampling_tools:
        return []
    uses = _of_type(_blocks(result.get("content"), f"{at}/content"), "tool_use")
    found = _check_offered(uses, request_params, revision)
    stop = result.get("stopReason")
    if _requires_tool_use(request_params) and not uses and stop != "maxTokens":
        found.append(
            Violation(
                Rule.SAMPLING_TOOL_USE_REQUIRED,
                'the request\'s toolChoice required tool use (mode "required"), but the '
                "content holds no tool use",
                f"{at}/content",
            )
        )
    if stop == "toolUse" and not uses:
        inconsistency = 'stopReason is "toolUse" but the content holds no tool use'
    elif stop == "endTurn" and uses:
        inconsistency = 'the content holds tool uses but stopReason is "endTurn", not "toolUse"'
    else:
        return found
    found.append(
        Violation(
            Rule.SAMPLING_STOP_REASON_INCONSISTENT,
            inconsistency,
            f"{at}/stopReason",
            Severity.WARNING,
        )
    )
    return found


def _check_offered(
    uses: list[_Block], request_params: Mapping[str, Any], revision: Revision
) -> list[Violation]:
    if not uses:
        return []
    tools = request_params.get("tools")
    offered = (
        {checked.name: checked for checked in check_tools(tools, revision)}
        if isinstance(tools, list)
        else {}
    )
    choice = request_params.get("toolChoice")
    forbidden = isinstance(choice, Mapping) and choice.get("mode") == "none"
    found: list[Violation] = []
    for pointer, block in uses:
        name = _string(block, "name")
        tool = offered.get(name) if name is not None else None
        if not tools:
            reason = "the request offered no tools"
        elif forbidden:
            reason = 'the request\'s toolChoice forbade tool use (mode "none")'
        elif tool is None:
            reason = "it names a tool the request did not offer"
        else:
            if tool.input_validator is not None:
                checked = tool.input_validator.validate(block.get("input"))
                if not checked.valid:
                    found.append(
                        Violation(
                            Rule.TOOL_ARGUMENTS_INVALID,
                            f"tool use input does not match the inputSchema of tool "
                            f"{quote_name(name)}",
                            f"{pointer}/input",
                            issues=checked.issues,
                        )
                    )
            continue
        found.append(
            Violation(
                Rule.SAMPLING_TOOL_USE_NOT_OFFERED, f"tool use not allowed: {reason}", pointer
            )
        )
    return found
