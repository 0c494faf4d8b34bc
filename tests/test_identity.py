"""The identity layer on its own: hostile JWKS documents, the refresh bound, ``[auth]``."""

from __future__ import annotations

import json
from typing import Any

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from strictmcp.guards.policy import AuthSettings, Identity, Policy, PolicyError
from strictmcp.identity import Jwks, KeySet, TokenError, TokenVerifier
from strictmcp.identity.jwks import MAX_JWKS_BYTES, KeysUnavailable


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
