"""Policies: tool globs, argument pointers with wildcards, modes, and loading from TOML."""

from __future__ import annotations

import asyncio
import re
import sys
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest

from strictmcp.guards import GuardCode, GuardFinding
from strictmcp.guards.deep import DeepValidators, error, warning
from strictmcp.policy import (
    GuardRule,
    Identity,
    Policy,
    PolicyError,
    guard_kinds,
    select,
)
from strictmcp.policy.kinds import GUARD_OPTIONS
from strictmcp.policy.reference import render_markdown
from strictmcp.policy.tables import TABLES, TOP_KEYS, TOP_OPTIONS, Table
from strictmcp.protocol import Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


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
    # The checks hang far longer than the bound below, so that meeting it says the timeout
    # cut them short, however slow the loaded machine; the thread is let go once timed.
    release = threading.Event()

    @deep("slow")
    def sleeps(arguments: Any) -> list[GuardFinding]:
        release.wait(60)
        return []

    @deep("slow_async")
    async def sleeps_async(arguments: Any) -> list[GuardFinding]:
        await asyncio.sleep(60)
        return []

    @deep("broken")
    def raises(arguments: Any) -> list[GuardFinding]:
        raise RuntimeError(f"bad token {arguments['token']}")

    async def timed(tool: str) -> tuple[list[str], float]:
        # Timed inside the loop: asyncio.run itself waits for the abandoned thread at exit.
        started = time.monotonic()
        found = await deep.run(tool, {})
        elapsed = time.monotonic() - started
        release.set()
        return [v.code for v in found], elapsed

    for tool in ("slow", "slow_async"):
        codes, elapsed = asyncio.run(timed(tool))
        assert codes == ["deep-timeout"]
        assert elapsed < 30
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


# --- the policy file's format: one owner, every key checked -----------------------------------

ENTRY = 'tool = "x"\nargument = "/a"\n'
KIND_ENTRIES = {
    "argv": 'kind = "argv"\n',
    "path": 'kind = "path"\nroots = ["/srv"]\n',
    "sql": 'kind = "sql"\n',
    "text": 'kind = "text"\n',
    "url": 'kind = "url"\n',
}


@pytest.mark.parametrize("kind", sorted(KIND_ENTRIES))
def test_each_kind_loads_and_refuses_an_unknown_key_naming_the_table(kind: str) -> None:
    entry = "[[guard]]\n" + ENTRY + KIND_ENTRIES[kind]
    assert [rule.guard.kind for rule in Policy.from_dict(tomllib.loads(entry)).rules] == [kind]
    with pytest.raises(PolicyError) as refused:
        Policy.from_dict(tomllib.loads(entry + "colour = 1\n"))
    assert str(refused.value).startswith(f"[[guard]] #1 ({kind}): unknown keys: colour (known: ")


def test_python_only_guard_parameters_are_not_policy_options() -> None:
    entry = "[[guard]]\n" + ENTRY + KIND_ENTRIES["url"] + 'resolver = "x"\n'
    with pytest.raises(PolicyError, match=re.escape("[[guard]] #1 (url): unknown keys: resolver")):
        Policy.from_dict(tomllib.loads(entry))


def test_the_option_table_covers_every_configurable_field_of_every_guard() -> None:
    # The resolver is Python's alone; the allowed flags are the policy's top-level key, one
    # list for every text check.
    not_per_entry = {"url": {"resolver"}, "text": {"allow_subdivision_flags"}}
    assert set(GUARD_OPTIONS) == set(guard_kinds())
    for kind, factory in guard_kinds().items():
        assert isinstance(factory, type)
        configurable = {f.name for f in fields(factory) if f.init}
        assert set(GUARD_OPTIONS[kind]) == configurable - not_per_entry.get(kind, set()), kind


