"""Command-line arguments: no option injection, no control characters, allowed executables,
subcommands and operand schemes.

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
# An operand written as a URL (scheme://...) or as a transport address (transport::address,
# git's remote helpers: ext::COMMAND runs COMMAND). The scheme is RFC 3986's.
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)(://|::)")


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
      listed exactly: ``/tmp/evil/git`` never matches ``git``;
    - ``ARGV_SUBCOMMAND_NOT_ALLOWED``: with ``allow_subcommands``, the first operand (the first
      item after the executable that is not an option; every item after an allowed ``--``)
      must be exactly one of them, and a vector without one is refused. An allowed option's
      value given as the next item (``git -C DIR status``) is that first operand, so it is
      refused: allowed options take their values joined (``--git-dir=DIR``);
    - ``ARGV_OPERAND_SCHEME_NOT_ALLOWED``: with ``operand_schemes``, an operand written as a URL
      (``scheme://...``) or a transport address (``transport::address``: git's ``ext::``
      runs a command) must use one of them (case-insensitively), and a URL's authority must
      not start with ``-`` (``ssh://-oProxyCommand=...``).

    What the program then makes of an allowed subcommand (an alias in its configuration, a
    ``git-NAME`` program on its ``PATH``) and scp-like addresses (``host:path``, which read
    like ``HEAD:file``) are not checked.

    Messages never quote an argument; they name the configured options, executables,
    subcommands or schemes.
    """

    kind: ClassVar[str] = "argv"

    allow_options: tuple[str, ...] = ()
    executables: tuple[str, ...] | None = None
    first_is_executable: bool = False
    match_basename: bool = False
    allow_subcommands: tuple[str, ...] | None = None
    operand_schemes: tuple[str, ...] | None = None
    _basenames: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A string where a tuple belongs would be iterated character by character.
        if not isinstance(self.allow_options, tuple) or not all(
            isinstance(getattr(self, name), (tuple, type(None)))
            for name in ("executables", "allow_subcommands", "operand_schemes")
        ):
            raise TypeError(
                "allow_options, executables, allow_subcommands and operand_schemes must be"
                " tuples of strings"
            )
        for command in self.allow_subcommands or ():
            if not isinstance(command, str) or not command or command.startswith("-"):
                raise ValueError(
                    f"allow_subcommands entry {command!r} must be a name: a non-empty string"
                    " not starting with '-'"
                )
        for scheme in self.operand_schemes or ():
            if not isinstance(scheme, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
                raise ValueError(
                    f"operand_schemes entry {scheme!r} must be a URL scheme such as https"
                )
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
        subcommand = False
        for index, (item, where) in enumerate(items):
            if not isinstance(item, str):
                findings.append(
                    GuardFinding(
                        GuardCode.NOT_A_STRING,
                        f"an argv item must be a string; this one is a {type(item).__name__}",
                        where=where,
                    )
                )
                # Whatever it is, it cannot be the allowed subcommand.
                subcommand = True
                continue
            findings.extend(_control(item, where))
            if index == 0 and self.first_is_executable:
                findings.extend(self._executable(item, where))
            elif not operands and item.startswith("-"):
                findings.extend(self._option(item, where))
                operands = item == END_OF_OPTIONS and END_OF_OPTIONS in self.allow_options
            else:
                if not subcommand and self.allow_subcommands is not None:
                    findings.extend(self._subcommand(item, where))
                subcommand = True
                findings.extend(self._operand(item, where))
        if not subcommand and self.allow_subcommands is not None:
            findings.append(self._no_subcommand("the vector names none"))
        return findings

    def _subcommand(self, item: str, where: str) -> list[GuardFinding]:
        if item in (self.allow_subcommands or ()):
            return []
        return [self._no_subcommand("the first operand is not one of them", where)]

    def _no_subcommand(self, why: str, where: str = "") -> GuardFinding:
        allowed = ", ".join(self.allow_subcommands or ()) or "none"
        return GuardFinding(
            GuardCode.ARGV_SUBCOMMAND_NOT_ALLOWED,
            f"the subcommand is not allowed: {why}; allowed are {allowed}",
            where=where,
        )

    def _operand(self, item: str, where: str) -> list[GuardFinding]:
        if self.operand_schemes is None:
            return []
        found = _SCHEME.match(item)
        if found is None:
            return []
        allowed = ", ".join(self.operand_schemes) or "none"
        scheme, separator = found.group(1).lower(), found.group(2)
        if scheme not in (s.lower() for s in self.operand_schemes):
            what = "a transport address" if separator == "::" else "a URL"
            why = f"it is {what} whose scheme is not allowed"
        elif separator == "://" and item[found.end() :].startswith("-"):
            why = "its host starts with '-', which a program may read as an option"
        else:
            return []
        return [
            GuardFinding(
                GuardCode.ARGV_OPERAND_SCHEME_NOT_ALLOWED,
                f"the operand is not allowed: {why}; allowed schemes are {allowed}",
                where=where,
            )
        ]

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
