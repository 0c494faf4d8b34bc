"""``python -m strictmcp``: the ``strictmcp`` command."""

from .cli import main

main(prog_name="strictmcp")
