"""MCP specification revisions, and what changed between them that strictmcp checks."""

from __future__ import annotations

from enum import Enum


class Revision(str, Enum):
    """A released revision of the Model Context Protocol, named by its date."""

    V2024_11_05 = "2024-11-05"
    V2025_03_26 = "2025-03-26"
    V2025_06_18 = "2025-06-18"
    V2025_11_25 = "2025-11-25"
    V2026_07_28 = "2026-07-28"

    @classmethod
    def parse(cls, text: str) -> Revision:
        """The revision named ``text``; ValueError naming the known ones otherwise."""
        try:
            return cls(text)
        except ValueError:
            known = ", ".join(r.value for r in cls)
            raise ValueError(f"unknown MCP revision {text!r}; known: {known}") from None

    # Revisions are an enumerated set, compared by their position in it, never as strings.
    def at_least(self, other: Revision) -> bool:
        """Whether this revision is ``other`` or newer."""
        return _ORDER[self] >= _ORDER[other]

    @property
    def allows_batches(self) -> bool:
        """JSON-RPC batches: added in 2025-03-26, removed again in 2025-06-18."""
        return self is Revision.V2025_03_26

    @property
    def has_structured_output(self) -> bool:
        """``outputSchema`` on tools and ``structuredContent`` on results (2025-06-18)."""
        return self.at_least(Revision.V2025_06_18)

    @property
    def structured_content_any_json(self) -> bool:
        """``structuredContent`` may be any JSON value, not only an object (SEP-2106)."""
        return self.at_least(Revision.V2026_07_28)

    @property
    def has_elicitation(self) -> bool:
        """``elicitation/create`` (2025-06-18)."""
        return self.at_least(Revision.V2025_06_18)

    @property
    def has_sampling_tools(self) -> bool:
        """``tools``/``toolChoice`` in sampling and tool_use/tool_result content (SEP-1577)."""
        return self.at_least(Revision.V2025_11_25)

    @property
    def enforces_tool_names(self) -> bool:
        """Tool names restricted to 1-128 of ``A-Za-z0-9._-`` (SEP-986, 2025-11-25)."""
        return self.at_least(Revision.V2025_11_25)

    @property
    def has_cache_hints(self) -> bool:
        """``ttlMs`` and ``cacheScope`` on cacheable results (SEP-2549, 2026-07-28)."""
        return self.at_least(Revision.V2026_07_28)

    @property
    def stateless(self) -> bool:
        """No ``initialize`` handshake: every request carries its own protocol metadata."""
        return self.at_least(Revision.V2026_07_28)


_ORDER = {revision: index for index, revision in enumerate(Revision)}

LATEST = Revision.V2026_07_28
