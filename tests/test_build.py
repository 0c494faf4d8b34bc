"""Which build runs: the compiled per-message path or pure Python, said by `--version`.

`make unit` runs the suite against the compiled build (PYTHONPATH at build/compiled) and the
tests of every compiled module against the pure-Python one, with ``STRICTMCP_BUILD`` naming
the build it means: a run whose imports miss that build fails here, instead of testing the
other build twice.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import strictmcp
from strictmcp.schema import jsonio

EXPECTED = os.environ.get("STRICTMCP_BUILD")


def test_the_build_is_one_of_the_two() -> None:
    assert strictmcp.build() in ("compiled", "pure Python")


@pytest.mark.skipif(EXPECTED is None, reason="STRICTMCP_BUILD is set by `make unit` only")
def test_this_run_imports_the_build_it_means() -> None:
    assert strictmcp.build() == EXPECTED


def test_version_says_which_build_answers() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "strictmcp", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    said = f"strictmcp, version {strictmcp.__version__} ({strictmcp.build()})"
    assert done.stdout.strip() == said


def test_a_compiled_module_is_an_extension_exactly_when_the_build_is_compiled() -> None:
    compiled = not jsonio.__file__.endswith(".py")
    assert compiled == (strictmcp.build() == "compiled")
