"""strictmcp: every Model Context Protocol message checked, strict and safe."""

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
    "compile_schema",
]
