"""The credentials a command (``lint``, ``pin``, ``check``, ``policy``) sends a server at
``--url``, for its command line: cheap to import, the HTTP client loaded only when needed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..policy import UpstreamSettings

if TYPE_CHECKING:
    import httpx2


class CredentialsProblem(ValueError):
    """Credentials a command cannot send; the message (one line) names the option or
    variable, never a value."""


def command_auth(
    url: str | None,
    headers: Sequence[str],
    bearer_env: str | None,
    upstream: UpstreamSettings | None,
) -> httpx2.Auth | None:
    """What :func:`~.upstream.command_credentials` makes of the options, or None with
    neither a URL nor credential options (a file or a stdio server: nothing is imported);
    :class:`CredentialsProblem` when they cannot be sent."""
    if url is None and not headers and bearer_env is None:
        return None
    from .upstream import CredentialsError, command_credentials  # noqa: PLC0415 - HTTP only

    try:
        return command_credentials(headers, bearer_env, upstream, url=url)
    except CredentialsError as error:
        raise CredentialsProblem(str(error)) from None
