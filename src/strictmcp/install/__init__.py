"""``strictmcp install``: an assistant's MCP servers put behind strictmcp, and put back.

A leaf: :mod:`.clients` declares each client's config file and layout, :mod:`.jsonc` reads
JSON and JSONC with the place of every value, :mod:`.plan` decides what becomes of each
server entry, :mod:`.files` writes with a backup and a record, :mod:`.cli` is the command.
"""
