"""The operator's lines on stderr, as text (the default) or as JSON (``--log-format json``).

Every line the proxy writes for its operator goes through :func:`say`, so that a log
collector reading JSON gets one object per line from every part of the proxy: ``{time,
level, event, message}``, with ``session``, ``server`` and ``code`` when the line has them.
Stderr is the process's, and so is the format: :func:`use_format` sets it once, at start-up.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from typing import IO, Literal

Level = Literal["info", "warning", "error"]
LogFormat = Literal["text", "json"]

_format: list[LogFormat] = ["text"]  # a list: set once by use_format, read by every say


def use_format(kind: LogFormat) -> None:
    """Write every later operator line as ``kind``."""
    _format[0] = kind


def line(
    command: str,
    text: str,
    *,
    level: Level = "info",
    event: str = "notice",
    code: str | None = None,
    session: str | None = None,
    server: str | None = None,
) -> str:
    """One operator line (without its newline): ``strictmcp <command>: <text> [<code>]``, or
    its JSON object."""
    if _format[0] == "text":
        return f"strictmcp {command}: {text}" + (f" [{code}]" if code is not None else "")
    record: dict[str, str] = {
        "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
        "level": level,
        "event": event,
        "command": command,
        "message": text,
    }
    for key, value in (("session", session), ("server", server), ("code", code)):
        if value is not None:
            record[key] = value
    return json.dumps(record)


def say(
    command: str,
    text: str,
    *,
    level: Level = "info",
    event: str = "notice",
    code: str | None = None,
    session: str | None = None,
    server: str | None = None,
    stream: IO[str] | None = None,
) -> None:
    """Write :func:`line` to ``stream`` (stderr by default)."""
    said = line(command, text, level=level, event=event, code=code, session=session, server=server)
    print(said, file=stream if stream is not None else sys.stderr, flush=True)
