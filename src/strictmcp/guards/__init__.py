"""Guards: what an argument *means*, checked before a tool runs. A schema proves shape, not
safety: a valid string can still be a path out of its root or a URL into the cloud metadata
service. Guards are attached to arguments by a policy, so they protect servers whose code we
do not control."""

from .base import Finding, Guard, not_a_string
from .codes import GuardCode

__all__ = ["Finding", "Guard", "GuardCode", "not_a_string"]
