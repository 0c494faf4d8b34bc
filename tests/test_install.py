"""``strictmcp install``: each client's sample config (comments and trailing commas where its
format allows them) installed with ``--dry-run``, for real, started as its client would start
it (the official SDK's stdio client reading the rewritten entry, in front of copies of
tests/proxy_fixtures/gateway_server.py) and undone.

HOME, XDG_CONFIG_HOME and APPDATA point into a temporary directory in every test, so no
real config of this machine is read or touched.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner, Result
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from strictmcp.cli import main
from strictmcp.install import clients
from strictmcp.install.jsonc import JsoncError, parse
from strictmcp.policy import Policy

FIXTURE = Path(__file__).resolve().parent / "proxy_fixtures" / "gateway_server.py"
SECRETS = ("s3cret-files-value", "s3cret-notes-value", "tok3n-remote-value")
_SECONDS = 60.0


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own: every client's documented file is looked for under it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.setenv("APPDATA", str(home / "AppData" / "Roaming"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


def server(tmp_path: Path, name: str) -> list[str]:
    """A copy of the fixture server, as a config's command and args."""
    folder = tmp_path / "servers"
    folder.mkdir(exist_ok=True)
    copy = folder / f"{name}_server.py"
    shutil.copy(FIXTURE, copy)
    return [sys.executable, str(copy), name]


def stdio(command: list[str], **env: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": command[0], "args": command[1:]}
    if env:
        entry["env"] = env
    return entry


def j(value: Any) -> str:
    return json.dumps(value)


def samples(tmp_path: Path) -> dict[str, str]:
    """Each client's config as its users write them: two stdio servers whose env names the
    same variable, and each client's own extras."""
    files = server(tmp_path, "files")
    notes = server(tmp_path, "notes")
    files_env = {"GW_SECRET": SECRETS[0], "GW_PLAIN": "plain-files"}
    notes_env = {"GW_SECRET": SECRETS[1]}
    remote = {
        "url": "https://tickets.example/mcp",
        "headers": {"Authorization": f"Bearer {SECRETS[2]}"},
    }
    return {
        "claude-desktop": (
            '{\n  "globalShortcut": "Ctrl+Space",\n  "mcpServers": {\n'
            f'    "files": {j(stdio(files, **files_env))},\n'
            f'    "notes": {j(stdio(notes, **notes_env))}\n'
            "  }\n}\n"
        ),
        "claude-code": j(
            {
                "numStartups": 41,
                "projects": {
                    "/work/app": {"mcpServers": {"local": {"command": "x"}}, "allowedTools": []}
                },
                "mcpServers": {
                    "files": {"type": "stdio", **stdio(files, **files_env)},
                    "notes": {"type": "stdio", **stdio(notes, **notes_env)},
                    "tickets": {"type": "http", **remote},
                    "old": {"type": "sse", "url": "https://old.example/sse"},
                },
                "userID": "abc",
            }
        ),
        "cursor": (
            '{\n\t"mcpServers": {\n'
            f'\t\t"files": {j(stdio(files, **files_env))},\n'
            f'\t\t"tickets": {j(remote)},\n'
            f'\t\t"notes": {j(stdio(notes, **notes_env))}\n'
            "\t}\n}\n"
        ),
        "vscode": (
            "// Servers for the agent\n{\n"
            '  "inputs": [\n'
            '    {"type": "promptString", "id": "files-key", "description": "Key",'
            ' "password": true},\n'
            "  ],\n"
            '  "servers": {\n'
            "    // reads the project's files\n"
            '    "files": {\n'
            '      "type": "stdio",\n'
            f'      "command": {j(files[0])},\n'
            f'      "args": {j(files[1:])}, // one root\n'
            "      /* the key comes from the prompt */\n"
            '      "env": {"GW_SECRET": "${input:files-key}", "GW_PLAIN": "plain-files",},\n'
            "    },\n"
            f'    "notes": {{"type": "stdio", "command": {j(notes[0])}, "args": {j(notes[1:])},'
            f' "env": {j(notes_env)}}},\n'
            "  },\n"
            "}\n"
        ),
        "windsurf": (
            '{\n  "mcpServers": {\n'
            f'    "files": {j({**stdio(files, **files_env), "disabledTools": ["crash"]})},\n'
            f'    "notes": {j(stdio(notes, **notes_env))},\n'
            '    "figma": {"serverUrl": "https://figma.example/sse"}\n'
            "  }\n}\n"
        ),
    }


CLIENT_NAMES = ("claude-desktop", "claude-code", "cursor", "vscode", "windsurf")


def place(home: Path, tmp_path: Path, client: str) -> Path:
    path = clients.BY_NAME[client].path
    assert home in path.parents
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(samples(tmp_path)[client], encoding="utf-8")
    return path


def run(*args: str) -> Result:
    result = CliRunner().invoke(main, ["install", *args])
    for secret in SECRETS:
        assert secret not in result.output, result.output
    return result


def leftovers(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name and p.is_file())


def entries(path: Path, key: str, *, comments: bool) -> dict[str, Any]:
    servers: dict[str, Any] = parse(path.read_text(encoding="utf-8"), comments=comments).value[key]
    return servers


def call_tools(entry: dict[str, Any], inputs: dict[str, str] | None = None) -> dict[str, str]:
    """Start the entry as its client would (the official SDK's stdio client with the entry's
    command, args and env; VS Code's ``${input:...}`` resolved first, as VS Code does) and
    call each server's ``env`` tool through it."""
    env = dict(entry.get("env", {}))
    for name, value in env.items():
        resolved = value
        for input_id, answer in (inputs or {}).items():
            resolved = resolved.replace(f"${{input:{input_id}}}", answer)
        env[name] = resolved
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd="/")
    answers: dict[str, str] = {}

    async def session() -> None:
        with anyio.fail_after(_SECONDS), open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as client,
            ):
                await client.initialize()
                tools = sorted(tool.name for tool in (await client.list_tools()).tools)
                answers["tools"] = " ".join(tools)
                for tool in tools:
                    if tool.endswith("env"):
                        result = await client.call_tool(tool, {})
                        answers[tool] = "".join(getattr(c, "text", "") for c in result.content)

    anyio.run(session)
    return answers


