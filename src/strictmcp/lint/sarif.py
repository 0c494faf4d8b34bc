"""SARIF 2.1.0 output, for GitHub code scanning and other SARIF viewers.

One run, with every enabled rule described in ``tool.driver.rules`` (the rule's summary,
its *why* as ``fullDescription`` and its *fix* as ``help``) and one result per finding. A
finding in a file is located physically (the file, relative to the working directory, and the
line of its JSON Pointer when it can be mapped) and logically (the tool's name and the
pointer); a finding on a live server only logically.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from .. import __version__
from .locate import PointerIndex
from .model import LintFinding, LintRule
from .report import LintReport

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA_URI = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
_FINGERPRINT = "strictmcpFinding/v1"


def to_sarif(
    report: LintReport,
    *,
    artifact_uri: str | None = None,
    index: PointerIndex | None = None,
    prefixes: Sequence[str] = (),
) -> dict[str, Any]:
    """The report as one SARIF log.

    ``artifact_uri`` is the linted file (a relative URI where possible); ``index`` maps
    pointers in its text to lines, and ``prefixes[i]`` is where tool ``i`` sits in the file
    (``/tools/3``). Leave them out for a live server.
    """
    positions = {rule.code: i for i, rule in enumerate(report.rules)}
    results = [
        _result(finding, positions, artifact_uri, index, prefixes) for finding in report.findings
    ]
    driver: dict[str, Any] = {
        "name": "strictmcp",
        "semanticVersion": __version__,
        "version": __version__,
        "rules": [_descriptor(rule) for rule in report.rules],
    }
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "columnKind": "utf16CodeUnits",
        "properties": {"mcpRevision": report.revision.value},
        "results": results,
    }
    return {"$schema": SARIF_SCHEMA_URI, "version": SARIF_VERSION, "runs": [run]}


def _descriptor(rule: LintRule) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        "help": {"text": rule.fix},
        "defaultConfiguration": {"level": rule.severity.sarif},
        "properties": {"tags": ["mcp", rule.family]},
    }


def _result(
    finding: LintFinding,
    positions: dict[str, int],
    artifact_uri: str | None,
    index: PointerIndex | None,
    prefixes: Sequence[str],
) -> dict[str, Any]:
    tool = finding.tool if finding.tool is not None else f"#{finding.tool_index}"
    location: dict[str, Any] = {}
    if artifact_uri is not None:
        physical: dict[str, Any] = {"artifactLocation": {"uri": artifact_uri}}
        if index is not None and finding.tool_index < len(prefixes):
            found = index.position(prefixes[finding.tool_index] + finding.pointer)
            if found is not None:
                physical["region"] = {"startLine": found[0], "startColumn": found[1]}
        location["physicalLocation"] = physical
    location["logicalLocations"] = [
        {"name": tool, "fullyQualifiedName": tool + finding.pointer, "kind": "object"}
    ]
    identity = "\x00".join((finding.code, tool, finding.pointer))
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "level": finding.severity.sarif,
        "message": {"text": finding.message},
        "locations": [location],
        "partialFingerprints": {
            _FINGERPRINT: hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()
        },
    }
    if finding.code in positions:
        result["ruleIndex"] = positions[finding.code]
    return result
