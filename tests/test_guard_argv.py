"""ArgvGuard: option injection, control characters and executables, in arguments and vectors."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strictmcp.guards import ArgvGuard, GuardCode, GuardFinding

SECRET = "s3cr3t-Token"

GIT = ArgvGuard(
    allow_options=("--oneline", "-n", "--format"),
    executables=("git", "/usr/bin/ls"),
    first_is_executable=True,
)


def check(guard: ArgvGuard, value: object) -> list[GuardFinding]:
    """The findings, after asserting that no message quotes the planted secret."""
    findings = guard.check(value)
    for finding in findings:
        assert SECRET not in str(finding)
    return findings


def found(guard: ArgvGuard, value: object) -> list[tuple[str, str]]:
    return [(f.code, f.where) for f in check(guard, value)]


@pytest.mark.parametrize(
    "value",
    [
        "file.txt",
        "hello world",
        "",
        "a-b",
        "x=-y",
        "dashes--inside--are-fine",
        "naïve ünïcode",
        "$(not a shell) `either`; | & > <",
    ],
)
def test_ordinary_arguments_pass(value: str) -> None:
    assert check(ArgvGuard(), value) == []
    assert check(ArgvGuard(), [value, value]) == []


@pytest.mark.parametrize(
    "value",
    [
        "--output=/home/u/.bashrc",
        "-oProxyCommand=sh -c id",
        "-rf",
        "--upload-pack=touch /tmp/pwned",
        "-",
        "--",
        "-5",
        f"--password={SECRET}",
    ],
)
def test_option_injection(value: str) -> None:
    findings = check(ArgvGuard(), value)
    assert [(f.code, f.where) for f in findings] == [(GuardCode.ARGV_OPTION_INJECTION, "")]
    if len(value) > 2:  # messages name the lone markers '-' and '--' as what they are
        assert value not in str(findings[0])


def test_allowed_options_match_by_exact_name() -> None:
    guard = ArgvGuard(allow_options=("--output", "-o", "-n"))
    assert check(guard, "--output=report.txt") == []
    assert check(guard, "--output") == []
    assert check(guard, "-n") == []
    assert found(guard, "-oProxyCommand=sh -c id") == [(GuardCode.ARGV_OPTION_INJECTION, "")]
    assert found(guard, "--output-file=x") == [(GuardCode.ARGV_OPTION_INJECTION, "")]
    assert found(guard, "-no") == [(GuardCode.ARGV_OPTION_INJECTION, "")]
    message = guard.check("-x")[0].message
    assert "--output, -o, -n" in message


def test_end_of_options_is_refused_unless_allowed() -> None:
    vector = ["--", "-file-named-like-an-option"]
    assert found(ArgvGuard(), vector) == [
        (GuardCode.ARGV_OPTION_INJECTION, "/0"),
        (GuardCode.ARGV_OPTION_INJECTION, "/1"),
    ]
    guard = ArgvGuard(allow_options=("--",))
    assert check(guard, vector) == []
    # Before the marker, options are still options.
    assert found(guard, ["-x", "--", "-y"]) == [(GuardCode.ARGV_OPTION_INJECTION, "/0")]
    # A single argument is not a vector: a later argument of the server is not an operand.
    assert check(guard, "--") == []
    assert found(guard, "-y") == [(GuardCode.ARGV_OPTION_INJECTION, "")]


def test_a_lone_dash_is_standard_input() -> None:
    findings = check(ArgvGuard(), "-")
    assert "standard input" in findings[0].message
    assert check(ArgvGuard(allow_options=("-",)), "-") == []


@pytest.mark.parametrize(
    ("value", "position"),
    [
        ("a\0b", "2"),
        ("line\nbreak", "5"),
        ("carriage\rreturn", "9"),
        ("tab\there", "4"),
        ("\x1b[31m", "1"),
        ("del\x7f", "4"),
        ("c1\x85", "3"),
        ("surrogate\udc00", "10"),
    ],
)
def test_control_characters(value: str, position: str) -> None:
    findings = check(ArgvGuard(), ["ok", value])
    assert [(f.code, f.where) for f in findings] == [(GuardCode.ARGV_CONTROL_CHARACTER, "/1")]
    assert f"at character {position};" in findings[0].message


def test_an_argument_can_have_both_problems() -> None:
    assert found(ArgvGuard(), f"--{SECRET}\n") == [
        (GuardCode.ARGV_CONTROL_CHARACTER, ""),
        (GuardCode.ARGV_OPTION_INJECTION, ""),
    ]


def test_executables_by_full_string() -> None:
    assert check(GIT, ["git", "log", "--oneline", "-n", "5"]) == []
    assert check(GIT, ["/usr/bin/ls", "docs"]) == []
    assert check(GIT, "git") == []
    for executable in ["sh", "/usr/bin/git", "/tmp/evil/git", "./git", "ls", "", "-git", "GIT"]:
        assert found(GIT, [executable, "status"]) == [
            (GuardCode.ARGV_EXECUTABLE_NOT_ALLOWED, "/0")
        ], executable
    assert found(GIT, "sh") == [(GuardCode.ARGV_EXECUTABLE_NOT_ALLOWED, "")]
    assert "git, /usr/bin/ls" in GIT.check(["sh"])[0].message


def test_executables_by_basename_only_for_bare_names() -> None:
    guard = ArgvGuard(executables=("/usr/bin/git",), first_is_executable=True, match_basename=True)
    assert check(guard, ["git", "status"]) == []
    assert check(guard, ["/usr/bin/git", "status"]) == []
    for executable in ["/tmp/evil/git", "bin/git", "/usr/local/bin/git", "gitk"]:
        assert found(guard, [executable]) == [(GuardCode.ARGV_EXECUTABLE_NOT_ALLOWED, "/0")]


def test_the_executable_is_checked_for_control_characters_too() -> None:
    assert found(GIT, ["git\0", "log"]) == [
        (GuardCode.ARGV_CONTROL_CHARACTER, "/0"),
        (GuardCode.ARGV_EXECUTABLE_NOT_ALLOWED, "/0"),
    ]


def test_arguments_after_the_executable_are_checked() -> None:
    assert found(GIT, ["git", "log", f"--output={SECRET}", "-n", "x\n"]) == [
        (GuardCode.ARGV_OPTION_INJECTION, "/2"),
        (GuardCode.ARGV_CONTROL_CHARACTER, "/4"),
    ]


def test_an_empty_vector_has_no_executable() -> None:
    assert found(GIT, []) == [(GuardCode.ARGV_EXECUTABLE_NOT_ALLOWED, "")]
    assert check(ArgvGuard(), []) == []


@pytest.mark.parametrize("value", [None, 3, {"argv": ["ls"]}, ("ls",), b"ls"])
def test_non_strings_are_reported(value: object) -> None:
    assert found(ArgvGuard(), value) == [(GuardCode.NOT_A_STRING, "")]


def test_non_string_items_are_reported_where_they_are() -> None:
    assert found(GIT, [1, "log", None]) == [
        (GuardCode.NOT_A_STRING, "/0"),
        (GuardCode.NOT_A_STRING, "/2"),
    ]


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"allow_options": ("output",)}, ValueError),
        ({"allow_options": ("--output=x",)}, ValueError),
        ({"allow_options": "--output"}, TypeError),
        ({"executables": ("git",)}, ValueError),
        ({"first_is_executable": True}, ValueError),
        ({"executables": "git", "first_is_executable": True}, TypeError),
        ({"executables": ("",), "first_is_executable": True}, ValueError),
        ({"match_basename": True}, ValueError),
        ({"allow_subcommands": "status"}, TypeError),
        ({"allow_subcommands": ("",)}, ValueError),
        ({"allow_subcommands": ("--version",)}, ValueError),
        ({"operand_schemes": "https"}, TypeError),
        ({"operand_schemes": ("https://",)}, ValueError),
        ({"operand_schemes": ("1http",)}, ValueError),
    ],
)
def test_bad_configuration(options: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        ArgvGuard(**options)  # type: ignore[arg-type]


SUB = ArgvGuard(
    allow_options=("--no-pager", "-c", "--oneline", "--"),
    executables=("git",),
    first_is_executable=True,
    allow_subcommands=("status", "log", "diff"),
    operand_schemes=("https",),
)
S, U, OPT = (
    GuardCode.ARGV_SUBCOMMAND_NOT_ALLOWED,
    GuardCode.ARGV_OPERAND_SCHEME_NOT_ALLOWED,
    GuardCode.ARGV_OPTION_INJECTION,
)


@pytest.mark.parametrize(
    "argv",
    [
        ["git", "status"],
        ["git", "--no-pager", "log", "--oneline"],
        ["git", "log", "HEAD:README", "a:b", "C:/x", "origin/main"],
        ["git", "log", "https://example.com/r.git", "HTTPS://example.com/r.git"],
        ["git", "--", "diff", "--stat"],  # after --, items are operands: diff is the first
    ],
)
def test_allowed_subcommands_and_operands_pass(argv: list[str]) -> None:
    assert check(SUB, argv) == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["git", "config", "core.sshCommand", SECRET], [(S, "/1")]),
        (["git", "Status"], [(S, "/1")]),
        (["git", "status "], [(S, "/1")]),
        (["git", "-c", "core.sshCommand=touch x", "status"], [(S, "/2")]),
        (["git", "--no-pager", "push"], [(S, "/2")]),
        (["git", "--", "config"], [(S, "/2")]),
        (["git"], [(S, "")]),
        (["git", "--no-pager", "--oneline"], [(S, "")]),
        (["git", "--exec-path=/tmp/evil", "status"], [(OPT, "/1")]),
        (["git", "clone", f"ext::sh -c {SECRET}"], [(S, "/1"), (U, "/2")]),
        (["git", "log", "ext::sh -c id"], [(U, "/2")]),
        (["git", "log", "EXT::sh"], [(U, "/2")]),
        (["git", "log", "fd::7"], [(U, "/2")]),
        (["git", "log", "file:///etc/passwd"], [(U, "/2")]),
        (["git", "log", "git+ssh://host/r"], [(U, "/2")]),
        (["git", "log", "https://-oProxyCommand=id/x"], [(U, "/2")]),
        (["git", "--", "log", "ext::sh"], [(U, "/3")]),
    ],
)
def test_subcommands_and_operand_schemes_are_refused(
    argv: list[str], expected: list[tuple[GuardCode, str]]
) -> None:
    assert found(SUB, argv) == expected


def test_subcommands_without_an_executable_and_schemes_alone() -> None:
    # No executable: the first item is the subcommand; a string is a vector of one.
    only = ArgvGuard(allow_subcommands=("status",))
    assert check(only, ["status"]) == []
    assert check(only, "status") == []
    assert found(only, "config") == [(S, "")]
    assert found(only, []) == [(S, "")]
    # Schemes are checked on every operand, with or without subcommands.
    schemes = ArgvGuard(operand_schemes=())
    assert found(schemes, ["https://example.com", "x"]) == [(U, "/0")]
    assert check(schemes, ["plain", "HEAD:file"]) == []
    # Messages name what is allowed, never the argument.
    [finding] = check(SUB, ["git", "config"])
    assert "status, log, diff" in finding.message
    [finding] = check(SUB, ["git", "log", "ext::x"])
    assert "https" in finding.message
    assert "ext" not in finding.message


@settings(max_examples=100)
@given(value=st.one_of(st.text(), st.lists(st.one_of(st.text(), st.integers())), st.none()))
def test_the_guard_never_raises(value: object) -> None:
    for guard in (ArgvGuard(), GIT, SUB):
        assert all(isinstance(finding, GuardFinding) for finding in guard.check(value))


def test_guard_kind() -> None:
    assert ArgvGuard.kind == "argv"
