"""The commands that read a server (``lint``, ``pin``, ``check``, ``policy``) reach one behind
authentication: ``--header NAME:VALUE`` and ``--bearer-env VAR``, or a policy's ``[upstream]``.

The server is strictmcp's own proxy with an ``[auth]`` section (tests/test_proxy_auth.py's
``launch``), trusting a real authorization server (npm ``oidc-provider``) whose tokens are
really issued; a refusal must say it is one (HTTP 401 or 403, with the challenge's hints),
exit 2, and never print a token or a header's value.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from auth_support import AuthorizationServer, attacker_key, forge, parts
from strictmcp.cli import main
from strictmcp.connect.http_headers import challenge_hint
from test_proxy_auth import Launch, launch, provider  # noqa: F401 - fixtures
from test_proxy_http import FIXTURES, Process, processes, sdk_http_server  # noqa: F401

COMMANDS = ("lint", "pin", "check", "policy init", "policy check")
"""Every command that reads a live server."""
_UNSET = "STRICTMCP_TEST_NO_SUCH_VARIABLE"


def invoke(name: str, url: str, workspace: Path, *options: str) -> Result:
    """``strictmcp NAME`` on the server at ``url``, with ``options``."""
    where = ["--url", url, *options]
    args = {
        "lint": ["lint", *where],
        "pin": ["pin", "--lock", str(workspace / "tools.lock.json"), *where],
        "check": ["check", "--cases", "1", "--tool", "echo", *where],
        "policy init": ["policy", "init", *where],
        "policy check": ["policy", "check", str(_empty_policy(workspace)), *where],
    }[name]
    return CliRunner().invoke(main, args, prog_name="strictmcp")


def _empty_policy(workspace: Path) -> Path:
    path = workspace / "empty.toml"
    path.write_text("", encoding="utf-8")
    return path


def read_the_tools(result: Result, name: str) -> None:
    """``result`` is the command having read the fixture's tools."""
    assert result.exit_code in (0, 1), result.output
    if name == "lint":
        assert "6 tools" in result.stdout
    elif name == "pin":
        # Five: the proxy's own validate tool is not pinned.
        assert "5 tools and 0 prompts pinned" in result.stderr
    elif name == "check":
        assert "echo" in result.stdout
    elif name == "policy init":
        assert '"read_file"' in result.stdout
    else:
        assert "empty.toml" in result.stdout


