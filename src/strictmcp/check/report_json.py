"""``--format json``: :meth:`CheckReport.to_dict`, the stable shape, as one document."""

from __future__ import annotations

import json

from .results import CheckReport


def render_json(report: CheckReport) -> str:
    """The report as JSON; ASCII only, so attack strings stay visible as escapes."""
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=True) + "\n"
