"""Newline-delimited messages read with a bound, so that one huge line cannot exhaust memory."""

from __future__ import annotations

import asyncio
from typing import Final, Literal

OVERSIZED: Final = "oversized"
"""What :func:`read_line` returns for a line longer than the reader's limit (discarded)."""

Line = bytes | Literal["oversized"] | None


async def read_line(reader: asyncio.StreamReader) -> Line:
    """The next line, newline included; :data:`OVERSIZED` when it was over the reader's
    ``limit`` (it is skipped up to and including its newline); None at the end of the stream.

    A last line without a newline is returned as it is.
    """
    try:
        return await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as end:
        return end.partial or None
    except asyncio.LimitOverrunError as overrun:
        await _discard(reader, overrun.consumed)
        return OVERSIZED


async def _discard(reader: asyncio.StreamReader, consumed: int) -> None:
    """Drop the rest of an oversized line, never holding more than the limit of it."""
    while True:
        try:
            await reader.readexactly(consumed)
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as overrun:
            consumed = overrun.consumed
        except asyncio.IncompleteReadError:
            return
