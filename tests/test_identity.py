"""The identity layer on its own: hostile JWKS documents, the refresh bound, ``[auth]``."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import anyio
import jwt
import mcp_types as types
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from fastmcp import Client as FastClient
from fastmcp import FastMCP
from mcp import Client, MCPError
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

from redis_support import redis_server
from strictmcp.enforce import (
    AUDIT_LOGGER,
    RATE_LIMITED,
    Auditor,
    Enforcer,
    RateLimiter,
    SharedRateLimiter,
    StoreUnavailable,
    limiter_for,
)
from strictmcp.identity import Jwks, KeySet, TokenError, TokenVerifier
from strictmcp.identity.jwks import MAX_JWKS_BYTES, KeysUnavailable
from strictmcp.integrations._server_core import ServerCore
from strictmcp.integrations.fastmcp import StrictMiddleware
from strictmcp.integrations.lowlevel import protect
from strictmcp.integrations.mcpserver import StrictExtension
from strictmcp.policy import (
    AuthSettings,
    Identity,
    Policy,
    PolicyError,
    RateStoreSettings,
)
from strictmcp.protocol import Revision, ToolRegistry, check_call
from strictmcp.proxy import ProxySession, Routed
from strictmcp.proxy.relay import Relay


def public_jwk(key: Any, kid: str | None, **extra: Any) -> dict[str, Any]:
    algorithm = jwt.algorithms.RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else None
    if algorithm is None:
        jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    else:
        jwk = json.loads(algorithm.to_jwk(key.public_key()))
    if kid is not None:
        jwk["kid"] = kid
    return {**jwk, **extra}


RSA = rsa.generate_private_key(public_exponent=65537, key_size=2048)
EC = ec.generate_private_key(ec.SECP256R1())


def document(*keys: Any) -> bytes:
    return json.dumps({"keys": list(keys)}).encode()


def test_a_keyset_keeps_only_public_asymmetric_signing_keys() -> None:
    small = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    private = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(RSA))
    keys = KeySet.parse(
        document(
            public_jwk(RSA, "good"),
            {"kty": "oct", "k": "c2VjcmV0", "kid": "shared"},  # a symmetric key: never
            {**private, "kid": "private"},  # a private key published by mistake
            public_jwk(RSA, "encryption", use="enc"),
            public_jwk(small, "small"),
            public_jwk(EC, "ec"),
            {"kty": "RSA", "kid": "broken", "n": "!!", "e": "AQAB"},
            "not a key",
        )
    )
    assert keys.key("good", "RS256") is not None
    assert keys.key("good", "PS256") is not None  # the same RSA key, bound to PS256
    for kid in ("shared", "private", "encryption", "small", "broken"):
        assert keys.key(kid, "RS256") is None, kid
    assert keys.key("ec", "ES256") is not None
    assert keys.key("ec", "RS256") is None  # the wrong type for the algorithm
    assert keys.key("ec", "ES384") is None  # the wrong curve
    assert keys.key("good", "HS256") is None


def test_duplicate_kids_are_dropped_and_one_unnamed_key_serves_tokens_without_kid() -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    keys = KeySet.parse(document(public_jwk(RSA, "twice"), public_jwk(other, "twice")))
    assert keys.key("twice", "RS256") is None
    alone = KeySet.parse(document(public_jwk(RSA, None)))
    assert alone.key(None, "RS256") is not None
    two = KeySet.parse(document(public_jwk(RSA, None), public_jwk(other, None)))
    assert two.key(None, "RS256") is None


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"[]",
        b'{"keys": {}}',
        b"{" * 100_000,
        b'{"keys": [' + b"1," * MAX_JWKS_BYTES + b"1]}",
    ],
    ids=["empty", "array", "keys not a list", "deep", "huge"],
)
def test_a_hostile_jwks_document_is_refused(text: bytes) -> None:
    with pytest.raises(KeysUnavailable):
        KeySet.parse(text)


def test_unknown_kids_reload_at_most_once_per_interval() -> None:
    now = [1000.0]
    loads: list[float] = []

    async def load() -> bytes:
        loads.append(now[0])
        return document(public_jwk(RSA, "known"))

    async def scenario() -> None:
        jwks = Jwks(load, refresh=60, clock=lambda: now[0])
        assert await jwks.key("known", "RS256") is not None
        results = [await jwks.key(f"random-{i}", "RS256") for i in range(100)]
        assert results == [None] * 100
        async with anyio.create_task_group() as group:  # concurrent callers share one load
            for i in range(50):
                group.start_soon(jwks.key, f"more-{i}", "RS256")
        assert len(loads) == 1  # loaded within the interval: no refresh at all
        now[0] += 61
        assert await jwks.key("another", "RS256") is None
        assert await jwks.key("and-another", "RS256") is None
        assert len(loads) == 2

    anyio.run(scenario)


def test_a_failed_load_keeps_the_keys_held_and_is_not_retried_at_once() -> None:
    now = [0.0]
    answers = [document(public_jwk(RSA, "known")), b"oops"]

    async def load() -> bytes:
        return answers.pop(0) if answers else b"oops"

    async def scenario() -> None:
        jwks = Jwks(load, refresh=10, clock=lambda: now[0])
        assert await jwks.key("known", "RS256") is not None
        now[0] += 11
        assert await jwks.key("new", "RS256") is None  # the reload failed
        assert await jwks.key("known", "RS256") is not None  # the old keys still serve

    anyio.run(scenario)


def test_no_keys_at_all_is_a_token_error_not_a_crash() -> None:
    settings = AuthSettings(issuer="https://as.example", resource="https://mcp.example/mcp")

    async def load() -> bytes:
        raise KeysUnavailable("down")

    async def scenario() -> None:
        verifier = TokenVerifier(settings, keys=Jwks(load, refresh=60))
        token = jwt.encode({"sub": "x"}, RSA, algorithm="RS256", headers={"kid": "k"})
        with pytest.raises(TokenError) as caught:
            await verifier.verify(token)
        assert caught.value.code == "token-keys-unavailable"
        with pytest.raises(TokenError) as again:  # within the interval: refused at once
            await verifier.verify(token)
        assert again.value.code == "token-keys-unavailable"

    anyio.run(scenario)


def test_the_auth_section_loads_and_refuses_what_would_weaken_it() -> None:
    good = {"issuer": "https://as.example", "resource": "https://mcp.example/mcp"}
    policy = Policy.from_dict({"auth": {**good, "scopes": ["mcp:read"], "leeway": 5}})
    assert policy.auth == AuthSettings(
        issuer=good["issuer"], resource=good["resource"], scopes=("mcp:read",), leeway=5
    )
    refusals = {
        "algorithms": {**good, "algorithms": ["RS256", "HS256"]},
        "unknown keys: client_secret": {**good, "client_secret": "literal"},
        "issuer must be an https": {**good, "issuer": "http://as.example"},
        "resource must be an https": {**good, "resource": "https://mcp.example/mcp#x"},
        "not both": {**good, "jwks_url": "https://as.example/jwks", "jwks_file": "/k"},
        "missing options: resource": {"issuer": "https://as.example"},
        "leeway": {**good, "leeway": 3600},
    }
    for message, section in refusals.items():
        with pytest.raises(PolicyError, match=message):
            Policy.from_dict({"auth": section})
    loopback = {"issuer": "http://127.0.0.1:9000", "resource": "http://[::1]:8000/mcp"}
    assert Policy.from_dict({"auth": loopback}).auth is not None


def test_an_identity_is_its_claims_and_never_prints_them() -> None:
    claims = {"sub": "ana", "client_id": "app", "scope": "a b", "groups": ["ops"], "x": 1}
    identity = Identity.from_claims(claims)
    assert identity.scopes == frozenset({"a", "b"})
    assert identity.groups == ("ops",)
    assert identity.audit() == {"subject": "ana", "clientId": "app"}
    assert "'x'" not in repr(identity)
    assert Identity.from_claims({"scp": ["a"], "azp": "app"}).scopes == frozenset({"a"})


# ---------------------------------------------------------------------------------------------
# Access rules, in the one enforcement path

ACCESS = Policy.from_dict(
    {
        "identity": {"subject": "ci-bot", "client_id": "ci"},
        "access": [
            {"tools": ["read_*"], "scopes": ["files"]},
            {"tools": ["*"], "groups": ["ops", "sre"]},
            {"tools": ["report"], "subject": "svc-*", "claims": {"tenant": ["acme", "globex"]}},
        ],
    }
)
TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in ("read_file", "delete_file", "report")
]


def registry() -> ToolRegistry:
    tools = ToolRegistry(Revision("2025-11-25"))
    tools.update({"tools": TOOLS})
    return tools


def test_access_rules_match_on_scopes_groups_subjects_and_claims() -> None:
    reader = Identity("ana", scopes=frozenset({"files"}))
    ops = Identity("bob", groups=("sre",))
    service = Identity.from_claims({"sub": "svc-report", "tenant": "acme"})
    other_tenant = Identity.from_claims({"sub": "svc-report", "tenant": ["initech"]})
    assert ACCESS.allows(reader, "read_file")
    assert not ACCESS.allows(reader, "delete_file")
    assert ACCESS.allows(ops, "delete_file")
    assert ACCESS.allows(service, "report")
    assert not ACCESS.allows(service, "read_file")
    assert not ACCESS.allows(other_tenant, "report")
    assert not ACCESS.allows(None, "read_file")  # once a rule exists, nobody unknown
    assert Policy().allows(None, "anything")  # no rules: access is not restricted
    assert ACCESS.identity == Identity("ci-bot", client_id="ci")


def test_a_denied_call_is_an_unknown_tool_and_the_listing_hides_it() -> None:
    log = io.StringIO()
    enforcer = Enforcer(policy=ACCESS, auditor=Auditor(log))
    reader = Identity("ana", "app", scopes=frozenset({"files"}))
    tools = registry()
    denied = enforcer.check_call(tools, "delete_file", {}, identity=reader)
    unknown = check_call(tools, {"name": "no_such_tool", "arguments": {}})
    assert denied.jsonrpc_error is not None
    assert unknown.jsonrpc_error is not None
    assert denied.jsonrpc_error[0] == unknown.jsonrpc_error[0] == -32602
    assert denied.jsonrpc_error[1] == unknown.jsonrpc_error[1].replace(
        "no_such_tool", "delete_file"
    )
    assert enforcer.check_call(tools, "read_file", {}, identity=reader).allowed
    assert [t["name"] for t in enforcer.visible(TOOLS, reader)] == ["read_file"]
    dry = anyio.run(enforcer.dry_run(tools, reader).check, "delete_file", {})
    dry_unknown = anyio.run(enforcer.dry_run(tools, reader).check, "nope", {})
    assert dry.errors == tuple(e.replace("nope", "delete_file") for e in dry_unknown.errors)
    (record,) = [json.loads(line) for line in log.getvalue().splitlines()]
    assert record["identity"] == {"subject": "ana", "clientId": "app"}
    assert (record["stage"], record["action"], record["code"]) == (
        "access",
        "refused",
        "access-denied",
    )


def test_in_audit_mode_access_is_logged_as_would_deny() -> None:
    log = io.StringIO()
    enforcer = Enforcer(policy=ACCESS, mode="audit", auditor=Auditor(log))
    stranger = Identity("eve")
    assert enforcer.check_call(registry(), "delete_file", {}, identity=stranger).allowed
    assert len(enforcer.visible(TOOLS, stranger)) == 3
    (record,) = [json.loads(line) for line in log.getvalue().splitlines()]
    assert record["action"] == "would deny"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"access": [{"scopes": ["a"]}]}, "missing options: tools"),
        ({"access": [{"tools": ["*"], "role": "x"}]}, "unknown keys: role"),
        ({"access": [{"tools": ["*"], "claims": {"tenant": 1}}]}, "claims.tenant"),
        ({"access": {"tools": ["*"]}}, "list of"),
        ({"identity": {"client_id": "x"}}, "missing options: subject"),
    ],
)
def test_bad_access_sections_are_refused(section: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        Policy.from_dict(section)


def test_over_stdio_the_policy_names_the_caller_for_the_proxy_and_the_sdk_alike() -> None:
    proxy = ProxySession(Auditor(io.StringIO()), policy=ACCESS)
    assert proxy.identity == ACCESS.identity
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}}
    server = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s"}}
    messages: list[tuple[dict[str, Any], Any]] = [
        ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, "c2s"),
        ({"jsonrpc": "2.0", "id": 0, "result": server}, "s2c"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, "c2s"),
    ]
    for message, direction in messages:
        proxy.decide(json.dumps(message).encode(), direction)
    listed = proxy.decide(
        json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}}).encode(), "s2c"
    )
    assert isinstance(listed, Routed)
    names = [t["name"] for t in json.loads(listed.forward[0])["result"]["tools"]]
    assert names == ["validate"]  # ci-bot has no scope, no group: none of the server's tools
    core = ServerCore(policy=ACCESS)
    listing = core.listing("2025-11-25", TOOLS)

    async def proceed() -> dict[str, Any]:
        raise AssertionError("the tool must not run")

    async def call() -> None:
        with pytest.raises(MCPError) as refused:
            await core.call(listing, "read_file", {}, proceed, lambda r: r)
        assert refused.value.error.code == -32602

    anyio.run(call)


# ---------------------------------------------------------------------------------------------
# Rate limits


def test_a_token_bucket_per_identity_and_tool() -> None:
    now = [0.0]
    limits = Policy.from_dict(
        {"rate_limit": [{"tools": ["search*"], "calls": 3, "period": 6}]}
    ).rate_limits
    limiter = RateLimiter(limits, clock=lambda: now[0])
    ana, bob = Identity("ana"), Identity("bob")
    assert [limiter.take(ana, "search") for _ in range(3)] == [None, None, None]
    assert limiter.take(ana, "search") == 2  # one token every 2 seconds
    assert limiter.take(ana, "search_more") is None  # another tool: another bucket
    assert limiter.take(bob, "search") is None  # another identity: another bucket
    assert limiter.take(ana, "other") is None  # no limit applies
    now[0] += 2
    assert limiter.take(ana, "search") is None
    assert limiter.take(ana, "search") == 2


def test_over_the_limit_is_its_own_error_with_the_delay_and_audit_mode_only_logs() -> None:
    policy = Policy.from_dict({"rate_limit": [{"tools": ["*"], "calls": 1, "period": 60}]})
    log = io.StringIO()
    enforcer = Enforcer(policy=policy, auditor=Auditor(log))
    ana = Identity("ana", "app")
    assert enforcer.check_call(registry(), "report", {}, identity=ana).allowed
    over = enforcer.check_call(registry(), "report", {}, identity=ana)
    assert over.jsonrpc_error is not None
    assert over.jsonrpc_error[0] == RATE_LIMITED == -32004
    assert over.jsonrpc_data == {"retryAfter": 60}
    (record,) = [json.loads(line) for line in log.getvalue().splitlines()]
    assert (record["stage"], record["code"], record["action"]) == (
        "rate",
        "rate-limited",
        "refused",
    )
    audit = Enforcer(policy=policy, mode="audit", auditor=Auditor(io.StringIO()))
    for _ in range(3):
        assert audit.check_call(registry(), "report", {}, identity=ana).allowed
    with pytest.raises(PolicyError, match="at least 1"):
        Policy.from_dict({"rate_limit": [{"tools": ["*"], "calls": 0}]})


def test_the_sdk_integrations_authorize_the_sdks_authenticated_caller_like_the_proxy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    token = AccessToken(
        token="sdk-token-never-logged",
        client_id="app",
        scopes=["files"],
        subject="ana",
        claims={"groups": []},
    )
    core = ServerCore(policy=ACCESS)
    listing = core.listing("2025-11-25", TOOLS)
    ran: list[str] = []

    def proceed(name: str) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def run() -> dict[str, Any]:
            ran.append(name)
            return {"content": []}

        return run

    async def calls() -> None:
        await core.call(listing, "read_file", {}, proceed("read_file"), lambda r: r)
        with pytest.raises(MCPError) as refused:
            await core.call(listing, "delete_file", {}, proceed("delete_file"), lambda r: r)
        assert refused.value.error.code == -32602
        assert refused.value.error.message == 'Unknown tool: "delete_file"'

    caplog.set_level(logging.INFO, logger=AUDIT_LOGGER)
    reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        anyio.run(calls)
    finally:
        auth_context_var.reset(reset)
    assert ran == ["read_file"]
    (record,) = [r.__dict__["strictmcp"] for r in caplog.records if r.name == AUDIT_LOGGER]
    assert record["identity"] == {"subject": "ana", "clientId": "app"}
    assert "sdk-token-never-logged" not in caplog.text
    # The proxy gives the same identity the same verdict.
    proxy = Enforcer(policy=ACCESS)
    ana = Identity("ana", "app", scopes=frozenset({"files"}))
    assert proxy.check_call(registry(), "read_file", {}, identity=ana).allowed
    assert not proxy.check_call(registry(), "delete_file", {}, identity=ana).allowed


# ---------------------------------------------------------------------------------------------
# The same access rules in the proxy and in each SDK integration: listings and calls

#: Callers as the SDK's auth middleware hands them over (and as a JWT's claims would say).
SDK_CALLERS = {
    "reader": AccessToken(token="t-reader", client_id="app", scopes=["files"], subject="ana"),
    "ops": AccessToken(
        token="t-ops", client_id="app", scopes=[], subject="bob", claims={"groups": ["ops"]}
    ),
    "service": AccessToken(
        token="t-svc", client_id="svc", scopes=[], subject="svc-report", claims={"tenant": "acme"}
    ),
    "stranger": AccessToken(token="t-eve", client_id="app", scopes=[], subject="eve"),
}
TOOL_NAMES = [str(tool["name"]) for tool in TOOLS]


def _lowlevel(ran: list[str]) -> Any:
    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in TOOLS])

    async def call_tool(ctx: Any, params: Any) -> Any:
        ran.append(params.name)
        return types.CallToolResult(content=[types.TextContent(type="text", text="ran")])

    server = Server("test", on_list_tools=list_tools, on_call_tool=call_tool)
    return protect(server, policy=ACCESS)


def _mcpserver(ran: list[str]) -> Any:
    extension = StrictExtension(policy=ACCESS)
    app = MCPServer("test", extensions=[extension])
    for name in TOOL_NAMES:
        app.tool(name=name)(_recorder(ran, name))
    return extension.install(app)


def _fastmcp(ran: list[str]) -> Any:
    server = FastMCP("test", middleware=[StrictMiddleware(policy=ACCESS)])
    for name in TOOL_NAMES:
        server.tool(_recorder(ran, name), name=name)
    return server


def _recorder(ran: list[str], name: str) -> Callable[[], str]:
    def tool() -> str:
        ran.append(name)
        return "ran"

    return tool


async def _through_sdk_client(server: Any, fastmcp: bool) -> list[str]:
    """The names the client is listed, calling each tool of the server (``ran`` says which
    ran)."""
    if fastmcp:
        async with FastClient(server) as client:
            names = [tool.name for tool in await client.list_tools()]
            for name in TOOL_NAMES:
                with contextlib.suppress(Exception):
                    await client.call_tool(name, {}, raise_on_error=False)
            return names
    async with Client(server, mode="legacy") as sdk:
        names = [tool.name for tool in (await sdk.list_tools()).tools]
        for name in TOOL_NAMES:
            with contextlib.suppress(MCPError):
                await sdk.call_tool(name, {})
        return names


def _through_proxy(token: AccessToken) -> tuple[list[str], list[str]]:
    """What the proxy lists and lets through for the caller of ``token``'s claims."""
    claims = {
        **(token.claims or {}),
        "sub": token.subject,
        "client_id": token.client_id,
        "scope": " ".join(token.scopes),
    }
    caller = Identity.from_claims(claims)
    proxy = ProxySession(Auditor(io.StringIO()), policy=ACCESS)
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}}
    server = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s"}}
    messages: list[tuple[dict[str, Any], Any]] = [
        ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, "c2s"),
        ({"jsonrpc": "2.0", "id": 0, "result": server}, "s2c"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, "c2s"),
    ]
    for message, direction in messages:
        proxy.decide(json.dumps(message).encode(), direction, identity=caller)
    listed = proxy.decide(
        json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}}).encode(), "s2c"
    )
    assert isinstance(listed, Routed)
    names = [t["name"] for t in json.loads(listed.forward[0])["result"]["tools"]]
    enforcer = Enforcer(policy=ACCESS, auditor=Auditor(io.StringIO()))
    allowed = [
        n for n in TOOL_NAMES if enforcer.check_call(registry(), n, {}, identity=caller).allowed
    ]
    return names, allowed


