"""Tool pinning: a lock file of each tool's definition and its SHA-256, against "rug pulls".

A server may change a tool after the user approved it: a description that now carries
instructions, a schema that now takes more, a new tool. ``strictmcp pin`` records each tool's
definition, the fields a model or a user is shown (:data:`PINNED_FIELDS`), and its SHA-256
over their RFC 8785 canonical JSON (JCS: the same bytes for the same JSON value whatever the
server's key order, spacing or number spelling). The proxy (``--pin``) then compares every
listing with the lock file, through :meth:`~strictmcp.enforce.Enforcer.check_listing`: a tool
whose definition changed, or that appeared since pinning, is withheld in ``enforce`` mode and
its calls refused; ``audit`` mode reports it. strictmcp's own validate tool is never pinned.

The lock file is JSON, ASCII only (a hidden character shows as its escape when reviewed)::

    {
      "version": 1,
      "canonicalization": "RFC 8785",
      "tools": {
        "get_weather": {
          "sha256": "5f2b...",
          "definition": {"name": "get_weather", "description": "...", "inputSchema": {...}}
        }
      }
    }
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import rfc8785

from ..guards.validation import is_validate_tool
from ..protocol import Violation
from ..schema import quote_name
from ..schema.jsonio import JSONInputError, load_json
from ..schema.limits import Limits

PINNED_FIELDS = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
)
"""The fields of a tool definition that are pinned: what the model and the user are shown,
and what decides the calls. ``_meta`` and icons are not: servers vary them freely."""
LOCK_VERSION = 1
_CANONICALIZATION = "RFC 8785"
# JCS numbers are IEEE 754 doubles: an integer beyond 2**53 is read as the nearest double, as
# an I-JSON parser (which is what RFC 8785 assumes) would read it.
_SAFE_INTEGER = 2**53
# How many differing places pin --diff names within one field.
_MAX_DIFFS = 20


class PinRule(str, Enum):
    """Stable codes of the pin checks."""

    CHANGED = "pin-changed"
    NEW = "pin-new"
    UNHASHABLE = "pin-unhashable"


class PinError(ValueError):
    """A lock file that cannot be read or written; the message says why, with a stable
    ``code``, never quoting the file."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def pinned_definition(tool: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned fields :data:`PINNED_FIELDS` that ``tool`` has."""
    return {key: tool[key] for key in PINNED_FIELDS if key in tool}


def canonical_json(value: Any) -> bytes:
    """``value`` as RFC 8785 canonical JSON (UTF-8). Raises :class:`PinError` for a value
    JCS cannot represent (NaN, a string with a lone surrogate)."""
    try:
        return rfc8785.dumps(_as_doubles(value))
    except (rfc8785.CanonicalizationError, UnicodeEncodeError, OverflowError) as error:
        raise PinError("pin-not-canonicalizable", f"not representable in JCS: {error}") from None


