"""The assistants whose MCP configs ``strictmcp install`` reads: one :class:`Client` each, where
its documented file is on each system and how that file holds its servers.

Sources (docs/install.md lists them with the dates they were read):

- Claude Desktop: ``claude_desktop_config.json`` in ``~/Library/Application Support/Claude``
  (macOS) or ``%APPDATA%\\Claude`` (Windows); ``mcpServers``. Linux has no official build;
  the community builds read ``$XDG_CONFIG_HOME/Claude`` (``~/.config/Claude``).
- Claude Code: ``~/.claude.json``, whose top-level ``mcpServers`` is the user scope (project
  scope: ``.mcp.json`` at a project's root, given with ``--client-config``).
- Cursor: ``~/.cursor/mcp.json`` (project: ``.cursor/mcp.json``); ``mcpServers``.
- VS Code: ``mcp.json`` in the user profile (``~/.config/Code/User``,
  ``~/Library/Application Support/Code/User``, ``%APPDATA%\\Code\\User``; workspace:
  ``.vscode/mcp.json``); ``servers`` and ``inputs``, read as JSONC like all of VS Code's
  settings files.
- Windsurf: ``~/.codeium/windsurf/mcp_config.json``; ``mcpServers``, ``serverUrl`` for a
  remote server.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def app_data() -> Path:
    """Where each system keeps an application's per-user settings."""
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


@dataclass(frozen=True)
class Client:
    """An assistant and its config file."""

    name: str
    """What ``--client`` calls it."""
    title: str
    key: str
    """The member of the file's top-level object that holds the servers by name."""
    comments: bool
    """Whether the client reads comments and trailing commas (JSONC): elsewhere a file that
    has them is refused, as its client would refuse it."""
    where: Callable[[], Path]
    """Its user-level config file on this system."""

    @property
    def path(self) -> Path:
        """Its user-level config file on this system."""
        return self.where()


CLIENTS = (
    Client(
        "claude-desktop",
        "Claude Desktop",
        "mcpServers",
        comments=False,
        where=lambda: app_data() / "Claude" / "claude_desktop_config.json",
    ),
    Client(
        "claude-code",
        "Claude Code",
        "mcpServers",
        comments=False,
        where=lambda: Path.home() / ".claude.json",
    ),
    Client(
        "cursor",
        "Cursor",
        "mcpServers",
        comments=False,
        where=lambda: Path.home() / ".cursor" / "mcp.json",
    ),
    Client(
        "vscode",
        "VS Code",
        "servers",
        comments=True,
        where=lambda: app_data() / "Code" / "User" / "mcp.json",
    ),
    Client(
        "windsurf",
        "Windsurf",
        "mcpServers",
        comments=False,
        where=lambda: Path.home() / ".codeium" / "windsurf" / "mcp_config.json",
    ),
)
"""Every client ``--client`` names, in the order they are listed."""

BY_NAME = {client.name: client for client in CLIENTS}


def other_client(text_has_servers_key: bool) -> Client:
    """How a file ``--client-config`` names alone is read: VS Code's layout where it has a
    top-level ``servers`` and no ``mcpServers``, else the ``mcpServers`` layout most clients
    share; comments and trailing commas allowed (where the file has them, its client reads
    them; none is ever written)."""
    key = "servers" if text_has_servers_key else "mcpServers"
    return Client("other", "the client", key, comments=True, where=Path.cwd)