@pytest.mark.parametrize("framework", ["lowlevel", "mcpserver", "fastmcp"])
@pytest.mark.parametrize("caller", sorted(SDK_CALLERS))
def test_each_sdk_integration_lists_and_runs_what_the_proxy_does(
    framework: str, caller: str
) -> None:
    token = SDK_CALLERS[caller]
    ran: list[str] = []
    server = {"lowlevel": _lowlevel, "mcpserver": _mcpserver, "fastmcp": _fastmcp}[framework](ran)
    reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        listed = anyio.run(_through_sdk_client, server, framework == "fastmcp")
    finally:
        auth_context_var.reset(reset)
    proxy_listed, proxy_allowed = _through_proxy(token)
    expected = {
        "reader": ["read_file"],
        "ops": TOOL_NAMES,
        "service": ["report"],
        "stranger": [],
    }[caller]
    assert proxy_allowed == expected
    assert proxy_listed == [*expected, "validate"]
    # The validate tool's name is the framework's own choice; the server's tools are the same.
    assert [n for n in listed if n in TOOL_NAMES] == expected
    assert len(listed) == len(expected) + 1
    assert ran == expected


# ---------------------------------------------------------------------------------------------
# Rate limits shared through Redis


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ({"url": "redis://127.0.0.1:1", "url_env": "X"}, "one of url, url_env or url_file"),
        ({}, "one of url, url_env or url_file"),
        ({"url": "http://127.0.0.1:6379"}, "redis:// or rediss://"),
        ({"url": "redis://:hunter2@127.0.0.1:6379"}, "holds a password"),
        ({"url": "redis://127.0.0.1:1", "timeout_ms": 0}, "timeout_ms"),
        ({"url": "redis://127.0.0.1:1", "on_unavailable": "maybe"}, '"closed", "open"'),
        ({"url": "redis://127.0.0.1:1", "host": "x"}, "unknown keys: host"),
    ],
)
def test_bad_rate_stores_are_refused(store: dict[str, Any], message: str) -> None:
    limit = [{"tools": ["*"], "calls": 1}]
    with pytest.raises(PolicyError, match=message):
        Policy.from_dict({"rate_limit": limit, "rate_store": store})


