"""How one answer of the server is judged against what the case expected. No I/O here."""

from __future__ import annotations

import json
import re
from typing import Any

from ..connect.client import Outcome, RpcError, TransportFailure
from ..guards import GuardCode
from ..policy.rules import pattern_matches
from ..protocol import Severity, Violation
from ..protocol.tool_calls import VALIDATION_META_KEY
from ..schema import IssueCode
from .cases import Expect, Fault
from .redact import redact_text
from .results import Status, worst

INVALID_PARAMS = -32602
_CODE = re.compile(r"\[([a-z0-9-]+)\]$")
# A line of strictmcp's validate answers: "POINTER: MESSAGE [CODE]".
_LINE = re.compile(r"(?P<pointer>\S*): .* \[(?P<code>[a-z0-9-]+)\]")
_CHECK_CODES = frozenset(code.value for code in GuardCode)
_ISSUE_CODES = frozenset(code.value for code in IssueCode)
REFUSED_BY_CHECKS = "validate refuses it by its guards or deep checks"
_STDERR_SHOWN = 5
_ERROR_TEXT = 200


def judge_call(
    expect: Expect, outcome: Outcome, output: list[Violation]
) -> tuple[Status, list[str]]:
    """A real ``tools/call``: invalid input refused, valid input handled, nothing crashing.

    ``output`` holds the result's problems against the tool's ``outputSchema``.
    """
    if isinstance(outcome, TransportFailure):
        return "fail", [crash_message(outcome)]
    if isinstance(outcome, RpcError):
        if expect == "valid":
            return "warn", [f"a valid input was refused with JSON-RPC error {_error(outcome)}"]
        if outcome.code == INVALID_PARAMS:
            return "pass", []
        return "warn", [
            f"refused with JSON-RPC error {_error(outcome)}; expected an isError result or "
            f"{INVALID_PARAMS}"
        ]
    if outcome.result.get("isError") is True:
        if expect == "valid":
            return "warn", ["the tool reported an error (isError) for a valid input"]
        return "pass", []
    if expect == "invalid":
        return "fail", ["accepted invalid input: the call succeeded"]
    messages = [_output_message(v) for v in output if v.severity is Severity.ERROR]
    if messages:
        return "fail", messages
    if expect == "suspicious":
        return "warn", ["accepted a suspicious input the schema allows: is there a guard?"]
    return "pass", []


def judge_validate(
    expect: Expect,
    outcome: Outcome,
    *,
    arguments_object: bool = True,
    schema_guarded: tuple[str, ...] = (),
) -> tuple[Status, list[str]]:
    """The server's Validation Protocol ``validate`` tool, asked about one case.

    When the case's arguments are not an object, the request breaks validate's own input
    schema (``arguments: object``), so an ``isError`` answer is the refusal expected.
    ``schema_guarded``: the argument pointers (``/paths/*``) the policy's schema guards
    check on this tool, whose findings carry the schema engine's codes.
    """
    if isinstance(outcome, TransportFailure):
        return "fail", [f"validate: {crash_message(outcome)}"]
    if isinstance(outcome, RpcError):
        return "fail", [f"validate answered with JSON-RPC error {_error(outcome)}"]
    if not arguments_object and outcome.result.get("isError") is True:
        return "pass", []
    verdict = validate_verdict(outcome.result)
    if verdict is None:
        return "fail", ["validate answered without a {valid, errors, warnings} verdict"]
    if expect == "valid" and not verdict:
        checks = _check_codes(outcome.result, schema_guarded)
        if checks:
            # The schema allows it and the policy's guards or deep checks refuse it before
            # it reaches the server: what they are for, a pass, said in the report.
            return "pass", [f"{REFUSED_BY_CHECKS} ({checks})"]
        return "fail", ["validate says invalid for an input the schema accepts"]
    if expect == "invalid" and verdict:
        return "fail", ["validate says valid for an input the schema refuses"]
    if expect == "suspicious" and verdict:
        return "warn", ["validate accepts a suspicious input the schema allows"]
    return "pass", []


Judged = tuple[Status, list[str], tuple[str, ...]]
"""A planted fault's verdict: status, messages, and the codes that caught it."""


def judge_fault_validate(fault: Fault, pointer: str, outcome: Outcome) -> Judged:
    """The validate tool, asked about a planted fault at ``pointer``: found when its answer
    has the fault's code at that pointer (an error, or the warning a warning-level check
    gives); the codes that caught it are the errors at that pointer, and that code."""
    if isinstance(outcome, TransportFailure):
        return "fail", [f"validate: {crash_message(outcome)}"], ()
    if isinstance(outcome, RpcError):
        return "fail", [f"validate answered with JSON-RPC error {_error(outcome)}"], ()
    verdict = validate_verdict(outcome.result)
    if verdict is None:
        return "fail", ["validate answered without a {valid, errors, warnings} verdict"], ()
    structured = outcome.result.get("structuredContent")
    answer = structured if isinstance(structured, dict) else {}
    errors = _located(answer.get("errors"))
    warned = [code for where, code in _located(answer.get("warnings")) if where == pointer]
    if fault.code in warned:
        errors.append((pointer, fault.code))
    return _fault_verdict(fault, pointer, not verdict, errors, real_call=False)


