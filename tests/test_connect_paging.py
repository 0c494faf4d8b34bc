"""The one pager: every page of a listing, bounded, refusing a cursor given again."""

from __future__ import annotations

import asyncio

from strictmcp.connect.paging import follow_pages


def pages_of(cursors: list[object], *, max_pages: int = 100) -> tuple[list[str | None], str | None]:
    """The cursors each page was fetched at, and how paging ended, for a server whose pages
    give ``cursors`` as their next cursors, in turn."""
    asked: list[str | None] = []

    async def fetch(cursor: str | None) -> object:
        asked.append(cursor)
        return cursors[len(asked) - 1]

    return asked, asyncio.run(follow_pages(fetch, max_pages=max_pages))


def test_every_page_is_read_until_the_last() -> None:
    assert pages_of(["a", "b", None]) == ([None, "a", "b"], None)


def test_a_cursor_given_again_stops_paging() -> None:
    asked, cut = pages_of(["a", "b", "a", None])
    assert asked == [None, "a", "b"]
    assert cut == "a cursor given again"


def test_pages_are_bounded() -> None:
    asked, cut = pages_of([str(n) for n in range(10)], max_pages=3)
    assert asked == [None, "0", "1"]
    assert cut == "over 3 pages"


def test_a_cursor_that_is_not_a_string_is_not_followed() -> None:
    asked, cut = pages_of([7, None])
    assert asked == [None]
    assert cut == "a next cursor that is not a string"
