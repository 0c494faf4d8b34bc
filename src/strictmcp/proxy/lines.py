"""Newline-delimited messages read with a bound, so that one huge line cannot exhaust memory."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final, Literal

OVERSIZED: Final = "oversized"
"""What :class:`LineSplitter` yields for a line longer than its limit (discarded)."""

Line = bytes | Literal["oversized"] | None


class LineSplitter:
    """Bytes as they arrive, cut into lines, never holding more than the limit of one line.

    A line whose content (before its newline) is longer than ``limit`` is :data:`OVERSIZED`
    and skipped up to and including its newline, as is unterminated data over ``limit``; at
    the end a last line without a newline is returned as it is. Lines are handed to
    ``deliver`` in order; ``None`` is delivered once, at the end.
    """

    def __init__(self, limit: int, deliver: Callable[[Line], None]) -> None:
        self._limit = limit
        self._deliver = deliver
        self._rest = bytearray()
        self._skipping = False
        self._ended = False

    def feed(self, data: bytes) -> None:
        if self._ended:
            return
        limit = self._limit
        deliver = self._deliver
        start = 0
        if self._skipping or self._rest:
            cut = data.find(b"\n")
            if cut < 0:
                if not self._skipping:
                    self._rest += data
                    if len(self._rest) > limit:
                        self._rest.clear()
                        self._skipping = True
                        deliver(OVERSIZED)
                return
            if self._skipping:
                self._skipping = False
            elif len(self._rest) + cut > limit:
                self._rest.clear()
                deliver(OVERSIZED)
            else:
                self._rest += data[: cut + 1]
                line = bytes(self._rest)
                self._rest.clear()
                deliver(line)
            start = cut + 1
        while (cut := data.find(b"\n", start)) >= 0:
            deliver(OVERSIZED if cut - start > limit else data[start : cut + 1])
            start = cut + 1
        if start < len(data):
            if len(data) - start > limit:
                self._skipping = True
                deliver(OVERSIZED)
            else:
                self._rest += data[start:]

    def end(self) -> None:
        if self._ended:
            return
        self._ended = True
        if self._rest and not self._skipping:
            line = bytes(self._rest)
            self._rest.clear()
            self._deliver(line)
        self._deliver(None)


def line_of(obj: Any) -> bytes:
    """``obj`` as one compact JSON line, in UTF-8 where it can be."""
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    except UnicodeEncodeError:
        # A lone surrogate (JSON text can carry one, escaped) has no UTF-8 form: escape it again.
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


_BOM = b"\xef\xbb\xbf"


def framed(line: bytes) -> bool:
    """Whether ``line`` can be sent on as it is: one message, one line ending, nothing a
    reader could split or read otherwise (a CR, which some readers end lines at, or a BOM,
    which the proxy's reader skips and another may not). Anything else is written anew
    from what was read, never edited."""
    end = len(line) - 1
    return end >= 0 and line.find(b"\n") == end and b"\r" not in line and not line.startswith(_BOM)
