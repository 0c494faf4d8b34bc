"""``--format sarif``: lint's SARIF log, with the check's failures and warnings added.

Lint's writer makes the log (its rules and findings, one run); each failing or warning case
becomes a result of a rule per case kind (``check/max-length``), located logically at the
tool and the pointer the case changed.
"""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..lint import to_sarif
from ..lint.sarif import SARIF_SCHEMA_URI, SARIF_VERSION
from .results import CheckReport

_LEVELS = {"fail": "error", "warn": "warning"}


def render_sarif(report: CheckReport) -> str:
    """The report as one SARIF log."""
    if report.lint.report is not None:
        log = to_sarif(report.lint.report)
    else:
        driver = {"name": "strictmcp", "version": __version__, "rules": []}
        log = {
            "$schema": SARIF_SCHEMA_URI,
            "version": SARIF_VERSION,
            "runs": [{"tool": {"driver": driver}, "results": []}],
        }
    run = log["runs"][0]
    rules: list[dict[str, Any]] = run["tool"]["driver"]["rules"]
    known = {rule["id"]: index for index, rule in enumerate(rules)}
    for tool in report.tools:
        for case_result in tool.cases:
            level = _LEVELS.get(case_result.status)
            if level is None:
                continue
            case = case_result.case
            rule_id = f"check/{case.kind}"
            if rule_id not in known:
                known[rule_id] = len(rules)
                rules.append(
                    {
                        "id": rule_id,
                        "name": f"check-{case.kind}",
                        "shortDescription": {"text": f"strictmcp check: {case.kind} cases"},
                    }
                )
            message = f"{tool.name} #{case_result.id} ({case.label}): " + "; ".join(
                case_result.messages
            )
            run["results"].append(
                {
                    "ruleId": rule_id,
                    "ruleIndex": known[rule_id],
                    "level": level,
                    "message": {"text": message},
                    "locations": [
                        {
                            "logicalLocations": [
                                {
                                    "name": tool.name,
                                    "fullyQualifiedName": tool.name + case.pointer,
                                    "kind": "object",
                                }
                            ]
                        }
                    ],
                    "properties": {
                        "case": case_result.id,
                        "arguments": case.arguments,
                        "reproducer": report.reproducer(tool.name),
                    },
                }
            )
    return json.dumps(log, indent=2, ensure_ascii=True) + "\n"
