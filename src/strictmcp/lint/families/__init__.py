"""The rule families, one module each: names, schema, bounds, guards, text, output."""