# The documented files ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        (
            "linux",
            {
                "claude-desktop": ".config/Claude/claude_desktop_config.json",
                "vscode": ".config/Code/User/mcp.json",
            },
        ),
        (
            "darwin",
            {
                "claude-desktop": "Library/Application Support/Claude/claude_desktop_config.json",
                "vscode": "Library/Application Support/Code/User/mcp.json",
            },
        ),
        (
            "win32",
            {
                "claude-desktop": "AppData/Roaming/Claude/claude_desktop_config.json",
                "vscode": "AppData/Roaming/Code/User/mcp.json",
            },
        ),
    ],
)
def test_each_client_file_is_where_its_documentation_says(
    home: Path, monkeypatch: pytest.MonkeyPatch, platform: str, expected: dict[str, str]
) -> None:
    monkeypatch.setattr(sys, "platform", platform)
    same_everywhere = {
        "claude-code": ".claude.json",
        "cursor": ".cursor/mcp.json",
        "windsurf": ".codeium/windsurf/mcp_config.json",
    }
    for name, relative in {**expected, **same_everywhere}.items():
        assert clients.BY_NAME[name].path == home / relative, name
    assert [c.name for c in clients.CLIENTS if c.comments] == ["vscode"]
    assert clients.BY_NAME["vscode"].key == "servers"


