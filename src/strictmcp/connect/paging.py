"""Following a paginated listing's cursors: the one pager for every listing strictmcp reads.

A server chooses its cursors, so it can make a listing endless: by never giving a last page,
or by giving a cursor again (paged blindly, that loops forever). :func:`follow_pages` reads at
most ``max_pages`` pages and refuses a cursor it has already followed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

MAX_PAGES = 100
"""Pages of one listing read at most, unless the caller says otherwise."""

FetchPage = Callable[[str | None], Awaitable[object]]
"""Fetches the page at a cursor (None: the first page); returns that page's next cursor, None
on the last page. What it makes of the page itself is its own business."""


async def follow_pages(fetch: FetchPage, *, max_pages: int = MAX_PAGES) -> str | None:
    """Fetch the first page of a listing, then the page at each next cursor ``fetch`` returns.

    None when the listing was read to its last page; otherwise why paging stopped short: a
    cursor given again, a cursor that is not a string (MCP cursors are), or ``max_pages``
    pages read.
    """
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(max_pages):
        given = await fetch(cursor)
        if given is None:
            return None
        if not isinstance(given, str):
            return "a next cursor that is not a string"
        if given in seen:
            return "a cursor given again"
        seen.add(given)
        cursor = given
    return f"over {max_pages} pages"
