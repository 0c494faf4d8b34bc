"""The rule selectors every command that lints takes (``strictmcp lint`` and ``strictmcp
check``): ``--select``, ``--extend-select`` and ``--ignore``, read by
:func:`~strictmcp.lint.rules.select_rules`, so that both run the same rules by default and
accept the same selectors."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from .model import LintRule
from .rules import UnknownRuleError, select_rules

__all__ = ["chosen_rules", "selector_options"]

_Command = TypeVar("_Command", bound=Callable[..., None])


def selector_options(command: _Command) -> _Command:
    """Add ``--select``, ``--extend-select`` and ``--ignore`` to a click command."""
    options = [
        click.option(
            "--select",
            multiple=True,
            metavar="CODES",
            help=(
                "Only these lint rules: codes or code prefixes, comma-separated (SMT1,SMT301), "
                "ALL, or DEFAULT. Default: the rules a user must act on (`strictmcp lint "
                "rules` marks them)."
            ),
        ),
        click.option(
            "--extend-select",
            multiple=True,
            metavar="CODES",
            help="Run these lint rules too (codes or prefixes), on top of --select or the default.",
        ),
        click.option(
            "--ignore",
            multiple=True,
            metavar="CODES",
            help="Skip these lint rules (codes or prefixes).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def chosen_rules(
    select: tuple[str, ...], extend_select: tuple[str, ...], ignore: tuple[str, ...]
) -> tuple[LintRule, ...]:
    """The rules the selectors given leave enabled (the default selection without
    ``--select``); a selector that names no rule is a usage error."""
    try:
        return select_rules(
            _split(select) if select else None, _split(ignore), extend=_split(extend_select)
        )
    except UnknownRuleError as error:
        raise click.UsageError(str(error)) from None


def _split(values: tuple[str, ...]) -> list[str]:
    return [part for value in values for part in value.split(",") if part.strip()]