def _as_doubles(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and not -_SAFE_INTEGER <= value <= _SAFE_INTEGER:
        return float(value)
    if isinstance(value, dict):
        return {key: _as_doubles(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_doubles(item) for item in value]
    return value


def tool_digest(tool: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of the canonical JSON of ``tool``'s pinned fields."""
    return hashlib.sha256(canonical_json(pinned_definition(tool))).hexdigest()


@dataclass(frozen=True)
class FieldChange:
    """One pinned field of one tool that differs: ``where`` are JSON Pointers into the field
    where the values differ (``""`` for the field as a whole), at most a few."""

    field: str
    where: tuple[str, ...]


@dataclass(frozen=True)
class ToolChange:
    """How one tool differs from its pin: ``new`` (not pinned), ``gone`` (pinned, not listed),
    or ``changed`` with the fields that differ."""

    name: str
    kind: str
    fields: tuple[FieldChange, ...] = ()


@dataclass(frozen=True)
class PinFile:
    """A lock file: the pinned definition and digest of each tool, by name."""

    tools: Mapping[str, tuple[str, dict[str, Any]]]

    @classmethod
    def from_tools(cls, tools: Sequence[Any]) -> PinFile:
        """The pins of a listing; strictmcp's validate tool and values that are not tools
        with a string name are left out. Raises :class:`PinError` when a definition cannot
        be canonicalized, or two tools share a name (which one would a call reach?)."""
        pinned: dict[str, tuple[str, dict[str, Any]]] = {}
        for tool in tools:
            if not isinstance(tool, Mapping) or is_validate_tool(tool):
                continue
            name = tool.get("name")
            if not isinstance(name, str):
                continue
            if name in pinned:
                raise PinError("pin-duplicate-name", f"two tools are named {quote_name(name)}")
            pinned[name] = (tool_digest(tool), pinned_definition(tool))
        return cls(dict(sorted(pinned.items())))

    @classmethod
    def load(cls, path: str | Path) -> PinFile:
        """Read a lock file; raises :class:`PinError`."""
        try:
            data = Path(path).read_bytes()
        except OSError as error:
            raise PinError(
                "pin-unreadable", f"cannot read the lock file: {error.strerror}"
            ) from None
        try:
            document = load_json(data, max_size=Limits().max_instance_size)
        except JSONInputError as error:
            raise PinError("pin-invalid", f"the lock file is not JSON: {error}") from None
        return cls.from_dict(document)

    @classmethod
    def from_dict(cls, document: Any) -> PinFile:
        """A lock file's content; each digest is checked against its definition, so a hand
        edit of one without the other is refused rather than trusted."""
        if not isinstance(document, dict) or document.get("version") != LOCK_VERSION:
            raise PinError("pin-invalid", f"not a version {LOCK_VERSION} strictmcp lock file")
        entries = document.get("tools")
        if not isinstance(entries, dict):
            raise PinError("pin-invalid", 'the lock file has no "tools" object')
        tools: dict[str, tuple[str, dict[str, Any]]] = {}
        for name, entry in entries.items():
            definition = entry.get("definition") if isinstance(entry, dict) else None
            digest = entry.get("sha256") if isinstance(entry, dict) else None
            if not isinstance(definition, dict) or not isinstance(digest, str):
                raise PinError(
                    "pin-invalid", f"tool {quote_name(name)}: sha256 or definition missing"
                )
            if definition.get("name") != name or tool_digest(definition) != digest:
                raise PinError(
                    "pin-digest-mismatch",
                    f"tool {quote_name(name)}: its sha256 does not match its definition",
                )
            tools[name] = (digest, pinned_definition(definition))
        return cls(tools)

    def to_dict(self) -> dict[str, Any]:
        """The lock file's JSON form (see the module documentation)."""
        return {
            "version": LOCK_VERSION,
            "canonicalization": _CANONICALIZATION,
            "tools": {
                name: {"sha256": digest, "definition": definition}
                for name, (digest, definition) in self.tools.items()
            },
        }

    def dumps(self) -> str:
        """The lock file's text: indented, keys in order, ASCII only."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=True) + "\n"

    def check(self, tool: Any, pointer: str) -> list[Violation]:
        """What is wrong with a listed ``tool`` against its pin (``pointer`` locates it in the
        message): nothing when its digest matches; never a value from the definition."""
        if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
            return []  # unusable anyway: the protocol checks withhold it
        name = tool["name"]
        pin = self.tools.get(name)
        if pin is None:
            message = f"tool {quote_name(name)} was not listed when the tools were pinned"
            return [Violation(PinRule.NEW, message, pointer)]
        try:
            digest = tool_digest(tool)
        except PinError:
            message = f"the definition of tool {quote_name(name)} has no canonical JSON form"
            return [Violation(PinRule.UNHASHABLE, message, pointer)]
        if digest == pin[0]:
            return []
        fields = ", ".join(change.field for change in _fields(pin[1], pinned_definition(tool)))
        message = f"the definition of tool {quote_name(name)} changed since it was pinned: {fields}"
        return [Violation(PinRule.CHANGED, message, pointer)]

    def diff(self, tools: Sequence[Any]) -> list[ToolChange]:
        """How a listing differs from the pins, tool by tool and field by field, in name
        order. Raises :class:`PinError` as :meth:`from_tools` does."""
        listed = PinFile.from_tools(tools).tools
        changes = []
        for name in sorted(set(self.tools) | set(listed)):
            if name not in self.tools:
                changes.append(ToolChange(name, "new"))
            elif name not in listed:
                changes.append(ToolChange(name, "gone"))
            elif self.tools[name][0] != listed[name][0]:
                fields = tuple(_fields(self.tools[name][1], listed[name][1]))
                changes.append(ToolChange(name, "changed", fields))
        return changes


def _fields(before: Mapping[str, Any], after: Mapping[str, Any]) -> Iterator[FieldChange]:
    for key in PINNED_FIELDS:
        old, new = before.get(key), after.get(key)
        if key not in before and key not in after:
            continue
        if key not in before or key not in after:
            yield FieldChange(key, ("",))
        elif canonical_json(old) != canonical_json(new):
            yield FieldChange(key, tuple(_differences(old, new, ""))[:_MAX_DIFFS])


def _differences(old: Any, new: Any, pointer: str) -> Iterator[str]:
    """JSON Pointers where ``old`` and ``new`` differ, the deepest common containers'."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            child = pointer + "/" + key.replace("~", "~0").replace("/", "~1")
            if key not in old or key not in new:
                yield child
            else:
                yield from _differences(old[key], new[key], child)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _differences(a, b, f"{pointer}/{index}")
    elif canonical_json(old) != canonical_json(new):
        yield pointer