@pytest.mark.parametrize(
    ("kind", "option", "message"),
    [
        ("path", 'roots = "/srv"', "roots must be an array of strings"),
        ("path", 'entry = "socket"', 'entry must be one of "any", "file", "dir"'),
        # A wrong type for a key with choices names the choices too: they are what to write.
        ("path", "entry = 5", 'entry must be one of "any", "file", "dir"'),
        ("path", 'entry = ["file"]', 'entry must be one of "any", "file", "dir"'),
        ("path", "must_exist = 1", "must_exist must be a boolean"),
        ("url", "allow_ports = [443, true]", "allow_ports must be an array of integers"),
        ("url", 'hosts = ["a", 1]', "hosts must be an array of strings"),
        ("text", "max_length = true", "max_length must be an integer"),
        ("text", 'max_length = "5"', "max_length must be an integer"),
        ("sql", "dialect = 5", "dialect must be a string"),
        ("argv", 'first_is_executable = "yes"', "first_is_executable must be a boolean"),
    ],
)
def test_options_of_the_wrong_type_are_refused(kind: str, option: str, message: str) -> None:
    entry = "[[guard]]\n" + ENTRY + KIND_ENTRIES[kind] + option + "\n"
    if kind == "path" and option.startswith("roots"):
        entry = "[[guard]]\n" + ENTRY + 'kind = "path"\n' + option + "\n"
    with pytest.raises(PolicyError, match=re.escape(f"[[guard]] #1 ({kind}): {message}")):
        Policy.from_dict(tomllib.loads(entry))


def test_a_required_option_left_out_is_named() -> None:
    entry = "[[guard]]\n" + ENTRY + 'kind = "path"\n'
    with pytest.raises(PolicyError, match=re.escape("[[guard]] #1 (path): missing options: roots")):
        Policy.from_dict(tomllib.loads(entry))


def test_an_unknown_top_level_table_is_named_with_the_known_ones() -> None:
    with pytest.raises(PolicyError, match=re.escape("unknown top-level keys: output (known: ")):
        Policy.from_dict({"output": {}})


def test_the_example_in_docs_policy_md_loads(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "policy.md").read_text()
    blocks = re.findall(r"^```toml\n(.*?)^```$", page, flags=re.MULTILINE | re.DOTALL)
    assert blocks, "docs/policy.md has no ```toml example"
    data = tomllib.loads(blocks[0])
    # A path guard's roots must exist: the example's are made again under tmp_path.
    for entry in [*data["guard"], *data["deep"]]:
        if entry["kind"] == "path":
            entry["roots"] = [str(tmp_path / root.lstrip("/")) for root in entry["roots"]]
            for root in entry["roots"]:
                Path(root).mkdir(parents=True, exist_ok=True)
    example = Policy.from_dict(data)
    assert example.mode == "enforce"
    assert {rule.guard.kind for rule in example.rules} == set(guard_kinds())
    assert {rule.guard.kind for rule in example.deep} == {"sql", "path", "cron", "time", "url"}


