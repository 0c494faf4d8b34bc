"""Command-line arguments: no option injection, no control characters, allowed executables.

A server that runs a program with a model-supplied argument hands the program whatever the
model chose, and programs read any argument starting with ``-`` as an option:
``--output=/home/u/.bashrc`` writes where the caller wants, ``-oProxyCommand=...`` makes ssh
run a command. :class:`ArgvGuard` checks one argument (a string) or an argv vector (a list of
strings) meant for ``execve``-style calls without a shell; shell metacharacters are not its
concern, because arguments must never pass through a shell.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .base import GuardFinding
from .codes import GuardCode

END_OF_OPTIONS = "--"

# Every Cc character (C0 with tab and newlines, DEL, C1) and unpaired surrogates, which no
# argument can carry once encoded.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True)
class ArgvGuard:
    """Checks a command-line argument, or a whole argv vector, before a server runs a program.

    The value is a string (one argument) or a list of strings (a vector; findings say which
    item with ``where`` ``/<index>``). Reported, with :class:`GuardCode`:

    - ``ARGV_CONTROL_CHARACTER``: any C0 or C1 control character (NUL, newline and tab
      included: NUL truncates an argument, newlines split log lines and config entries) or an
      unpaired surrogate;
    - ``ARGV_OPTION_INJECTION``: an argument starting with ``-``, unless its option name (the
      part before the first ``=``) is exactly one of ``allow_options``: allowing ``-o`` does not
      allow ``-oProxyCommand=...``, nor the cluster ``-rf`` unless listed. A lone ``-`` is
      refused too: it means standard input, and a stdio MCP server's standard input is the
      protocol stream. The end-of-options marker ``--`` is refused like any option unless
      ``"--"`` is in ``allow_options``; then, in a vector, the items after the first ``--``
      are operands and may start with ``-``. List ``--`` only for programs that honour it;
    - ``ARGV_EXECUTABLE_NOT_ALLOWED``: with ``first_is_executable``, the first item (a string
      value is a vector of one) must be one of ``executables``, by full string equality. With
      ``match_basename``, a bare name (no ``/``) may also match the last component of a listed
      path (``git`` for ``/usr/bin/git``); the program is then looked up on the server's
      ``PATH``, so the listed directory is not enforced. A value containing ``/`` must always be
      listed exactly: ``/tmp/evil/git`` never matches ``git``.

    Messages never quote an argument; they name the configured options or executables.
    """

    kind: ClassVar[str] = "argv"

    allow_options: tuple[str, ...] = ()
    executables: tuple[str, ...] | None = None
    first_is_executable: bool = False
    match_basename: bool = False
    _basenames: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A string where a tuple belongs would be iterated character by character.
        if not isinstance(self.allow_options, tuple) or not isinstance(
            self.executables, (tuple, type(None))
        ):
            raise TypeError("allow_options and executables must be tuples of strings")
        for option in self.allow_options:
            if not isinstance(option, str) or not option.startswith("-") or "=" in option:
                raise ValueError(
                    f"allow_options entry {option!r} must be an option name: a string starting "
                    "with '-' and without '='"
                )
        if self.first_is_executable != (self.executables is not None):
            raise ValueError("first_is_executable and executables go together")
        if self.executables is not None and not all(
            isinstance(name, str) and name for name in self.executables
        ):
            raise ValueError("executables must be non-empty strings")
        if self.match_basename and self.executables is None:
            raise ValueError("match_basename needs executables")
        basenames = frozenset(posixpath.basename(name) for name in self.executables or ())
        object.__setattr__(self, "_basenames", basenames)

    def check(self, value: Any) -> list[GuardFinding]:
        """Every finding about ``value``, an argument or a vector; see the class documentation."""
        if isinstance(value, str):
            items: list[tuple[Any, str]] = [(value, "")]
        elif isinstance(value, list):
            items = [(item, f"/{index}") for index, item in enumerate(value)]
        else:
            return [
                GuardFinding(
                    GuardCode.NOT_A_STRING,
                    "an argv guard checks a string or a list of strings; this argument is a "
                    f"{type(value).__name__}",
                )
            ]
        if self.first_is_executable and not items:
            return [self._not_allowed("the vector is empty")]
        findings: list[GuardFinding] = []
        operands = False
        for index, (item, where) in enumerate(items):
            if not isinstance(item, str):
                findings.append(
                    GuardFinding(
                        GuardCode.NOT_A_STRING,
                        f"an argv item must be a string; this one is a {type(item).__name__}",
                        where=where,
                    )
                )
                continue
            findings.extend(_control(item, where))
            if index == 0 and self.first_is_executable:
                findings.extend(self._executable(item, where))
            elif not operands and item.startswith("-"):
                findings.extend(self._option(item, where))
                operands = item == END_OF_OPTIONS and END_OF_OPTIONS in self.allow_options
        return findings

    def _executable(self, item: str, where: str) -> list[GuardFinding]:
        if item in (self.executables or ()):
            return []
        if "/" in item:
            return [self._not_allowed("it is a path that is not listed", where)]
        if self.match_basename and item in self._basenames:
            return []
        return [self._not_allowed("it is not listed", where)]

    def _not_allowed(self, why: str, where: str = "") -> GuardFinding:
        allowed = ", ".join(self.executables or ())
        return GuardFinding(
            GuardCode.ARGV_EXECUTABLE_NOT_ALLOWED,
            f"the executable is not allowed: {why}; allowed are {allowed}",
            where=where,
        )

    def _option(self, item: str, where: str) -> list[GuardFinding]:
        if item.split("=", 1)[0] in self.allow_options:
            return []
        if item == END_OF_OPTIONS:
            what = "is the end-of-options marker '--', which changes how later arguments parse"
        elif item == "-":
            what = "is a lone '-', which programs read as standard input or output"
        else:
            what = "starts with '-', so the program would read it as an option"
        allowed = ", ".join(self.allow_options) if self.allow_options else "none"
        return [
            GuardFinding(
                GuardCode.ARGV_OPTION_INJECTION,
                f"the argument {what}; allowed options are: {allowed}",
                where=where,
            )
        ]


def _control(item: str, where: str) -> list[GuardFinding]:
    found = _CONTROL.search(item)
    if found is None:
        return []
    return [
        GuardFinding(
            GuardCode.ARGV_CONTROL_CHARACTER,
            f"the argument has a control character at character {found.start() + 1}; "
            "arguments must not contain control characters",
            where=where,
        )
    ]
