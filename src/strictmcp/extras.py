"""The optional parts of strictmcp, each an extra of the package, and the one error for a
missing one.

The core (the engine, the protocol checks, the guards, lint and the proxy) installs with
``pip install strictmcp``; a feature that needs more names its extra. Every import of an
optional dependency sits in a ``with needs(EXTRA, FEATURE):`` block (tests/test_extras.py
holds the source to that), so a missing one is always :class:`MissingExtra`, which the
command line turns into one line and exit status 2, and never a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["EXTRAS", "Extra", "MissingExtra", "needs", "require"]


@dataclass(frozen=True)
class Extra:
    """An extra as strictmcp's code knows it."""

    modules: tuple[str, ...]
    """The top-level modules that only this extra installs."""
    feature: str
    """What needs it, as the error names it: a noun phrase."""


EXTRAS = {
    "check": Extra(("hypothesis", "hypothesis_jsonschema"), "generating inputs from schemas"),
    "postgres": Extra(("psycopg",), "a deep SQL check on PostgreSQL"),
    "redis": Extra(("redis",), "a [rate_store] (rate limits shared through Redis)"),
    "auth": Extra(("jwt", "cryptography"), "verifying access tokens (the policy's [auth])"),
    "otel": Extra(("opentelemetry",), "traces and metrics over OTLP (OTEL_EXPORTER_OTLP_ENDPOINT)"),
    "reference": Extra(("jsonschema",), "the reference backend (python-jsonschema)"),
    "mcp": Extra(("mcp",), "the MCP SDK integrations"),
    "fastmcp": Extra(("fastmcp",), "the FastMCP integration"),
}
"""Each extra of pyproject.toml that strictmcp's code imports, by name."""


class MissingExtra(ImportError):
    """``feature`` needs the extra ``extra``, which is not installed; the message says how
    to install it."""

    def __init__(self, extra: str, feature: str) -> None:
        super().__init__(f"{feature} needs the [{extra}] extra: pip install 'strictmcp[{extra}]'")
        self.extra = extra
        self.feature = feature


@contextmanager
def needs(extra: str, feature: str | None = None) -> Iterator[None]:
    """Turn the failed import, inside the block, of a module of ``extra`` into
    :class:`MissingExtra` for ``feature`` (the extra's own by default). A failure to import
    anything else is left as it is: it is a fault, not a missing extra."""
    known = EXTRAS[extra]
    try:
        yield
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in known.modules:
            raise
        raise MissingExtra(extra, feature or known.feature) from error


def require(extra: str, feature: str | None = None) -> None:
    """Raise :class:`MissingExtra` for ``feature`` unless every module of ``extra`` can be
    found; nothing is imported, so a check made when a policy loads costs no start-up time."""
    with needs(extra, feature):
        for module in EXTRAS[extra].modules:
            if importlib.util.find_spec(module) is None:
                raise ModuleNotFoundError(f"No module named {module!r}", name=module)
