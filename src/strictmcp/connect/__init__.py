"""The transport layer: how strictmcp reaches an MCP server, below every tool that does.

:class:`~.upstream.Upstream` is one server, one JSON-RPC message per line, whatever its
transport; :mod:`.lines` reads lines with a bound; :mod:`.process` spawns a server (the only
place one is started); :mod:`.sse` reads and writes server-sent events. The proxy, ``lint``
and ``check`` build on these; nothing here knows about them.
"""
