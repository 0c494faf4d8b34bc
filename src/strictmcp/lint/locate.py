"""Where a JSON Pointer is written in a JSON text: line and column, for SARIF regions.

The text has already been read as JSON (by :func:`strictmcp.schema.jsonio.load_json`), so
this scanner assumes it is valid. A member is located at its key, an array item at its first
character. A pointer to something absent (an ``outputSchema`` a tool should have) is located
at the nearest enclosing value that is present.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass

_SPACE = re.compile(r"[ \t\n\r]*")
# Alternatives that start with different characters: matched in linear time.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")


class PointerIndex:
    """Every value's position in one JSON text, looked up by JSON Pointer."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._offsets = _scan(text)
        self._line_starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]

    def position(self, pointer: str) -> tuple[int, int] | None:
        """1-based (line, column) of ``pointer`` or of its nearest present ancestor.

        Columns count UTF-16 code units, SARIF's default ``columnKind``.
        """
        while pointer not in self._offsets:
            if not pointer:
                return None
            # Not rsplit: a pointer without a "/" ("abc") would be its own parent, forever.
            pointer = pointer.rpartition("/")[0]
        offset = self._offsets[pointer]
        line = bisect.bisect_right(self._line_starts, offset)
        start = self._line_starts[line - 1]
        column = len(self._text[start:offset].encode("utf-16-le")) // 2 + 1
        return line, column

    def line(self, pointer: str) -> int | None:
        """The 1-based line of ``pointer`` (see :meth:`position`)."""
        found = self.position(pointer)
        return found[0] if found is not None else None


def _escape(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


@dataclass
class _Frame:
    """An open container: its pointer, whether it is an object, its current item's index."""

    pointer: str
    is_object: bool
    index: int = 0


def _scan(text: str) -> dict[str, int]:
    """Offsets of every value (members: of their key). Iterative: no recursion limit."""
    offsets: dict[str, int] = {}
    pos = _skip(text, 1 if text.startswith("\ufeff") else 0)
    stack: list[_Frame] = []
    pointer = ""
    offsets[pointer] = pos
    while True:
        char = text[pos] if pos < len(text) else ""
        if char in ("{", "["):
            pos = _skip(text, pos + 1)
            if text[pos] not in "}]":
                stack.append(_Frame(pointer, char == "{"))
                if char == "{":
                    pointer, pos = _key(text, pos, pointer, offsets)
                else:
                    pointer = f"{pointer}/0"
                    offsets[pointer] = pos
                continue
            pos = _skip(text, pos + 1)
        else:
            found = (_STRING if char == '"' else _SCALAR).match(text, pos)
            if found is None:
                return offsets
            pos = _skip(text, found.end())
        # A value ended: move to the next sibling, closing containers as they end.
        while stack:
            frame = stack[-1]
            if pos < len(text) and text[pos] == ",":
                pos = _skip(text, pos + 1)
                if frame.is_object:
                    pointer, pos = _key(text, pos, frame.pointer, offsets)
                else:
                    frame.index += 1
                    pointer = f"{frame.pointer}/{frame.index}"
                    offsets[pointer] = pos
                break
            stack.pop()
            pos = _skip(text, pos + 1)
        else:
            return offsets


def _skip(text: str, pos: int) -> int:
    found = _SPACE.match(text, pos)
    return found.end() if found is not None else pos


def _key(text: str, pos: int, parent: str, offsets: dict[str, int]) -> tuple[str, int]:
    """Read a member's key at ``pos``; its pointer and where its value starts."""
    found = _STRING.match(text, pos)
    if found is None:
        return parent, len(text)
    key = json.loads(found.group())
    pointer = parent + _escape(key)
    offsets.setdefault(pointer, pos)
    colon = _skip(text, found.end())
    return pointer, _skip(text, colon + 1)
