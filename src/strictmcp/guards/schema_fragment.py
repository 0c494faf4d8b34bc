"""A JSON Schema fragment on one argument: the bound a server's ``inputSchema`` lacks, put on
by the policy in front of it (``describe_table /table_name`` gets ``pattern`` and
``maxLength``) without touching the server.

The fragment is compiled once by the project's engine (:mod:`strictmcp.schema`: cached,
bounded, offline, linear-time patterns) and refused at load when it is not a schema the
engine accepts or when a reference in it leaves the fragment. Findings carry the engine's
own codes (``pattern-mismatch``, ``not-in-enum``, ``too-long``, ...), at the place inside
the value, and never the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..schema import SchemaError, Validator, compile_schema
from .base import GuardFinding


@dataclass(frozen=True)
class SchemaGuard:
    """Validates an argument against ``schema``, a JSON Schema (2020-12 unless its
    ``$schema`` says otherwise) applied to the argument's value alone.

    Raises ValueError for a fragment that is not an object, that the engine refuses
    (invalid, over a bound, a pattern the linear-time engine cannot run), or that holds a
    reference to anything outside itself (a URI, a meta-schema): the fragment is the whole
    check, and what it means must not depend on another document. ``check`` reports each
    of the engine's issues, with its code, at its place inside the value (``/0`` for an
    array's first item).
    """

    kind: ClassVar[str] = "schema"

    schema: Mapping[str, Any]
    _validator: Validator = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.schema, Mapping):
            raise ValueError("schema must be a table (a JSON Schema object)")
        try:
            validator = compile_schema(dict(self.schema))
        except SchemaError as error:
            where = f" at {error.location}" if error.location else ""
            raise ValueError(
                f"schema is not a usable JSON Schema{where}: {error.message} [{error.code.value}]"
            ) from None
        external = [where for where, ref in validator.profile.references if not ref.startswith("#")]
        if external:
            raise ValueError(
                f"schema has a reference outside itself at {external[0]}: only local "
                "references (#/$defs/...) are allowed"
            )
        object.__setattr__(self, "_validator", validator)

    def check(self, value: Any) -> list[GuardFinding]:
        """The engine's issues with ``value``, as findings; none when it matches."""
        result = self._validator.validate(value)
        return [
            GuardFinding(issue.code, issue.message, where=issue.instance_path)
            for issue in result.issues
        ]