def test_a_rate_store_needs_limits_and_its_url_is_read_where_it_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(PolicyError, match="needs \\[\\[rate_limit\\]\\]"):
        Policy.from_dict({"rate_store": {"url": "redis://127.0.0.1:1"}})
    policy = Policy.from_dict(
        {"rate_limit": [{"tools": ["*"], "calls": 1}], "rate_store": {"url_env": "RATE_URL"}}
    )
    assert policy.rate_store is not None
    monkeypatch.delenv("RATE_URL", raising=False)
    with pytest.raises(PolicyError, match="RATE_URL") as missing:
        limiter_for(policy)
    monkeypatch.setenv("RATE_URL", "redis://:hunter2@127.0.0.1:1/0")
    assert isinstance(limiter_for(policy), SharedRateLimiter)
    monkeypatch.setenv("RATE_URL", "http://:hunter2@127.0.0.1:1/0")
    with pytest.raises(PolicyError) as wrong:
        limiter_for(policy)
    assert "hunter2" not in str(wrong.value) + str(missing.value)


def test_shared_buckets_are_taken_atomically_in_redis_and_an_outage_is_reported() -> None:
    searches = {"tools": ["search*"], "calls": 3, "period": 600}
    everything = {"tools": ["*"], "calls": 4, "period": 600}
    # Two replicas' limiters; the second's first limit names no tool, so that its bucket of
    # the second limit (the same key: the same position, numbers, caller and tool) can be
    # read alone.
    both = Policy.from_dict({"rate_limit": [searches, everything]}).rate_limits
    second_only = Policy.from_dict(
        {"rate_limit": [{**searches, "tools": ["nothing"]}, everything]}
    ).rate_limits
    with redis_server() as redis:
        store = RateStoreSettings(url=redis.url, timeout_ms=300)
        ana, bob = Identity("ana", "app"), Identity("bob", "app")

        async def scenario() -> None:
            limiter = SharedRateLimiter(both, store, redis.url)
            replica = SharedRateLimiter(second_only, store, redis.url)
            try:
                assert [await limiter.take(ana, "search") for _ in range(3)] == [None] * 3
                # The first limit is spent (one token every 200 s); the call is refused...
                assert 190 <= (await limiter.take(ana, "search") or 0) <= 200
                # ... and took nothing from the second: 4 - 3 = 1 left there, for any replica.
                assert await replica.take(ana, "search") is None
                assert 140 <= (await replica.take(ana, "search") or 0) <= 150
                assert await limiter.take(bob, "search") is None  # another identity
                assert await limiter.take(ana, "report") is None  # another tool
                # A tool no limit names never asks Redis, even when it is gone.
                redis.stop()
                with pytest.raises(StoreUnavailable) as lost:
                    await limiter.take(ana, "search")
                assert "127.0.0.1" not in str(lost.value)
                assert limiter.reachable is False
                untouched = SharedRateLimiter(both[:1], store, redis.url)
                assert await untouched.take(ana, "report") is None
                assert untouched.reachable is True
                await untouched.aclose()
            finally:
                await limiter.aclose()
                await replica.aclose()

        asyncio.run(scenario())


