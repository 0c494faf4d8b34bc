"""One self-contained HTML page, the shape of every report strictmcp writes as HTML
(``check --format html``, ``audit report --format html``): inline CSS, no script, nothing
fetched, so that it renders offline and leaks nothing to anyone when opened.

The caller escapes what goes in the body (:func:`html.escape`); :func:`page` escapes the title.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

BASE_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#1d1d1f;
padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.3em .55em;text-align:center}
thead th{background:#f2f2f5;font-weight:600;font-size:.85em}
pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:.6em;overflow-x:auto;
white-space:pre-wrap;word-break:break-all}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}dt{font-weight:600}
dd{margin:0}.muted{color:#666}
"""
"""The look every report shares; a report adds its own rules after these."""

CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'"
"""Nothing may load and nothing may run: only the page's own styles (and its inline SVG)."""


def page(title: str, body: Iterable[str], *, css: str = "") -> str:
    """The whole page: ``title`` (text) as its title and first heading, then ``body``'s
    parts (HTML, empty ones left out), styled with :data:`BASE_CSS` and ``css``."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        f"<title>{escape(title)}</title><style>{BASE_CSS}{css}</style></head><body>",
        f'<h1 id="title">{escape(title)}</h1>',
        *body,
        "</body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"
