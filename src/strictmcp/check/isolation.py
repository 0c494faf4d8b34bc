"""Hypothesis as ``strictmcp check`` needs it: depending on nothing but the schema and the seed.

Hypothesis mixes in constants it finds in the *local* modules the process has imported (and
caches them under ``.hypothesis/`` in the working directory): the same seed would give other
inputs from a source checkout than from an installed wheel, or inside a test run.
:func:`isolated` hides them while we generate, and so writes nothing to disk either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..extras import needs

with needs("check"):
    from hypothesis.internal.conjecture.providers import CONSTANTS_CACHE, HypothesisProvider
    from hypothesis.internal.constants_ast import Constants


@contextmanager
def isolated() -> Iterator[None]:
    """Generate with Hypothesis's built-in constants only, none from local modules.

    Not thread-safe: it swaps a class attribute for the duration, as generation is
    synchronous. The constants cache is cleared on the way in and out, so that nothing
    computed with or without local constants leaks across.
    """
    original = HypothesisProvider.__dict__["_local_constants"]
    nothing = Constants()
    provider: Any = HypothesisProvider
    provider._local_constants = property(lambda _self: nothing)
    CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        provider._local_constants = original
        CONSTANTS_CACHE.cache.clear()
