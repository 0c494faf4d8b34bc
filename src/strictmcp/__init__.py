"""strictmcp: every Model Context Protocol message checked, strict and safe."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .schema import (
        Dialect,
        Issue,
        IssueCode,
        Limits,
        Registry,
        SchemaError,
        SchemaErrorCode,
        ValidationResult,
        Validator,
        compile_schema,
    )

__version__ = "0.1.0"

__all__ = [
    "Dialect",
    "Issue",
    "IssueCode",
    "Limits",
    "Registry",
    "SchemaError",
    "SchemaErrorCode",
    "ValidationResult",
    "Validator",
    "__version__",
    "build",
    "compile_schema",
]


def build() -> str:
    """Which build is running: ``"compiled"`` (the per-message path compiled with mypyc) or
    ``"pure Python"``; ``strictmcp --version`` says it too."""
    from ._build import COMPILED  # noqa: PLC0415 - only when asked

    return "compiled" if COMPILED else "pure Python"


def __getattr__(name: str) -> Any:
    # The schema layer is imported on first use of one of its names, not with the package:
    # `strictmcp --help` and `--version` need only the version, and the schema layer (with
    # jsonschema-rs) would cost more than the rest of their answer.
    if name in ("__version__", "build") or name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import schema  # noqa: PLC0415 - on first use

    value = getattr(schema, name)
    globals()[name] = value
    return value