def judge_fault_call(fault: Fault, pointer: str, outcome: Outcome) -> Judged:
    """A real call with a planted fault: it must be refused (``isError`` or -32602), and by
    the fault's check when the refusal names codes (strictmcp's ``_meta`` problems)."""
    if isinstance(outcome, TransportFailure):
        return "fail", [crash_message(outcome)], ()
    if isinstance(outcome, RpcError):
        return _fault_verdict(fault, pointer, True, [], real_call=True)
    meta = outcome.result.get("_meta")
    payload = meta.get(VALIDATION_META_KEY) if isinstance(meta, dict) else None
    problems = payload.get("problems") if isinstance(payload, dict) else None
    found = [
        (str(entry.get("pointer")), entry["code"])
        for entry in (problems if isinstance(problems, list) else [])
        if isinstance(entry, dict) and isinstance(entry.get("code"), str)
    ]
    refused = outcome.result.get("isError") is True
    return _fault_verdict(fault, pointer, refused, found, real_call=True)


def _fault_verdict(
    fault: Fault, pointer: str, refused: bool, found: list[tuple[str, str]], *, real_call: bool
) -> Judged:
    """``found``: the (pointer, code) pairs the answer (of validate, or of the real call)
    names."""
    by = "the call" if real_call else "validate"
    caught = tuple(dict.fromkeys(code for where, code in found if where == pointer))
    if fault.code in caught:
        return "pass", [], caught
    if refused and caught:
        refusers = ", ".join(caught)
        return "warn", [f"{by} refuses {fault.label}, by {refusers}, not {fault.code}"], caught
    if refused and found:
        # The other arguments of the generated input were refused: this one went unjudged.
        others = ", ".join(dict.fromkeys(code for _, code in found))
        return "warn", [f"{by} refuses the input for other arguments ({others})"], caught
    if refused:
        return "pass", [], caught  # a server that names no codes
    if fault.warning and real_call:
        # A check that only warns lets the call go ahead: validate is where it shows.
        return "warn", [f"{by} accepts {fault.label} ({fault.code} only warns)"], caught
    return "fail", [f"{by} accepts {fault.label}: {fault.code} expected"], caught


def _located(lines: Any) -> list[tuple[str, str]]:
    """The (pointer, code) of each line of a validate answer's errors or warnings."""
    given = lines if isinstance(lines, list) else []
    matches = [_LINE.fullmatch(line) for line in given if isinstance(line, str)]
    return [(m["pointer"], m["code"]) for m in matches if m is not None]


def combine(*verdicts: tuple[Status, list[str]]) -> tuple[Status, list[str]]:
    """Several judgements of one case as one."""
    status = worst([status for status, _ in verdicts])
    return status, [message for _, messages in verdicts for message in messages]


def _check_codes(result: dict[str, Any], schema_guarded: tuple[str, ...]) -> str:
    """The guard and deep-check codes of a validate answer's errors, comma-separated, when
    every error carries one (strictmcp's own answers end each error with ``[code]``); else
    empty. A schema engine's code counts only at a pointer a schema guard checks: elsewhere
    it is the ``inputSchema``'s own verdict."""
    structured = result.get("structuredContent")
    found = structured.get("errors") if isinstance(structured, dict) else None
    if not isinstance(found, list) or not found:
        return ""
    named = [_check_code(line, schema_guarded) if isinstance(line, str) else None for line in found]
    if None in named:
        return ""
    return ", ".join(dict.fromkeys(code for code in named if code is not None))


def _check_code(line: str, schema_guarded: tuple[str, ...]) -> str | None:
    """The code of one error line when a guard or deep check gave it, else None."""
    match = _CODE.search(line)
    code = match.group(1) if match is not None else None
    if code in _CHECK_CODES:
        return code
    located = _LINE.fullmatch(line)
    if code not in _ISSUE_CODES or located is None:
        return None
    pointer = located["pointer"]
    return code if any(pattern_matches(p, pointer) for p in schema_guarded) else None


def validate_verdict(result: dict[str, Any]) -> bool | None:
    """``valid`` from a validate tool's result: structuredContent, else its JSON text."""
    if result.get("isError") is True:
        return None
    structured = result.get("structuredContent")
    if isinstance(structured, dict) and isinstance(structured.get("valid"), bool):
        return bool(structured["valid"])
    content = result.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            try:
                data = json.loads(block["text"])
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("valid"), bool):
                return bool(data["valid"])
    return None


def crash_message(failure: TransportFailure) -> str:
    """``crashed`` or ``timed out``, with the server's last stderr lines, secrets masked."""
    what = "timed out" if failure.reason == "timeout" else "crashed"
    text = f"{what}: {failure.message}"
    tail = [redact_text(line) for line in failure.stderr[-_STDERR_SHOWN:] if line.strip()]
    if tail:
        text += "; last stderr lines: " + " | ".join(tail)
    return text


def _error(error: RpcError) -> str:
    message = redact_text(" ".join(error.message.split())[:_ERROR_TEXT])
    return f"{error.code} ({message})" if message else str(error.code)


def _output_message(violation: Violation) -> str:
    details = "; ".join(str(issue) for issue in violation.issues[:3])
    return f"{violation.message} [{violation.code}]" + (f": {details}" if details else "")
