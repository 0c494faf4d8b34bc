"""``strictmcp pin``: record a server's tool definitions in a lock file, or show how they
changed since (``--diff``). A leaf, like the proxy: the lock file's format and the checks
that use it are :mod:`strictmcp.enforce.pins`, shared with ``strictmcp proxy --pin``."""
