"""Every code block of the docs a reader would copy works as written (docs/README's rule).

Each fenced block of ``docs/*.md`` and ``README.md`` is checked by its language, one test per
block named ``page:line``: a ``toml`` block loads as a policy (the directories its roots name made
first, under a scratch root), a ``json`` block parses (and a client configuration's strictmcp
entry is a command line the command accepts), a ``python`` block compiles (README's run, in
test_readme.py), and every line of a ``sh`` block names commands, subcommands and options that
exist (strictmcp's parsed by the command itself, nothing started; ``bench/`` scripts' options
found in the script; ``make`` targets in the Makefile). ``text`` is output, a diagram or a
synopsis, never run. A block that is deliberately not runnable says so in its fence,
```` ```toml illustration ````, and is only parsed.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest

from strictmcp.cli import main
from strictmcp.policy import Policy

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
RUN = {"toml", "json", "python", "sh", "bash"}
NEVER_RUN = {"text"}
MARKER = "illustration"
FENCE = re.compile(r"^```(?P<language>\S*)(?:[ \t]+(?P<info>.*?))?[ \t]*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it starts (the fence's line), its language and its text."""

    page: Path
    line: int
    language: str
    info: str
    body: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def illustration(self) -> bool:
        return self.info == MARKER


def _read(page: Path) -> list[Block]:
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    opened: tuple[int, re.Match[str]] | None = None
    for number, line in enumerate(lines, start=1):
        if opened is None:
            match = FENCE.match(line)
            if match is not None:
                opened = (number, match)
        elif line == "```":
            start, match = opened
            body = "".join(f"{text}\n" for text in lines[start : number - 1])
            blocks.append(Block(page, start, match["language"], match["info"] or "", body))
            opened = None
    assert opened is None, f"{page.name}:{opened[0]}: a fence is never closed"
    return blocks


BLOCKS = [block for page in PAGES for block in _read(page)]


def _of(*languages: str, illustration: bool = False) -> pytest.MarkDecorator:
    chosen = [
        block
        for block in BLOCKS
        if block.language in languages and block.illustration == illustration
    ]
    return pytest.mark.parametrize("block", chosen, ids=[block.name for block in chosen])


def test_every_fence_names_a_language_this_test_knows() -> None:
    unknown = [
        block.name
        for block in BLOCKS
        if block.language not in RUN | NEVER_RUN or block.info not in ("", MARKER)
    ]
    assert unknown == [], f"fences with no known language or an unknown marker: {unknown}"
    assert len([block for block in BLOCKS if block.language in RUN]) >= 90


def _made_roots(node: Any, scratch: Path) -> None:
    """Every ``roots`` the document names, made again under ``scratch`` (they must exist)."""
    if isinstance(node, list):
        for item in node:
            _made_roots(item, scratch)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "roots" and isinstance(value, list):
                node[key] = [str(scratch / str(root).lstrip("/")) for root in value]
                for root in node[key]:
                    Path(root).mkdir(parents=True, exist_ok=True)
            else:
                _made_roots(value, scratch)


@_of("toml")
def test_a_toml_block_loads_as_a_policy(block: Block, tmp_path: Path) -> None:
    document = tomllib.loads(block.body)
    _made_roots(document, tmp_path)
    Policy.from_dict(document, base=tmp_path)


def _made_paths(command: click.Command, args: list[str], scratch: Path) -> list[str]:
    """ARGS with each file an option says must exist made again under ``scratch``."""
    must_exist = {
        flag: param.type
        for param in command.params
        if isinstance(param, click.Option)
        and isinstance(param.type, click.Path)
        and param.type.exists
        for flag in param.opts
    }
    made = list(args)
    for index, arg in enumerate(made[:-1]):
        if arg == "--":
            break
        kind = must_exist.get(arg)
        if kind is not None:
            path = scratch / made[index + 1].lstrip("/")
            if kind.file_okay:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            else:
                path.mkdir(parents=True, exist_ok=True)
            made[index + 1] = str(path)
    return made


def _strictmcp_accepts(args: list[str], scratch: Path) -> None:
    """Parse ``strictmcp ARGS`` as the command would, down to the subcommand; run nothing."""
    command: click.Command | None = main
    name: str | None = "strictmcp"
    parent: click.Context | None = None
    while isinstance(command, click.Group):
        parent = command.make_context(name, list(args), parent=parent)
        name, command, args = command.resolve_command(parent, args)
    assert command is not None
    assert name is not None
    command.make_context(name, _made_paths(command, args, scratch), parent=parent)


@_of("json")
def test_a_json_block_parses(block: Block, tmp_path: Path) -> None:
    document = json.loads(block.body)
    # A client configuration: a strictmcp entry is a command line strictmcp accepts.
    servers = document.get("mcpServers", {}) if isinstance(document, dict) else {}
    for entry in servers.values():
        if Path(entry.get("command", "")).name == "strictmcp":
            _strictmcp_accepts(entry["args"], tmp_path)


@_of("python")
def test_a_python_block_compiles(block: Block) -> None:
    compile(block.body, block.name, "exec")


def _simple_commands(body: str) -> list[list[str]]:
    """The shell's simple commands, one word list each (pipes, ``&&`` and ``;`` split them)."""
    commands: list[list[str]] = []
    for line in body.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words: list[str] = []
        for word in lexer:
            if word in ("&&", "||", "|", ";"):
                commands.append(words)
                words = []
            else:
                words.append(word)
        commands.append(words)
    # Leading NAME=VALUE words set the environment: the command is what follows.
    return [
        words[next((i for i, w in enumerate(words) if not re.match(r"\w+=", w)), len(words)) :]
        for words in commands
        if words
    ]


def _script_accepts(script: Path, args: list[str]) -> None:
    assert script.is_file(), f"no script {script.relative_to(ROOT)}"
    source = script.read_text(encoding="utf-8")
    unknown = [arg for arg in args if arg.startswith("--") and f'"{arg}"' not in source]
    assert unknown == [], f"{script.name} has no option {unknown}"


@_of("sh", "bash")
def test_every_command_of_a_shell_block_exists(block: Block, tmp_path: Path) -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    here = ROOT
    commands = _simple_commands(block.body)
    assert commands, "an empty shell block"
    for words in commands:
        program, args = Path(words[0]).name, words[1:]
        if program == "cd":
            here = here / args[0]
        elif program == "strictmcp":
            _strictmcp_accepts(args, tmp_path)
        elif program.startswith("python") and args[:2] == ["-m", "strictmcp"]:
            _strictmcp_accepts(args[2:], tmp_path)
        elif program.startswith("python") and args and args[0].endswith(".py"):
            _script_accepts(here / args[0], args[1:])
        elif program == "make":
            for target in args:
                assert re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE), target


@_of("toml", "json", "python", illustration=True)
def test_an_illustration_still_parses_in_its_language(block: Block) -> None:
    if block.language == "toml":
        tomllib.loads(block.body)
    elif block.language == "json":
        json.loads(block.body)
    else:
        compile(block.body, block.name, "exec")
