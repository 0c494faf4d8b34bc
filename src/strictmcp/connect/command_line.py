"""How a command names the server it talks to: everything after ``--`` is the server's own
command line (``strictmcp lint -- npx server``), taken as it is, never parsed as options."""

from __future__ import annotations

from typing import Any

import click

_KEY = "strictmcp.server_command"


class ServerCommand(click.Command):
    """A click command whose arguments after ``--`` are the server's command line; read them
    with :func:`server_command`. ``usage`` is the synopsis shown after ``[OPTIONS]``."""

    def __init__(self, *args: Any, usage: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.usage = usage

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            split = args.index("--")
            ctx.meta[_KEY] = tuple(args[split + 1 :])
            args = args[:split]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        return ["[OPTIONS]", self.usage]


def server_command(ctx: click.Context) -> tuple[str, ...]:
    """The server's command line given after ``--``; empty when there was none."""
    command: tuple[str, ...] = ctx.meta.get(_KEY, ())
    return command
