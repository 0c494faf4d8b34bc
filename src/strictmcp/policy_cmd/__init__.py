"""The ``strictmcp policy`` command: ``init`` writes a starting policy for a server's tools,
``check`` says what is wrong with one. A leaf, like the proxy and ``check``."""
