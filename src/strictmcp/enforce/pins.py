"""Tool and prompt pinning: a lock file of each definition and its SHA-256, against "rug pulls".

A server may change a tool after the user approved it: a description that now carries
instructions, a schema that now takes more, a new tool. ``strictmcp pin`` records each tool's
definition, the fields a model or a user is shown (:data:`PINNED_FIELDS`), and its SHA-256
over their RFC 8785 canonical JSON (JCS: the same bytes for the same JSON value whatever the
server's key order, spacing or number spelling). The proxy (``--pin``) then compares every
listing with the lock file, through :meth:`~strictmcp.enforce.Enforcer.check_listing`: a tool
whose definition changed, or that appeared since pinning, is withheld in ``enforce`` mode and
its calls refused; ``audit`` mode reports it. strictmcp's own validate tool is never pinned.
Prompts are pinned the same way (:data:`PROMPT_FIELDS`), under ``"prompts"``: a changed or new
prompt is left out of ``prompts/list`` and ``prompts/get`` of it refused. A lock file without
``"prompts"`` pins no prompt (one with ``"prompts": {}`` pins that there are none).

The lock file is JSON, ASCII only (a hidden character shows as its escape when reviewed)::

    {
      "version": 1,
      "canonicalization": "RFC 8785",
      "tools": {
        "get_weather": {
          "sha256": "5f2b...",
          "definition": {"name": "get_weather", "description": "...", "inputSchema": {...}}
        }
      },
      "prompts": {
        "summarize": {"sha256": "9c1e...", "definition": {"name": "summarize", "arguments": [...]}}
      }
    }
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
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
PROMPT_FIELDS = ("name", "title", "description", "arguments")
"""The fields of a prompt definition that are pinned, likewise."""
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


def pinned_definition(
    tool: Mapping[str, Any], fields: Sequence[str] = PINNED_FIELDS
) -> dict[str, Any]:
    """The pinned ``fields`` (a tool's :data:`PINNED_FIELDS` unless told) that ``tool`` has."""
    return {key: tool[key] for key in fields if key in tool}


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


def tool_digest(tool: Mapping[str, Any], fields: Sequence[str] = PINNED_FIELDS) -> str:
    """The SHA-256 (hex) of the canonical JSON of ``tool``'s pinned ``fields`` (a prompt's:
    :data:`PROMPT_FIELDS`)."""
    return hashlib.sha256(canonical_json(pinned_definition(tool, fields))).hexdigest()


@dataclass(frozen=True)
class FieldChange:
    """One pinned field of one tool that differs: ``where`` are JSON Pointers into the field
    where the values differ (``""`` for the field as a whole), at most a few."""

    field: str
    where: tuple[str, ...]


@dataclass(frozen=True)
class PinChange:
    """How one tool (or, ``entity`` says, prompt) differs from its pin: ``new`` (not pinned),
    ``gone`` (pinned, not listed), or ``changed`` with the fields that differ."""

    name: str
    kind: str
    fields: tuple[FieldChange, ...] = ()
    entity: str = "tool"


Pins = Mapping[str, tuple[str, dict[str, Any]]]
"""Pinned definitions by name: each one's digest and definition."""


@dataclass(frozen=True)
class PinFile:
    """A lock file: the pinned definition and digest of each tool, by name, and of each
    prompt (None: prompts are not pinned). ``tool_scope`` and ``prompt_scope`` are the name
    prefixes the pins judge (None: every name); a name outside them is neither new nor
    changed (the gateway's servers that have no lock file of their own)."""

    tools: Pins
    prompts: Pins | None = None
    tool_scope: tuple[str, ...] | None = None
    prompt_scope: tuple[str, ...] | None = None

    @classmethod
    def merged(
        cls, parts: Sequence[tuple[str, PinFile]], rename: Callable[[str, str], str]
    ) -> PinFile:
        """One lock file from several servers' (``(server, pins)``), each name renamed as
        ``rename(server, name)`` gives it and its digest made anew for that name, judging
        only the names of those servers."""
        tools: dict[str, tuple[str, dict[str, Any]]] = {}
        prompts: dict[str, tuple[str, dict[str, Any]]] = {}
        prompt_servers = []
        for server, pins in parts:
            tools.update(_renamed(pins.tools, server, rename, PINNED_FIELDS))
            if pins.prompts is not None:
                prompts.update(_renamed(pins.prompts, server, rename, PROMPT_FIELDS))
                prompt_servers.append(server)
        return cls(
            dict(sorted(tools.items())),
            dict(sorted(prompts.items())) if prompt_servers else None,
            tool_scope=tuple(rename(server, "") for server, _ in parts),
            prompt_scope=tuple(rename(server, "") for server in prompt_servers),
        )

    @classmethod
    def from_tools(cls, tools: Sequence[Any], prompts: Sequence[Any] | None = None) -> PinFile:
        """The pins of a listing (and of a prompts listing, when given); strictmcp's validate
        tool and values that are not definitions with a string name are left out. Raises
        :class:`PinError` when a definition cannot be canonicalized, or two share a name
        (which one would a call reach?)."""
        return cls(
            _pinned(tools, "tool", PINNED_FIELDS),
            None if prompts is None else _pinned(prompts, "prompt", PROMPT_FIELDS),
        )

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
        if not isinstance(document.get("tools"), dict):
            raise PinError("pin-invalid", 'the lock file has no "tools" object')
        if "prompts" in document and not isinstance(document["prompts"], dict):
            raise PinError("pin-invalid", 'the lock file\'s "prompts" is not an object')
        prompts = document.get("prompts")
        return cls(
            _read_pins(document["tools"], "tool", PINNED_FIELDS),
            None if prompts is None else _read_pins(prompts, "prompt", PROMPT_FIELDS),
        )

    def to_dict(self) -> dict[str, Any]:
        """The lock file's JSON form (see the module documentation)."""
        document: dict[str, Any] = {
            "version": LOCK_VERSION,
            "canonicalization": _CANONICALIZATION,
            "tools": _written(self.tools),
        }
        if self.prompts is not None:
            document["prompts"] = _written(self.prompts)
        return document

    def dumps(self) -> str:
        """The lock file's text: indented, keys in order, ASCII only."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=True) + "\n"

    def check(self, tool: Any, pointer: str) -> list[Violation]:
        """What is wrong with a listed ``tool`` against its pin (``pointer`` locates it in the
        message): nothing when its digest matches; never a value from the definition."""
        if not _judged(tool, self.tool_scope):
            return []
        return _check(self.tools, "tool", PINNED_FIELDS, tool, pointer)

    def check_prompt(self, prompt: Any, pointer: str) -> list[Violation]:
        """What is wrong with a listed ``prompt`` against its pin, as :meth:`check` says of a
        tool; nothing when prompts are not pinned."""
        if self.prompts is None or not _judged(prompt, self.prompt_scope):
            return []
        return _check(self.prompts, "prompt", PROMPT_FIELDS, prompt, pointer)

    def diff(self, tools: Sequence[Any], prompts: Sequence[Any] | None = None) -> list[PinChange]:
        """How a listing differs from the pins, tool by tool and field by field, in name
        order, then the prompts (when both the lock file and the caller have them). Raises
        :class:`PinError` as :meth:`from_tools` does."""
        listed = PinFile.from_tools(tools, prompts)
        changes = _changes(self.tools, listed.tools, "tool", PINNED_FIELDS)
        if self.prompts is not None and listed.prompts is not None:
            changes += _changes(self.prompts, listed.prompts, "prompt", PROMPT_FIELDS)
        return changes


def _judged(definition: Any, scope: tuple[str, ...] | None) -> bool:
    name = definition.get("name") if isinstance(definition, Mapping) else None
    return scope is None or not isinstance(name, str) or name.startswith(scope)


def _renamed(
    pins: Pins, server: str, rename: Callable[[str, str], str], fields: Sequence[str]
) -> Pins:
    renamed = {}
    for name, (_, definition) in pins.items():
        public = rename(server, name)
        moved = {**definition, "name": public}
        renamed[public] = (tool_digest(moved, fields), pinned_definition(moved, fields))
    return renamed


def _pinned(definitions: Sequence[Any], entity: str, fields: Sequence[str]) -> Pins:
    pinned: dict[str, tuple[str, dict[str, Any]]] = {}
    for definition in definitions:
        if not isinstance(definition, Mapping) or is_validate_tool(definition):
            continue
        name = definition.get("name")
        if not isinstance(name, str):
            continue
        if name in pinned:
            raise PinError("pin-duplicate-name", f"two {entity}s are named {quote_name(name)}")
        pinned[name] = (tool_digest(definition, fields), pinned_definition(definition, fields))
    return dict(sorted(pinned.items()))


def _read_pins(entries: dict[str, Any], entity: str, fields: Sequence[str]) -> Pins:
    pins: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, entry in entries.items():
        definition = entry.get("definition") if isinstance(entry, dict) else None
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(definition, dict) or not isinstance(digest, str):
            raise PinError(
                "pin-invalid", f"{entity} {quote_name(name)}: sha256 or definition missing"
            )
        if definition.get("name") != name or tool_digest(definition, fields) != digest:
            raise PinError(
                "pin-digest-mismatch",
                f"{entity} {quote_name(name)}: its sha256 does not match its definition",
            )
        pins[name] = (digest, pinned_definition(definition, fields))
    return pins


def _written(pins: Pins) -> dict[str, Any]:
    return {
        name: {"sha256": digest, "definition": definition}
        for name, (digest, definition) in pins.items()
    }


def _check(
    pins: Pins, entity: str, fields: Sequence[str], definition: Any, pointer: str
) -> list[Violation]:
    if not isinstance(definition, Mapping) or not isinstance(definition.get("name"), str):
        return []  # unusable anyway: the protocol checks withhold it
    name = definition["name"]
    pin = pins.get(name)
    if pin is None:
        message = f"{entity} {quote_name(name)} was not listed when the {entity}s were pinned"
        return [Violation(PinRule.NEW, message, pointer)]
    try:
        digest = tool_digest(definition, fields)
    except PinError:
        message = f"the definition of {entity} {quote_name(name)} has no canonical JSON form"
        return [Violation(PinRule.UNHASHABLE, message, pointer)]
    if digest == pin[0]:
        return []
    now = pinned_definition(definition, fields)
    changed = ", ".join(change.field for change in _fields(pin[1], now, fields))
    message = (
        f"the definition of {entity} {quote_name(name)} changed since it was pinned: {changed}"
    )
    return [Violation(PinRule.CHANGED, message, pointer)]


def _changes(before: Pins, after: Pins, entity: str, fields: Sequence[str]) -> list[PinChange]:
    changes = []
    for name in sorted(set(before) | set(after)):
        if name not in before:
            changes.append(PinChange(name, "new", entity=entity))
        elif name not in after:
            changes.append(PinChange(name, "gone", entity=entity))
        elif before[name][0] != after[name][0]:
            differ = tuple(_fields(before[name][1], after[name][1], fields))
            changes.append(PinChange(name, "changed", differ, entity))
    return changes


def _fields(
    before: Mapping[str, Any], after: Mapping[str, Any], fields: Sequence[str]
) -> Iterator[FieldChange]:
    for key in fields:
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
