"""Deep checks of schedules: a cron expression that parses and does not fire too often, and a
point in time in the future, within a window.

Both only compute: no clock is set, nothing is scheduled. Times are UTC.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from itertools import pairwise
from typing import Any, ClassVar

from ..protocol import Severity
from .base import GuardFinding, not_a_string
from .codes import GuardCode

__all__ = ["CronCheck", "TimeCheck"]

# How many runs are looked at for the shortest gap: enough for any expression's pattern
# within a day at minute resolution to show its shortest gap, and cheap.
_GAPS_SAMPLED = 200


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class CronCheck:
    """A cron expression (croniter's syntax: five fields, or six with seconds last).

    ``DEEP_CRON_INVALID`` when it does not parse; ``DEEP_CRON_TOO_FREQUENT`` (warning) when
    two of its next runs are closer than ``min_interval_seconds``; ``DEEP_CRON_NEXT_RUNS``
    (warning) lists the next ``next_runs`` run times (0: not listed), so a caller sees what
    it is about to schedule. ``clock`` gives "now" (Python only, for tests).
    """

    kind: ClassVar[str] = "cron"

    min_interval_seconds: int | None = None
    next_runs: int = 3
    clock: Callable[[], datetime] = field(default=_utc_now, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.min_interval_seconds is not None and self.min_interval_seconds < 1:
            raise ValueError("min_interval_seconds must be positive")
        if not 0 <= self.next_runs <= 20:
            raise ValueError("next_runs must be between 0 and 20")

    def check(self, value: Any) -> list[GuardFinding]:
        """Every finding about the cron expression ``value``."""
        if not isinstance(value, str):
            return not_a_string(value, self.kind)
        # Imported at the first check, not with the policy: the proxy's first answer waits for
        # every module the policy imports.
        from croniter import CroniterError, croniter  # noqa: PLC0415

        now = self.clock()
        try:
            runs = croniter(value, now)
            wanted = max(self.next_runs, _GAPS_SAMPLED if self.min_interval_seconds else 0)
            times = [runs.get_next(datetime) for _ in range(wanted)]
        except (CroniterError, ValueError, KeyError, OverflowError):
            return [GuardFinding(GuardCode.DEEP_CRON_INVALID, "the cron expression is not valid")]
        findings: list[GuardFinding] = []
        if self.min_interval_seconds is not None:
            gap = min(
                (later - earlier for earlier, later in pairwise(times)),
                default=timedelta.max,
            )
            if gap < timedelta(seconds=self.min_interval_seconds):
                findings.append(
                    GuardFinding(
                        GuardCode.DEEP_CRON_TOO_FREQUENT,
                        f"the schedule runs every {int(gap.total_seconds())} s at times, more"
                        f" often than once in {self.min_interval_seconds} s",
                        Severity.WARNING,
                    )
                )
        if self.next_runs:
            shown = ", ".join(t.isoformat() for t in times[: self.next_runs])
            findings.append(
                GuardFinding(GuardCode.DEEP_CRON_NEXT_RUNS, f"next runs: {shown}", Severity.WARNING)
            )
        return findings


@dataclass(frozen=True)
class TimeCheck:
    """An ISO 8601 date-time with a time zone (``Z`` or an offset), in the future: at least
    ``min_ahead_seconds`` from now (``DEEP_TIME_NOT_FUTURE``) and at most
    ``max_ahead_seconds`` (``DEEP_TIME_TOO_FAR``); ``DEEP_TIME_INVALID`` when it is not one.
    """

    kind: ClassVar[str] = "time"

    min_ahead_seconds: int = 0
    max_ahead_seconds: int | None = None
    clock: Callable[[], datetime] = field(default=_utc_now, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.min_ahead_seconds < 0:
            raise ValueError("min_ahead_seconds must not be negative")
        if self.max_ahead_seconds is not None and self.max_ahead_seconds < self.min_ahead_seconds:
            raise ValueError("max_ahead_seconds must not be less than min_ahead_seconds")

    def check(self, value: Any) -> list[GuardFinding]:
        """Every finding about the date-time ``value``."""
        if not isinstance(value, str):
            return not_a_string(value, self.kind)
        try:
            # fromisoformat reads "Z" only from Python 3.11 on.
            when = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
        except ValueError:
            when = None
        if when is None or when.tzinfo is None:
            return [
                GuardFinding(
                    GuardCode.DEEP_TIME_INVALID,
                    "the value is not an ISO 8601 date-time with a time zone",
                )
            ]
        ahead = (when - self.clock()).total_seconds()
        if ahead < self.min_ahead_seconds:
            least = f"at least {self.min_ahead_seconds} s " if self.min_ahead_seconds else ""
            message = f"the time is not {least}in the future"
            return [GuardFinding(GuardCode.DEEP_TIME_NOT_FUTURE, message)]
        if self.max_ahead_seconds is not None and ahead > self.max_ahead_seconds:
            return [
                GuardFinding(
                    GuardCode.DEEP_TIME_TOO_FAR,
                    f"the time is more than {self.max_ahead_seconds} s in the future",
                )
            ]
        return []
