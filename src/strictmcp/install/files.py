"""Reading a client's config, and writing it with a backup and a record beside it so that
``strictmcp install --undo`` can put it back.

Beside ``FILE`` an install leaves ``FILE.strictmcp-backup`` (the file's bytes before, private
to the user: it holds what the file held) and ``FILE.strictmcp-install.json`` (no value of the
file: the SHA-256 of what was written, the names of the entries changed and added, the
policy). Every write goes through a temporary file in the same directory and one rename, so a
client never reads half a file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .clients import Client
from .jsonc import JsoncError, Member, Node, member_indent, member_text, parse, replace_object
from .jsonc import has_comment as _has_comment

BACKUP_SUFFIX = ".strictmcp-backup"
RECORD_SUFFIX = ".strictmcp-install.json"
_RECORD_VERSION = 1


class InstallError(Exception):
    """Why nothing was changed: one or two lines naming the file or entry and the fix."""


@dataclass(frozen=True)
class Config:
    """A client's config as read: its bytes, its text and where its servers are."""

    path: Path
    client: Client
    data: bytes
    text: str
    root: Node
    servers: Node | None
    """The servers object (None: the file has none)."""

    @property
    def entries(self) -> list[tuple[str, Any]]:
        """The server entries, in file order."""
        return [(m.name, m.node.value) for m in self.servers.members] if self.servers else []

    def member_names(self) -> set[str]:
        """The names of the server entries."""
        return {m.name for m in self.servers.members} if self.servers else set()

    def member(self, name: str) -> Member | None:
        """The server entry ``name`` as the file has it."""
        return self.servers.member(name) if self.servers else None


def read(path: Path, client: Client) -> Config:
    """The config at ``path``; :class:`InstallError` where it cannot be read or parsed as its
    client reads it (nothing is changed then)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InstallError(
            f"{path}: no such file ({client.title}'s config); give the file with --client-config"
        ) from None
    except OSError as error:
        raise InstallError(f"{path}: cannot be read ({error.strerror})") from None
    return parse_config(path, client, data)


def parse_config(path: Path, client: Client, data: bytes) -> Config:
    """``data`` (the bytes of ``path``) as a config of ``client``."""
    kind = "JSON with comments" if client.comments else "JSON"
    try:
        text = data.decode("utf-8")
        root = parse(text, comments=client.comments)
    except UnicodeDecodeError:
        raise InstallError(f"{path}: not UTF-8; left untouched") from None
    except JsoncError as error:
        raise InstallError(
            f"{path}: not valid {kind} ({error}); left untouched: "
            f"fix it as {client.title} would read it, then run install again"
        ) from None
    if not isinstance(root.value, dict):
        raise InstallError(f"{path}: not a JSON object; left untouched")
    found = root.member(client.key)
    servers = found.node if found is not None else None
    if servers is not None and not isinstance(servers.value, dict):
        raise InstallError(f"{path}: {client.key} is not an object; left untouched")
    if servers is not None:
        names = [member.name for member in servers.members]
        if len(names) != len(set(names)):
            raise InstallError(
                f"{path}: {client.key} names a server twice; left untouched: remove one"
            )
    return Config(path, client, data, text, root, servers)


def kept(config: Config, name: str) -> str:
    """The entry ``name`` as ``config``'s text has it (``"name": value``)."""
    member = config.member(name)
    assert member is not None  # only entries the config has are kept
    return config.text[member.start : member.end]


def rewritten(config: Config, members: list[str | tuple[str, Any]]) -> str:
    """The config's text with its servers object made of ``members``: each an entry's text
    as :func:`kept` gives it, or (name, value) for a new one. Outside the servers object the
    text is kept as it is."""
    if config.servers is None:
        raise InstallError(f"{config.path}: no {config.client.key} to change")
    indent = member_indent(config.text, config.servers)
    texts = [m if isinstance(m, str) else member_text(m[0], m[1], indent) for m in members]
    return replace_object(config.text, config.servers, texts)


def loses_comments(config: Config) -> bool:
    """Whether a rewrite of the servers object drops comments: those between its entries
    (comments inside an entry kept stay with it)."""
    if config.servers is None:
        return False
    spans = tuple((m.start, m.end) for m in config.servers.members)
    return _has_comment(config.text, config.servers.start, config.servers.end, skip=spans)


def digest(data: bytes) -> str:
    """The SHA-256 of ``data``, in hex."""
    return hashlib.sha256(data).hexdigest()


def write_atomic(
    path: Path, data: bytes, *, mode: int | None = None, exclusive: bool = False
) -> None:
    """Write ``data`` to ``path`` through a temporary file and one rename (``mode``: its
    permissions; else the file's own, where it exists). ``exclusive``: refuse a file that
    exists (FileExistsError)."""
    if mode is None:
        with contextlib.suppress(OSError):
            mode = stat.S_IMODE(path.stat().st_mode)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        if mode is not None:
            os.chmod(temporary, mode)
        if exclusive:
            os.link(temporary, path)
            os.unlink(temporary)
        else:
            os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def backup_path(path: Path) -> Path:
    """Where the install keeps ``path``'s bytes from before."""
    return path.with_name(path.name + BACKUP_SUFFIX)


def record_path(path: Path) -> Path:
    """Where the install keeps its record of ``path``."""
    return path.with_name(path.name + RECORD_SUFFIX)


@dataclass(frozen=True)
class Record:
    """What an install changed in one config, for ``--undo``."""

    client: str
    written: str
    """The SHA-256 of the config as the install wrote it."""
    changed: tuple[str, ...]
    added: tuple[str, ...]
    policy: str
    """The policy written (an absolute path), or ""."""
    policy_digest: str

    def save(self, path: Path) -> None:
        """Write the record of ``path``."""
        data = {"version": _RECORD_VERSION, **self.__dict__}
        data["changed"], data["added"] = list(self.changed), list(self.added)
        text = json.dumps(data, indent=2) + "\n"
        write_atomic(record_path(path), text.encode(), mode=0o600)

    @classmethod
    def load(cls, path: Path) -> Record | None:
        """The record of ``path``, or None where there is none; :class:`InstallError` where
        it cannot be read."""
        where = record_path(path)
        try:
            data = json.loads(where.read_text(encoding="utf-8"))
            return cls(
                client=str(data["client"]),
                written=str(data["written"]),
                changed=tuple(str(name) for name in data["changed"]),
                added=tuple(str(name) for name in data["added"]),
                policy=str(data["policy"]),
                policy_digest=str(data["policy_digest"]),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError):
            raise InstallError(f"{where}: not a record strictmcp install can read") from None


def differences(before: Any, after: Any, pointer: str = "") -> list[str]:
    """Where ``after`` differs from ``before``, as JSON Pointers marked ``+`` (only after),
    ``-`` (only before) or ``~`` (changed): names, never values."""
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[str] = []
        for key in [*before, *(key for key in after if key not in before)]:
            here = pointer + "/" + key.replace("~", "~0").replace("/", "~1")
            if key not in after:
                found.append(f"- {here}")
            elif key not in before:
                found.append(f"+ {here}")
            else:
                found += differences(before[key], after[key], here)
        return found
    return [] if before == after else [f"~ {pointer or '/'}"]
