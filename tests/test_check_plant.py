"""Planted faults: what ``strictmcp check --policy`` plants for each guard and deep check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strictmcp.check.plant import faults_of, plant
from strictmcp.policy import Policy
from strictmcp.protocol import CheckedTool, Revision, ToolRegistry

SCHEMA = {
    "type": "object",
    "properties": {
        "when": {"type": "string"},
        "short": {"type": "string", "maxLength": 4},
        "files": {"type": "array", "items": {"type": "string"}},
        "query": {"type": "string"},
        "at": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def _tool() -> CheckedTool:
    registry = ToolRegistry(Revision.V2025_06_18)
    registry.update({"tools": [{"name": "job", "inputSchema": SCHEMA}]})
    tool = registry.get("job")
    assert tool is not None
    return tool


def _policy(tmp_path: Path, entries: dict[str, Any]) -> Policy:
    return Policy.from_dict(entries, base=tmp_path)


def test_each_fault_replaces_one_argument_of_the_base(tmp_path: Path) -> None:
    policy = _policy(
        tmp_path,
        {
            "deep": [
                {"tool": "job", "argument": "/when", "kind": "cron", "min_interval_seconds": 600},
                {"tool": "j*", "argument": "/at", "kind": "time", "max_ahead_seconds": 60},
                {"tool": "other", "argument": "/query", "kind": "cron"},
            ]
        },
    )
    base = {"when": "0 6 * * 1", "query": "SELECT 1"}
    cases, notes = plant(_tool(), policy, base)
    assert notes == []
    planted = {(case.pointer, case.fault.code) for case in cases if case.fault is not None}
    assert planted == {
        ("/when", "deep-cron-invalid"),
        ("/when", "deep-cron-too-frequent"),
        ("/at", "deep-time-invalid"),
        ("/at", "deep-time-not-in-future"),
        ("/at", "deep-time-too-far"),
    }
    for case in cases:
        assert case.expect == "fault"
        assert case.kind == "planted"
        assert case.fault is not None
        changed = {k for k in case.arguments if case.arguments[k] != base.get(k)}
        assert changed == {case.pointer[1:]}  # the one argument, the rest as generated
        assert case.arguments[case.pointer[1:]] == case.fault.value
    assert base == {"when": "0 6 * * 1", "query": "SELECT 1"}  # not changed in place
    too_often = next(c.fault for c in cases if c.fault and c.fault.code.endswith("frequent"))
    assert too_often is not None
    assert too_often.warning


def test_a_fault_that_cannot_be_planted_is_a_note(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    policy = _policy(
        tmp_path,
        {
            "guard": [
                # Every path fault is longer than this maxLength.
                {"tool": "job", "argument": "/short", "kind": "path", "roots": ["data"]},
                # Any member of an object the base leaves empty: no value there to replace.
                {"tool": "job", "argument": "/labels/*", "kind": "path", "roots": ["data"]},
                # Through a string: the schema has no such argument.
                {"tool": "job", "argument": "/files/*/name", "kind": "path", "roots": ["data"]},
                # Named for this tool, which has no such argument.
                {"tool": "job", "argument": "/target", "kind": "url"},
            ]
        },
    )
    cases, notes = plant(_tool(), policy, {"files": ["x"], "labels": {}})
    assert cases == []
    assert "a relative path not planted at /short: the inputSchema refuses it" in notes
    assert "a relative path not planted at /labels/*: no single value to replace" in notes
    assert "no fault planted at /files/*/name: the inputSchema declares no such argument" in notes
    assert "no fault planted at /target: the inputSchema declares no such argument" in notes


@pytest.mark.parametrize(
    ("base", "planted"),
    [
        ({"files": ["a", "b"]}, ["FAULT", "b"]),  # the first item replaced, the rest kept
        ({"files": []}, ["FAULT"]),
        ({}, ["FAULT"]),  # the optional array added
    ],
)
def test_faults_are_planted_into_an_item_of_an_array(
    tmp_path: Path, base: dict[str, Any], planted: list[str]
) -> None:
    (tmp_path / "data").mkdir()
    policy = _policy(
        tmp_path,
        {"guard": [{"tool": "j*", "argument": "/files/*", "kind": "path", "roots": ["data"]}]},
    )
    cases, notes = plant(_tool(), policy, base)
    assert notes == []
    assert {case.fault.code for case in cases if case.fault} == {
        "path-outside-roots",
        "path-relative",
    }
    for case in cases:
        assert case.pointer == "/files/0"  # where validate and the proxy report it
        assert case.fault is not None
        assert case.arguments["files"] == [case.fault.value if p == "FAULT" else p for p in planted]


def test_faults_are_planted_into_objects_inside_arrays(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {
            "jobs": {
                "type": "array",
                "items": {"type": "object", "properties": {"when": {"type": "string"}}},
            }
        },
    }
    registry = ToolRegistry(Revision.V2025_06_18)
    registry.update({"tools": [{"name": "batch", "inputSchema": schema}]})
    tool = registry.get("batch")
    assert tool is not None
    policy = _policy(
        tmp_path, {"deep": [{"tool": "*", "argument": "/jobs/*/when", "kind": "cron"}]}
    )
    bases: list[dict[str, Any]] = [
        {"jobs": [{"when": "0 6 * * 1"}, {"when": "0 7 * * 1"}]},
        {"jobs": []},
        {},
    ]
    for base in bases:
        cases, notes = plant(tool, policy, base)
        assert notes == []
        assert [(c.pointer, c.arguments["jobs"][0]["when"]) for c in cases] == [
            ("/jobs/0/when", "61 25 * * *")
        ]


@pytest.mark.parametrize("glob", ["*", "j?b", "[a-z]*"])
def test_a_glob_plants_nothing_into_an_argument_the_tool_lacks(tmp_path: Path, glob: str) -> None:
    (tmp_path / "data").mkdir()
    policy = _policy(
        tmp_path,
        {
            "guard": [
                # The schema would let an extra /path through: a fault there proves nothing.
                {"tool": glob, "argument": "/path", "kind": "path", "roots": ["data"]},
                {"tool": glob, "argument": "/urls/*", "kind": "url"},
            ]
        },
    )
    assert plant(_tool(), policy, {"when": "x"}) == ([], [])


def test_sql_faults_name_a_table_the_guard_beside_allows() -> None:
    policy = Policy.from_dict(
        {
            "guard": [
                {"tool": "job", "argument": "/query", "kind": "sql", "tables": ["orders"]},
            ],
            "deep": [
                {
                    "tool": "job",
                    "argument": "/query",
                    "kind": "sql",
                    "database": "sqlite",
                    "dsn_env": "NO_SUCH_DSN_VARIABLE",
                },
            ],
        }
    )
    cases, _ = plant(_tool(), policy, {})
    by_code = {case.fault.code: case.fault.value for case in cases if case.fault is not None}
    assert by_code["deep-sql-unknown-column"] == "SELECT strictmcp_no_such_column FROM orders"
    assert by_code["sql-not-read-only"] == "DELETE FROM orders"
    assert by_code["deep-sql-unknown-table"] == "SELECT * FROM strictmcp_no_such_table"


def test_kinds_whose_faults_depend_on_the_data_plant_none() -> None:
    policy = Policy.from_dict(
        {"guard": [{"tool": "job", "argument": "/query", "kind": "text", "max_length": 3}]}
    )
    assert faults_of(policy.rules[0].guard) == []
