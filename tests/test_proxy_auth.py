"""The HTTP proxy as an OAuth 2.1 protected resource, against a real authorization server.

The provider is npm ``oidc-provider`` (tests/auth_support.py), started once for the module;
every token below is either really issued by it, for the wrong audience, another issuer or a
client without the scope, or forged the way an attacker would (``alg: none``, HS256 keyed
with the published public key, another key under the provider's ``kid``). Each refusal is
checked for its status, its ``WWW-Authenticate`` challenge and its stable code, and no answer
or log line may contain a token.
"""

from __future__ import annotations

import html
import json
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

import httpx2
import mcp_types as types
import pytest
from click.testing import CliRunner
from mcp import ClientSession, MCPError
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from auth_support import (
    AuthorizationServer,
    attacker_key,
    authorization_server,
    forge,
    free_port,
    hmac_signed,
    parts,
    public_pem,
    unsigned,
)
from redis_support import redis_server
from strictmcp.proxy.cli import proxy as proxy_command
from test_proxy_http import (  # noqa: F401 - processes is a fixture
    FIXTURES,
    Process,
    processes,
    run,
    sdk_http_server,
)

_ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
_INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


@pytest.fixture(scope="module")
def provider() -> Iterator[AuthorizationServer]:
    with authorization_server() as running:
        yield running


class Protected:
    """A proxy started with an ``[auth]`` section: its URL (the resource), its stderr."""

    def __init__(self, url: str, process: Process, workspace: Path) -> None:
        self.url = url
        self.process = process
        self.workspace = workspace

    def post(self, token: str | None = None, *, headers: dict[str, str] | None = None) -> Any:
        """An initialize, with ``token`` as a bearer token when given."""
        # As bytes: an attacker's header need not be ASCII.
        sent = {k.encode(): v.encode() for k, v in {**_ACCEPT, **(headers or {})}.items()}
        if token is not None:
            sent[b"authorization"] = f"Bearer {token}".encode("latin-1")
        return httpx2.post(self.url, json=_INIT, headers=sent, timeout=20)


Launch = Callable[..., Protected]


@pytest.fixture
def launch(
    provider: AuthorizationServer,
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> Launch:
    """Starts a proxy whose policy's ``[auth]`` trusts the provider's first issuer, with
    ``extra`` TOML lines added to the section, ``tail`` after it, and ``options`` on the
    command line; the server is the stdio fixture, or the HTTP one at ``upstream``."""

    def start(
        *extra: str,
        scopes: tuple[str, ...] = ("mcp:read",),
        tail: str = "",
        options: tuple[str, ...] = (),
        upstream: str | None = None,
    ) -> Protected:
        port = free_port()
        url = f"http://127.0.0.1:{port}/mcp"
        policy = tmp_path / "policy.toml"
        lines = [
            "[auth]",
            f'issuer = "{provider.issuer}"',
            f'resource = "{url}"',
            f"scopes = {json.dumps(list(scopes))}",
            *extra,
        ]
        policy.write_text("\n".join(lines) + "\n" + tail, encoding="utf-8")
        server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
        args = [sys.executable, "-m", "strictmcp.proxy", "--listen", f"127.0.0.1:{port}"]
        where = ["--upstream", upstream] if upstream is not None else ["--", *server]
        command = [*args, "--policy", str(policy), *options, *where]
        process = Process(command, tmp_path, "stderr")
        processes.append(process)
        process.wait_for("listening on")
        return Protected(url, process, tmp_path)

    return start


def refused(response: Any, status: int, code: str, error: str | None = "invalid_token") -> None:
    """``response`` is a refusal with this status, OAuth error and strictmcp code, and its
    challenge points at the metadata document."""
    assert response.status_code == status, response.text
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'resource_metadata="http://127.0.0.1:' in challenge
    assert "/.well-known/oauth-protected-resource/mcp" in challenge
    if error is not None:
        assert f'error="{error}"' in challenge
    body = response.json()
    assert body["code"] == code
    assert body["error_description"]


def assert_never_leaked(proxy: Protected, *tokens: str) -> None:
    """No token in the proxy's log, nor any part of one (its signature)."""
    log = proxy.process.output()
    for token in tokens:
        assert token not in log
        signature = token.rsplit(".", 1)[-1]
        assert len(signature) < 8 or signature not in log


# ---------------------------------------------------------------------------------------------
# The protected resource


def test_no_token_is_401_and_the_metadata_leads_to_the_issuer(
    launch: Launch, provider: AuthorizationServer
) -> None:
    proxy = launch()
    response = proxy.post()
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert "error=" not in challenge  # RFC 6750: no error code when no token was sent
    metadata_url = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]
    assert metadata_url == proxy.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    # What an MCP client does next: the metadata, then the issuer's own, then a token.
    metadata = httpx2.get(metadata_url, timeout=10).json()
    assert metadata["resource"] == proxy.url
    assert metadata["authorization_servers"] == [provider.issuer]
    assert metadata["scopes_supported"] == ["mcp:read"]
    assert metadata["bearer_methods_supported"] == ["header"]
    bare = httpx2.get(proxy.url.replace("/mcp", "/.well-known/oauth-protected-resource"))
    assert bare.json() == metadata
    issuer = metadata["authorization_servers"][0]
    discovered = httpx2.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
    assert discovered["token_endpoint"] == f"{provider.issuer}/token"
    token = provider.token("reader", metadata["resource"])
    assert proxy.post(token).status_code == 200


