"""How a command names the server it talks to: everything after ``--`` is the server's own
command line (``strictmcp lint -- npx server``), taken as it is, never parsed as options; and
the credentials it sends one over HTTP (:func:`credential_options`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

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


_Command = TypeVar("_Command", bound=Callable[..., Any])


def credential_options(command: _Command) -> _Command:
    """``--header NAME:VALUE`` (repeatable; a value that is exactly ``$VAR`` is read from the
    environment, ``$$`` is a ``$``) and ``--bearer-env VAR``: the one option set of every
    command that reads a live server, passed as ``header`` (a tuple) and ``bearer_env``;
    :func:`strictmcp.identity.command_credentials` makes the credentials of them."""
    header = click.option(
        "--header",
        multiple=True,
        metavar="NAME:VALUE",
        help=(
            "With --url: send this header (repeatable). A VALUE that is exactly $VAR is read "
            "from the environment variable VAR, so the secret stays off the command line; $$ "
            "is a literal $."
        ),
    )
    bearer = click.option(
        "--bearer-env",
        metavar="VAR",
        help=(
            "With --url: send Authorization: Bearer and the token in the environment variable VAR."
        ),
    )
    return header(bearer(command))
