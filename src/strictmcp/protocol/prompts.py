"""Prompt arguments (``prompts/get``) against the prompt's declaration in ``prompts/list``.

Every revision declares arguments the same way (``PromptArgument``: ``name``, optional
``required``) and passes them the same way (``GetPromptRequest.params.arguments``: an object
of strings), so these checks take no revision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..schema import quote_name, to_pointer
from .jsonrpc import INVALID_PARAMS
from .rules import Rule
from .tools import json_type
from .violations import Severity, Violation

_ARGUMENTS = "/params/arguments"


def check_prompt_arguments(
    prompt: Mapping[str, Any], arguments: Mapping[str, Any] | None
) -> list[Violation]:
    """Check a ``prompts/get`` request's ``arguments`` against ``prompt``, a ``Prompt``.

    A required argument that is absent is :attr:`Rule.PROMPT_ARGUMENT_MISSING`; a value that
    is not a string is :attr:`Rule.PROMPT_ARGUMENT_NOT_STRING`; an argument the prompt does
    not declare is :attr:`Rule.PROMPT_ARGUMENT_UNKNOWN`, a warning (the server may still
    accept it). ``arguments`` None means the request had none. Messages name arguments,
    escaped and shortened, and never quote their values.
    """
    declared: dict[str, bool] = {}
    listed = prompt.get("arguments")
    if isinstance(listed, list):
        for argument in listed:
            if isinstance(argument, Mapping) and isinstance(argument.get("name"), str):
                declared[argument["name"]] = argument.get("required") is True
    given = arguments or {}
    found = [
        Violation(
            Rule.PROMPT_ARGUMENT_MISSING,
            f"required argument {quote_name(name)} is missing",
            _ARGUMENTS if arguments is not None else "/params",
        )
        for name, required in declared.items()
        if required and name not in given
    ]
    for name, value in given.items():
        pointer = _ARGUMENTS + to_pointer([name])
        if name not in declared:
            found.append(
                Violation(
                    Rule.PROMPT_ARGUMENT_UNKNOWN,
                    f"argument {quote_name(name)} is not declared by the prompt",
                    pointer,
                    Severity.WARNING,
                )
            )
        if not isinstance(value, str):
            found.append(
                Violation(
                    Rule.PROMPT_ARGUMENT_NOT_STRING,
                    f"argument {quote_name(name)} must be a string, not {json_type(value)}",
                    pointer,
                )
            )
    return found


def withheld_prompt_error(name: str, found: Sequence[Violation]) -> dict[str, Any]:
    """The JSON-RPC ``error`` for a ``prompts/get`` of a prompt withheld from the listing
    (``found`` says why: it changed since it was pinned, or was never pinned), naming codes
    and never quoting the definition. A protocol error: a prompt has no ``isError`` result."""
    reasons = "; ".join(f"{v.message} [{v.code}]" for v in found)
    return {
        "code": INVALID_PARAMS,
        "message": f"Prompt {quote_name(name)} was withheld by strictmcp: {reasons}",
        "data": {"codes": list(dict.fromkeys(str(v.code) for v in found))},
    }
