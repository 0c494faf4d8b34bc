"""MCP servers the proxy tests put strictmcp's proxy in front of."""
