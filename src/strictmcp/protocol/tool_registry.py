"""The tools a server has listed, as calls are validated against them.

A listing is built from ``tools/list`` results, one page at a time, and swapped in whole when
it is complete; until then readers keep seeing the previous complete listing. How a caller
drives it:

- a ``tools/list`` request without ``cursor`` was answered: :meth:`ToolRegistry.update`
  (a fresh listing; when the result has no ``nextCursor`` it is complete at once);
- a request with ``cursor`` was answered: :meth:`ToolRegistry.add_page` (a page without
  ``nextCursor`` completes the listing);
- the client stopped paginating early: :meth:`ToolRegistry.finish_listing` swaps in the pages
  it has;
- ``notifications/tools/list_changed`` arrived: :meth:`ToolRegistry.mark_stale`.

Stale listings: the registry does not guess what changed. Calls keep being validated against
the last complete listing, so a tool the server just added is unknown and a removed one still
validates, until the caller lists again; :attr:`ToolRegistry.stale` says when to. A listing
that was under way when the notification arrived may already be out of date, so finishing it
leaves the registry stale.

Concurrency: no method awaits, so in an asyncio proxy each call runs without interruption.
Writers also hold a lock, so threads may share a registry; readers take no lock, because the
listing they read is an immutable mapping that is replaced, never changed.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..schema import Limits
from .revisions import Revision
from .rules import Rule
from .tools import CheckedTool, check_tools
from .violations import Violation


class ToolRegistry:
    """The last complete ``tools/list`` listing of one server, checked and compiled.

    Unchanged schemas are not recompiled when a tool is listed again: the engine's validator
    cache returns the same validator for the same schema. A changed schema compiles anew, and
    a call is always validated against the schema its tool was listed with. A first page
    identical to the last one checked (the same :func:`~strictmcp.protocol.answer_digest`)
    takes that check's verdict rather than checking its tools again.
    """

    def __init__(
        self, revision: Revision, *, portable: bool = False, limits: Limits | None = None
    ) -> None:
        self.revision = revision
        self.portable = portable
        self.limits = limits
        self._lock = threading.Lock()
        self._tools: Mapping[str, CheckedTool] = MappingProxyType({})
        self._listed = False
        self._pending: dict[str, CheckedTool] | None = None
        # list_changed notifications so far, and how many there had been when the listing
        # under way began: a listing is current only if none arrived since it began.
        self._changes = 0
        self._pending_changes = 0
        self._current_changes = 0
        # The last first page checked, by its answer's digest: its tools, checked.
        self._last_digest: bytes | None = None
        self._last_checked: list[CheckedTool] = []

    @property
    def listed(self) -> bool:
        """Whether a complete listing has been swapped in."""
        return self._listed

    @property
    def stale(self) -> bool:
        """Whether the server said its tools changed after the current listing began."""
        return self._current_changes != self._changes

    @property
    def listing(self) -> bool:
        """Whether a listing is under way (pages added, not yet swapped in)."""
        return self._pending is not None

    def update(self, result: Mapping[str, Any], *, digest: bytes | None = None) -> list[Violation]:
        """Start a fresh listing with ``result``, the answer to a ``tools/list`` without cursor.

        Without ``nextCursor`` the listing is complete and swapped in; with one, further pages
        follow through :meth:`add_page`. Returns the page's violations, as :meth:`add_page`.
        ``digest`` is the answer's :func:`~strictmcp.protocol.answer_digest`, when known: the
        same as the last first page's, its tools are not checked again.
        """
        with self._lock:
            self._begin()
            return self._add_page(result, digest)

    def begin_listing(self) -> None:
        """Start a fresh listing, dropping any pages of one under way."""
        with self._lock:
            self._begin()

    def add_page(self, result: Mapping[str, Any]) -> list[Violation]:
        """Add one ``tools/list`` result to the listing under way (starting one if none is).

        Returns every violation of the page, pointers relative to ``result``: its tools'
        definitions, names already listed on earlier pages, and anything about the result
        that kept the registry from using part of it (:attr:`Rule.INVALID_RESULT`). A page
        without ``nextCursor`` completes the listing and swaps it in.
        """
        with self._lock:
            if self._pending is None:
                self._begin()
            return self._add_page(result)

    def finish_listing(self) -> None:
        """Swap in the listing under way as it is; nothing happens when none is."""
        with self._lock:
            self._finish()

    def mark_stale(self) -> None:
        """Note ``notifications/tools/list_changed``: the listing is out of date until redone."""
        with self._lock:
            self._changes += 1

    def get(self, name: str) -> CheckedTool | None:
        """The tool listed under ``name`` in the current listing, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """The names in the current listing, in listing order."""
        return list(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __repr__(self) -> str:
        state = " stale" if self.stale else ""
        return f"<ToolRegistry {self.revision.value} {len(self)} tools{state}>"

    def _begin(self) -> None:
        self._pending = {}
        self._pending_changes = self._changes

    def _add_page(self, result: Mapping[str, Any], digest: bytes | None = None) -> list[Violation]:
        pending = self._pending
        assert pending is not None  # every caller begins a listing first
        violations: list[Violation] = []
        tools = result.get("tools") if isinstance(result, Mapping) else None
        if not isinstance(tools, list):
            violations.append(
                Violation(Rule.INVALID_RESULT, "tools/list result has no tools array", "/tools")
            )
            tools = []
        if digest is not None and digest == self._last_digest:
            # Only a first page is given a digest: nothing was listed before it to clash with.
            checked = self._last_checked
        else:
            checked = check_tools(
                tools,
                self.revision,
                portable=self.portable,
                limits=self.limits,
                already_listed=pending.keys(),
            )
            if digest is not None:
                self._last_digest, self._last_checked = digest, checked
        for tool in checked:
            violations += tool.violations
            if tool.name is not None:
                # A duplicate replaces the entry before it: its violation makes the name
                # unusable, so calls to an ambiguous name are refused rather than guessed.
                pending[tool.name] = tool
        cursor = result.get("nextCursor") if isinstance(result, Mapping) else None
        if cursor is not None and not isinstance(cursor, str):
            violations.append(
                Violation(
                    Rule.INVALID_RESULT,
                    "nextCursor must be a string; the listing ends at this page",
                    "/nextCursor",
                )
            )
        if not isinstance(cursor, str):
            self._finish()
        return violations

    def _finish(self) -> None:
        if self._pending is None:
            return
        self._tools = MappingProxyType(self._pending)
        self._current_changes = self._pending_changes
        self._pending = None
        self._listed = True