def one_error(result: Result, command: str) -> str:
    """The error of a command that failed with 2, checked to be one line of its own."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"strictmcp {command.split(maxsplit=1)[0]}: ")
    assert "Traceback" not in result.output
    return lines[0]


def test_the_four_commands_have_one_and_the_same_option_set() -> None:
    def options(*path: str) -> list[tuple[list[str], bool, str | None, str | None]]:
        command: Any = main
        for name in path:
            command = command.get_command(None, name)
        return [
            (param.opts, param.multiple, param.metavar, getattr(param, "help", None))
            for param in command.params
            if param.name in ("header", "bearer_env")
        ]

    found = [options(*name.split()) for name in COMMANDS]
    assert len(found[0]) == 2
    assert all(each == found[0] for each in found)


# ---------------------------------------------------------------------------------------------
# A protected server, with and without credentials


def test_without_credentials_each_command_says_the_server_asks_for_them(
    launch: Launch,  # noqa: F811 - the fixture imported above
    tmp_path: Path,
) -> None:
    proxy = launch()
    for name in COMMANDS:
        line = one_error(invoke(name, proxy.url, tmp_path), name)
        assert "the server asks for credentials, and none were sent (HTTP 401" in line, name
        assert f'Bearer resource_metadata="{proxy.url.replace("/mcp", "")}' in line
        assert "/.well-known/oauth-protected-resource/mcp" in line
        assert "--bearer-env VAR or --header NAME:VALUE" in line
        assert "neither a result" not in line


def test_a_bearer_token_from_the_environment_reads_the_server(
    launch: Launch,  # noqa: F811
    provider: AuthorizationServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy = launch()
    token = provider.token("reader", proxy.url)
    monkeypatch.setenv("MCP_TOKEN", token)
    for name in COMMANDS:
        result = invoke(name, proxy.url, tmp_path, "--bearer-env", "MCP_TOKEN")
        read_the_tools(result, name)
        assert token not in result.output
    assert token not in proxy.process.output()


def test_a_header_read_from_the_environment_reads_the_server(
    launch: Launch,  # noqa: F811
    provider: AuthorizationServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A gateway's header carrying the bare token, and a whole Authorization value.
    proxy = launch('token_header = "X-Access-Token"')
    token = provider.token("reader", proxy.url)
    monkeypatch.setenv("ACCESS", token)
    monkeypatch.setenv("WHOLE", f"Bearer {token}")
    for name in COMMANDS:
        result = invoke(name, proxy.url, tmp_path, "--header", "X-Access-Token: $ACCESS")
        read_the_tools(result, name)
        assert token not in result.output
    # The token in the wrong header is the same as none.
    wrong = invoke("lint", proxy.url, tmp_path, "--header", "Authorization:$WHOLE")
    assert "none were sent" not in one_error(wrong, "lint")
    assert "the server refused the credentials (HTTP 401" in one_error(wrong, "lint")
    assert token not in wrong.output


def test_dollar_dollar_is_a_literal_dollar_and_only_a_whole_value_is_a_variable(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The SDK's server records the Authorization of every request: what was really sent.
    url = sdk_http_server(tmp_path, processes)
    monkeypatch.setenv("HOME_TOKEN", "expanded-by-mistake")
    log = tmp_path / "calls.authorization"
    cases = {
        "Bearer $$HOME_TOKEN": "Bearer $HOME_TOKEN",
        "$$HOME_TOKEN": "$HOME_TOKEN",
        "Bearer a$$b$$$$": "Bearer a$b$$",
        "$HOME_TOKEN": "expanded-by-mistake",
    }
    for given, sent in cases.items():
        log.unlink(missing_ok=True)
        result = invoke("lint", url, tmp_path, "--header", f"Authorization:{given}")
        read_the_tools(result, "lint")
        seen = {json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()}
        assert seen == {sent}, given
    # A lone $ is neither: refused, rather than sent as it is.
    for given in ("Bearer $HOME_TOKEN", "$HOME_TOKEN$", "a$b", "$", "${HOME_TOKEN}"):
        log.unlink(missing_ok=True)
        line = one_error(invoke("lint", url, tmp_path, "--header", f"X-Key:{given}"), "lint")
        assert "--header X-Key: write $$ for a literal $" in line
        assert not log.exists()  # nothing was sent


# ---------------------------------------------------------------------------------------------
# Credentials the server refuses


def test_a_wrong_token_is_refused_with_the_challenges_hints(
    launch: Launch,  # noqa: F811
    provider: AuthorizationServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy = launch(scopes=("mcp:read", "mcp:admin"))
    reader = provider.token("reader", proxy.url)
    header, claims = parts(reader)
    forged = forge({**claims, "scope": "mcp:read mcp:admin"}, header, attacker_key())
    elsewhere = provider.token("admin", "http://127.0.0.1:9/mcp", scope="mcp:read mcp:admin")
    tokens = {"READER": reader, "FORGED": forged, "ELSEWHERE": elsewhere}
    for variable, token in tokens.items():
        monkeypatch.setenv(variable, token)
    for name in COMMANDS:
        # Really issued, without the scope the server wants: 403 naming it.
        line = one_error(invoke(name, proxy.url, tmp_path, "--bearer-env", "READER"), name)
        assert "the server refused the credentials (HTTP 403; Bearer" in line
        assert 'error="insufficient_scope", scope="mcp:admin", resource_metadata="http' in line
    for variable in ("FORGED", "ELSEWHERE"):
        result = invoke("pin", proxy.url, tmp_path, "--bearer-env", variable)
        line = one_error(result, "pin")
        assert "the server refused the credentials (HTTP 401; Bearer" in line
        assert 'error="invalid_token", resource_metadata="http' in line
        assert "error_description" not in line  # the server's prose is not repeated
    output = proxy.process.output()
    for token in tokens.values():
        assert token not in output
    assert not (tmp_path / "tools.lock.json").exists()


class _Echoing(BaseHTTPRequestHandler):
    """A hostile server: 401 to everything, repeating the Authorization it was sent in its
    challenge, and any other header in a second challenge."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        sent = self.headers.get("authorization", "")
        other = self.headers.get("x-api-key", "")
        self.send_response(401)
        challenge = f'Bearer realm="{sent}", error="invalid_token", scope="{other}"'
        self.send_header("www-authenticate", challenge)
        self.send_header("content-type", "application/json")
        body = json.dumps({"error": "invalid_token", "error_description": sent}).encode()
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def echoing() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echoing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_repeating_the_credentials_in_its_challenge_is_not_quoted(
    echoing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "tok-5ec12e7-never-printed")
    monkeypatch.setenv("SECRET_KEY", "key-5ec12e7-never-printed")
    options = ("--bearer-env", "SECRET_TOKEN", "--header", "X-Api-Key:$SECRET_KEY")
    for name in COMMANDS:
        result = invoke(name, echoing, tmp_path, *options)
        line = one_error(result, name)
        assert "the server refused the credentials (HTTP 401" in line
        assert 'error="invalid_token"' in line
        assert 'realm="(withheld: it repeats a credential)"' in line
        assert 'scope="(withheld: it repeats a credential)"' in line
        assert "5ec12e7" not in result.output