def test_an_allowed_token_calls_a_tool_through_the_official_client(
    launch: Launch, provider: AuthorizationServer
) -> None:
    proxy = launch()
    token = provider.token("reader", proxy.url)

    async def scenario() -> None:
        headers = {"authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(proxy.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = await session.list_tools()
            assert "echo" in {tool.name for tool in tools.tools}
            result = await session.call_tool("echo", {"text": "hi"})
            assert not result.is_error
            assert isinstance(result.content[0], types.TextContent)

    run(scenario)
    assert_never_leaked(proxy, token)


class Browser:
    """What a person's browser does in the authorization code flow, over loopback HTTP: it
    opens the authorization URL, signs in and consents on the provider's own pages (its
    development login form takes any login name and password), and stops at the redirect
    back to the client, whose query it keeps for the client's callback."""

    def __init__(self, login: str, redirect_uri: str) -> None:
        self.login = login
        self.redirect_uri = redirect_uri
        self.opened: list[str] = []
        self.pages: list[str] = []
        self.redirect: dict[str, str] = {}

    async def open(self, url: str) -> None:
        """The client's redirect handler: from the authorization URL to the redirect back."""
        self.opened.append(url)
        async with httpx2.AsyncClient(timeout=20) as http:
            response = await http.get(url)
            for _ in range(12):
                if response.is_redirect:
                    location = urljoin(str(response.url), response.headers["location"])
                    if location.startswith(self.redirect_uri):
                        self.redirect = dict(parse_qsl(urlsplit(location).query))
                        return
                    response = await http.get(location)
                    continue
                assert response.status_code == 200, response.text
                page = response.text
                prompt = re.search(r'name="prompt" value="(\w+)"', page)
                action = re.search(r'<form[^>]* action="([^"]+)"', page)
                assert prompt is not None, page
                assert action is not None, page
                self.pages.append(prompt.group(1))
                form = {"prompt": prompt.group(1)}
                if prompt.group(1) == "login":
                    form |= {"login": self.login, "password": "any"}
                target = urljoin(str(response.url), html.unescape(action.group(1)))
                response = await http.post(target, data=form)
        raise AssertionError(f"no redirect back to the client; pages seen: {self.pages}")

    async def callback(self) -> AuthorizationCodeResult:
        """The client's callback handler: the code, state and issuer of the redirect."""
        assert "code" in self.redirect, self.redirect
        return AuthorizationCodeResult(
            code=self.redirect["code"],
            state=self.redirect.get("state"),
            iss=self.redirect.get("iss"),
        )


class MemoryStorage:
    """The client's token storage, holding the pre-registered public client."""

    def __init__(self, client: OAuthClientInformationFull) -> None:
        self.tokens: OAuthToken | None = None
        self.client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def test_the_official_client_signs_a_person_in_with_the_code_flow_and_pkce(
    launch: Launch, provider: AuthorizationServer, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    person = '[[access]]\ntools = ["echo"]\nsubject = "alice"\nclient_id = "pkce-app"\n'
    proxy = launch(tail=person, options=("--audit-log", str(audit)))
    redirect_uri = "http://127.0.0.1:9/callback"
    browser = Browser("alice", redirect_uri)
    metadata = {
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "scope": "mcp:read",
    }
    storage = MemoryStorage(
        OAuthClientInformationFull.model_validate({**metadata, "client_id": "pkce-app"})
    )
    auth = OAuthClientProvider(
        server_url=proxy.url,
        client_metadata=OAuthClientMetadata.model_validate(metadata),
        storage=storage,
        redirect_handler=browser.open,
        callback_handler=browser.callback,
    )

    seen: list[tuple[set[str], Any, Any]] = []

    async def scenario() -> None:
        seen.append(await session_of_alice())

    async def session_of_alice() -> tuple[set[str], Any, Any]:
        async with (
            httpx2.AsyncClient(auth=auth, timeout=30) as http,
            streamable_http_client(proxy.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = {tool.name for tool in (await session.list_tools()).tools}
            echoed = await session.call_tool("echo", {"text": "hi"})
            try:
                await session.call_tool("read_file", {"path": "/etc/hostname"})
            except MCPError as error:
                return names, echoed, error.error.code
            raise AssertionError("read_file is not alice's")

    run(scenario)
    ((names, echoed, refused),) = seen
    # The client went to the provider with PKCE (S256) and a resource indicator for the proxy,
    # a person signed in and consented, and the token it got is alice's, for the proxy.
    (opened,) = browser.opened
    query = dict(parse_qsl(urlsplit(opened).query))
    assert opened.startswith(f"{provider.issuer}/auth?")
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert query["resource"] == proxy.url
    assert browser.pages == ["login", "consent"]
    assert storage.tokens is not None
    _, claims = parts(storage.tokens.access_token)
    assert (claims["sub"], claims["client_id"], claims["aud"]) == ("alice", "pkce-app", proxy.url)
    # Through the proxy, alice is listed and may call her tool only.
    assert names == {"echo", "validate"}
    assert echoed.is_error is False
    assert refused == -32602
    # Findings only: the log holds auth-refused events too.
    denial = [r for r in _records(audit) if r.get("stage") == "access"]
    assert [r["identity"] for r in denial] == [{"subject": "alice", "clientId": "pkce-app"}]
    assert_never_leaked(proxy, storage.tokens.access_token)


def test_a_token_for_another_resource_is_401(launch: Launch, provider: AuthorizationServer) -> None:
    proxy = launch()
    # Really issued, to the same client, for another MCP server on this host.
    elsewhere = f"http://127.0.0.1:{free_port()}/mcp"
    token = provider.token("reader", elsewhere)
    assert parts(token)[1]["aud"] == elsewhere
    refused(proxy.post(token), 401, "token-audience")
    assert_never_leaked(proxy, token)


def test_an_expired_token_is_401(launch: Launch, provider: AuthorizationServer) -> None:
    proxy = launch("leeway = 1")
    token = provider.token("brief", proxy.url)  # lives 1 second
    assert proxy.post(token).status_code == 200  # valid while it lives
    time.sleep(3.2)  # past its lifetime and the leeway (and the verified-token cache)
    refused(proxy.post(token), 401, "token-expired")


def test_a_bad_signature_is_401(launch: Launch, provider: AuthorizationServer) -> None:
    proxy = launch()
    token = provider.token("reader", proxy.url)
    head, body, signature = token.split(".")
    flipped = signature[:10] + ("A" if signature[10] != "A" else "B") + signature[11:]
    refused(proxy.post(f"{head}.{body}.{flipped}"), 401, "token-signature")
    # The provider's header and claims, signed with another key under the provider's kid.
    header, claims = parts(token)
    forged = forge({**claims, "scope": "mcp:read mcp:admin"}, header, attacker_key())
    refused(proxy.post(forged), 401, "token-signature")
    # The claims changed under the provider's real signature.
    lifted = forge({**claims, "sub": "admin"}, header, attacker_key()).split(".")[1]
    refused(proxy.post(f"{head}.{lifted}.{signature}"), 401, "token-signature")


def test_alg_none_is_401(launch: Launch, provider: AuthorizationServer) -> None:
    proxy = launch()
    header, claims = parts(provider.token("reader", proxy.url))
    for alg in ("none", "None", "NONE"):
        refused(proxy.post(unsigned(claims, {**header, "alg": alg})), 401, "token-algorithm")


def test_hs256_signed_with_the_public_key_is_401(
    launch: Launch, provider: AuthorizationServer
) -> None:
    proxy = launch()
    header, claims = parts(provider.token("reader", proxy.url))
    jwk = next(k for k in provider.jwks()["keys"] if k["kid"] == header["kid"])
    pem = public_pem(jwk)
    for secret in (pem, pem.strip(), json.dumps(jwk).encode()):
        confused = hmac_signed(claims, {**header, "alg": "HS256"}, secret)
        refused(proxy.post(confused), 401, "token-algorithm")


def test_a_token_of_another_issuer_is_401(launch: Launch, provider: AuthorizationServer) -> None:
    proxy = launch()
    # The other issuer signs with the very same keys (a tenant of the same provider).
    token = provider.token("admin", proxy.url, issuer=provider.other_issuer)
    assert parts(token)[1]["iss"] == provider.other_issuer
    refused(proxy.post(token), 401, "token-issuer")


def test_a_token_without_the_scope_is_403_naming_it(
    launch: Launch, provider: AuthorizationServer
) -> None:
    proxy = launch(scopes=("mcp:read", "mcp:admin"))
    reader = provider.token("reader", proxy.url)
    response = proxy.post(reader)
    refused(response, 403, "token-scope", "insufficient_scope")
    assert 'scope="mcp:admin"' in response.headers["www-authenticate"]
    noscope = proxy.post(provider.token("noscope", proxy.url, scope="profile"))
    refused(noscope, 403, "token-scope", "insufficient_scope")
    admin = provider.token("admin", proxy.url, scope="mcp:read mcp:admin")
    assert proxy.post(admin).status_code == 200


def test_dpop_is_401_with_a_clear_message(launch: Launch, provider: AuthorizationServer) -> None:
    proxy = launch()
    token = provider.token("reader", proxy.url)
    response = proxy.post(headers={"authorization": f"DPoP {token}"})
    refused(response, 401, "token-dpop", "invalid_request")
    assert "DPoP" in response.json()["error_description"]
    assert token not in response.text


def test_behind_a_gateway_the_token_header_is_still_verified(
    launch: Launch, provider: AuthorizationServer
) -> None:
    proxy = launch('token_header = "X-Forwarded-Access-Token"')  # any case, as HTTP allows
    token = provider.token("reader", proxy.url)
    # An unsigned identity header, or the token where the gateway does not put it: refused.
    refused(proxy.post(headers={"x-user": "admin"}), 401, "token-missing", None)
    refused(proxy.post(token), 401, "token-missing", None)
    forged = forge(parts(token)[1], parts(token)[0], attacker_key())
    forwarded = proxy.post(headers={"x-forwarded-access-token": forged})
    refused(forwarded, 401, "token-signature")
    assert proxy.post(headers={"x-forwarded-access-token": token}).status_code == 200
    assert proxy.post(headers={"x-forwarded-access-token": f"Bearer {token}"}).status_code == 200


def test_keys_from_a_local_file(
    launch: Launch, provider: AuthorizationServer, tmp_path: Path
) -> None:
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(provider.jwks()), encoding="utf-8")
    before = provider.jwks_fetches()
    proxy = launch(f'jwks_file = "{jwks}"')
    token = provider.token("reader", proxy.url)
    assert proxy.post(token).status_code == 200
    assert provider.jwks_fetches() == before  # the issuer was never asked for its keys


# ---------------------------------------------------------------------------------------------
# Hostile tokens


def test_hostile_tokens_are_refused_with_a_code_and_never_echoed(
    launch: Launch, provider: AuthorizationServer
) -> None:
    proxy = launch()
    header, claims = parts(provider.token("reader", proxy.url))
    key = attacker_key()
    hostile = {
        "garbage": "not-a-token",
        "empty parts": "..",
        "two parts": "abc.def",
        "not base64": "ab$c.d!ef.ghi",
        "header not JSON": "bm90IGpzb24.e30.c2ln",
        "header an array": "WzFd.e30.c2ln",
        "kid a number": forge(claims, {**header, "kid": 7}, key),
        "huge": "a" * 200_000,
        "long": "a" * 15_000 + ".b.c",
        "wrong key type": forge(claims, {**header, "kid": "ec-1"}, key),
        "no kid": forge(claims, {"alg": "RS256"}, key),
        "ES256 with the RSA kid": forge(claims, {**header, "alg": "ES256"}, _ec_key()),
        "exp a string": forge({**claims, "exp": "never"}, header, key),
        "unicode": "é.é.é",
    }
    for name, token in hostile.items():
        try:
            response = proxy.post(token)
        except httpx2.TransportError:
            # Headers past the HTTP server's own bound (16 KiB in uvicorn's h11): it answers
            # 431 and closes, and the client may see the close before the answer.
            assert name == "huge"
            continue
        assert response.status_code in (400, 401, 431), name
        if response.status_code == 401:
            assert response.json()["code"].startswith("token-"), name
            assert token not in response.text, name
    assert_never_leaked(proxy, *hostile.values())
    # Still serving.
    assert proxy.post(provider.token("reader", proxy.url)).status_code == 200


def test_a_flood_of_unknown_kids_fetches_the_keys_at_most_once_per_interval(
    launch: Launch, provider: AuthorizationServer
) -> None:
    proxy = launch("jwks_refresh = 60")
    token = provider.token("reader", proxy.url)
    before = provider.jwks_fetches()
    assert proxy.post(token).status_code == 200  # the first use loads the keys
    header, claims = parts(token)
    key = attacker_key()
    for _ in range(40):
        kid = secrets.token_hex(8)
        refused(proxy.post(forge(claims, {**header, "kid": kid}, key)), 401, "token-key-unknown")
    # One load at first use, at most one refresh for the first unknown kid, then none.
    assert provider.jwks_fetches() - before <= 2
    assert proxy.post(token).status_code == 200


def _ec_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415

    return ec.generate_private_key(ec.SECP256R1())


# ---------------------------------------------------------------------------------------------
# Start-up


def test_a_network_listen_without_auth_is_refused(tmp_path: Path) -> None:
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
    result = CliRunner().invoke(proxy_command, ["--listen", "0.0.0.0:0", "--", *server])
    assert result.exit_code == 2
    assert "[auth]" in result.output
    assert "--allow-unauthenticated" in result.output


def test_an_auth_section_over_stdio_is_refused(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[auth]\nissuer = "https://as.example"\nresource = "https://mcp.example/mcp"\n',
        encoding="utf-8",
    )
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
    result = CliRunner().invoke(proxy_command, ["--policy", str(policy), "--", *server])
    assert result.exit_code == 2
    assert "--listen only" in result.output


# ---------------------------------------------------------------------------------------------
# Authorization by identity: two roles, different tools

ROLES = """
[[access]]
tools = ["echo", "word_count"]
scopes = ["mcp:read"]

[[access]]
tools = ["*"]
client_id = "admin"
"""
_MODERN = "2026-07-28"


class Caller:
    """Raw MCP over HTTP with one identity's token."""

    def __init__(self, proxy: Protected, token: str) -> None:
        self.proxy = proxy
        self.token = token
        self.session_id: str | None = None
        self.ids = iter(range(1, 1000))

    def headers(self, version: str = "2025-11-25") -> dict[str, str]:
        headers = {**_ACCEPT, "authorization": f"Bearer {self.token}"}
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
            headers["mcp-protocol-version"] = version
        return headers

    def open(self) -> None:
        """initialize and initialized: a session of this identity."""
        response = httpx2.post(self.proxy.url, json=_INIT, headers=self.headers(), timeout=20)
        assert response.status_code == 200, response.text
        self.session_id = response.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        sent = httpx2.post(self.proxy.url, json=note, headers=self.headers(), timeout=20)
        assert sent.status_code == 202

    def ask(self, method: str, params: dict[str, Any]) -> Any:
        """A request in this caller's session; the answer (a JSON-RPC message)."""
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        response = httpx2.post(self.proxy.url, json=message, headers=self.headers(), timeout=30)
        return _answer(response)

    def ask_alone(self, method: str, params: dict[str, Any]) -> Any:
        """A 2026-07-28 request (no session); the answer."""
        meta = {
            "io.modelcontextprotocol/protocolVersion": _MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        message = {
            "jsonrpc": "2.0",
            "id": next(self.ids),
            "method": method,
            "params": {**params, "_meta": meta},
        }
        headers = {
            **_ACCEPT,
            "authorization": f"Bearer {self.token}",
            "mcp-protocol-version": _MODERN,
            "mcp-method": method,
        }
        if method == "tools/call":
            headers["mcp-name"] = params["name"]
        response = httpx2.post(self.proxy.url, json=message, headers=headers, timeout=30)
        return _answer(response)

    def tools(self, *, alone: bool = False) -> set[str]:
        answer = (self.ask_alone if alone else self.ask)("tools/list", {})
        return {tool["name"] for tool in answer["result"]["tools"]}

    def call(self, tool: str, arguments: dict[str, Any], *, alone: bool = False) -> Any:
        params = {"name": tool, "arguments": arguments}
        return (self.ask_alone if alone else self.ask)("tools/call", params)


def _answer(response: Any) -> Any:
    kind = response.headers.get("content-type", "")
    if kind.startswith("application/json"):
        return response.json()
    events = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    assert events, (response.status_code, response.text)
    return json.loads(events[-1])


def _unknown_like(answer: Any, tool: str) -> dict[str, Any]:
    """The error of an answer with the tool's name taken out, to compare with another's."""
    error = answer["error"]
    assert error["code"] == -32602
    return {**error, "message": error["message"].replace(f'"{tool}"', '"?"')}


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_each_identity_lists_and_calls_only_its_tools(
    launch: Launch, provider: AuthorizationServer, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    proxy = launch(tail=ROLES, options=("--audit-log", str(audit)))
    reader = Caller(proxy, provider.token("reader", proxy.url))
    admin = Caller(proxy, provider.token("admin", proxy.url, scope="mcp:read mcp:admin"))
    reader.open()
    admin.open()
    validate = {"validate"}
    assert reader.tools() == {"echo", "word_count"} | validate
    assert {"read_file", "echo", "crash", "hang"} <= admin.tools()
    # A tool the reader may not use is, to it, exactly an unknown tool: call and dry run.
    denied = reader.call("read_file", {"path": "/etc/hostname"})
    unknown = reader.call("no_such_tool", {"path": "/etc/hostname"})
    assert _unknown_like(denied, "read_file") == _unknown_like(unknown, "no_such_tool")
    dry_denied = reader.call("validate", {"tool": "read_file", "arguments": {"path": "/x"}})
    dry_unknown = reader.call("validate", {"tool": "no_such_tool", "arguments": {"path": "/x"}})
    assert json.dumps(dry_denied["result"]).replace("read_file", "?") == json.dumps(
        dry_unknown["result"]
    ).replace("no_such_tool", "?")
    assert dry_denied["result"]["structuredContent"]["valid"] is False
    # The same tool, for the admin, is known (its arguments are checked, and it runs).
    assert "error" not in admin.call("validate", {"tool": "read_file", "arguments": {}})
    assert reader.call("echo", {"text": "hi"})["result"]["isError"] is False
    hello = tmp_path / "hello.txt"
    hello.write_text("hello", encoding="utf-8")
    assert admin.call("read_file", {"path": str(hello)})["result"]["isError"] is False
    calls = [c["name"] for c in _calls(proxy)]
    assert "read_file" in calls  # the admin's
    assert calls.count("read_file") == 1  # never the reader's
    # The audit log says who was refused, never with a token.
    # (The call of no_such_tool is one the rules deny too: it is logged as well.)
    denials = [r for r in _records(audit) if r["stage"] == "access" and r["tool"] == "read_file"]
    assert denials == [
        {
            **denials[0],
            "tool": "read_file",
            "action": "refused",
            "code": "access-denied",
            "identity": {"subject": "reader", "clientId": "reader"},
        }
    ]
    assert reader.token not in audit.read_text()
    assert admin.token not in audit.read_text()
    assert_never_leaked(proxy, reader.token, admin.token)


def _calls(proxy: Protected) -> list[dict[str, Any]]:
    path = proxy.workspace / "calls"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_session_is_bound_to_the_identity_that_opened_it(
    launch: Launch, provider: AuthorizationServer
) -> None:
    proxy = launch(tail=ROLES)
    reader = Caller(proxy, provider.token("reader", proxy.url))
    reader.open()
    # The admin's (valid) token on the reader's session: there is no such session, for it.
    thief = Caller(proxy, provider.token("admin", proxy.url, scope="mcp:read mcp:admin"))
    thief.session_id = reader.session_id
    message = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}
    stolen = httpx2.post(proxy.url, json=message, headers=thief.headers(), timeout=20)
    assert stolen.status_code == 404
    get = httpx2.get(proxy.url, headers=thief.headers(), timeout=20)
    assert get.status_code == 404
    delete = httpx2.delete(proxy.url, headers=thief.headers(), timeout=20)
    assert delete.status_code == 404
    # A refreshed token of the same client keeps the session.
    reader.token = provider.token("reader", proxy.url)
    assert reader.tools() == {"echo", "word_count", "validate"}


def test_stateless_requests_are_authorized_one_by_one(
    launch: Launch, provider: AuthorizationServer, tmp_path: Path
) -> None:
    proxy = launch(tail=ROLES)
    hello = tmp_path / "hello.txt"
    hello.write_text("hello", encoding="utf-8")
    reader = Caller(proxy, provider.token("reader", proxy.url))
    admin = Caller(proxy, provider.token("admin", proxy.url, scope="mcp:read mcp:admin"))
    for _ in range(2):  # interleaved on the one shared channel: nothing carries over
        assert "read_file" in admin.tools(alone=True)
        assert reader.tools(alone=True) == {"echo", "word_count", "validate"}
        refused = reader.call("read_file", {"path": str(hello)}, alone=True)
        assert refused["error"]["code"] == -32602
        allowed = admin.call("read_file", {"path": str(hello)}, alone=True)
        assert allowed["result"]["isError"] is False


def test_in_audit_mode_a_denied_call_is_logged_as_would_deny_and_goes_through(
    launch: Launch, provider: AuthorizationServer, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    proxy = launch(tail=ROLES, options=("--mode", "audit", "--audit-log", str(audit)))
    assert "would deny" in proxy.process.output()  # warned at start-up
    reader = Caller(proxy, provider.token("reader", proxy.url))
    reader.open()
    assert "read_file" in reader.tools()
    hello = tmp_path / "hello.txt"
    hello.write_text("hello", encoding="utf-8")
    assert reader.call("read_file", {"path": str(hello)})["result"]["isError"] is False
    assert [c["name"] for c in _calls(proxy)] == ["read_file"]
    denials = [r for r in _records(audit) if r["stage"] == "access"]
    assert [(r["action"], r["identity"]["subject"]) for r in denials] == [("would deny", "reader")]


def test_access_rules_without_a_way_to_know_the_caller_are_refused(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(ROLES, encoding="utf-8")
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
    for listen in ((), ("--listen", "127.0.0.1:0")):
        result = CliRunner().invoke(
            proxy_command, ["--policy", str(policy), *listen, "--", *server]
        )
        assert result.exit_code == 2, result.output
        assert "[[access]] rules need" in result.output


# ---------------------------------------------------------------------------------------------
# Upstream credentials: the proxy's own, never the client's token


def _upstream_authorizations(workspace: Path) -> list[str]:
    log = workspace / "calls.authorization"
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def test_the_upstream_gets_a_static_bearer_and_never_the_clients_token(
    launch: Launch,
    provider: AuthorizationServer,
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("UPSTREAM_TOKEN", "upstream-static-token-42")
    upstream = sdk_http_server(tmp_path, processes)
    proxy = launch(tail='[upstream]\nbearer_env = "UPSTREAM_TOKEN"\n', upstream=upstream)
    caller = Caller(proxy, provider.token("reader", proxy.url))
    caller.open()
    assert caller.call("echo", {"text": "hi"})["result"]["isError"] is False
    seen = _upstream_authorizations(tmp_path)
    assert seen
    assert set(seen) == {"Bearer upstream-static-token-42"}
    assert not any(caller.token in value for value in seen)
    assert "upstream-static-token-42" not in proxy.process.output()


def test_the_upstream_gets_a_client_credentials_token_fetched_once(
    launch: Launch,
    provider: AuthorizationServer,
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    secret = tmp_path / "client-secret"
    secret.write_text("introspector-secret-0123456789abcdef\n", encoding="utf-8")
    upstream = sdk_http_server(tmp_path, processes)
    section = "\n".join(
        [
            "[upstream]",
            f'token_url = "{provider.issuer}/token"',
            'client_id = "introspector"',
            f'client_secret_file = "{secret}"',
            'scope = "mcp:read"',
            f'resource = "{upstream}"',
        ]
    )
    proxy = launch(tail=section + "\n", upstream=upstream)
    caller = Caller(proxy, provider.token("reader", proxy.url))
    caller.open()
    for _ in range(3):
        assert caller.call("echo", {"text": "hi"})["result"]["isError"] is False
    seen = set(_upstream_authorizations(tmp_path))
    assert len(seen) == 1  # one token, cached across requests and sessions
    (value,) = seen
    _, claims = parts(value.removeprefix("Bearer "))
    assert claims["client_id"] == "introspector"
    assert claims["aud"] == upstream  # issued for the upstream, not for the proxy
    assert caller.token not in value


def test_upstream_credentials_that_cannot_be_read_stop_the_proxy_at_start_up(
    tmp_path: Path,
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[upstream]\nbearer_env = "NO_SUCH_VARIABLE_SET"\n', encoding="utf-8")
    result = CliRunner().invoke(
        proxy_command, ["--policy", str(policy), "--upstream", "http://127.0.0.1:9/mcp"]
    )
    assert result.exit_code == 2
    assert "NO_SUCH_VARIABLE_SET" in result.output
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
    spawned = CliRunner().invoke(proxy_command, ["--policy", str(policy), "--", *server])
    assert spawned.exit_code == 2
    assert "--upstream URL only" in spawned.output


# ---------------------------------------------------------------------------------------------
# Guard settings per identity: a path root per tenant, from the token's `tenant` claim


def _codes(answer: Any) -> list[str]:
    result = answer["result"]
    assert result["isError"] is True
    codes = result["_meta"]["dev.strictmcp/validation"]["codes"]
    assert isinstance(codes, list)
    return codes


def test_a_tenant_reads_only_under_its_own_root(
    launch: Launch, provider: AuthorizationServer, tmp_path: Path
) -> None:
    tenants = tmp_path / "tenants"
    for tenant in ("acme", "globex"):
        (tenants / tenant).mkdir(parents=True)
        (tenants / tenant / "report.txt").write_text(f"{tenant} secret", encoding="utf-8")
    # A link an acme user planted in its own directory, pointing at the other tenant's.
    (tenants / "acme" / "peek").symlink_to(tenants / "globex")
    guard = (
        '[[guard]]\ntool = "read_file"\nargument = "/path"\nkind = "path"\n'
        f'roots = ["{tenants}/{{claim.tenant}}"]\n'
    )
    proxy = launch(tail=guard)
    acme = Caller(proxy, provider.token("tenant-a", proxy.url))
    globex = Caller(proxy, provider.token("tenant-b", proxy.url))
    acme_file, globex_file = tenants / "acme" / "report.txt", tenants / "globex" / "report.txt"

    def text(answer: Any) -> str:
        assert answer["result"]["isError"] is False, answer
        content = answer["result"]["content"][0]["text"]
        assert isinstance(content, str)
        return content

    for alone in (False, True):  # in a session, and 2026-07-28 requests one by one
        if not alone:
            acme.open()
            globex.open()
        assert text(acme.call("read_file", {"path": str(acme_file)}, alone=alone)) == "acme secret"
        assert text(globex.call("read_file", {"path": str(globex_file)}, alone=alone)) == (
            "globex secret"
        )
        # The other tenant's file, directly, through the planted link, and through '..'.
        for path in (
            str(globex_file),
            str(tenants / "acme" / "peek" / "report.txt"),
            f"{tenants}/acme/../globex/report.txt",
        ):
            codes = _codes(acme.call("read_file", {"path": path}, alone=alone))
            assert codes[0] in ("path-outside-roots", "path-symlink-escape"), codes
        assert _codes(globex.call("read_file", {"path": str(acme_file)}, alone=alone)) == [
            "path-outside-roots"
        ]
    # A token without the claim, and one whose claim would leave its slot, are refused
    # whatever the path: fail closed, naming the claim, never its value.
    reader = Caller(proxy, provider.token("reader", proxy.url))
    missing = reader.call("read_file", {"path": str(acme_file)}, alone=True)
    assert _codes(missing) == ["identity-claim-missing"]
    evil = Caller(proxy, provider.token("tenant-evil", proxy.url))
    unsafe = evil.call("read_file", {"path": str(globex_file)}, alone=True)
    assert _codes(unsafe) == ["identity-claim-unsafe"]
    assert "acme/../globex" not in json.dumps(unsafe)
    # The server read each tenant's own file only.
    read = [c["arguments"]["path"] for c in _calls(proxy) if c["name"] == "read_file"]
    assert sorted(read) == sorted([str(acme_file), str(globex_file)] * 2)


# ---------------------------------------------------------------------------------------------
# Rate limits


def test_a_rate_limit_is_reached_and_recovered_per_identity(
    launch: Launch, provider: AuthorizationServer
) -> None:
    # One call, then one more every 16 seconds: long enough that a loaded machine's delays
    # between the calls below do not refill the bucket (the session is opened first: from
    # the bucket's token on, only calls run until the refusals).
    limit = '[[rate_limit]]\ntools = ["echo"]\ncalls = 1\nperiod = 16\n'
    proxy = launch(tail=limit)
    reader = Caller(proxy, provider.token("reader", proxy.url))
    admin = Caller(proxy, provider.token("admin", proxy.url, scope="mcp:read mcp:admin"))
    session = Caller(proxy, reader.token)
    session.open()
    call = {"name": "echo", "arguments": {"text": "hi"}}
    assert reader.call("echo", {"text": "hi"}, alone=True)["result"]["isError"] is False
    meta = {
        "io.modelcontextprotocol/protocolVersion": _MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    message = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {**call, "_meta": meta}}
    headers = {
        **_ACCEPT,
        "authorization": f"Bearer {reader.token}",
        "mcp-protocol-version": _MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }
    over = httpx2.post(proxy.url, json=message, headers=headers, timeout=20)
    assert over.status_code == 429
    # A session-based client gets the same error.
    refused = session.call("echo", {"text": "hi"})["error"]
    assert refused["code"] == -32004
    # When the token comes back: at most the period, less however long the steps took.
    assert 1 <= int(over.headers["retry-after"]) <= 16
    error = over.json()["error"]
    assert error["code"] == -32004
    assert error["data"] == {"retryAfter": int(over.headers["retry-after"])}
    # Another identity has its own bucket.
    assert admin.call("echo", {"text": "hi"}, alone=True)["result"]["isError"] is False
    time.sleep(refused["data"]["retryAfter"] + 0.2)  # one token back
    assert session.call("echo", {"text": "hi"})["result"]["isError"] is False


# ---------------------------------------------------------------------------------------------
# Rate limits shared by replicas through Redis


def _limited_call(proxy: Protected, token: str) -> tuple[int, dict[str, Any], str | None]:
    """One 2026-07-28 call of echo: the HTTP status, the JSON-RPC answer, Retry-After."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": _MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {
        **_ACCEPT,
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": _MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }
    response = httpx2.post(proxy.url, json=message, headers=headers, timeout=30)
    return response.status_code, _answer(response), response.headers.get("retry-after")


def _shared_limit(url: str, *, unavailable: str = "closed") -> str:
    # Two calls, then one more every 16 seconds (see the per-replica test for why so slow).
    return (
        '[[rate_limit]]\ntools = ["echo"]\ncalls = 2\nperiod = 32\n'
        f'[rate_store]\nurl = "{url}"\non_unavailable = "{unavailable}"\ntimeout_ms = 300\n'
    )


def test_a_rate_limit_shared_through_redis_holds_across_two_replicas(
    launch: Launch, provider: AuthorizationServer, tmp_path: Path
) -> None:
    with redis_server() as redis:
        audit = tmp_path / "audit.jsonl"
        options = ("--audit-log", str(audit))
        first = launch(tail=_shared_limit(redis.url), options=options)
        second = launch(tail=_shared_limit(redis.url))
        tokens = {proxy.url: provider.token("reader", proxy.url) for proxy in (first, second)}

        def call(proxy: Protected) -> tuple[int, dict[str, Any], str | None]:
            return _limited_call(proxy, tokens[proxy.url])

        # A session-based client of a replica, its session opened first: from the bucket's
        # first token on, only calls run until the refusals (a loaded machine's delays
        # must not refill it).
        reader = Caller(second, tokens[second.url])
        reader.open()
        # Two calls in all, whichever replica answers them; the third is refused by both,
        # and the session's, counted in the same bucket.
        assert call(first)[1]["result"]["isError"] is False
        assert call(second)[1]["result"]["isError"] is False
        for proxy in (first, second):
            status, answer, retry = call(proxy)
            assert status == 429
            assert answer["error"]["code"] == -32004
            assert retry is not None
            assert 1 <= int(retry) <= 16
            assert answer["error"]["data"] == {"retryAfter": int(retry)}
        refused = reader.call("echo", {"text": "hi"})["error"]
        assert refused["code"] == -32004
        # Another identity has its own bucket, in Redis too.
        admin = provider.token("admin", second.url, scope="mcp:read mcp:admin")
        assert _limited_call(second, admin)[1]["result"]["isError"] is False
        # One token back (and less than two: one comes every 16 s), for whichever replica.
        time.sleep(refused["data"]["retryAfter"] + 0.2)
        assert call(second)[1]["result"]["isError"] is False
        assert call(first)[0] == 429
        # Both replicas' servers record to the one file of the workspace.
        echoed = [c for c in _calls(first) if c["name"] == "echo"]
        assert len(echoed) == 4  # the reader's three and the admin's one

        # Redis goes away: the limited tool is refused (fail closed), the others go on.
        redis.stop()
        status, answer, retry = call(first)
        assert (status, retry) == (429, "1")
        assert answer["error"]["code"] == -32004
        assert "cannot be checked" in answer["error"]["message"]
        hello = tmp_path / "hello.txt"
        hello.write_text("hello", encoding="utf-8")
        unlimited = Caller(first, tokens[first.url]).call(
            "read_file", {"path": str(hello)}, alone=True
        )
        assert unlimited["result"]["isError"] is False
        first.process.wait_for("rate limit store (Redis) cannot be reached")
        refusals = [r for r in _records(audit) if r["code"] == "rate-store-unavailable"]
        assert [r["action"] for r in refusals] == ["refused"]
        assert refusals[0]["identity"] == {"subject": "reader", "clientId": "reader"}
        # A replica whose policy says open lets the call through, and says so.
        opened = launch(tail=_shared_limit(redis.url, unavailable="open"))
        token = provider.token("reader", opened.url)
        assert _limited_call(opened, token)[1]["result"]["isError"] is False
        opened.process.wait_for("are let through until it can")
        assert "redis://" not in first.process.output() + opened.process.output()
        # Redis is back (empty): the limit holds again, and the operator is told.
        redis.start()
        assert call(first)[1]["result"]["isError"] is False
        first.process.wait_for("can be reached again")


def test_a_shared_limit_is_decided_in_turn_over_stdio_never_reordering(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    hello = tmp_path / "hello.txt"
    hello.write_text("hello", encoding="utf-8")
    with redis_server() as redis:
        policy = tmp_path / "policy.toml"
        policy.write_text(
            '[identity]\nsubject = "ci"\n'
            '[[rate_limit]]\ntools = ["echo"]\ncalls = 1\nperiod = 600\n'
            f'[rate_store]\nurl = "{redis.url}"\n',
            encoding="utf-8",
        )
        server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
        command = [sys.executable, "-m", "strictmcp.proxy", "--policy", str(policy), "--", *server]
        proxy = Process(command, tmp_path, "stdout", stdin=True)
        processes.append(proxy)
        proxy.send(_INIT)
        assert json.loads(proxy.next_line())["id"] == 0
        proxy.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        proxy.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert json.loads(proxy.next_line())["id"] == 1

        def call(request_id: int, tool: str, arguments: dict[str, Any]) -> str:
            params = {"name": tool, "arguments": arguments}
            message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
            return json.dumps(message) + "\n"

        # In one write: a limited call (awaited in Redis), an unlimited one, the limited
        # one again (over its limit), an unlimited one: the server must get them in order.
        assert proxy.popen.stdin is not None
        proxy.popen.stdin.write(
            call(2, "echo", {"text": "one"})
            + call(3, "read_file", {"path": str(hello)})
            + call(4, "echo", {"text": "two"})
            + call(5, "read_file", {"path": str(hello)})
        )
        proxy.popen.stdin.flush()
        answers: dict[int, Any] = {}
        while len(answers) < 4:
            answer = json.loads(proxy.next_line())
            answers[answer["id"]] = answer
        assert answers[4]["error"]["code"] == -32004
        assert all(answers[i]["result"]["isError"] is False for i in (2, 3, 5))
        received = [(c["name"], c["arguments"]) for c in _calls_in(tmp_path)]
        assert received == [
            ("echo", {"text": "one"}),
            ("read_file", {"path": str(hello)}),
            ("read_file", {"path": str(hello)}),
        ]


def _calls_in(workspace: Path) -> list[dict[str, Any]]:
    path = workspace / "calls"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ---------------------------------------------------------------------------------------------
# Opaque tokens: introspection (RFC 7662) at the provider


def test_opaque_tokens_are_checked_by_introspection(
    launch: Launch, provider: AuthorizationServer, tmp_path: Path
) -> None:
    secret = tmp_path / "introspection-secret"
    secret.write_text("introspector-secret-0123456789abcdef\n", encoding="utf-8")
    proxy = launch(
        f'introspection_url = "{provider.issuer}/token/introspection"',
        'client_id = "introspector"',
        f'client_secret_file = "{secret}"',
    )
    opaque = provider.token("opaque", proxy.url)
    assert opaque.count(".") == 0  # really opaque: not a JWT
    assert proxy.post(opaque).status_code == 200
    elsewhere = provider.token("opaque", f"http://127.0.0.1:{free_port()}/mcp")
    refused(proxy.post(elsewhere), 401, "token-audience")
    refused(proxy.post(secrets.token_urlsafe(32)), 401, "token-inactive")
    assert proxy.post(provider.token("reader", proxy.url)).status_code == 200  # JWTs as before
    assert_never_leaked(proxy, opaque, elsewhere)


def test_an_unreadable_introspection_secret_stops_the_proxy_at_start_up(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    lines = [
        "[auth]",
        'issuer = "https://as.example"',
        'resource = "https://mcp.example/mcp"',
        'introspection_url = "https://as.example/introspect"',
        'client_id = "proxy"',
        f'client_secret_file = "{tmp_path / "missing"}"',
    ]
    policy.write_text("\n".join(lines) + "\n", encoding="utf-8")
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
    result = CliRunner().invoke(
        proxy_command, ["--policy", str(policy), "--listen", "127.0.0.1:0", "--", *server]
    )
    assert result.exit_code == 2, result.output
    assert "client secret" in result.output


def test_a_stateless_caller_may_not_reuse_an_id_it_has_in_flight(
    launch: Launch, provider: AuthorizationServer
) -> None:
    # The server sees the proxy's own ids, but a caller with two requests 7 in flight (or 7
    # and "7", which the official clients read alike) could not tell their answers apart.
    # Another caller's 7 is its own.
    # Long enough for a loaded machine to start the server and send the calls below while
    # the first is pending.
    proxy = launch(options=("--timeout", "10"))
    reader = provider.token("reader", proxy.url)
    admin = provider.token("admin", proxy.url)

    def post(token: str, request_id: Any, tool: str) -> Any:
        meta = {
            "io.modelcontextprotocol/protocolVersion": _MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        params = {"name": tool, "arguments": {"text": "hi"}, "_meta": meta}
        message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        headers = {
            **_ACCEPT,
            "authorization": f"Bearer {token}",
            "mcp-protocol-version": _MODERN,
            "mcp-method": "tools/call",
            "mcp-name": tool,
        }
        return httpx2.post(proxy.url, json=message, headers=headers, timeout=30)

    hung: list[Any] = []
    first = threading.Thread(target=lambda: hung.append(post(reader, 7, "hang")))
    first.start()
    calls = proxy.workspace / "calls"
    deadline = time.monotonic() + 30
    while not calls.exists() or "hang" not in calls.read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, "the first call never reached the server"
        time.sleep(0.05)
    for alias in (7, "7", " 07"):
        refused = post(reader, alias, "echo")
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == -32600
    other = _answer(post(admin, 7, "echo"))
    assert other["result"]["content"][0]["text"] == "hi"
    first.join(30)
    assert _answer(hung[0])["error"]["code"] == -32001  # the timeout
    again = _answer(post(reader, "7", "echo"))
    assert again["result"]["content"][0]["text"] == "hi"
    names = [json.loads(line)["name"] for line in calls.read_text().splitlines()]
    assert names == ["hang", "echo", "echo"]