class _Wire:
    """One side of a relay, recording what it is sent."""

    blocked = False
    waiting = False

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def write(self, lines: list[bytes]) -> None:
        self.lines += lines

    async def drain(self) -> None:
        return None


def test_a_shared_limit_takes_the_calls_turn_in_the_relay_so_none_overtakes_it() -> None:
    policy = Policy.from_dict(
        {"identity": {"subject": "ci"}, "rate_limit": [{"tools": ["report"], "calls": 1}]}
    )
    with redis_server() as redis:
        store = RateStoreSettings(url=redis.url)

        async def scenario() -> list[str]:
            limiter = SharedRateLimiter(policy.rate_limits, store, redis.url)
            session = ProxySession(Auditor(io.StringIO()), policy=policy, limiter=limiter)
            _listed(session)
            server = _Wire()
            relay = Relay(session, cast(Any, server), timeout=30, client=cast(Any, _Wire()))

            def call(request_id: int, tool: str) -> bytes:
                params = {"name": tool, "arguments": {}}
                message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
                return json.dumps({**message, "params": params}).encode()

            # The limited call waits for Redis; the calls after it wait for their turn.
            tools = ["report", "read_file", "report", "delete_file"]
            decided = [relay.decide(call(i, tool)) for i, tool in enumerate(tools, 2)]
            assert not isinstance(decided[0], Routed)
            routed = [each if isinstance(each, Routed) else await each for each in decided]
            relay.flush()
            await limiter.aclose()
            # The proxy's own answers are the caller's to send: here, the refusal only.
            replies = [json.loads(line) for each in routed for line in each.reply]
            assert [(r["id"], r["error"]["code"]) for r in replies] == [(4, RATE_LIMITED)]
            return [json.loads(line)["params"]["name"] for line in server.lines]

        sent = asyncio.run(scenario())
    # The second call of report was over the limit; everything else went on in order.
    assert sent == ["report", "read_file", "delete_file"]


