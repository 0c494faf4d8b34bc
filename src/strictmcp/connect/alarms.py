"""Many deadlines on one event-loop timer.

Every HTTP request has deadlines that almost never ring: its body must come within a bound,
its answer gets a ping or a resumable stream when slow. A timer each costs more than the
work it guards on uvloop: every timer made and cancelled is a libuv handle opened, and
closed a turn of the loop later. :class:`Alarms` keeps deadlines of the same length in the
order they were set (hence by time) and has one timer wait for the earliest; a cancelled
deadline is forgotten at once, and a timer that rings with nothing due waits on for the
next. The relay's request timeouts are kept here too.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import weakref
from collections.abc import Callable

Alarm = tuple[float, int]
"""A deadline set, to cancel it by."""

# uvloop's clock has a millisecond's resolution: a timer may ring that much before the time
# it was set for, by the loop's clock.
_SLACK = 0.001


class Alarms:
    """Deadlines of one event loop: :meth:`set` calls a callback after some seconds unless
    :meth:`cancel` comes first. Make one per loop with :func:`alarms`."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        # By length: the deadlines set with it, in order, hence earliest first.
        self._queues: dict[float, dict[int, tuple[float, Callable[[], None]]]] = {}
        self._numbers = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    def __len__(self) -> int:
        return sum(len(queue) for queue in self._queues.values())

    def set(self, seconds: float, callback: Callable[[], None]) -> Alarm:
        """Call ``callback`` (soon) once ``seconds`` have passed, unless cancelled."""
        when = self._loop.time() + seconds
        number = next(self._numbers)
        self._queues.setdefault(seconds, {})[number] = (when, callback)
        if when < self._timer_at:
            self._wait_until(when)
        return seconds, number

    def cancel(self, alarm: Alarm) -> None:
        """Forget a deadline (one that rang already, or was cancelled, too)."""
        queue = self._queues.get(alarm[0])
        if queue is not None:
            queue.pop(alarm[1], None)

    def _wait_until(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(when, self._ring)
        self._timer_at = when

    def _ring(self) -> None:
        self._timer, self._timer_at = None, math.inf
        now = self._loop.time() + _SLACK
        earliest = math.inf
        due: list[tuple[float, int, Callable[[], None]]] = []
        for queue in self._queues.values():
            while queue:
                number, (when, callback) = next(iter(queue.items()))
                if when > now:
                    earliest = min(earliest, when)
                    break
                del queue[number]
                due.append((when, number, callback))
        # A loop held up past several deadlines (a loaded machine) rings them at one turn:
        # still earliest first, across lengths, not length by length.
        due.sort(key=_by_time)
        for _, _, callback in due:
            # Each on its own: one that raises does not keep the others from ringing.
            self._loop.call_soon(callback)
        if earliest < math.inf:
            self._wait_until(earliest)


def _by_time(due: tuple[float, int, Callable[[], None]]) -> tuple[float, int]:
    return due[0], due[1]


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Alarms] = weakref.WeakKeyDictionary()


def alarms() -> Alarms:
    """The running event loop's :class:`Alarms`."""
    loop = asyncio.get_running_loop()
    found = _BY_LOOP.get(loop)
    if found is None:
        found = _BY_LOOP[loop] = Alarms(loop)
    return found
