"""How a policy's keys are declared and checked: an :class:`Option` per key, and the one
checker every table's keys go through (:func:`checked`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any


class PolicyError(ValueError):
    """A policy that cannot be loaded; the message says which entry and which key."""


_TYPE_NAMES = {
    bool: ("a boolean", "booleans"),
    int: ("an integer", "integers"),
    float: ("a number", "numbers"),
    str: ("a string", "strings"),
    dict: ("a table", "tables"),
}


@dataclass(frozen=True)
class Option:
    """One key of a table: a TOML ``type`` (``dict``: a table of any values; an array of it
    when ``array``; with ``table``, a table of them, or of arrays of them when ``array``
    too), the values allowed when only some are, whether the entry must give it, and for
    the reference page its ``default`` (Markdown; empty when there is none) and ``doc``."""

    type: type[bool | int | float | str | dict[str, Any]]
    array: bool = False
    table: bool = False
    choices: tuple[str, ...] = ()
    required: bool = False
    default: str = ""
    doc: str = ""

    def problem(self, value: Any) -> str | None:
        """Why ``value`` does not fit, or None: for a key with choices, the choices whatever
        was wrong (a wrong type or a wrong word), so the message alone says what to write."""
        single, plural = _TYPE_NAMES[self.type]
        if self.choices:
            named = "one of " + ", ".join(f'"{choice}"' for choice in self.choices)
            expected = f"an array of strings, each {named}" if self.array else named
        else:
            expected = f"an array of {plural}" if self.array else single
        if self.array and not isinstance(value, list):
            return f"must be {expected}"
        for item in value if self.array else [value]:
            # bool is an int in Python, never in TOML: `max_length = true` is refused; a
            # number may be written as an integer (`timeout = 2`).
            allowed = (int, float) if self.type is float else self.type
            if not isinstance(item, allowed) or (self.type is not bool and isinstance(item, bool)):
                return f"must be {expected}"
            if self.choices and item not in self.choices:
                return f"must be {expected}"
        return None

    def fault(self, name: str, value: Any) -> str | None:
        """What is wrong with the key ``name`` holding ``value`` (``name must be ...``), or
        None. A table of values names its value that does not fit when each may be a single
        value or an array (``claims.tenant must be ...``), else the table as a whole."""
        if not self.table:
            problem = self.problem(value)
            return None if problem is None else f"{name} {problem}"
        if not isinstance(value, Mapping):
            return f"{name} must be {self.type_name()}"
        single = replace(self, table=False, array=False)
        for key, item in value.items():
            if single.problem(item) is None:
                continue
            if not self.array:
                return f"{name} must be {self.type_name()}"
            if replace(single, array=True).problem(item) is not None:
                one, plural = _TYPE_NAMES[self.type]
                return f"{name}.{key} must be {one} or an array of {plural}"
        return None

    def type_name(self) -> str:
        """The type as the reference page names it: ``array of strings``, ``"a" or "b"``."""
        if self.table:
            _, plural = _TYPE_NAMES[self.type]
            return f"a table of {plural}" + (" or arrays of them" if self.array else "")
        if self.choices:
            quoted = [f'`"{choice}"`' for choice in self.choices]
            named = ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]
            return f"array of strings, each {named}" if self.array else named
        single, plural = _TYPE_NAMES[self.type]
        return f"array of {plural}" if self.array else single.split(" ", 1)[1]


def checked(where: str, entry: Any, known: Mapping[str, Option]) -> dict[str, Any]:
    """The keys of a table, each checked against its declaration (lists become tuples)."""
    if not isinstance(entry, Mapping):
        raise PolicyError(f"{where} must be a table")
    unknown = sorted(key for key in entry if key not in known)
    if unknown:
        raise PolicyError(
            f"{where}: unknown keys: {', '.join(unknown)} (known: {', '.join(known)})"
        )
    missing = [name for name, option in known.items() if option.required and name not in entry]
    if missing:
        raise PolicyError(f"{where}: missing options: {', '.join(missing)}")
    for name, option in known.items():
        fault = option.fault(name, entry[name]) if name in entry else None
        if fault is not None:
            raise PolicyError(f"{where}: {fault}")
    return {name: frozen(entry[name]) for name in known if name in entry}


def frozen(value: Any) -> Any:
    """``value`` with its TOML arrays as tuples: guards and settings are frozen dataclasses
    and stay hashable."""
    if isinstance(value, list):
        return tuple(frozen(item) for item in value)
    return value


@dataclass(frozen=True)
class Context:
    """What a table's builder may read besides its entry: the directory relative path roots
    are read from (None: a relative root is refused) and the top-level
    ``allow_subdivision_flags``."""

    base: Path | None = None
    flags: tuple[str, ...] = ()