def _listed(session: ProxySession, tools: list[dict[str, Any]] = TOOLS) -> None:
    """``session`` initialized, and its server's ``tools`` listed."""
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}}
    server = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s"}}
    messages: list[tuple[dict[str, Any], Any]] = [
        ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, "c2s"),
        ({"jsonrpc": "2.0", "id": 0, "result": server}, "s2c"),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, "c2s"),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, "c2s"),
        ({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}, "s2c"),
    ]
    for message, direction in messages:
        session.decide(json.dumps(message).encode(), direction)


def test_the_proxy_runs_a_deep_check_with_the_callers_own_settings(tmp_path: Path) -> None:
    for tenant in ("acme", "globex"):
        (tmp_path / tenant).mkdir()
    policy = Policy.from_dict(
        {
            "identity": {"subject": "ci", "claims": {"tenant": "acme"}},
            "deep": [
                {
                    "tool": "report",
                    "argument": "/path",
                    "kind": "path",
                    "roots": [f"{tmp_path}/{{claim.tenant}}"],
                    "on_calls": True,
                }
            ],
        }
    )
    tools = [
        {
            "name": "report",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
    ]

    async def call(session: ProxySession, path: Path) -> Routed:
        params = {"name": "report", "arguments": {"path": str(path)}}
        line = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
        decided = session.decide(line.encode(), "c2s")
        assert not isinstance(decided, Routed)  # a deep check to await
        return await decided

    def session() -> ProxySession:
        made = ProxySession(Auditor(io.StringIO()), policy=policy)
        _listed(made, tools)
        return made

    mine = asyncio.run(call(session(), tmp_path / "acme" / "x"))
    assert mine.forward
    assert not mine.reply
    theirs = asyncio.run(call(session(), tmp_path / "globex" / "x"))
    (reply,) = theirs.reply
    codes = json.loads(reply)["result"]["_meta"]["dev.strictmcp/validation"]["codes"]
    assert codes == ["path-outside-roots"]
