"""The transport layer: how strictmcp reaches an MCP server, below every tool that does.

The proxy, ``strictmcp lint``, ``strictmcp check`` and the SDK integrations build on it; it
imports none of them. Its modules:

- :mod:`.upstream`: :class:`~.upstream.Upstream`, one server, one JSON-RPC message per line,
  whatever its transport, and the error codes of a request an upstream failed;
- :mod:`.lines`: lines read with a bound, queued with back-pressure, and write flow control;
- :mod:`.process`: the one place a server process is spawned, and its exit status;
- :mod:`.sse`, :mod:`.http_headers`: server-sent events, and the headers of streamable HTTP
  (the ``_meta`` keys they mirror are :mod:`strictmcp.protocol.wire`'s);
- :mod:`.http_upstream`: a server over streamable HTTP (imports the HTTP client: loaded only
  when used);
- :mod:`.client`: the MCP client that tests servers; :mod:`.paging`: the one pager every
  listing is read with; :mod:`.tool_source`: a server's tools read from a file or a live
  server (``strictmcp lint`` and ``strictmcp pin``).
"""
