"""``strictmcp check``: a running MCP server tested with generated inputs.

Valid inputs come from each tool's ``inputSchema`` (hypothesis-jsonschema, seeded), invalid
ones from targeted mutations of them, every one confirmed by the local engine. By default no
tool runs (the server's ``validate`` dry-run tool is asked, if it has one); with ``call``
every case is a real call. Layers: :mod:`.generate` and :mod:`.mutate` make inputs,
:mod:`.plan` puts them together per tool, :mod:`.runner` runs them and :mod:`.judge` judges
the answers; :mod:`.results` holds what was found and the ``report_*`` modules render it.
"""

from .cases import KINDS, Case
from .results import CaseResult, CheckReport, ToolReport
from .runner import CheckOptions, run_check

__all__ = ["KINDS", "Case", "CaseResult", "CheckOptions", "CheckReport", "ToolReport", "run_check"]