def test_relative_roots_are_read_from_the_policy_file_directory(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    file = tmp_path / "policy.toml"
    file.write_text('[[guard]]\ntool = "*"\nargument = "/p"\nkind = "path"\nroots = ["data"]\n')
    [rule] = Policy.load(file).rules
    assert rule.guard.check(str(tmp_path / "data" / "x")) == []
    assert rule.guard.check(str(tmp_path / "x")) != []
    entry = {"tool": "*", "argument": "/p", "kind": "path", "roots": ["data"]}
    with pytest.raises(PolicyError, match="not an absolute path"):
        Policy.from_dict({"guard": [entry]})


# ---------------------------------------------------------------------------------------------
# Settings that name the caller's claims


def _tenant_policy(tmp_path: Path, *, deep: bool = False) -> Policy:
    section = "deep" if deep else "guard"
    text = (
        f'[[{section}]]\ntool = "read"\nargument = "/path"\nkind = "path"\n'
        'roots = ["tenants/{claim.tenant}"]\nmust_exist = true\n'
        + ("on_calls = true\n" if deep else "")
    )
    (tmp_path / "policy.toml").write_text(text, encoding="utf-8")
    return Policy.load(tmp_path / "policy.toml")


def test_a_root_per_tenant_is_built_from_the_callers_claim(tmp_path: Path) -> None:
    for tenant in ("acme", "globex"):
        (tmp_path / "tenants" / tenant).mkdir(parents=True)
        (tmp_path / "tenants" / tenant / "f").write_text("x", encoding="utf-8")
    policy = _tenant_policy(tmp_path)
    acme = Identity("alice", claims={"tenant": "acme"})
    globex = Identity("bob", claims={"tenant": "globex"})
    mine = {"path": str(tmp_path / "tenants/acme/f")}
    assert policy.check("read", mine, identity=acme) == []
    assert [v.code for v in policy.check("read", mine, identity=globex)] == ["path-outside-roots"]
    # Built for acme again after globex: a guard per value, never one caller's for another.
    assert policy.check("read", mine, identity=acme) == []

    def codes(identity: Identity | None) -> list[str]:
        return [v.code for v in policy.check("read", mine, identity=identity)]

    assert codes(None) == ["identity-claim-missing"]
    assert codes(Identity("carol")) == ["identity-claim-missing"]
    assert codes(Identity("carol", claims={"tenant": ["acme"]})) == ["identity-claim-missing"]
    for hostile in ("", ".", "..", "a/b", "acme/../globex", "a\x00", "-rf", ".hidden", "*", "a..b"):
        assert codes(Identity("eve", claims={"tenant": hostile})) == ["identity-claim-unsafe"]
    # A tenant whose root does not exist (yet): refused, and tried again on the next call.
    assert codes(Identity("dan", claims={"tenant": "initech"})) == ["identity-guard-unusable"]
    (tmp_path / "tenants" / "initech").mkdir()
    assert codes(Identity("dan", claims={"tenant": "initech"})) == ["path-outside-roots"]
    # An argument the pointer does not reach is not checked, with or without the claim.
    assert policy.check("read", {}, identity=None) == []


def test_a_deep_check_per_tenant(tmp_path: Path) -> None:
    (tmp_path / "tenants" / "acme").mkdir(parents=True)
    policy = _tenant_policy(tmp_path, deep=True)
    arguments = {"path": str(tmp_path / "tenants/acme")}

    def codes(identity: Identity | None) -> list[str]:
        found = asyncio.run(policy.check_deep("read", arguments, identity=identity))
        return [v.code for v in found]

    assert codes(Identity("alice", claims={"tenant": "acme"})) == []
    assert codes(Identity("bob", claims={"tenant": "../x"})) == ["identity-claim-unsafe"]
    assert codes(None) == ["identity-claim-missing"]


def test_a_fixed_identity_has_claims_for_guard_settings(tmp_path: Path) -> None:
    (tmp_path / "tenants" / "acme").mkdir(parents=True)
    text = (
        '[identity]\nsubject = "ci"\nclaims = { tenant = "acme" }\n'
        '[[guard]]\ntool = "*"\nargument = "/path"\nkind = "path"\n'
        'roots = ["tenants/{claim.tenant}", "tenants/{claim.sub}"]\n'
    )
    (tmp_path / "ci").mkdir()
    (tmp_path / "tenants" / "ci").mkdir()
    (tmp_path / "policy.toml").write_text(text, encoding="utf-8")
    policy = Policy.load(tmp_path / "policy.toml")
    assert policy.identity is not None
    assert dict(policy.identity.claims) == {"sub": "ci", "tenant": "acme"}
    inside = {"path": str(tmp_path / "tenants/ci/x")}
    assert policy.check("t", inside, identity=policy.identity) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('roots = ["/srv/{claim.}"]', "placeholder is malformed"),
        ('roots = ["/srv/{claim.a/b}"]', "placeholder is malformed"),
        ('roots = ["/srv/{claim.tenant"]', "placeholder is malformed"),
        ('roots = ["/srv/x"]\nentry = "{claim.kind}"', "entry must be one of"),
        ('roots = ["/srv/{claim.t}"]\nmax_length = 0', "max_length"),
    ],
)
def test_bad_placeholders_and_settings_are_refused_when_loaded(text: str, message: str) -> None:
    entry = tomllib.loads(f'tool = "t"\nargument = "/p"\nkind = "path"\n{text}')
    with pytest.raises(PolicyError, match=message):
        Policy.from_dict({"guard": [entry]})


