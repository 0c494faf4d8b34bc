"""Which build of strictmcp is running: compiled with mypyc, or pure Python.

The package ships both from one source: a wheel built with ``STRICTMCP_COMPILE=1`` has the
modules every message goes through compiled (this one among them), and any other install is
pure Python. A compiled module's file is its extension, not its source.
"""

from __future__ import annotations

COMPILED: bool = not __file__.endswith((".py", ".pyc"))
"""Whether the per-message path runs compiled."""
