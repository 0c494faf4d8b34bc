"""Many deadlines on one timer (connect/alarms.py), and the HTTP answer's watch for its client
going away, which starts on one of them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from strictmcp.connect.alarms import alarms
from strictmcp.proxy import http_asgi
from strictmcp.proxy.http_asgi import Departure


def test_deadlines_ring_in_time_order_whatever_their_lengths() -> None:
    async def body() -> list[str]:
        rang: list[str] = []
        clock = alarms()
        clock.set(0.15, lambda: rang.append("long"))
        clock.set(0.05, lambda: rang.append("short"))
        clock.set(0.05, lambda: rang.append("short again"))
        clock.set(0.1, lambda: rang.append("middle"))
        await asyncio.sleep(0.3)
        assert len(clock) == 0
        return rang

    assert asyncio.run(body()) == ["short", "short again", "middle", "long"]


def test_deadlines_overdue_together_ring_in_time_order() -> None:
    async def body() -> list[str]:
        rang: list[str] = []
        clock = alarms()
        clock.set(0.15, lambda: rang.append("long"))
        clock.set(0.05, lambda: rang.append("short"))
        clock.set(0.1, lambda: rang.append("middle"))
        # The loop held up past every deadline, as a loaded machine may: they ring at its
        # next turn, together.
        time.sleep(0.3)
        while len(rang) < 3:
            await asyncio.sleep(0.01)
        return rang

    assert asyncio.run(asyncio.wait_for(body(), 30)) == ["short", "middle", "long"]


def test_a_cancelled_deadline_never_rings_and_the_others_still_do() -> None:
    async def body() -> list[int]:
        rang: list[int] = []
        clock = alarms()
        first = clock.set(0.05, lambda: rang.append(1))
        clock.set(0.05, lambda: rang.append(2))
        clock.cancel(first)
        clock.cancel(first)  # twice is nothing
        await asyncio.sleep(0.15)
        clock.cancel(first)  # after the rest rang, nothing either
        return rang

    assert asyncio.run(body()) == [2]


def test_a_callback_that_raises_keeps_no_other_from_ringing() -> None:
    async def body() -> tuple[list[int], list[Any]]:
        rang: list[int] = []
        errors: list[Any] = []
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: errors.append(context)
        )
        clock = alarms()

        def fail() -> None:
            raise RuntimeError("boom")

        clock.set(0.02, fail)
        clock.set(0.02, lambda: rang.append(1))
        await asyncio.sleep(0.1)
        return rang, errors

    rang, errors = asyncio.run(body())
    assert rang == [1]
    assert len(errors) == 1


def test_many_deadlines_share_one_timer() -> None:
    async def body() -> int:
        loop = asyncio.get_running_loop()
        made = 0
        call_at = loop.call_at

        def counting(when: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
            nonlocal made
            made += 1
            return call_at(when, callback, *args)

        loop.call_at = counting  # type: ignore[method-assign,assignment]
        clock = alarms()
        for _ in range(1_000):
            clock.cancel(clock.set(30, lambda: None))
        return made

    assert asyncio.run(body()) == 1


def test_each_loop_has_its_own() -> None:
    async def one() -> int:
        return id(alarms())

    async def same() -> bool:
        return alarms() is alarms()

    assert asyncio.run(same())
    assert asyncio.run(one()) != 0


# --- the watch for a client going away -------------------------------------------------------


def _receive(leaves_after: float | None, *, fails: bool = False) -> Any:
    started: list[float] = []

    async def receive() -> dict[str, Any]:
        started.append(asyncio.get_running_loop().time())
        if leaves_after is None:
            await asyncio.Event().wait()
        await asyncio.sleep(leaves_after or 0)
        if fails:
            raise OSError("the connection broke")
        return {"type": "http.disconnect"}

    receive.started = started  # type: ignore[attr-defined]
    return receive


def test_an_answer_that_comes_soon_watches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_asgi, "WATCH_SECONDS", 0.5)

    async def body() -> list[float]:
        receive = _receive(None)
        departure = Departure(receive)
        await asyncio.sleep(0)
        departure.close()
        await asyncio.sleep(0.7)
        assert not departure.gone.done()
        return receive.started  # type: ignore[no-any-return]

    assert asyncio.run(body()) == []


@pytest.mark.parametrize("fails", [False, True])
def test_a_client_that_leaves_a_slow_answer_is_noticed(
    monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    monkeypatch.setattr(http_asgi, "WATCH_SECONDS", 0.05)

    async def body() -> None:
        departure = Departure(_receive(0.05, fails=fails))
        await asyncio.sleep(0.02)
        assert not departure.gone.done()
        await asyncio.wait_for(departure.gone, 30)
        departure.close()

    asyncio.run(body())


def test_a_client_that_stays_is_watched_until_the_answer_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http_asgi, "WATCH_SECONDS", 0.02)

    async def body() -> None:
        receive = _receive(None)
        departure = Departure(receive)
        for _ in range(200):  # the watch starts once its deadline rings
            if receive.started:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert len(receive.started) == 1  # watching, in one task
        assert not departure.gone.done()
        departure.close()
        await asyncio.sleep(0.01)
        assert not departure.gone.done()
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []

    asyncio.run(body())