def test_identity_claims_must_be_a_table_of_strings() -> None:
    with pytest.raises(PolicyError, match="claims must be a table of strings"):
        Policy.from_dict({"identity": {"subject": "x", "claims": {"tenant": 3}}})


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            '[[guard]]\nmethod = "resources/list"\nargument = "/cursor"\nkind = "text"',
            'method must be one of "tools/call", "completion/complete"',
        ),
        (
            '[[guard]]\nmethod = "resources/read"\ntool = "x"\nargument = "/uri"\nkind = "text"',
            'tool only for method = "tools/call"',
        ),
        ('[[guard]]\nmethod = "prompts/get"\nkind = "text"', "needs string values for: argument"),
        ('[[guard]]\nargument = "/a"\nkind = "text"', "needs string values for: tool"),
        (
            '[[deep]]\nmethod = "resources/read"\ntool = "*"\nargument = "/uri"\nkind = "cron"',
            "unknown keys: method",
        ),
        ('[[result]]\nhygiene = "strip"', "missing options: tool"),
        (
            '[[result]]\nmethod = "resources/read"\ntool = "x"\nlabel = true',
            'tool, label only for method = "tools/call"',
        ),
        ('[[result]]\nmethod = "tools/list"', "method must be one of"),
    ],
)
def test_a_method_is_one_the_policy_knows_and_fits_its_entry(entry: str, message: str) -> None:
    with pytest.raises(PolicyError, match=re.escape(message)):
        Policy.from_dict(tomllib.loads(entry))


def test_a_guard_on_a_request_never_checks_tool_calls(tmp_path: Path) -> None:
    policy = Policy.from_dict(
        {
            "guard": [
                {"method": "prompts/get", "argument": "/arguments/*", "kind": "text"},
                {"tool": "*", "argument": "/a", "kind": "text", "max_length": 1},
            ]
        }
    )
    assert policy.guarded_methods() == {"prompts/get"}
    assert [v.pointer for v in policy.check("t", {"a": "\u202e"})] == ["/params/arguments/a"]
    assert not policy.covers("t", "/arguments/*")
    found = policy.check_request("prompts/get", {"arguments": {"x": "\u202e", "y": "ok"}})
    assert [(v.code, v.pointer) for v in found] == [("text-bidi-control", "/params/arguments/x")]
    assert policy.check_request("resources/read", {"uri": "\u202e"}) == []


@pytest.mark.parametrize(
    ("uri", "codes"),
    [
        ("file:///etc/passwd", ["path-outside-roots"]),
        ("file:///%65tc/passwd", ["path-outside-roots"]),
        ("file://localhost/etc/passwd", ["path-outside-roots"]),
        ("file:/etc/passwd", ["path-outside-roots"]),
        ("file:etc/passwd", ["path-relative"]),
        ("file://LOCALHOST{root}/a", []),
        ("file://{root}/a", []),
        ("file://{root}/%61", []),
        ("file://{root}/%00", ["path-nul"]),
        ("file://{root}/%5C..%5C..", ["path-windows-syntax"]),
        ("file://{root}/%2F..", ["path-uri-invalid"]),
        ("file://{root}/%FF", ["path-uri-invalid"]),
        ("file://{root}/a#x", ["path-uri-invalid"]),
        ("file://host/{root}/a", ["path-uri-invalid"]),
        ("file://{root}/a b", ["url-invalid"]),
        ("file://{root}/a\u200b", ["url-invalid"]),
        ("mem://notes", ["url-scheme-not-allowed"]),
        ("/etc/passwd", ["path-outside-roots"]),
        ("{root}/a", []),
    ],
)
def test_a_resource_uri_meets_a_path_guard_as_servers_read_it(
    tmp_path: Path, uri: str, codes: list[str]
) -> None:
    entry = {"method": "resources/read", "argument": "/uri", "kind": "path"}
    policy = Policy.from_dict({"guard": [{**entry, "roots": [str(tmp_path)]}]})
    found = policy.check_request("resources/read", {"uri": uri.format(root=tmp_path)})
    assert [v.code for v in found] == codes
    assert all(v.pointer == "/params/uri" for v in found)


