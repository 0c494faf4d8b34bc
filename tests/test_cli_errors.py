"""Every error a user can cause, made for real with the installed ``strictmcp`` command: a
missing directory, a file that cannot be written, a port another socket holds, a server that
crashes with a traceback, a command that does not exist, a lock file or policy that is wrong.
Each must exit with docs/cli.md's status (2 usage or configuration, 127 a server that cannot
start), print no traceback and no escaped line break, name what is wrong and fit in a few
lines."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

STRICTMCP = str(Path(sys.executable).with_name("strictmcp"))
CRASH = """\
def load_settings():
    raise RuntimeError("settings.toml is missing")

load_settings()
"""
TOOLS = '{"tools": [{"name": "add", "inputSchema": {"type": "object"}}]}'
# The stderr tail shown of a crashed server: its header and at most ten lines.
TAIL_LINES = 11


@dataclass(frozen=True)
class Case:
    """One error: the arguments (``{tmp}`` is a fresh directory, ``{crash}`` a server script
    that crashes, ``{port}`` a port a socket of this test holds), the exit status, the words
    the message must say and the most lines it may take."""

    args: tuple[str, ...]
    status: int
    says: tuple[str, ...]
    lines: int = 2


CRASHED = ("initialize failed", "the server's stderr ended with:", "    RuntimeError: settings")
SERVER_COMMANDS = (("lint",), ("check",), ("pin",), ("policy", "init"))

CASES = {
    "audit-log-in-missing-directory": Case(
        ("proxy", "--audit-log", "{tmp}/no/such/dir/audit.jsonl", "--", "{python}", "{crash}"),
        2,
        ("--audit-log", "audit.jsonl", "No such file or directory", "create its directory"),
    ),
    "listen-on-a-port-in-use": Case(
        ("proxy", "--listen", "127.0.0.1:{port}", "--", "{python}", "{crash}"),
        2,
        ("--listen 127.0.0.1:{port}", "in use", "choose another port"),
    ),
    "listen-workers-on-a-port-in-use": Case(
        ("proxy", "--listen", "127.0.0.1:{port}", "--workers", "2", "--", "{python}", "{crash}"),
        2,
        ("--listen 127.0.0.1:{port}", "in use"),
    ),
    "listen-on-an-unknown-host": Case(
        ("proxy", "--listen", "no-such-host.invalid:0", "--allow-unauthenticated", "--", "x"),
        2,
        ("--listen no-such-host.invalid:0", "no such host name"),
        lines=3,  # the warning about listening without authentication comes first
    ),
    **{
        f"{'-'.join(command)}-server-crashes": Case(
            (*command, "--", "{python}", "{crash}"), 127, CRASHED, lines=1 + TAIL_LINES
        )
        for command in SERVER_COMMANDS
    },
    **{
        f"{'-'.join(command)}-no-such-command": Case(
            (*command, "--", "{tmp}/no-such-server"), 127, ("cannot start", "No such file")
        )
        for command in (*SERVER_COMMANDS, ("proxy",))
    },
    **{
        f"{'-'.join(command)}-not-an-http-url": Case(
            (*command, "--url", "ftp://127.0.0.1/mcp"), 2, ("--url", "http://")
        )
        for command in SERVER_COMMANDS
    },
    "pin-diff-without-a-lock-file": Case(
        ("pin", "--diff", "--lock", "{tmp}/missing.lock.json", "{tools}"),
        2,
        ("--lock", "missing.lock.json", "No such file", "write it first"),
    ),
    "pin-diff-lock-file-not-json": Case(
        ("pin", "--diff", "--lock", "{tools}.bad", "{tools}"),
        2,
        ("--lock", "tools.json.bad", "not valid JSON", "[pin-invalid]"),
    ),
    "pin-lock-file-missing-tools": Case(
        ("pin", "--diff", "--lock", "{tmp}/empty.json", "{tools}"),
        2,
        # A pin error quoting a key, its quotes left as they are (they were \").
        ('the lock file has no "tools" object',),
    ),
    "policy-hygiene-wrong-type": Case(
        ("proxy", "--policy", "{tmp}/type.toml", "--", "x"),
        2,
        ('[[result]] #1: hygiene must be one of "flag", "strip", "off"',),
        lines=5,  # click's usage lines (two for lint's long usage) come first
    ),
    "policy-hygiene-wrong-word": Case(
        ("lint", "--policy", "{tmp}/word.toml", "{tools}"),
        2,
        ('[[result]] #1: hygiene must be one of "flag", "strip", "off"',),
        lines=5,
    ),
}


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port bound and listened on by this test's own socket, for as long as the test."""
    with socket.create_server(("127.0.0.1", 0)) as held:
        yield held.getsockname()[1]


