"""The names the per-tool tables' globs match: a tool's or prompt's name as offered, and,
for one a gateway offers shortened to be portable, the full name it stands for."""

from __future__ import annotations

from fnmatch import fnmatchcase

# The full names of the tools and prompts a gateway offers shortened, by the name offered:
# that name is a function of the full name (the gateway's ``public_name``), so one table
# serves every gateway of the process. Bounded: past it, the gateway offers no more names
# shortened (a table's glob could not be told whether it matches one).
_FULL_NAMES: dict[str, str] = {}
MAX_SHORTENED = 65_536
"""The most names shortened a process keeps the full names of."""


def shortened(offered: str, full: str) -> bool:
    """Say that a gateway offers the tool or prompt ``full`` as ``offered`` (shortened to be
    a portable name): every per-tool glob matches either (:func:`tool_matches`). False, and
    nothing kept, when :data:`MAX_SHORTENED` names are kept already: the name is then not to
    be offered."""
    if offered not in _FULL_NAMES and len(_FULL_NAMES) >= MAX_SHORTENED:
        return False
    _FULL_NAMES[offered] = full
    return True


def tool_matches(tool: str, glob: str) -> bool:
    """Whether ``glob`` (a per-tool table's, case-sensitive) matches the tool or prompt
    ``tool``: the name it is offered as, or the full name a gateway shortened to it."""
    if fnmatchcase(tool, glob):
        return True
    full = _FULL_NAMES.get(tool)
    return full is not None and fnmatchcase(full, glob)


def full_name(tool: str) -> str:
    """The full name a gateway shortened to ``tool``; ``tool`` itself when it is not one."""
    return _FULL_NAMES.get(tool, tool)
