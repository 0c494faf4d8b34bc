"""What ``strictmcp check`` sends: one generated input for one tool, labelled and expected.

``expect`` says what a correct server does with it: ``valid`` inputs are accepted,
``invalid`` ones (the local engine refuses them) are rejected, and ``suspicious`` ones
(attack strings the schema allows) should be refused when the server has a guard, so
accepting them is only a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Expect = Literal["valid", "invalid", "suspicious"]

VALID = "valid"
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
)
"""Every kind of case, in the order reports show them."""


@dataclass(frozen=True)
class Case:
    """One input for one tool.

    ``pointer`` is where in the arguments the mutation was made (``""`` for a valid case or
    the whole arguments); ``label`` says what was done there, for people.
    """

    kind: str
    pointer: str
    label: str
    arguments: Any
    expect: Expect
