"""Checking a capture of MCP traffic: JSON Lines, one message per line, in the order seen.

A line is either a JSON-RPC message (or batch) as it went over the wire, or
``{"direction": "c2s" | "s2c", "message": {...}}`` when the capture says who sent it. Without
a direction, requests and notifications are attributed by method (who sends it in MCP) and
responses by the request they answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..schema.jsonio import JSONInputError, load_json
from .conversation import Conversation, Direction
from .jsonrpc import DEFAULT_MAX_SIZE, Message, check_envelope, decode, unpaired_surrogates
from .methods import sender_of
from .revisions import Revision
from .rules import Rule
from .tasks import task_id_of
from .violations import Severity, Violation

_DIRECTIONS: tuple[Direction, ...] = ("c2s", "s2c")


class CaptureFormatError(ValueError):
    """A line that is not in the capture format at all (as opposed to bad traffic)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(frozen=True)
class CaptureFinding:
    """One violation in a capture, with where it was seen."""

    line: int
    direction: Direction | None
    method: str | None
    violation: Violation

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "line": self.line,
            "direction": self.direction,
            "method": self.method,
            **self.violation.to_dict(),
        }


@dataclass(frozen=True)
class CaptureReport:
    """Everything found in one capture."""

    findings: tuple[CaptureFinding, ...]
    messages: int
    revision: Revision | None

    @property
    def clean(self) -> bool:
        """Whether no finding is an error (warnings do not count)."""
        return all(f.violation.severity is not Severity.ERROR for f in self.findings)


def validate_capture(
    lines: Iterable[bytes],
    *,
    revision: Revision | None = None,
    strict: bool = False,
    max_size: int = DEFAULT_MAX_SIZE,
) -> CaptureReport:
    """Check every message of a capture in order, as one session.

    Raises :class:`CaptureFormatError` for a line whose wrapper is malformed (an unknown
    direction, no message); a line that is not JSON is bad traffic, reported as a finding.
    """
    conversation = Conversation(revision, strict=strict)
    findings: list[CaptureFinding] = []
    guessed: set[str] = set()
    count = 0
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        said, messages, violations, size = _read(text, number, conversation, max_size)
        findings += [CaptureFinding(number, said, None, v) for v in violations]
        for message in messages:
            count += 1
            direction = said or _attribute(message, conversation, guessed, findings, number)
            label = _label(message, conversation, direction)
            for violation in conversation.observe(message, direction, size=size):
                findings.append(CaptureFinding(number, direction, label, violation))
    return CaptureReport(tuple(findings), count, conversation.revision)


def _read(
    text: bytes, number: int, conversation: Conversation, max_size: int
) -> tuple[Direction | None, tuple[Message, ...], tuple[Violation, ...], int]:
    """The direction the line states, its valid messages, envelope violations and size."""
    wrapper = _wrapper(text, number, max_size)
    if wrapper is None:
        decoded = decode(text, conversation.revision, max_size=max_size)
        return None, decoded.messages, decoded.violations, decoded.size
    direction = wrapper["direction"]
    if direction not in _DIRECTIONS:
        raise CaptureFormatError(number, '"direction" must be "c2s" or "s2c"')
    message, violations = check_envelope(wrapper["message"], conversation.revision, "")
    violations += unpaired_surrogates(wrapper["message"])
    return direction, (message,) if message is not None else (), tuple(violations), len(text)


def _wrapper(text: bytes, number: int, max_size: int) -> dict[str, Any] | None:
    """The ``{"direction", "message"}`` object a line is, or None for a bare message.

    An object with ``direction`` and no ``jsonrpc`` member is meant as a wrapper: without a
    ``message`` it is a malformed capture line, not a malformed message.
    """
    if not text.startswith(b"{") or b'"direction"' not in text:
        return None  # the common case, decided without parsing twice
    try:
        value = load_json(text, max_size=max_size)
    except JSONInputError:
        return None
    if not isinstance(value, dict) or "direction" not in value or "jsonrpc" in value:
        return None
    if "message" not in value:
        raise CaptureFormatError(number, 'a line with "direction" needs a "message"')
    return value


def _attribute(
    message: Message,
    conversation: Conversation,
    guessed: set[str],
    findings: list[CaptureFinding],
    number: int,
) -> Direction:
    """Who sent a message the capture does not attribute."""
    if message.kind in ("response", "error"):
        direction = conversation.response_direction(message)
        if direction is not None:
            return direction
        # Both sides have a request with this id in flight (ids are per sender): the one
        # whose result shape fits is the one answered.
        fits = [d for d in _DIRECTIONS if conversation.fits(message, d)]
        return fits[0] if len(fits) == 1 else "s2c"
    method = message.method or ""
    sender = sender_of(method, "request" if message.kind == "request" else "notification")
    if sender is not None:
        return "c2s" if sender == "client" else "s2c"
    # Either side may create tasks: a message about one comes from the side that asked for it
    # (a tasks/* request) or from the side that runs it (a status notification).
    task_id = task_id_of(message.params)
    created = [d for d in _DIRECTIONS if conversation.task(d, task_id) is not None]
    if len(created) == 1:
        if message.kind == "request":
            return created[0]
        return "s2c" if created[0] == "c2s" else "c2s"
    if method not in guessed:
        guessed.add(method)
        findings.append(
            CaptureFinding(
                number,
                "c2s",
                method,
                Violation(
                    Rule.CAPTURE_DIRECTION_UNKNOWN,
                    "this method can come from either side and the capture does not say which; "
                    'assumed client to server (record {"direction": ..., "message": ...} lines '
                    "to be sure)",
                    severity=Severity.WARNING,
                ),
            )
        )
    return "c2s"


def _label(message: Message, conversation: Conversation, direction: Direction) -> str | None:
    """The method a message is about: its own, or for a response its request's."""
    if message.method is not None:
        return message.method
    request = conversation.request_answered_by(message, direction)
    return f"{request.method} {message.kind}" if request is not None else None
