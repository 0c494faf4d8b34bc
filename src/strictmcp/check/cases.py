"""What ``strictmcp check`` sends: one generated input for one tool, labelled and expected.

``expect`` says what a correct server does with it: ``valid`` inputs are accepted,
``invalid`` ones (the local engine refuses them) are rejected, ``suspicious`` ones
(attack strings the schema allows) should be refused when the server has a guard, so
accepting them is only a warning, and ``fault`` ones (planted from a policy: the schema
allows them, one of the policy's checks refuses them) must be refused by that check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Expect = Literal["valid", "invalid", "suspicious", "fault"]

VALID = "valid"
PLANTED = "planted"
KINDS = (
    VALID,
    "wrong-type",
    "missing-required",
    "extra-property",
    "max-length",
    "min-length",
    "maximum",
    "minimum",
    "max-items",
    "min-items",
    "pattern",
    "enum",
    "format",
    "attack",
    PLANTED,
)
"""Every kind of case, in the order reports show them."""


@dataclass(frozen=True)
class Fault:
    """A value one check of a policy refuses: ``code`` is that check's finding; ``warning``
    when the check only warns (the call goes ahead, the caller told)."""

    label: str
    value: str
    code: str
    warning: bool = False


@dataclass(frozen=True)
class Case:
    """One input for one tool.

    ``pointer`` is where in the arguments the mutation was made (``""`` for a valid case or
    the whole arguments); ``label`` says what was done there, for people. ``fault`` is
    the planted fault of a ``fault`` case.
    """

    kind: str
    pointer: str
    label: str
    arguments: Any
    expect: Expect
    fault: Fault | None = None
