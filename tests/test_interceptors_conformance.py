"""The MCP interceptors extension's conformance fixtures, replayed by
tests/interceptors_adapter.py: the behaviour fixtures (``relaybleed-*``,
``same-origin-writeback-allowed``, ``no-prior-read-allowed``, ``session-isolation``,
``redaction-*``) through a real ``strictmcp gateway``, the protocol fixtures (``list-*``,
``invoke-*``, ``chain-*``) against strictmcp's interceptor server; the outcome reported per
requirement tag of the suite's manifest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from interceptors_adapter import FIXTURES, replay, replay_protocol, replay_strict_flow

NAMES = sorted(path.name for path in FIXTURES.glob("*.json") if path.name != "manifest.json")
PROTOCOL = sorted(path.name for path in (FIXTURES / "protocol").glob("*.json"))
MANIFEST: dict[str, Any] = json.loads((FIXTURES / "manifest.json").read_text(encoding="utf-8"))


def test_every_behaviour_fixture_is_here() -> None:
    kinds = {name.split("-")[0] for name in NAMES}
    assert kinds == {"no", "redaction", "relaybleed", "same", "session"}
    assert len(NAMES) == 10


@pytest.mark.parametrize("name", NAMES)
def test_behaviour_fixture(name: str, tmp_path: Path) -> None:
    fixture: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    assert fixture["kind"] == "behavior"

    async def run() -> list[str]:
        with anyio.fail_after(120):
            return await replay(fixture, tmp_path)

    failures = anyio.run(run)
    assert failures == [], f"{fixture['id']} [{fixture['requirement']}]: {failures}"


def _protocol(name: str) -> dict[str, Any]:
    fixture: dict[str, Any] = json.loads((FIXTURES / "protocol" / name).read_text("utf-8"))
    assert fixture["kind"] == "protocol"
    return fixture


def test_every_fixture_of_the_manifest_is_here() -> None:
    local = {f"behavior/{n[: -len('.json')]}" for n in NAMES}
    local |= {f"protocol/{n[: -len('.json')]}" for n in PROTOCOL}
    assert {entry["id"] for entry in MANIFEST["fixtures"]} == local
    assert len(PROTOCOL) == 14


@pytest.mark.parametrize("name", PROTOCOL)
def test_protocol_fixture(name: str) -> None:
    fixture = _protocol(name)
    failures = anyio.run(replay_protocol, fixture)
    assert failures == [], f"{fixture['id']} [{fixture['requirement']}]: {failures}"


def test_protocol_compliance_per_requirement() -> None:
    """The suite's report: passed/total per requirement tag, as the manifest names them."""
    report: dict[str, list[int]] = {}
    for entry in MANIFEST["fixtures"]:
        if entry["kind"] != "protocol":
            continue
        fixture = _protocol(entry["file"].rsplit("/", 1)[1])
        passed = anyio.run(replay_protocol, fixture) == []
        tally = report.setdefault(entry["requirement"], [0, 0])
        tally[0] += passed
        tally[1] += 1
    lines = [f"{tag}: {ok}/{total}" for tag, (ok, total) in sorted(report.items())]
    assert all(ok == total for ok, total in report.values()), "\n".join(lines)
    assert len(report) == 11, lines


GUARD_ALONE = [
    name
    for name in NAMES
    if [i["behavior"] for i in json.loads((FIXTURES / name).read_text("utf-8"))["interceptors"]]
    == ["cross-boundary-guard"]
]


def test_the_guard_alone_fixtures_are_the_six() -> None:
    kinds = sorted(name.split("-")[0] for name in GUARD_ALONE)
    assert kinds == ["no", "relaybleed", "relaybleed", "relaybleed", "same", "session"]


@pytest.mark.parametrize("name", GUARD_ALONE)
def test_behaviour_fixture_through_strictmcp_flow_interceptor(name: str) -> None:
    """The guard's behaviour fixtures against ``strictmcp interceptor``'s ``strictmcp/flow``
    too (the redactor's have no interceptor of strictmcp's: they pass through the gateway)."""
    fixture: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    failures = anyio.run(replay_strict_flow, fixture)
    assert failures == [], f"{fixture['id']} [{fixture['requirement']}]: {failures}"