@pytest.mark.parametrize(
    ("challenge", "hint"),
    [
        (None, ""),
        ("", ""),
        ('Bearer realm="a, b", error=invalid_token', 'Bearer realm="a, b", error="invalid_token"'),
        (
            'Bearer error_description="x", resource_metadata="https://h/.well-known/x", foo=1',
            'Bearer resource_metadata="https://h/.well-known/x"',
        ),
        ('Bearer realm="say \\"hi\\""', 'Bearer realm="say "hi""'),
        ("Basic", "Basic"),
        (f'Bearer realm="{"r" * 500}"', f'Bearer realm="{"r" * 200}..."'),
        # A token68 where a scheme goes is not quoted.
        ("eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJlc2lnbmF0dXJl", ""),
    ],
)
def test_the_challenge_hint_keeps_only_the_hints(challenge: str | None, hint: str) -> None:
    sent = ["eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJlc2lnbmF0dXJl"]
    assert challenge_hint(challenge, sent) == hint


# ---------------------------------------------------------------------------------------------
# Configuration errors: exit 2, one line, naming the variable, never the value


@pytest.mark.parametrize("name", COMMANDS)
def test_a_variable_unset_or_empty_is_a_configuration_error_naming_it(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(_UNSET, raising=False)
    monkeypatch.setenv("EMPTY_TOKEN", "   ")
    url = "http://127.0.0.1:9/mcp"  # nothing is sent: the error comes first
    for options in (("--bearer-env", _UNSET), ("--bearer-env", "EMPTY_TOKEN")):
        line = one_error(invoke(name, url, tmp_path, *options), name)
        assert f"--bearer-env: upstream bearer: the environment variable {options[1]}" in line
        assert "is empty or unset" in line
    line = one_error(invoke(name, url, tmp_path, "--header", f"X-Key: ${_UNSET}"), name)
    assert f"--header X-Key: the environment variable {_UNSET} is empty or unset" in line


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("sk-5ec12e7-pasted-alone", "--header: NAME:VALUE expected"),
        ("X Key:sk-5ec12e7", "--header: NAME:VALUE expected"),
        (":sk-5ec12e7", "--header: NAME:VALUE expected"),
        ("X-Key:", "--header X-Key: the value is empty"),
        ("X-Key:sk-5ec12e7\r\nX-Evil: 1", "--header X-Key: the value is empty or is not printable"),
        ("X-Key:sk-5ec12e7-\u00e9", "--header X-Key: the value is empty or is not printable"),
        ("Content-Type:text/plain", "--header Content-Type: strictmcp sets this header itself"),
        ("Mcp-Session-Id:5ec12e7", "--header Mcp-Session-Id: strictmcp sets this header itself"),
        ("Host:5ec12e7.example", "--header Host: strictmcp sets this header itself"),
    ],
)
def test_a_header_option_that_cannot_be_sent_is_refused_without_its_value(
    option: str, message: str, tmp_path: Path
) -> None:
    for name in COMMANDS:
        result = invoke(name, "http://127.0.0.1:9/mcp", tmp_path, "--header", option)
        assert message in one_error(result, name)
        assert "5ec12e7" not in result.output


def test_a_value_from_the_environment_that_cannot_be_sent_is_refused_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INJECTED", "sk-5ec12e7\r\nX-Evil: 1")
    result = invoke("lint", "http://127.0.0.1:9/mcp", tmp_path, "--header", "X-Key:$INJECTED")
    line = one_error(result, "lint")
    assert "--header X-Key: the value (the environment variable INJECTED) is empty or" in line
    assert "5ec12e7" not in result.output