def test_xdg_config_home_is_followed_on_linux(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert clients.BY_NAME["vscode"].path == tmp_path / "xdg" / "Code" / "User" / "mcp.json"


# Dry run, install, a client started from the result, undo ------------------------------------


@pytest.mark.parametrize("client", CLIENT_NAMES)
def test_dry_run_prints_the_change_and_writes_nothing(
    home: Path, tmp_path: Path, client: str
) -> None:
    path = place(home, tmp_path, client)
    before = path.read_bytes()
    result = run("--client", client, "--dry-run")
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == before
    assert leftovers(path) == []
    assert not (home / ".config" / "strictmcp").exists()
    assert "Would write the policy" in result.output
    assert "[[server]]" in result.output
    assert 'name = "files"' in result.output
    assert "FILES__GW_SECRET" in result.output
    assert "Dry run: nothing written." in result.output


def check_policy(policy_path: Path, gateway: dict[str, Any], client: str) -> dict[str, Any]:
    """The policy's servers by name, each env value named by env_from and held by the
    client's entry under its server's prefix."""
    policy = Policy.load(policy_path)
    by_name = {s.name: s for s in policy.servers}
    assert dict(by_name["files"].env_from) == {
        "GW_SECRET": "FILES__GW_SECRET",
        "GW_PLAIN": "FILES__GW_PLAIN",
    }
    assert dict(by_name["notes"].env_from) == {"GW_SECRET": "NOTES__GW_SECRET"}
    assert by_name["files"].env == ()
    assert gateway["env"]["NOTES__GW_SECRET"] == SECRETS[1]
    if client == "vscode":
        assert gateway["type"] == "stdio"
        assert gateway["env"]["FILES__GW_SECRET"] == "${input:files-key}"  # VS Code resolves it
    else:
        assert gateway["env"]["FILES__GW_SECRET"] == SECRETS[0]
    if client == "windsurf":
        assert by_name["files"].exclude_tools == ("crash",)
    return by_name


@pytest.mark.parametrize("client", CLIENT_NAMES)
def test_install_gathers_every_server_and_its_client_reaches_them(
    home: Path, tmp_path: Path, client: str
) -> None:
    path = place(home, tmp_path, client)
    before = path.read_bytes()
    spec = clients.BY_NAME[client]
    result = run("--client", client)
    assert result.exit_code == 0, result.output

    servers = entries(path, spec.key, comments=spec.comments)
    gateway = servers["strictmcp"]
    assert "files" not in servers
    assert "notes" not in servers
    assert gateway["command"] == sys.executable  # absolute: clients start servers from /
    policy_path = Path(gateway["args"][-1])
    assert gateway["args"] == ["-m", "strictmcp", "gateway", "--policy", str(policy_path)]
    assert policy_path == home / ".config" / "strictmcp" / f"{client}-gateway.toml"
    # Secrets stay out of the policy: in the client's entry, under server-prefixed names.
    policy_text = policy_path.read_text(encoding="utf-8")
    for secret in SECRETS:
        assert secret not in policy_text
    by_name = check_policy(policy_path, gateway, client)
    if "tickets" in by_name:
        assert by_name["tickets"].url == "https://tickets.example/mcp"
        assert by_name["tickets"].upstream is not None
        assert by_name["tickets"].upstream.bearer_env == "TICKETS__BEARER_TOKEN"
        assert gateway["env"]["TICKETS__BEARER_TOKEN"] == SECRETS[2]
        del gateway["env"]["TICKETS__BEARER_TOKEN"]
        # That server is not reachable from here: started without it, as the client would be.
        policy_path.write_text(
            policy_text.replace(
                'url = "https://tickets.example/mcp"', 'command = ["true"]'
            ).replace('upstream = { "bearer_env" = "TICKETS__BEARER_TOKEN" }', ""),
            encoding="utf-8",
        )

    # The client starts the rewritten entry: each server has its own GW_SECRET.
    answers = call_tools(gateway, inputs={"files-key": SECRETS[0]})
    assert "files__echo" in answers["tools"]
    assert "notes__echo" in answers["tools"]
    # Each server its own secret (tests/test_gateway.py proves no server inherits another's).
    assert answers["files__env"] == f"plain=plain-files secret={SECRETS[0]} seen="
    assert answers["notes__env"] == f"plain=None secret={SECRETS[1]} seen="
    if client == "windsurf":
        assert "files__crash" not in answers["tools"]
        assert "notes__crash" in answers["tools"]
    if "tickets" in by_name:
        policy_path.write_text(policy_text, encoding="utf-8")

    # Backup and record beside the config, private; the record holds no value.
    backup = path.with_name(path.name + ".strictmcp-backup")
    record = path.with_name(path.name + ".strictmcp-install.json")
    assert backup.read_bytes() == before
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    for secret in SECRETS:
        assert secret not in record.read_text(encoding="utf-8")

    undone = run("--client", client, "--undo")
    assert undone.exit_code == 0, undone.output
    assert "byte for byte" in undone.output
    assert path.read_bytes() == before
    assert leftovers(path) == []
    assert not policy_path.exists()


def test_vscode_rewrite_keeps_the_file_around_its_servers(home: Path, tmp_path: Path) -> None:
    path = place(home, tmp_path, "vscode")
    result = run("--client", "vscode")
    assert result.exit_code == 0, result.output
    text = path.read_text(encoding="utf-8")
    assert text.startswith('// Servers for the agent\n{\n  "inputs": [\n')
    assert '"password": true},\n  ],' in text  # its trailing comma too
    assert "Comments between the entries of servers are not kept" in result.output
    assert parse(text, comments=True).value["inputs"][0]["id"] == "files-key"


def test_claude_code_keeps_every_other_key(home: Path, tmp_path: Path) -> None:
    path = place(home, tmp_path, "claude-code")
    before = json.loads(path.read_text(encoding="utf-8"))
    result = run("--client", "claude-code")
    assert result.exit_code == 0, result.output
    after = json.loads(path.read_text(encoding="utf-8"))
    assert {k: v for k, v in after.items() if k != "mcpServers"} == {
        k: v for k, v in before.items() if k != "mcpServers"
    }
    assert list(after["mcpServers"]) == ["strictmcp", "old"]
    assert after["mcpServers"]["old"] == before["mcpServers"]["old"]
    assert "a legacy SSE server" in result.output
    assert "1 local-scope entries under projects.*.mcpServers are left" in result.output


def test_per_server_wraps_each_entry_in_the_proxy(home: Path, tmp_path: Path) -> None:
    path = place(home, tmp_path, "claude-desktop")
    result = run("--client", "claude-desktop", "--per-server")
    assert result.exit_code == 0, result.output
    servers = entries(path, "mcpServers", comments=False)
    assert list(servers) == ["files", "notes"]
    files = servers["files"]
    assert files["command"] == sys.executable
    assert files["args"][:4] == ["-m", "strictmcp", "proxy", "--"]
    assert files["env"]["GW_SECRET"] == SECRETS[0]  # the server's own env, where it was
    assert not (home / ".config" / "strictmcp").exists()  # no policy
    answers = call_tools(files)
    assert "echo" in answers["tools"].split()
    assert "validate" in answers["tools"].split()  # strictmcp's own: the proxy is in front
    assert answers["env"].startswith(f"plain=plain-files secret={SECRETS[0]} seen=")
    again = run("--client", "claude-desktop", "--per-server")
    assert again.exit_code == 0
    assert "Nothing to change." in again.output
    assert run("--client", "claude-desktop", "--undo").exit_code == 0
    assert entries(path, "mcpServers", comments=False)["files"]["args"][1] == "files"


def test_per_server_keeps_what_only_the_client_resolves(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "project" / ".vscode" / "mcp.json"
    config.parent.mkdir(parents=True)
    files = server(tmp_path, "files")
    entry = {"type": "stdio", "command": files[0], "args": ["${workspaceFolder}/x"], "cwd": "/x"}
    config.write_text(j({"servers": {"ws": entry}}), encoding="utf-8")
    gathered = run("--client-config", str(config), "--dry-run")
    assert (
        'its key "cwd" has no place in the gateway\'s policy (try --per-server)' in gathered.output
    )
    assert "Nothing to change." in gathered.output
    result = run("--client-config", str(config), "--per-server")
    assert result.exit_code == 0, result.output
    wrapped = entries(config, "servers", comments=True)["ws"]
    assert wrapped["args"][-2:] == [files[0], "${workspaceFolder}/x"]
    assert wrapped["cwd"] == "/x"
    assert wrapped["type"] == "stdio"


# Idempotence, entries left alone, configs refused --------------------------------------------


def test_a_second_install_changes_nothing(home: Path, tmp_path: Path) -> None:
    path = place(home, tmp_path, "cursor")
    assert run("--client", "cursor").exit_code == 0
    after = path.read_bytes()
    again = run("--client", "cursor")
    assert again.exit_code == 0, again.output
    assert "already behind strictmcp" in again.output
    assert "Nothing to change." in again.output
    assert path.read_bytes() == after


def test_a_new_server_after_an_install_asks_for_undo_first(home: Path, tmp_path: Path) -> None:
    path = place(home, tmp_path, "claude-desktop")
    assert run("--client", "claude-desktop").exit_code == 0
    data = json.loads(path.read_text(encoding="utf-8"))
    data["mcpServers"]["extra"] = stdio(server(tmp_path, "extra"))
    path.write_text(json.dumps(data), encoding="utf-8")
    changed = path.read_bytes()
    result = run("--client", "claude-desktop")
    assert result.exit_code == 2
    assert "run `strictmcp install --undo` first" in result.output
    assert path.read_bytes() == changed


@pytest.mark.parametrize(
    ("entry", "note"),
    [
        ({"type": "sse", "url": "https://x.example/events"}, "legacy SSE"),
        ({"serverUrl": "https://x.example/sse"}, "legacy SSE"),
        ({"url": "https://x.example/mcp", "headers": {"X-Key": "k"}}, "not one Authorization"),
        ({"url": "http://10.1.2.3/mcp"}, "the gateway would refuse it"),
        ({"url": "https://u:pw@x.example/mcp"}, "looks like a secret"),
        ({"url": "https://x.example/${env:PATH}"}, "only the client resolves"),
        ({"command": "srv", "cwd": "/srv"}, 'its key "cwd" has no place'),
        ({"command": "srv", "envFile": "/srv/.env"}, 'its key "envFile" has no place'),
        ({"command": "srv", "args": ["${workspaceFolder}"]}, "only the client resolves"),
        ({"command": "srv", "args": ["--token", "ghp_" + "a" * 36]}, "looks like a secret"),
        ({"command": "srv", "args": [1, 2]}, "not a list of strings"),
        ({"command": "srv", "env": {"A": 1}}, "not a table of variables"),
        ({"command": "srv", "disabled": True}, "disabled in the client"),
        ({"command": "/opt/bin/strictmcp", "args": ["proxy", "--", "srv"]}, "already behind"),
        ({"command": "python3", "args": ["-m", "strictmcp", "gateway"]}, "already behind"),
        ({"type": "websocket", "url": "wss://x"}, "a server type strictmcp does not know"),
        ({"nothing": True}, "neither a command nor a URL"),
        ("not an object", "not an object"),
    ],
)
def test_entries_it_cannot_serve_are_kept_with_a_note(
    home: Path, tmp_path: Path, entry: Any, note: str
) -> None:
    config = tmp_path / "mcp.json"
    served = stdio(server(tmp_path, "files"), GW_SECRET=SECRETS[0])
    config.write_text(j({"mcpServers": {"odd": entry, "files": served}}), encoding="utf-8")
    result = run("--client-config", str(config))
    assert result.exit_code == 0, result.output
    assert note in result.output
    servers = entries(config, "mcpServers", comments=False)
    assert servers["odd"] == entry
    assert "files" not in servers
    assert "odd" not in (config.parent / "mcp.strictmcp.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("client", "text", "expected"),
    [
        ("claude-desktop", '{"mcpServers": {"a": {"command": "x"}},}', "line 1, column 40"),
        ("claude-desktop", '// mine\n{"mcpServers": {}}', "line 1, column 1"),
        ("cursor", '{"mcpServers": {"a": {"command": "x",}}}', "not valid JSON"),
        ("windsurf", '{"mcpServers": {"a": {"command": "x"}} /* c */}', "not valid JSON"),
        ("vscode", '{"servers": {"a": {"command": "x"}', "not valid JSON with comments"),
        ("vscode", '{"servers": {"a": 1 /* open', "end of the comment"),
        ("vscode", "[1, 2]", "not a JSON object"),
        ("vscode", '{"servers": [1]}', "servers is not an object"),
        ("vscode", '{"servers": {"a": {"command": "x"}, "a": {"command": "y"}}}', "twice"),
        ("cursor", '{"mcpServers": {"a": {"command": "x"}}}\n{}', "the end of the file"),
        ("cursor", "[" * 300 + "]" * 300, "nested"),
    ],
)
def test_a_config_it_cannot_parse_is_left_untouched(
    home: Path, client: str, text: str, expected: str
) -> None:
    path = clients.BY_NAME[client].path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    result = run("--client", client)
    assert result.exit_code == 2
    assert expected in result.output
    assert "left untouched" in result.output
    assert result.output.count("\n") <= 2
    assert path.read_text(encoding="utf-8") == text
    assert leftovers(path) == []


def test_a_config_that_is_not_utf8_or_absent_is_refused(home: Path) -> None:
    missing = run("--client", "windsurf")
    assert missing.exit_code == 2
    assert "no such file" in missing.output
    path = clients.BY_NAME["windsurf"].path
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"mcpServers": {"\xff": {}}}')
    result = run("--client", "windsurf")
    assert result.exit_code == 2
    assert "not UTF-8" in result.output


def test_no_client_lists_the_clients_files(home: Path, tmp_path: Path) -> None:
    place(home, tmp_path, "cursor")
    result = run()
    assert result.exit_code == 2
    assert f"cursor          {home / '.cursor' / 'mcp.json'} (found)" in result.output
    assert "windsurf" in result.output


# Names, the policy file ----------------------------------------------------------------------


def test_names_are_made_to_fit_and_prefixes_never_collide(home: Path, tmp_path: Path) -> None:
    command = server(tmp_path, "files")
    config = tmp_path / "mcp.json"
    names = ["my files!", "Files", "files", "x" * 40, "a--b", "a-b", "--"]
    servers = {name: stdio(command, API_KEY=f"key-{i}") for i, name in enumerate(names)}
    config.write_text(j({"mcpServers": servers}), encoding="utf-8")
    result = run("--client-config", str(config))
    assert result.exit_code == 0, result.output
    policy = Policy.load(config.parent / "mcp.strictmcp.toml")
    assert [s.name for s in policy.servers] == [
        "my-files-",
        "Files",
        "files",
        "x" * 32,
        "a--b",
        "a-b",
        "--",
    ]
    assert "named 'my-files-' in the policy" in result.output
    targets = [dict(s.env_from)["API_KEY"] for s in policy.servers]
    assert targets == [
        "MY_FILES__API_KEY",
        "FILES__API_KEY",
        "FILES_2__API_KEY",
        "X" * 32 + "__API_KEY",
        "A_B__API_KEY",
        "A_B_2__API_KEY",
        "SERVER__API_KEY",
    ]
    env = entries(config, "mcpServers", comments=False)["strictmcp"]["env"]
    assert [env[target] for target in targets] == [f"key-{i}" for i in range(len(names))]


def test_an_existing_policy_is_not_overwritten_without_force(home: Path, tmp_path: Path) -> None:
    path = place(home, tmp_path, "claude-desktop")
    before = path.read_bytes()
    policy = tmp_path / "mine.toml"
    policy.write_text("# mine\n", encoding="utf-8")
    refused = run("--client", "claude-desktop", "--policy-out", str(policy))
    assert refused.exit_code == 2
    assert "give --force" in refused.output
    assert policy.read_text(encoding="utf-8") == "# mine\n"
    assert path.read_bytes() == before
    forced = run("--client", "claude-desktop", "--policy-out", str(policy), "--force")
    assert forced.exit_code == 0, forced.output
    assert "[[server]]" in policy.read_text(encoding="utf-8")
    assert entries(path, "mcpServers", comments=False)["strictmcp"]["args"][-1] == str(policy)


def test_the_console_script_is_named_by_its_absolute_path(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(j({"mcpServers": {"files": stdio(server(tmp_path, "files"))}}), "utf-8")
    script = Path(sys.executable).parent / "strictmcp"
    done = subprocess.run(
        [str(script), "install", "--client-config", "mcp.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    entry = entries(config, "mcpServers", comments=False)["strictmcp"]
    assert entry["command"] == str(script)
    assert entry["args"] == ["gateway", "--policy", str(tmp_path / "mcp.strictmcp.toml")]


# Undo ----------------------------------------------------------------------------------------


def test_undo_after_the_client_rewrote_its_file_restores_only_the_entries(
    home: Path, tmp_path: Path
) -> None:
    path = place(home, tmp_path, "claude-code")
    original = json.loads(path.read_text(encoding="utf-8"))
    assert run("--client", "claude-code").exit_code == 0
    # Claude Code rewrites ~/.claude.json as it runs: its own layout, a counter, a new key.
    data = json.loads(path.read_text(encoding="utf-8"))
    data["numStartups"] = 42
    data["tipsHistory"] = {"memory": 3}
    data["mcpServers"]["added-later"] = {"command": "later"}
    path.write_text(json.dumps(data, indent=4), encoding="utf-8")
    result = run("--client", "claude-code", "--undo")
    assert result.exit_code == 0, result.output
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after["mcpServers"] == {**original["mcpServers"], "added-later": {"command": "later"}}
    assert after["numStartups"] == 42
    assert after["tipsHistory"] == {"memory": 3}
    for line in ("~ /numStartups", "+ /tipsHistory", "+ /mcpServers/added-later"):
        assert line in result.output
    assert "those changes are kept" in result.output
    backup = path.with_name(path.name + ".strictmcp-backup")
    assert backup.exists()  # the file before the install, still there to compare with
    assert not path.with_name(path.name + ".strictmcp-install.json").exists()


def test_undo_keeps_an_entry_changed_since_and_restores_one_removed(
    home: Path, tmp_path: Path
) -> None:
    path = place(home, tmp_path, "claude-desktop")
    assert run("--client", "claude-desktop", "--per-server").exit_code == 0
    data = json.loads(path.read_text(encoding="utf-8"))
    data["mcpServers"]["files"] = {"command": "mine"}
    del data["mcpServers"]["notes"]
    path.write_text(json.dumps(data), encoding="utf-8")
    result = run("--client", "claude-desktop", "--undo")
    assert result.exit_code == 0, result.output
    assert "files: changed since the install; kept as it is" in result.output
    servers = entries(path, "mcpServers", comments=False)
    assert servers["files"] == {"command": "mine"}
    assert servers["notes"]["env"]["GW_SECRET"] == SECRETS[1]


def test_undo_dry_run_changes_nothing(home: Path, tmp_path: Path) -> None:
    path = place(home, tmp_path, "windsurf")
    assert run("--client", "windsurf").exit_code == 0
    installed = path.read_bytes()
    result = run("--client", "windsurf", "--undo", "--dry-run")
    assert result.exit_code == 0
    assert "Would restore" in result.output
    assert path.read_bytes() == installed
    assert path.with_name(path.name + ".strictmcp-install.json").exists()


def test_undo_without_an_install_or_with_a_broken_record(home: Path, tmp_path: Path) -> None:
    path = place(home, tmp_path, "cursor")
    none = run("--client", "cursor", "--undo")
    assert none.exit_code == 2
    assert "no install of strictmcp is recorded" in none.output
    assert run("--client", "cursor").exit_code == 0
    installed = path.read_bytes()
    path.with_name(path.name + ".strictmcp-install.json").write_text("{", encoding="utf-8")
    broken = run("--client", "cursor", "--undo")
    assert broken.exit_code == 2
    assert "not a record strictmcp install can read" in broken.output
    assert path.read_bytes() == installed


def test_undo_keeps_a_policy_edited_since(home: Path, tmp_path: Path) -> None:
    place(home, tmp_path, "cursor")
    assert run("--client", "cursor").exit_code == 0
    policy = home / ".config" / "strictmcp" / "cursor-gateway.toml"
    policy.write_text(policy.read_text(encoding="utf-8") + "\n# mine\n", encoding="utf-8")
    result = run("--client", "cursor", "--undo")
    assert result.exit_code == 0
    assert "Kept the policy" in result.output
    assert policy.exists()


# The reader ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            '{"a": "// not a comment", "b": "/* nor this */"}',
            {"a": "// not a comment", "b": "/* nor this */"},
        ),
        ('\ufeff{"a": [1, 2.5e3, -0, true, null,],}', {"a": [1, 2500.0, 0, True, None]}),
        ('{"a\\u00e9": "\\n"} // end', {"a\u00e9": "\n"}),
    ],
)
def test_jsonc_reads_comments_and_trailing_commas(text: str, value: Any) -> None:
    assert parse(text, comments=True).value == value


@pytest.mark.parametrize(
    "text",
    ["{'a': 1}", "{a: 1}", '{"a": 0x10}', '{"a": 1,,}', '{"a": NaN}', '{"a": "\t"}', "[1,]x"],
)
def test_jsonc_refuses_what_vscode_refuses(text: str) -> None:
    with pytest.raises(JsoncError, match="line 1, column"):
        parse(text, comments=True)
    with pytest.raises(JsoncError):
        parse(text, comments=False)


def test_per_server_wraps_a_remote_entry_without_headers_only(home: Path, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    servers = {
        "plain": {"type": "http", "url": "https://x.example/mcp"},
        "keyed": {"url": "https://y.example/mcp", "headers": {"Authorization": "Bearer t"}},
    }
    config.write_text(j({"mcpServers": servers}), encoding="utf-8")
    result = run("--client-config", str(config), "--per-server")
    assert result.exit_code == 0, result.output
    assert "its headers cannot be given to the proxy" in result.output
    after = entries(config, "mcpServers", comments=True)
    assert after["keyed"] == servers["keyed"]
    assert after["plain"] == {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "strictmcp", "proxy", "--upstream", "https://x.example/mcp"],
    }


def test_a_linked_config_is_changed_where_it_points(home: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    real = dotfiles / "cursor-mcp.json"
    real.write_text(j({"mcpServers": {"files": stdio(server(tmp_path, "files"))}}), "utf-8")
    before = real.read_bytes()
    link = home / ".cursor" / "mcp.json"
    link.parent.mkdir()
    link.symlink_to(real)
    assert run("--client", "cursor").exit_code == 0
    assert link.is_symlink()
    assert "strictmcp" in entries(real, "mcpServers", comments=False)
    assert (dotfiles / "cursor-mcp.json.strictmcp-backup").read_bytes() == before
    assert run("--client", "cursor", "--undo").exit_code == 0
    assert link.is_symlink()
    assert real.read_bytes() == before
