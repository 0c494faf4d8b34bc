"""Which listed tools a policy keeps from every client, and why: what ``strictmcp lint
--policy`` warns of, so a tool it lints is not taken for one clients will be offered.

Decided by the :class:`~.enforcer.Enforcer` itself, as the proxy runs it (enforce mode): a
tool its listing stage withholds (the policy's ``[listing]`` rules find an error in it), and,
when the policy has ``[[access]]`` rules it enforces, a tool no rule gives to any caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..policy import Policy
from ..protocol import Revision
from .enforcer import Enforcer
from .listing import listing_rules

__all__ = ["HiddenTool", "hidden_tools"]


@dataclass(frozen=True)
class HiddenTool:
    """A listed tool no client is offered: its ``name`` and ``why``, one clause."""

    name: str
    why: str


def hidden_tools(policy: Policy, tools: Sequence[Any], revision: Revision) -> list[HiddenTool]:
    """The tools of a ``tools/list`` result that a proxy running ``policy`` offers no client,
    in listing order. Raises :class:`~strictmcp.lint.UnknownRuleError` when the policy's
    ``[listing]`` rules name no rule, as the proxy does before it starts."""
    enforcer = Enforcer(policy=policy, listing=listing_rules(policy.listing_rules))
    enforcer.check_listing(tools, revision)
    withheld = enforcer.withheld
    hidden: list[HiddenTool] = []
    for tool in tools:
        name = tool.get("name") if isinstance(tool, Mapping) else None
        if not isinstance(name, str):
            continue
        if name in withheld:
            codes = sorted({str(v.rule.value) for v in enforcer.withheld_because(name)})
            hidden.append(HiddenTool(name, f"withheld by its [listing] rules ({', '.join(codes)})"))
        elif enforcer.lists_per_caller and not any(rule.allows(name) for rule in policy.access):
            hidden.append(HiddenTool(name, "given to no caller by its [[access]] rules"))
    return hidden
