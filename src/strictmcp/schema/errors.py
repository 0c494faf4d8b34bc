"""The exception a schema raises when it cannot be compiled."""

from __future__ import annotations

from .codes import SchemaErrorCode


class SchemaError(ValueError):
    """A schema was refused: it is invalid, unsafe, over a bound, or reaches outside.

    ``code`` is stable, ``location`` is a JSON Pointer into the schema (``""`` for its root), and
    ``detail`` names the offending piece (a reference, a pattern, a ``$schema`` URI) when there is
    one. Schemas are published by servers, so their text may appear here; instances never do.
    """

    def __init__(
        self, code: SchemaErrorCode, message: str, *, location: str = "", detail: str | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.location = location
        self.detail = detail

    def __str__(self) -> str:
        where = f" at {self.location!r}" if self.location else ""
        return f"[{self.code.value}]{where} {self.message}"

    def to_dict(self) -> dict[str, str | None]:
        """A JSON-ready form, for CLIs and the protocol layer."""
        return {
            "code": self.code.value,
            "message": self.message,
            "location": self.location,
            "detail": self.detail,
        }
