"""What ``strictmcp install`` does with each server entry of a client's config, decided as data
before anything is written: :func:`plan` reads the entries and returns a :class:`Plan` (the
gateway policy's text, the client's new entries, a note for each entry left as it is).

Secrets stay in the client's config: every ``env`` value of a gathered server moves into the
one gateway entry's ``env`` under a server-prefixed name (``FILES__API_KEY``) that the
server's ``env_from`` names, and a bearer token of a remote server likewise (``upstream =
{ bearer_env = ... }``). Nothing a server's ``env`` or headers hold is ever printed.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ..guards.secrets import redact
from ..policy import Policy, PolicyError
from .clients import Client

Mode = Literal["gateway", "per-server"]

ENTRY_NAME = "strictmcp"
"""The name of the one entry the gateway is started from (another suffix where it is taken)."""

_NAME = re.compile(r"[^A-Za-z0-9-]")
_NAME_LENGTH = 32
_VARIABLE = re.compile(r"\$\{[^}]*\}")
_STDIO_KEYS = frozenset({"type", "command", "args", "env", "disabled", "disabledTools"})
_REMOTE_KEYS = frozenset({"type", "url", "serverUrl", "headers", "disabled", "disabledTools"})
_HTTP_TYPES = frozenset({"http", "streamable-http", "streamableHttp"})
_PYTHON = re.compile(r"python[0-9.]*(?:\.exe)?", re.IGNORECASE)


@dataclass(frozen=True)
class Decision:
    """What becomes of one entry: ``gather`` (into the gateway policy), ``wrap`` (its command
    run behind ``strictmcp proxy``) or ``keep`` (left as it is, ``note`` saying why)."""

    key: str
    action: Literal["gather", "wrap", "keep"]
    shown: str
    """The entry as the listing shows it: its command line or URL, secrets redacted."""
    note: str = ""
    server: str = ""
    """Its ``[[server]]`` name (gathered entries)."""
    table: dict[str, Any] = field(default_factory=dict)
    moved: tuple[tuple[str, str], ...] = ()
    """(what it was, the gateway entry's variable now holding it) for each value moved."""
    value: Any = None
    """Its new entry (wrapped entries)."""


@dataclass(frozen=True)
class Plan:
    """Everything an install changes, worked out before anything is written."""

    client: Client
    mode: Mode
    decisions: tuple[Decision, ...]
    members: tuple[tuple[str, Any], ...]
    """The servers object afterwards, in order: (name, new value), or (name, None) for an
    entry kept as the file has it."""
    entry_name: str = ""
    """The gateway entry's name (gateway mode, when anything is gathered)."""
    entry: dict[str, Any] = field(default_factory=dict)
    env_names: tuple[str, ...] = ()
    policy_text: str = ""

    @property
    def changed(self) -> tuple[str, ...]:
        """The names of the entries removed (gathered) or rewritten (wrapped)."""
        return tuple(d.key for d in self.decisions if d.action != "keep")

    @property
    def added(self) -> tuple[str, ...]:
        """The names of the entries the install adds."""
        return (self.entry_name,) if self.entry_name else ()


def launcher() -> list[str]:
    """How a client starts this strictmcp, as an absolute command (clients start servers
    from anywhere, often ``/``): the ``strictmcp`` script run now, else this Python with
    ``-m strictmcp``."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if script is not None and script.name in {"strictmcp", "strictmcp.exe"} and script.is_file():
        return [str(script.absolute())]
    return [os.path.abspath(sys.executable), "-m", "strictmcp"]


def behind_strictmcp(entry: Mapping[str, Any]) -> bool:
    """Whether the entry already starts strictmcp (its script, or a Python with ``-m
    strictmcp``)."""
    command = entry.get("command")
    if not isinstance(command, str):
        return False
    name = re.split(r"[\\/]", command)[-1]
    if name in {"strictmcp", "strictmcp.exe"}:
        return True
    args = entry.get("args")
    return (
        bool(_PYTHON.fullmatch(name))
        and isinstance(args, list)
        and args[:2]
        == [
            "-m",
            "strictmcp",
        ]
    )


def plan(
    client: Client,
    servers: list[tuple[str, Any]],
    *,
    mode: Mode,
    policy_path: Path,
    command: list[str],
    source: str,
) -> Plan:
    """What to do with ``servers`` (the client's entries, in file order): gathered behind one
    gateway whose policy is ``policy_path``, or each wrapped (``per-server``). ``command`` is
    how the client starts strictmcp; ``source`` names the config in the policy's header."""
    vscode = client.key == "servers"
    decisions: list[Decision] = []
    names: set[str] = set()
    prefixes: set[str] = set()
    for key, value in servers:
        kept = _unservable(value, mode)
        if kept:
            decisions.append(Decision(key, "keep", _shown(value), note=kept))
            continue
        if mode == "per-server":
            decisions.append(_wrap(key, value, command, vscode=vscode))
            continue
        name = _server_name(key, names)
        decisions.append(_gather(key, value, name, _prefix(name, prefixes)))
    kept_or_wrapped = [d for d in decisions if d.action != "gather"]
    members: list[tuple[str, Any]] = []
    gathered = [d for d in decisions if d.action == "gather"]
    if not gathered:
        members = [(d.key, d.value if d.action == "wrap" else None) for d in decisions]
        return Plan(client, mode, tuple(decisions), tuple(members))
    taken = {d.key for d in kept_or_wrapped}
    entry_name = ENTRY_NAME
    count = 1
    while entry_name in taken:
        count += 1
        entry_name = f"{ENTRY_NAME}-{count}"
    env = {name: value for d in gathered for (name, _), value in _values(d, servers)}
    entry: dict[str, Any] = {"type": "stdio"} if vscode else {}
    entry.update(command=command[0], args=[*command[1:], "gateway", "--policy", str(policy_path)])
    if env:
        entry["env"] = env
    for d in decisions:
        if d.action != "gather":
            members.append((d.key, None))
        elif d is gathered[0]:
            members.append((entry_name, entry))
    text = policy_text([d.table for d in gathered], source=source, entry_name=entry_name)
    _check(text, policy_path)
    return Plan(
        client,
        mode,
        tuple(decisions),
        tuple(members),
        entry_name=entry_name,
        entry=entry,
        env_names=tuple(env),
        policy_text=text,
    )


def _values(
    decision: Decision, servers: list[tuple[str, Any]]
) -> list[tuple[tuple[str, str], str]]:
    """The values moved into the gateway entry's env, each with its new name: taken from the
    entry itself here, so that a :class:`Decision` never holds one."""
    entry = dict(servers)[decision.key]
    values: list[tuple[tuple[str, str], str]] = []
    for origin, name in decision.moved:
        if origin == "bearer token":
            token = _bearer(entry.get("headers"))
            assert token is not None  # _gather moved it only when there was one
            values.append(((name, origin), token))
        else:
            values.append(((name, origin), entry["env"][origin]))
    return values


def _unservable(entry: Any, mode: Mode) -> str:
    """Why the entry is left as it is, or "" when it can be served."""
    if not isinstance(entry, dict):
        return "not an object"
    if behind_strictmcp(entry):
        return "already behind strictmcp"
    if entry.get("disabled") is True:
        return "disabled in the client"
    kind = entry.get("type")
    if kind is not None and not (kind == "stdio" or kind in _HTTP_TYPES or kind == "sse"):
        return "a server type strictmcp does not know"
    if "command" in entry:
        return _unservable_stdio(entry, mode)
    url = entry.get("url", entry.get("serverUrl"))
    if not isinstance(url, str):
        return "neither a command nor a URL"
    if kind == "sse" or urlsplit(url).path.rstrip("/").endswith("/sse"):
        return "a legacy SSE server, which strictmcp does not serve (streamable HTTP only)"
    if mode == "per-server":
        return "" if "headers" not in entry else "its headers cannot be given to the proxy"
    unknown = sorted(set(entry) - _REMOTE_KEYS)
    if unknown:
        return f"its {_keys(unknown)} has no place in the gateway's policy"
    if _VARIABLE.search(url):
        return "its URL holds a ${...} variable, which only the client resolves"
    if redact(url).found or urlsplit(url).password is not None:
        return "its URL holds what looks like a secret, which a policy must not hold"
    headers = entry.get("headers")
    if headers is not None and _bearer(headers) is None:
        return "its headers are not one Authorization: Bearer token, which the gateway can send"
    return _refused({"name": "check", "url": url})


def _unservable_stdio(entry: dict[str, Any], mode: Mode) -> str:
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not command:
        return "its command is not a string"
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        return "its args are not a list of strings"
    env = entry.get("env", {})
    if not isinstance(env, dict) or not all(
        isinstance(value, str) and name and "=" not in name and "\x00" not in name
        for name, value in env.items()
    ):
        return "its env is not a table of variables and strings"
    if mode == "per-server":
        return ""
    unknown = sorted(set(entry) - _STDIO_KEYS)
    if unknown:
        return f"its {_keys(unknown)} has no place in the gateway's policy (try --per-server)"
    if any(_VARIABLE.search(part) for part in (command, *args)):
        return (
            "its command or args hold a ${...} variable, which only the client resolves "
            "(try --per-server)"
        )
    if any(redact(part).found for part in args):
        return "its args hold what looks like a secret, which a policy must not hold"
    excluded = entry.get("disabledTools", [])
    if not isinstance(excluded, list) or not all(isinstance(tool, str) for tool in excluded):
        return "its disabledTools is not a list of names"
    return _refused({"name": "check", "command": [command, *args]})


def _refused(table: dict[str, Any]) -> str:
    """Why the gateway would refuse the server's table, or ""."""
    try:
        Policy.from_dict({"server": [table]})
    except PolicyError as error:
        # Its words after the stand-in table's name: "url must be an https:// URL ...".
        return f"the gateway would refuse it: {str(error).split(': ', 1)[-1]}"
    return ""


def _keys(keys: list[str]) -> str:
    shown = ", ".join(json.dumps(key, ensure_ascii=True)[:40] for key in keys[:3])
    return f"key{'s' if len(keys) > 1 else ''} {shown}"


def _bearer(headers: Any) -> str | None:
    """The token of headers that are exactly ``Authorization: Bearer TOKEN``, else None."""
    if not isinstance(headers, dict) or len(headers) != 1:
        return None
    (name, value), *_ = headers.items()
    if name.lower() != "authorization" or not isinstance(value, str):
        return None
    scheme, _, token = value.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token and "\n" not in token else None


def _server_name(key: str, taken: set[str]) -> str:
    """The entry's name made a ``[[server]]`` name (letters, digits and ``-``, at most 32),
    unique among ``taken`` (to which it is added)."""
    base = _NAME.sub("-", key)[:_NAME_LENGTH] or "server"
    name, count = base, 1
    while name in taken:
        count += 1
        suffix = f"-{count}"
        name = base[: _NAME_LENGTH - len(suffix)] + suffix
    taken.add(name)
    return name


def _prefix(name: str, taken: set[str]) -> str:
    """The prefix of the server's variables in the gateway entry's env (``FILES`` for
    ``files``): upper case, ``_`` for runs of other characters, unique among ``taken``. It
    holds no ``__`` and neither starts nor ends with ``_``, so that ``PREFIX__NAME`` names
    one server's one variable."""
    base = re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_") or "SERVER"
    prefix, count = base, 1
    while prefix in taken:
        count += 1
        prefix = f"{base}_{count}"
    taken.add(prefix)
    return prefix


def _gather(key: str, entry: dict[str, Any], name: str, prefix: str) -> Decision:
    table: dict[str, Any] = {"name": name}
    moved: list[tuple[str, str]] = []
    if "command" in entry:
        table["command"] = [entry["command"], *entry.get("args", [])]
        for variable in entry.get("env", {}):
            moved.append((variable, f"{prefix}__{variable}"))
        if moved:
            table["env_from"] = dict(moved)
    else:
        table["url"] = entry.get("url", entry.get("serverUrl"))
        if _bearer(entry.get("headers")) is not None:
            moved.append(("bearer token", f"{prefix}__BEARER_TOKEN"))
            table["upstream"] = {"bearer_env": moved[-1][1]}
    if entry.get("disabledTools"):
        table["exclude_tools"] = list(entry["disabledTools"])
    note = "" if name == key else f"named {name!r} in the policy"
    return Decision(
        key, "gather", _shown(entry), note=note, server=name, table=table, moved=tuple(moved)
    )


def _wrap(key: str, entry: dict[str, Any], command: list[str], *, vscode: bool) -> Decision:
    value = dict(entry)
    if "command" in entry:
        server = [entry["command"], *entry.get("args", [])]
        value.update(command=command[0], args=[*command[1:], "proxy", "--", *server])
    else:
        url = entry.get("url", entry.get("serverUrl"))
        for remote in ("url", "serverUrl", "type"):
            value.pop(remote, None)
        value.update(command=command[0], args=[*command[1:], "proxy", "--upstream", url])
        if vscode or "type" in entry:
            value = {"type": "stdio", **value}
    return Decision(key, "wrap", _shown(entry), value=value)


def _shown(entry: Any) -> str:
    """The entry's command line or URL, with what looks like a secret redacted."""
    if not isinstance(entry, dict):
        return ""
    if isinstance(entry.get("command"), str):
        args = entry.get("args", [])
        parts = [entry["command"], *(args if isinstance(args, list) else [])]
        text = " ".join(str(part) for part in parts)
    else:
        url = entry.get("url", entry.get("serverUrl"))
        text = str(url) if isinstance(url, str) else ""
        split = urlsplit(text)
        if split.password is not None:
            text = text.replace(split.password, "[redacted]")
    return redact(text).text


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string (JSON's escapes, and DEL escaped, as TOML wants)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    pairs = (f"{toml_string(key)} = {_toml_value(item)}" for key, item in value.items())
    return "{ " + ", ".join(pairs) + " }"


def policy_text(tables: list[dict[str, Any]], *, source: str, entry_name: str) -> str:
    """The gateway policy holding ``tables``."""
    lines = [
        f"# The servers of {source}, gathered by `strictmcp install` for",
        f"# `strictmcp gateway --policy` (the client's entry {json.dumps(entry_name)}).",
        "# No value of their env is here: each is in that entry's env, under the name",
        "# env_from gives. Add [[guard]], [[access]] and the other tables of",
        "# docs/policy.md below; `strictmcp install --undo` restores the client's config.",
    ]
    for table in tables:
        lines += ["", "[[server]]"]
        lines += [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


def _check(text: str, path: Path) -> None:
    """Refuse to write a policy the gateway would not load (a bug here, never the user's)."""
    if sys.version_info >= (3, 11):
        import tomllib  # noqa: PLC0415 - the standard library's from 3.11
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # noqa: PLC0415

    Policy.from_dict(tomllib.loads(text), base=path.parent)
