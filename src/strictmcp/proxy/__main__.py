"""``python -m strictmcp.proxy [OPTIONS] -- COMMAND [ARGS]...``, the same as ``strictmcp proxy``."""

from .cli import proxy

proxy(prog_name="strictmcp proxy")