def test_a_file_uri_is_checked_as_written_and_decoded(tmp_path: Path) -> None:
    # "%2e%2e" is a name as written, and ".." decoded: either way it must stay inside.
    (tmp_path / "root").mkdir()
    entry = {"method": "resources/read", "argument": "/uri", "kind": "path"}
    policy = Policy.from_dict({"guard": [{**entry, "roots": [str(tmp_path / "root")]}]})
    uri = f"file://{tmp_path}/root/%2e%2e/x"
    assert [v.code for v in policy.check_request("resources/read", {"uri": uri})] == [
        "path-outside-roots"
    ]


def test_path_and_url_guards_on_a_uri_take_their_own_schemes(tmp_path: Path) -> None:
    entry = {"method": "resources/read", "argument": "/uri"}
    path = {**entry, "kind": "path", "roots": [str(tmp_path)]}
    url = {**entry, "kind": "url", "hosts": ["docs.example.com"], "resolve": False}
    both = Policy.from_dict({"guard": [path, url]})
    urls_only = Policy.from_dict({"guard": [url]})

    def codes(policy: Policy, uri: str) -> list[str]:
        return [v.code for v in policy.check_request("resources/read", {"uri": uri})]

    assert codes(both, f"file://{tmp_path}/a") == []
    assert codes(both, "https://docs.example.com/a") == []
    assert codes(both, "https://other.example.com/a") == ["url-host-not-allowed"]
    # Without a path guard, a file: URI is the url guard's, which allows https only.
    assert "url-scheme-not-allowed" in codes(urls_only, f"file://{tmp_path}/a")
    assert codes(urls_only, "/etc/passwd") == ["url-invalid"]


REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "policy-reference.md"


def test_the_reference_page_is_generated_from_the_table_registry() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == render_markdown(), (
        "docs/policy-reference.md is out of date: "
        "python -m strictmcp.policy.reference > docs/policy-reference.md"
    )


def test_every_field_of_a_policy_is_one_table_or_top_level_key_of_the_registry() -> None:
    declared = [table.policy_field for table in TABLES] + list(TOP_OPTIONS)
    assert sorted(declared) == sorted(f.name for f in fields(Policy))
    assert tuple(sorted([*TOP_OPTIONS, *(table.name for table in TABLES)])) == TOP_KEYS


def test_every_table_and_key_of_the_registry_is_in_docs_policy_md() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "policy.md").read_text()
    for table in TABLES:
        assert f"`{table.header}`" in page, table.header
        options = [table.options, *table.kinds.values()]
        missing = [name for keys in options for name in keys if f"`{name}`" not in page]
        assert not missing, (table.header, missing)


@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.name)
def test_a_table_of_the_registry_refuses_an_unknown_key_and_names_the_known_ones(
    table: Table,
) -> None:
    entry: dict[str, Any] = {"colour": 1}
    if table.kinds:
        entry |= {"tool": "t", "argument": "/a", "kind": next(iter(table.kinds))}
    value = [entry] if table.array else entry
    where = f"{table.header} #1" if table.array else table.header
    with pytest.raises(PolicyError) as refused:
        Policy.from_dict({table.name: value})
    message = str(refused.value)
    assert message.startswith(where)
    assert "unknown keys: colour (known: " in message
    assert all(name in message.split("known: ")[1] for name in table.options)