def _files(tmp_path: Path) -> None:
    (tmp_path / "crash.py").write_text(CRASH, encoding="utf-8")
    (tmp_path / "tools.json").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "tools.json.bad").write_text("{not json", encoding="utf-8")
    (tmp_path / "empty.json").write_text('{"version": 1}', encoding="utf-8")
    (tmp_path / "type.toml").write_text("[[result]]\nhygiene = 5\n", encoding="utf-8")
    (tmp_path / "word.toml").write_text('[[result]]\nhygiene = "scrub"\n', encoding="utf-8")


def _run(args: tuple[str, ...], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [STRICTMCP, *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _assert_clear(
    done: subprocess.CompletedProcess[str], status: int, says: tuple[str, ...], lines: int
) -> None:
    err = done.stderr
    assert done.returncode == status, err
    assert "Traceback (most recent call last)" not in err.split("the server's stderr")[0]
    assert "\\n" not in err
    assert '\\"' not in err
    for words in says:
        assert words in err, err
    assert 1 <= len([line for line in err.splitlines() if line.strip()]) <= lines, err


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_error_says_what_and_exits_by_the_scheme(
    name: str, tmp_path: Path, held_port: int
) -> None:
    case = CASES[name]
    _files(tmp_path)

    def fill(text: str) -> str:
        return text.format(
            tmp=tmp_path,
            python=sys.executable,
            crash=tmp_path / "crash.py",
            tools=tmp_path / "tools.json",
            port=held_port,
        )

    done = _run(tuple(fill(arg) for arg in case.args), tmp_path)
    _assert_clear(done, case.status, tuple(fill(words) for words in case.says), case.lines)


def test_a_crashed_servers_traceback_is_shown_as_its_lines(tmp_path: Path) -> None:
    _files(tmp_path)
    done = _run(("lint", "--", sys.executable, str(tmp_path / "crash.py")), tmp_path)
    lines = done.stderr.splitlines()
    header = lines.index("  the server's stderr ended with:")
    assert lines[header + 1 :] == [
        "    Traceback (most recent call last):",
        f'      File "{tmp_path / "crash.py"}", line 4, in <module>',
        "        load_settings()",
        f'      File "{tmp_path / "crash.py"}", line 2, in load_settings',
        '        raise RuntimeError("settings.toml is missing")',
        "    RuntimeError: settings.toml is missing",
    ]


def test_a_long_stderr_is_bounded_and_escaped(tmp_path: Path) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(
        "import sys\n"
        "for n in range(50):\n"
        "    sys.stderr.write(f'line {n} ' + 'x' * 500 + '\\n')\n"
        "sys.stderr.write('colour \\x1b[31m red\\n')\n"
        "sys.exit(4)\n",
        encoding="utf-8",
    )
    done = _run(("pin", "--", sys.executable, str(script)), tmp_path)
    assert done.returncode == 127
    tail = done.stderr.splitlines()[2:]
    assert len(tail) == 10
    assert tail[0].startswith("    line 41 xxx")
    assert tail[0].endswith(" ...")
    assert max(len(line) for line in tail) < 220
    assert tail[-1] == "    colour \\u001b[31m red"
    assert "\x1b" not in done.stderr


@contextlib.contextmanager
def _unwritable(path: Path) -> Iterator[None]:
    """``path``, a file nobody may write: read-only, or for root (who may write a read-only
    file) immutable."""
    path.write_text("", encoding="utf-8")
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], check=False).returncode:
        pytest.skip("as root, a file is unwritable only when immutable (chattr +i)")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)


def test_a_read_only_audit_log_is_a_usage_error(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    with _unwritable(log):
        done = _run(("proxy", "--audit-log", str(log), "--", "x"), tmp_path)
    _assert_clear(done, 2, ("--audit-log", "audit.jsonl", "not writable"), lines=4)
