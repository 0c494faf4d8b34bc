"""Policies: tool globs, argument pointers with wildcards, modes, and loading from TOML."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from strictmcp.guards import GuardCode, GuardFinding
from strictmcp.guards.deep import DeepValidators, error, warning
from strictmcp.guards.policy import GuardRule, Policy, PolicyError, select
from strictmcp.protocol import Severity


@dataclass(frozen=True)
class NoSecrets:
    """A test guard: refuses strings that contain "secret", warns about "maybe"."""

    kind: str = "test"

    def check(self, value: Any) -> list[GuardFinding]:
        if not isinstance(value, str):
            return []
        if "secret" in value:
            return [GuardFinding(GuardCode.TEXT_INVISIBLE_CHARACTER, "looks like a secret")]
        if "maybe" in value:
            return [GuardFinding(GuardCode.TEXT_TOO_LONG, "might be", Severity.WARNING)]
        return []


def policy(tool: str, argument: str, mode: Any = "enforce") -> Policy:
    return Policy(rules=(GuardRule(tool, argument, NoSecrets()),), mode=mode)


@pytest.mark.parametrize(
    ("pattern", "arguments", "expected"),
    [
        ("/path", {"path": "a"}, [("/path", "a")]),
        ("/path", {"other": "a"}, []),
        ("", {"a": 1}, [("", {"a": 1})]),
        (
            "/files/*/path",
            {"files": [{"path": "x"}, {"path": "y"}, {}]},
            [
                ("/files/0/path", "x"),
                ("/files/1/path", "y"),
            ],
        ),
        ("/env/*", {"env": {"A": "1", "B/C": "2"}}, [("/env/A", "1"), ("/env/B~1C", "2")]),
        ("/files/1", {"files": ["a", "b"]}, [("/files/1", "b")]),
        ("/files/5", {"files": ["a"]}, []),
        ("/a~1b", {"a/b": 1}, [("/a~1b", 1)]),
        ("/x/*", {"x": "not a container"}, []),
    ],
)
def test_select_reaches_exactly_what_the_pattern_names(
    pattern: str, arguments: Any, expected: list[tuple[str, Any]]
) -> None:
    assert list(select(arguments, pattern)) == expected


def test_tool_globs_are_case_sensitive_and_anchored() -> None:
    rule = GuardRule("read_*", "/path", NoSecrets())
    assert rule.applies_to("read_file")
    assert not rule.applies_to("READ_FILE")
    assert not rule.applies_to("unread_file")


def test_check_points_into_the_message() -> None:
    found = policy("read_*", "/paths/*").check("read_file", {"paths": ["ok", "my secret"]})
    assert [(v.code, v.pointer, v.severity) for v in found] == [
        ("text-invisible-character", "/params/arguments/paths/1", Severity.ERROR)
    ]
    assert policy("read_*", "/paths/*").check("write_file", {"paths": ["secret"]}) == []


def test_enforce_blocks_errors_audit_blocks_nothing() -> None:
    enforce = policy("*", "/q")
    audit = policy("*", "/q", mode="audit")
    errors = enforce.check("t", {"q": "secret"})
    warnings = enforce.check("t", {"q": "maybe"})
    assert enforce.blocks(errors)
    assert not enforce.blocks(warnings)
    assert not audit.blocks(audit.check("t", {"q": "secret"}))


def test_covers_tells_lint_which_arguments_are_guarded() -> None:
    rules = policy("fetch_*", "/urls/*")
    assert rules.covers("fetch_page", "/urls/0")
    assert not rules.covers("fetch_page", "/url")
    assert not rules.covers("other", "/urls/0")


def test_load_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        'mode = "audit"\n'
        "[[guard]]\n"
        'tool = "read_*"\n'
        'argument = "/path"\n'
        'kind = "path"\n'
        f'roots = ["{tmp_path}"]\n'
        "[[guard]]\n"
        'tool = "*"\n'
        'argument = "/note"\n'
        'kind = "text"\n'
        "max_length = 5\n"
    )
    loaded = Policy.load(path)
    assert loaded.mode == "audit"
    assert [(r.tool, r.argument, r.guard.kind) for r in loaded.rules] == [
        ("read_*", "/path", "path"),
        ("*", "/note", "text"),
    ]
    assert loaded.check("read_file", {"path": str(tmp_path / "x")}) == []
    outside = loaded.check("read_file", {"path": "/etc/passwd"})
    assert [v.code for v in outside] == ["path-outside-roots"]
    assert "/etc/passwd" not in str(outside[0])
    assert [v.code for v in loaded.check("any", {"note": "too long"})] == ["text-too-long"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('mode = "block"', "mode must be"),
        ("colour = 1", "unknown top-level keys: colour"),
        ('[[guard]]\ntool = "x"\nargument = "/a"\nkind = "teleport"', "unknown kind 'teleport'"),
        ('[[guard]]\ntool = "x"\nkind = "text"', "needs string values for: argument"),
        ('[[guard]]\ntool = "x"\nargument = "a"\nkind = "text"', "must be a JSON Pointer"),
        (
            '[[guard]]\ntool = "x"\nargument = "/a"\nkind = "text"\nmax_lenght = 3',
            "#1 (text)",
        ),
        ("guard = 3", "list of [[guard]] tables"),
        ("mode = ", "not valid TOML"),
    ],
)
def test_bad_policies_are_refused_when_loaded(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(PolicyError, match=re.escape(message)):
        Policy.load(path)


def test_missing_policy_file_is_a_policy_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyError, match="cannot read"):
        Policy.load(tmp_path / "absent.toml")


# --- deep validators --------------------------------------------------------------------------


def test_deep_checks_run_for_dry_runs_and_only_opted_in_ones_for_calls() -> None:
    deep = DeepValidators()
    seen: list[str] = []

    @deep("backup")
    def target_exists(arguments: Any) -> list[GuardFinding]:
        seen.append("dry")
        return [error("the backup target does not exist")]

    @deep("backup", on_calls=True)
    async def disk_space(arguments: Any) -> list[Any]:
        seen.append("both")
        return [warning("low disk space"), "plain strings are errors"]

    dry = asyncio.run(deep.run("backup", {"target": "/x"}))
    assert [(v.code, v.severity) for v in dry] == [
        ("deep-invalid", Severity.ERROR),
        ("deep-invalid", Severity.WARNING),
        ("deep-invalid", Severity.ERROR),
    ]
    real = asyncio.run(deep.run("backup", {"target": "/x"}, real_call=True))
    assert len(real) == 2
    assert seen == ["dry", "both", "both"]
    assert "backup" in deep
    assert asyncio.run(deep.run("other", {})) == []


def test_deep_checks_are_bounded_in_time_and_failures_never_leak() -> None:
    deep = DeepValidators(timeout=0.2)

    @deep("slow")
    def sleeps(arguments: Any) -> list[GuardFinding]:
        time.sleep(1)
        return []

    @deep("slow_async")
    async def sleeps_async(arguments: Any) -> list[GuardFinding]:
        await asyncio.sleep(2)
        return []

    @deep("broken")
    def raises(arguments: Any) -> list[GuardFinding]:
        raise RuntimeError(f"bad token {arguments['token']}")

    async def timed(tool: str) -> tuple[list[str], float]:
        # Timed inside the loop: asyncio.run itself waits for the abandoned thread at exit.
        started = time.monotonic()
        found = await deep.run(tool, {})
        return [v.code for v in found], time.monotonic() - started

    for tool in ("slow", "slow_async"):
        codes, elapsed = asyncio.run(timed(tool))
        assert codes == ["deep-timeout"]
        assert elapsed < 0.8
    failed = asyncio.run(deep.run("broken", {"token": "sk-live-xyz"}))
    assert [v.code for v in failed] == ["deep-failed"]
    assert "RuntimeError" in failed[0].message
    assert "sk-live-xyz" not in str(failed[0])


def test_deep_checks_get_a_copy_of_the_arguments() -> None:
    deep = DeepValidators()

    @deep("t")
    def mutates(arguments: Any) -> list[GuardFinding]:
        arguments["items"].append("injected")
        return []

    arguments = {"items": ["a"]}
    asyncio.run(deep.run("t", arguments))
    assert arguments == {"items": ["a"]}


def test_deep_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        DeepValidators(timeout=0)
