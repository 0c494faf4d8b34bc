"""What the proxy reports: one JSON Lines audit record per violation, and a line on stderr.

Records carry rule codes, severities and JSON Pointers, never a value from a message: the
audit log often ends up somewhere far less protected than the traffic it describes.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import IO, Any, Literal

from ..protocol import Severity, Violation
from ..schema import quote_name

Action = Literal["blocked", "allowed", "withheld", "replaced"]
"""What the proxy did about a message: refused it, let it through, removed a tool definition
from a listing, or replaced a tool result."""


class Auditor:
    """Writes audit records to ``log`` (when given) and summaries of what was stopped to stderr."""

    def __init__(self, log: IO[str] | None = None, *, stderr: IO[str] | None = None) -> None:
        self._log = log
        self._stderr = stderr if stderr is not None else sys.stderr

    def record(
        self,
        violations: Sequence[Violation],
        *,
        direction: str,
        method: str | None,
        action: Action,
        tool: str | None = None,
    ) -> None:
        """Log each violation; say on stderr what happened to a message that had errors."""
        if not violations:
            return
        if self._log is not None:
            now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
            for violation in violations:
                entry: dict[str, Any] = {
                    "time": now,
                    "direction": direction,
                    "method": method,
                    "tool": tool,
                    "code": violation.code,
                    "severity": violation.severity.value,
                    "pointer": violation.pointer,
                    "action": action,
                }
                if violation.issues:
                    entry["issues"] = [
                        {"code": i.code.value, "pointer": violation.pointer + i.instance_path}
                        for i in violation.issues
                    ]
                self._log.write(json.dumps(entry) + "\n")
            self._log.flush()
        found = [v for v in violations if v.severity is Severity.ERROR]
        if found:
            what = method or "message"
            if tool is not None:
                what += f" {quote_name(tool)}"
            self.say(f"{direction} {what} {action}: " + "; ".join(str(v) for v in found))

    def say(self, text: str) -> None:
        """One line for the operator on stderr."""
        print(f"strictmcp proxy: {text}", file=self._stderr, flush=True)
