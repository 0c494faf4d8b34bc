"""Path arguments: resolved the way the kernel resolves them, and confined to allowed roots.

A file tool's path is its most attacked argument. The official filesystem server shipped these
escapes, and :class:`PathGuard` stops each of them:

- a sibling whose name starts with the root's name (``/srv/data_secret`` for ``/srv/data``):
  roots are compared component by component, never as string prefixes;
- a symbolic link inside a root that points out, directly or through a chain of links;
- a dangling link inside a root whose missing target lies outside (creating the file through
  the link would create it there): link targets are resolved even when they do not exist;
- ``..`` segments, read both ways servers read them (see :class:`PathGuard`).

The guard reads the filesystem (``lstat``, ``readlink``, ``access``) and never writes to it.
It checks the filesystem it sees, so it must see the one the server opens paths in: a proxy in
another mount namespace or container, or with other credentials, checks something else. (The
working directory does not matter: relative paths resolve against a root.)
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ..protocol import Severity
from .base import GuardFinding, not_a_string
from .codes import GuardCode

# Linux's MAXSYMLINKS: a path through more links than this fails with ELOOP in the kernel, so no
# server could open it either.
MAX_SYMLINKS = 40

# Every filesystem read of a walk goes through these names: the tests replace them to simulate
# a case-insensitive filesystem, which the machines that run them may not have.
_lstat = os.lstat
_readlink = os.readlink

_DRIVE = re.compile(r"[A-Za-z]:")

# How a walk last left every root: through a ``..`` of the path itself, or through a link.
_DOTDOT = "dotdot"
_LINK = "link"


@dataclass(frozen=True)
class _Root:
    """An allowed root, canonical, with the identity that recognizes it under another name."""

    parts: tuple[str, ...]
    identity: tuple[int, int]

    def is_at(self, parts: list[str], status: os.stat_result | None) -> bool:
        """Whether the walk, having just reached ``parts`` (``status`` from lstat), is here.

        Equal (device, inode) is the same directory under any spelling: another case on a
        case-insensitive filesystem, another Unicode normalization on APFS. Comparing by identity
        instead of folding names avoids guessing the filesystem's folding rules, where a guess
        more lenient than the filesystem (``str.casefold`` makes "ß" equal "ss") is an escape.
        """
        if len(parts) != len(self.parts):
            return False
        if tuple(parts) == self.parts:
            return True
        return status is not None and (status.st_dev, status.st_ino) == self.identity


@dataclass(frozen=True)
class _Resolved:
    """Where a walk ended: canonical components, whether each exists, and the verdict."""

    parts: tuple[str, ...]
    exists: tuple[bool, ...]
    root: _Root | None
    refusal: tuple[GuardCode, str] | None


@dataclass(frozen=True)
class PathGuard:
    """Confines a path argument to allowed roots, after resolving it as the kernel would.

    ``roots`` are absolute paths of existing directories, canonicalized once here (symbolic
    links resolved with ``os.path.realpath``); messages name them as configured. ``entry`` is
    what the path must be when it exists: ``"any"`` (anything, including FIFOs and devices),
    ``"file"`` (a regular file) or ``"dir"``; it is not called ``kind`` because :attr:`kind`
    is the guard's name in the :class:`~strictmcp.guards.Guard` protocol.

    ``check`` reports, with :class:`GuardCode`:

    - ``PATH_NUL``, ``PATH_TOO_LONG`` (more than ``max_length`` characters, more than
      ``max_components`` components, or a name longer than the filesystem allows),
      ``PATH_UNRESOLVABLE`` (empty, not encodable as a file name, more than
      :data:`MAX_SYMLINKS` links, or a directory inside a root that cannot be searched: the
      guard cannot see what the path means, so it refuses);
    - ``PATH_WINDOWS_SYNTAX``: a backslash or a drive letter (``C:``). On POSIX both are
      ordinary name characters, but servers that normalize separators (Node code often does)
      turn ``..\\..\\etc`` into a traversal, and a drive letter shows the caller meant another
      system. Refused rather than guessed at;
    - ``PATH_HOME``: a leading ``~`` or ``~user``. Many servers expand it, so it is never
      treated as a name; with ``allow_home`` it is expanded here (``os.path.expanduser``) and
      the home directory must itself be inside a root;
    - ``PATH_RELATIVE``: relative paths are refused unless ``allow_relative``, which resolves
      them against the first root (never against the working directory);
    - ``PATH_OUTSIDE_ROOTS``, ``PATH_SYMLINK_ESCAPE`` (a link inside a root led out),
      ``PATH_DANGLING_SYMLINK`` (a link inside a root led out to a target that does not exist
      yet): escapes, always errors. ``..`` segments are read both ways servers read them: the
      kernel's way (links first, so ``link/..`` is the parent of the link's target) and the
      lexical way (``os.path.normpath``, Node's ``path.resolve``: ``..`` first). Both readings
      must stay inside; ``PATH_TRAVERSAL`` is then a warning that the path used ``..``;
    - ``PATH_NOT_FOUND`` when ``must_exist`` or ``readable`` and the path does not exist,
      ``PATH_WRONG_KIND`` when it exists and is not ``entry``, ``PATH_NOT_READABLE`` and
      ``PATH_NOT_WRITABLE`` from ``os.access`` on the resolved path (for a path that does not
      exist yet, writable means its nearest existing parent inside the root is a directory the
      server may create entries in). ``os.access`` answers for the real user id, and a process
      with ``CAP_DAC_OVERRIDE`` (root) passes its read and write checks whatever the mode bits.

    Two warnings, off unless configured (deep checks, but the same walk): ``PATH_LOW_SPACE``
    when the filesystem the path is on (or would be created on) has fewer than
    ``min_free_bytes`` bytes free for the server, and ``PATH_FILE_LARGE`` when the path is a
    regular file larger than ``max_file_bytes``.

    A path that does not exist yet is fine, unless ``must_exist``. Percent-encoding is not
    decoded: the guard sees the decoded JSON string, and on POSIX ``%2e%2e`` is a name.

    Messages never contain the path, not even resolved, nor anything learned outside the
    roots: they say what kind of problem it is and name the configured roots or limits. Walking
    outside the roots, every failure is reported as the escape it is, so the guard is no oracle
    for what exists out there.

    A check cannot close the race between checking and opening (TOCTOU): a link created after
    the check is followed by an ``open`` that trusts it. This guard is one layer; servers should
    also open with ``O_NOFOLLOW`` and resolve each component with ``openat`` from a directory
    descriptor of the root (or ``openat2`` with ``RESOLVE_BENEATH`` on Linux). The guard
    supports POSIX paths only.
    """

    kind: ClassVar[str] = "path"

    roots: tuple[str, ...]
    must_exist: bool = False
    entry: Literal["any", "file", "dir"] = "any"
    readable: bool = False
    writable: bool = False
    allow_relative: bool = False
    allow_home: bool = False
    max_length: int = 4096
    max_components: int = 256
    min_free_bytes: int | None = None
    max_file_bytes: int | None = None
    _roots: tuple[_Root, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if os.name != "posix":
            raise NotImplementedError(
                "PathGuard resolves POSIX paths; Windows paths (drive-relative paths, "
                "junctions, short names, alternate data streams) need a resolver of their own"
            )
        if isinstance(self.roots, str) or not isinstance(self.roots, tuple):
            raise TypeError("roots must be a tuple of paths")
        if not self.roots:
            raise ValueError("PathGuard needs at least one root")
        if self.entry not in ("any", "file", "dir"):
            raise ValueError('entry must be "any", "file" or "dir"')
        if self.max_length < 1 or self.max_components < 1:
            raise ValueError("max_length and max_components must be at least 1")
        for name in ("min_free_bytes", "max_file_bytes"):
            limit = getattr(self, name)
            if limit is not None and limit < 0:
                raise ValueError(f"{name} must not be negative")
        object.__setattr__(self, "_roots", tuple(_canonical_root(root) for root in self.roots))

    def check(self, value: Any) -> list[GuardFinding]:
        """Every finding about the path ``value``; see the class documentation."""
        return self._evaluate(value)[0]

    def resolve(self, value: Any) -> str | None:
        """The canonical path of ``value`` if the guard allows it (warnings allowed), else None.

        Open this rather than the raw argument: it has no ``..``, no links (as of the check)
        and names each root as canonicalized.
        """
        return self._evaluate(value)[1]

    def _evaluate(self, value: Any) -> tuple[list[GuardFinding], str | None]:
        if not isinstance(value, str):
            return not_a_string(value, self.kind), None
        problem = self._syntax(value)
        if isinstance(problem, GuardFinding):
            return [problem], None
        names = problem.split("/")
        start = [] if problem.startswith("/") else list(self._roots[0].parts)
        resolved = self._walk(start, names)
        if resolved.refusal is not None:
            return [GuardFinding(*resolved.refusal)], None
        findings: list[GuardFinding] = []
        if ".." in names:
            lexical = self._walk([], _lexically_normal(start, names))
            if lexical.refusal is not None:
                code, message = lexical.refusal
                return [
                    GuardFinding(
                        code,
                        f"{message}, reading '..' before symbolic links as os.path.normpath "
                        "and Node's path.resolve do",
                    )
                ], None
            findings.append(
                GuardFinding(
                    GuardCode.PATH_TRAVERSAL,
                    "path has '..' segments; read either way it stays inside the allowed roots",
                    Severity.WARNING,
                )
            )
        findings.extend(self._access(resolved))
        findings.extend(self._capacity(resolved))
        if any(finding.severity is Severity.ERROR for finding in findings):
            return findings, None
        return findings, _joined(resolved.parts)

    def _syntax(self, value: str) -> str | GuardFinding:
        """The path to walk (``~`` expanded when allowed), or what makes it unwalkable."""
        if len(value) > self.max_length:
            return GuardFinding(
                GuardCode.PATH_TOO_LONG,
                f"path is longer than the limit of {self.max_length} characters",
            )
        if "\0" in value:
            return GuardFinding(GuardCode.PATH_NUL, "path contains a NUL character")
        try:
            os.fsencode(value)
        except UnicodeEncodeError:
            return GuardFinding(
                GuardCode.PATH_UNRESOLVABLE,
                "path holds characters no file name can have (an unpaired surrogate)",
            )
        if "\\" in value or _DRIVE.match(value):
            return GuardFinding(
                GuardCode.PATH_WINDOWS_SYNTAX,
                "path uses Windows syntax (a backslash or a drive letter); this server "
                "reads POSIX paths, separated by '/'",
            )
        if value.startswith("~"):
            if not self.allow_home:
                return GuardFinding(
                    GuardCode.PATH_HOME,
                    "path starts with '~', a home directory; home paths are not allowed",
                )
            value = os.path.expanduser(value)
            if value.startswith("~"):
                return GuardFinding(
                    GuardCode.PATH_HOME, "path starts with the home directory of an unknown user"
                )
        if not value:
            return GuardFinding(GuardCode.PATH_UNRESOLVABLE, "path is empty")
        if not value.startswith("/") and not self.allow_relative:
            return GuardFinding(
                GuardCode.PATH_RELATIVE,
                f"path is relative; it must be absolute and inside {self._shown_roots()}",
            )
        if value.count("/") >= self.max_components:
            return GuardFinding(
                GuardCode.PATH_TOO_LONG,
                f"path has more than the limit of {self.max_components} components",
            )
        return value

    def _walk(self, start: list[str], names: list[str]) -> _Resolved:
        """Resolve ``names`` from the directory ``start``; the verdict if it leaves the roots."""
        walk = _Walk(self._roots, start, names, self.max_components)
        failure = walk.run()
        if walk.entered:
            if failure is not None:
                return _Resolved((), (), None, failure)
            # The deepest root's canonical spelling, where the path reached it by identity.
            deepest = walk.entered[-1]
            walk.parts[: len(deepest.parts)] = deepest.parts
            return _Resolved(tuple(walk.parts), tuple(walk.exists), walk.entered[0], None)
        # Outside every root, a failure is reported as the escape: distinct answers for what
        # lies out there would make the guard an oracle for it.
        return _Resolved((), (), None, self._escape(walk.left_by, walk.dangling))

    def _escape(self, left_by: str | None, dangling: bool) -> tuple[GuardCode, str]:
        roots = self._shown_roots()
        if left_by == _LINK and dangling:
            return (
                GuardCode.PATH_DANGLING_SYMLINK,
                f"a symbolic link on the path points to a target outside {roots} that does "
                "not exist; creating the path would create it there",
            )
        if left_by == _LINK:
            return (
                GuardCode.PATH_SYMLINK_ESCAPE,
                f"a symbolic link on the path leads out of {roots}",
            )
        if left_by == _DOTDOT:
            return GuardCode.PATH_OUTSIDE_ROOTS, f"'..' segments of the path lead out of {roots}"
        return GuardCode.PATH_OUTSIDE_ROOTS, f"path is outside {roots}"

    def _access(self, resolved: _Resolved) -> list[GuardFinding]:
        """What ``must_exist``, ``entry``, ``readable`` and ``writable`` say of a path inside."""
        path = _joined(resolved.parts)
        status = _status(path)
        if status is None:
            if self.must_exist or self.readable:
                return [GuardFinding(GuardCode.PATH_NOT_FOUND, "path does not exist")]
            return self._creatable(resolved) if self.writable else []
        is_dir = stat.S_ISDIR(status.st_mode)
        findings: list[GuardFinding] = []
        if self.entry == "file" and not stat.S_ISREG(status.st_mode):
            findings.append(GuardFinding(GuardCode.PATH_WRONG_KIND, "path is not a regular file"))
        elif self.entry == "dir" and not is_dir:
            findings.append(GuardFinding(GuardCode.PATH_WRONG_KIND, "path is not a directory"))
        # A directory is read by listing it and written by creating entries: both need search.
        search = os.X_OK if is_dir else 0
        if self.readable and not os.access(path, os.R_OK | search):
            findings.append(GuardFinding(GuardCode.PATH_NOT_READABLE, "path is not readable"))
        if self.writable and not os.access(path, os.W_OK | search):
            findings.append(GuardFinding(GuardCode.PATH_NOT_WRITABLE, "path is not writable"))
        return findings

    def _capacity(self, resolved: _Resolved) -> list[GuardFinding]:
        """The free-space and file-size warnings, for a path inside the roots."""
        if self.min_free_bytes is None and self.max_file_bytes is None:
            return []
        findings: list[GuardFinding] = []
        depth = sum(resolved.exists)
        path = _joined(resolved.parts[:depth])  # the path, or its nearest existing parent
        status = _status(path)
        if (
            self.max_file_bytes is not None
            and depth == len(resolved.parts)
            and status is not None
            and stat.S_ISREG(status.st_mode)
            and status.st_size > self.max_file_bytes
        ):
            findings.append(
                GuardFinding(
                    GuardCode.PATH_FILE_LARGE,
                    f"the file is larger than {self.max_file_bytes} bytes",
                    Severity.WARNING,
                )
            )
        if self.min_free_bytes is not None:
            try:
                space = os.statvfs(path)
            except OSError:
                space = None
            # f_bavail: the blocks an unprivileged process may use, which is what the server
            # gets unless it runs as root.
            if space is not None and space.f_bavail * space.f_frsize < self.min_free_bytes:
                findings.append(
                    GuardFinding(
                        GuardCode.PATH_LOW_SPACE,
                        f"the filesystem has less than {self.min_free_bytes} bytes free",
                        Severity.WARNING,
                    )
                )
        return findings

    def _creatable(self, resolved: _Resolved) -> list[GuardFinding]:
        """Whether a path that does not exist yet can be created: by its nearest existing parent
        inside the root, which must be a directory the server may add entries to."""
        # Existence is a prefix: below the first missing component nothing can exist.
        depth = sum(resolved.exists)
        root = resolved.root
        if root is not None and depth >= len(root.parts):
            parent = _joined(resolved.parts[:depth])
            status = _status(parent)
            if status is not None and not stat.S_ISDIR(status.st_mode):
                return [
                    GuardFinding(
                        GuardCode.PATH_NOT_WRITABLE,
                        "path cannot be created: a parent on it is not a directory",
                    )
                ]
            if status is not None and os.access(parent, os.W_OK | os.X_OK):
                return []
        return [
            GuardFinding(
                GuardCode.PATH_NOT_WRITABLE,
                "path does not exist and its nearest existing parent directory is not writable",
            )
        ]

    def _shown_roots(self) -> str:
        label = "the allowed root" if len(self.roots) == 1 else "the allowed roots"
        return f"{label} ({', '.join(self.roots)})"


class _Walk:
    """One resolution of a path, component by component, as the kernel does it: each component
    is looked up with lstat, and a link is replaced by its target (from ``/`` when absolute,
    else from the link's directory), whether the target exists or not.

    The walk keeps which roots it is inside (``entered``, shallowest first) and, while outside
    all of them, how it left (``left_by``): that names the escape. ``pending`` holds components
    still to walk, last first; each followed link pushes its target's components and records in
    ``expansions`` how much of ``pending`` lay beneath them, so the walk knows when it has
    reached a link's target and, for the link that left the roots, whether that target exists
    (``dangling``).
    """

    def __init__(
        self, roots: tuple[_Root, ...], start: list[str], names: list[str], budget: int
    ) -> None:
        self.roots = roots
        self.parts = list(start)
        self.exists = [True] * len(start)
        self.entered = sorted(
            (root for root in roots if root.parts == tuple(start[: len(root.parts)])),
            key=lambda root: len(root.parts),
        )
        self.pending = names[::-1]
        self.expansions: list[int] = []
        self.left_by: str | None = None
        self.leaving_link: int | None = None
        self.dangling = False
        self.budget = budget
        self.links = 0

    def run(self) -> tuple[GuardCode, str] | None:
        """Walk every component; why the walk had to stop, or None."""
        steps = 0
        while True:
            self._reach_targets()
            if not self.pending:
                return None
            name = self.pending.pop()
            steps += 1
            if steps > self.budget:
                return (
                    GuardCode.PATH_TOO_LONG,
                    f"resolving the path walks more than the limit of {self.budget} "
                    "components, symbolic link targets included",
                )
            if name == "..":
                if self.parts:
                    self.parts.pop()
                    self.exists.pop()
                self._leave()
            elif name not in ("", "."):
                failure = self._step(name)
                if failure is not None:
                    return failure

    def _step(self, name: str) -> tuple[GuardCode, str] | None:
        path = _joined([*self.parts, name])
        try:
            status: os.stat_result | None = _lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            status = None
        except OSError as error:
            return _unresolvable(error)
        if status is None or not stat.S_ISLNK(status.st_mode):
            self._arrive(name, status)
            return None
        self.links += 1
        if self.links > MAX_SYMLINKS:
            return (
                GuardCode.PATH_UNRESOLVABLE,
                f"path goes through more than {MAX_SYMLINKS} symbolic links (a loop)",
            )
        try:
            target = _readlink(path)
        except OSError as error:
            return _unresolvable(error)
        self.expansions.append(len(self.pending))
        if target.startswith("/"):
            self.parts.clear()
            self.exists.clear()
            self._leave()
        self.pending.extend(reversed(target.split("/")))
        return None

    def _arrive(self, name: str, status: os.stat_result | None) -> None:
        self.parts.append(name)
        self.exists.append(status is not None)
        root = next((root for root in self.roots if root.is_at(self.parts, status)), None)
        if root is not None:
            if not self.entered:
                self.left_by = self.leaving_link = None
            self.entered.append(root)

    def _leave(self) -> None:
        """Drop the roots the walk went above; if that was the last, record how it left."""
        was_inside = bool(self.entered)
        while self.entered and len(self.entered[-1].parts) > len(self.parts):
            self.entered.pop()
        if was_inside and not self.entered:
            # Inside a link's target the link is to blame, else the path's own '..'.
            self.left_by = _LINK if self.expansions else _DOTDOT
            self.leaving_link = self.expansions[-1] if self.expansions else None
            self.dangling = False

    def _reach_targets(self) -> None:
        """Close the link expansions whose components are all walked."""
        while self.expansions and len(self.pending) == self.expansions[-1]:
            if self.expansions.pop() == self.leaving_link:
                self.dangling = bool(self.exists) and not self.exists[-1]
                self.leaving_link = None


def _canonical_root(root: str) -> _Root:
    """A configured root, canonical and identified; a configuration error raises here."""
    if not isinstance(root, str) or not os.path.isabs(root):
        raise ValueError(f"root {root!r} is not an absolute path")
    try:
        canonical = os.path.realpath(root, strict=True)
        status = os.stat(canonical)
    except OSError as error:
        raise ValueError(f"root {root!r} cannot be used: {error.strerror}") from error
    if not stat.S_ISDIR(status.st_mode):
        raise ValueError(f"root {root!r} is not a directory")
    parts = tuple(part for part in canonical.split("/") if part)
    return _Root(parts, (status.st_dev, status.st_ino))


def _lexically_normal(start: list[str], names: list[str]) -> list[str]:
    """The absolute components a server that applies ``..`` before links would open."""
    parts = list(start)
    for name in names:
        if name == "..":
            if parts:
                parts.pop()
        elif name not in ("", "."):
            parts.append(name)
    return parts


def _joined(parts: list[str] | tuple[str, ...]) -> str:
    return "/" + "/".join(parts)


def _status(path: str) -> os.stat_result | None:
    """lstat of a resolved path, or None when it does not exist (or no longer does)."""
    try:
        return _lstat(path)
    except OSError:
        return None


def _unresolvable(error: OSError) -> tuple[GuardCode, str]:
    """The refusal for a filesystem error met inside a root, where the guard cannot see on."""
    if error.errno == errno.ENAMETOOLONG:
        return GuardCode.PATH_TOO_LONG, "path has a name longer than the filesystem allows"
    if error.errno in (errno.EACCES, errno.EPERM):
        return (
            GuardCode.PATH_UNRESOLVABLE,
            "path cannot be checked: a directory on it cannot be searched (permission denied)",
        )
    name = errno.errorcode.get(error.errno or 0, "an unknown error")
    return GuardCode.PATH_UNRESOLVABLE, f"path cannot be checked: the filesystem answered {name}"