def test_conflicting_or_misplaced_credentials_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKEN", "sk-5ec12e7")
    url = "http://127.0.0.1:9/mcp"
    twice = invoke("pin", url, tmp_path, "--header", "X-Key:a", "--header", "x-key:b")
    assert "--header x-key: given twice" in one_error(twice, "pin")
    both = invoke(
        "policy init", url, tmp_path, "--bearer-env", "TOKEN", "--header", "AUTHORIZATION:x"
    )
    assert "--header Authorization: --bearer-env sets it already" in one_error(both, "policy")
    # Without --url there is nothing to send them to.
    tools = tmp_path / "tools.json"
    tools.write_text('{"tools": []}', encoding="utf-8")
    for args in (
        ["lint", str(tools), "--bearer-env", "TOKEN"],
        ["pin", "--lock", str(tmp_path / "l.json"), str(tools), "--header", "X-Key:$TOKEN"],
        ["policy", "init", "--tools", str(tools), "--bearer-env", "TOKEN"],
        ["check", "--bearer-env", "TOKEN", "--", sys.executable, "-c", "pass"],
    ):
        result = CliRunner().invoke(main, args, prog_name="strictmcp")
        assert "--header and --bearer-env apply to --url only" in one_error(result, args[0])
    policy = tmp_path / "upstream.toml"
    policy.write_text('[upstream]\nbearer_env = "TOKEN"\n', encoding="utf-8")
    for args in (
        ["lint", "--policy", str(policy), "--url", url, "--bearer-env", "TOKEN"],
        ["policy", "check", str(policy), "--url", url, "--bearer-env", "TOKEN"],
    ):
        result = CliRunner().invoke(main, args, prog_name="strictmcp")
        line = one_error(result, args[0])
        assert "--bearer-env: the policy's [upstream] section names the credentials" in line
    header = ["lint", "--policy", str(policy), "--url", url, "--header", "Authorization:x"]
    result = CliRunner().invoke(main, header, prog_name="strictmcp")
    assert "the policy's [upstream] section sets it already" in one_error(result, "lint")
    assert "5ec12e7" not in result.output


# ---------------------------------------------------------------------------------------------
# The policy's [upstream], as the proxy reads it


def test_the_policys_upstream_section_gives_the_credentials(
    launch: Launch,  # noqa: F811
    provider: AuthorizationServer,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    proxy = launch()
    monkeypatch.setenv("UPSTREAM_TOKEN", provider.token("reader", proxy.url))
    static = tmp_path / "static.toml"
    static.write_text('[upstream]\nbearer_env = "UPSTREAM_TOKEN"\n', encoding="utf-8")
    # The client credentials grant, as the proxy does it: a token fetched from the issuer.
    secret = tmp_path / "client-secret"
    secret.write_text("reader-secret-0123456789abcdef\n", encoding="utf-8")
    fetched = tmp_path / "fetched.toml"
    section = [
        "[upstream]",
        f'token_url = "{provider.issuer}/token"',
        'client_id = "reader"',
        f'client_secret_file = "{secret}"',
        'scope = "mcp:read"',
        f'resource = "{proxy.url}"',
    ]
    fetched.write_text("\n".join(section) + "\n", encoding="utf-8")
    for policy in (static, fetched):
        lint = CliRunner().invoke(main, ["lint", "--policy", str(policy), "--url", proxy.url])
        read_the_tools(lint, "lint")
        args = ["policy", "check", str(policy), "--url", proxy.url]
        checked = CliRunner().invoke(main, args, prog_name="strictmcp")
        assert checked.exit_code in (0, 1), checked.output
        assert f"{policy}:" in checked.stdout
        call = ["check", "--cases", "1", "--tool", "echo", "--policy", str(policy)]
        checks = CliRunner().invoke(main, [*call, "--url", proxy.url], prog_name="strictmcp")
        read_the_tools(checks, "check")
    monkeypatch.delenv("UPSTREAM_TOKEN")
    result = CliRunner().invoke(main, ["lint", "--policy", str(static), "--url", proxy.url])
    assert "--policy [upstream]: upstream bearer: the environment variable UPSTREAM_TOKEN" in (
        one_error(result, "lint")
    )


def test_the_proxy_tells_its_client_when_the_upstream_refuses_its_credentials(
    launch: Launch,  # noqa: F811
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    protected = launch()
    # A proxy without credentials of its own in front of the protected one, read by lint.
    front = [sys.executable, "-m", "strictmcp.proxy", "--upstream", protected.url]
    result = CliRunner().invoke(main, ["lint", "--", *front], prog_name="strictmcp")
    line = one_error(result, "lint")
    assert "the server asks for credentials, and none were sent (HTTP 401; Bearer" in line
    assert "resource_metadata=" in line
    # Not this command's options: the proxy in front needs credentials of its own.
    assert "--bearer-env" not in line
    assert "give it credentials of its own (a strictmcp proxy's [upstream]" in line
