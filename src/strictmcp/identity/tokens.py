"""Bearer tokens: verified JWT access tokens become identities, anything else is refused."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2

from ..extras import needs
from ..policy import AuthSettings, Identity
from .errors import TokenError
from .jwks import MAX_JWKS_BYTES, Jwks, KeysUnavailable, Load
from .upstream import secret

with needs("auth"):
    import jwt
    from jwt.exceptions import (
        ExpiredSignatureError,
        ImmatureSignatureError,
        InvalidAudienceError,
        InvalidIssuerError,
        InvalidSignatureError,
        MissingRequiredClaimError,
        PyJWTError,
    )

_INTROSPECTED_SECONDS = 60.0
"""The longest an introspection answer is trusted: a token revoked at the authorization
server stops working here within a minute."""

MAX_TOKEN_BYTES = 16 * 1024
"""The longest token looked at: real access tokens are a few kilobytes at most, and a longer
one would only make the proxy decode and hash a lot for nothing."""
# The signature may be empty here so that an unsigned (``alg: none``) token is refused for
# its algorithm, which is what it is.
_JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
_CACHED = 4096
"""Verified tokens remembered, so that a client's next call with the same token costs a hash."""
_FETCH_SECONDS = 10.0


class TokenVerifier:
    """Verifies access tokens as the policy's ``[auth]`` section says (see
    :class:`~strictmcp.policy.AuthSettings`).

    ``keys`` are the issuer's keys; by default they come from ``jwks_file``, ``jwks_url`` or
    the ``jwks_uri`` of the issuer's metadata (RFC 8414, else OpenID discovery), fetched with
    ``client``. A token that is not a JWT is introspected (RFC 7662) when the settings give
    an ``introspection_url``; the client secret for it is read now, so that a missing one
    stops the proxy at start-up (:class:`~.upstream.CredentialsError`). A token verified
    once is remembered (by its hash) until it expires (an introspected one, a minute at
    most).
    """

    def __init__(
        self,
        settings: AuthSettings,
        *,
        keys: Jwks | None = None,
        client: httpx2.AsyncClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self._client = client
        self.keys = keys or Jwks(self._jwks_loader(), refresh=settings.jwks_refresh)
        self._clock = clock
        self._verified: dict[bytes, tuple[Identity, float]] = {}
        self._introspection_secret = (
            secret(settings.client_secret_env, settings.client_secret_file, "client secret")
            if settings.introspection_url is not None
            else None
        )

    async def verify(self, token: str) -> Identity:
        """The identity ``token`` proves; :class:`TokenError` when it proves none."""
        if len(token) > MAX_TOKEN_BYTES:
            raise TokenError("token-too-large", "The access token is too large")
        digest = hashlib.sha256(token.encode("utf-8", "replace")).digest()
        known = self._verified.get(digest)
        if known is not None:
            identity, expires = known
            if self._clock() <= expires + self.settings.leeway:
                return identity
            del self._verified[digest]
        if self._introspection_secret is not None and not _JWS.fullmatch(token):
            claims = await self._introspect(token, self._introspection_secret)
            trusted = min(float(claims["exp"]), self._clock() + _INTROSPECTED_SECONDS)
        else:
            claims = await self._claims(token)
            trusted = float(claims["exp"])
        identity = Identity.from_claims(claims)
        if len(self._verified) >= _CACHED:
            del self._verified[next(iter(self._verified))]  # the oldest
        self._verified[digest] = (identity, trusted)
        return identity

    async def aclose(self) -> None:
        """Close the HTTP client this verifier made."""
        if self._client is not None:
            await self._client.aclose()

    async def _claims(self, token: str) -> dict[str, Any]:
        if not _JWS.fullmatch(token):
            raise TokenError("token-malformed", "The access token is not a signed JWT")
        try:
            header = jwt.get_unverified_header(token)
        except PyJWTError:
            raise TokenError("token-malformed", "The access token's header is unreadable") from None
        alg, kid = header.get("alg"), header.get("kid")
        if not isinstance(alg, str) or alg not in self.settings.algorithms:
            raise TokenError(
                "token-algorithm", "The access token is not signed with an accepted algorithm"
            )
        if kid is not None and not isinstance(kid, str):
            raise TokenError("token-malformed", "The access token's key id is not a string")
        try:
            key = await self.keys.key(kid, alg)
        except KeysUnavailable:
            raise TokenError(
                "token-keys-unavailable", "The issuer's keys cannot be had; retry later"
            ) from None
        if key is None:
            raise TokenError(
                "token-key-unknown", "The access token is not signed by a key of the issuer"
            )
        settings = self.settings
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=settings.resource,
                issuer=settings.issuer,
                leeway=settings.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except PyJWTError as error:
            raise refused(_code(error)) from None
        if not isinstance(claims.get("exp"), (int, float)) or isinstance(claims["exp"], bool):
            raise refused("token-claims")
        return claims

    async def _introspect(self, token: str, client_secret: str) -> dict[str, Any]:
        """The claims the issuer's introspection endpoint gives for an opaque token, held to
        the same rules as a JWT's: active, our issuer, our audience, not expired."""
        settings = self.settings
        assert settings.introspection_url is not None  # the caller checked
        assert settings.client_id is not None  # required with it when loaded
        form = {
            "token": token,
            "token_type_hint": "access_token",
            "client_id": settings.client_id,
            "client_secret": client_secret,
        }
        if self._client is None:
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(_FETCH_SECONDS), follow_redirects=False
            )
        claims: Any = None
        try:
            response = await self._client.post(settings.introspection_url, data=form)
            if response.status_code == 200 and len(response.content) <= MAX_JWKS_BYTES:
                claims = json.loads(response.content)
        except (httpx2.HTTPError, ValueError, RecursionError):
            pass  # answered below, as an endpoint that cannot be asked
        if not isinstance(claims, dict):
            raise TokenError(
                "token-introspection-unavailable", "The issuer cannot check the token; retry later"
            )
        if claims.get("active") is not True:
            raise TokenError("token-inactive", "The access token is not active")
        now, leeway = self._clock(), settings.leeway
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        expires = claims.get("exp")
        if claims.get("iss", settings.issuer) != settings.issuer:
            raise TokenError(
                "token-issuer", "The access token was not issued by the trusted issuer"
            )
        if settings.resource not in audiences:
            raise TokenError("token-audience", "The access token was not issued for this resource")
        if not isinstance(expires, (int, float)) or isinstance(expires, bool):
            raise TokenError("token-claims", "The access token's expiry is not a number")
        if expires + leeway < now:
            raise TokenError("token-expired", "The access token has expired")
        return claims

    def _jwks_loader(self) -> Load:
        settings = self.settings
        if settings.jwks_file is not None:
            path = Path(settings.jwks_file)

            async def from_file() -> bytes:
                try:
                    return path.read_bytes()
                except OSError as error:
                    raise KeysUnavailable(f"cannot read jwks_file: {error.strerror}") from None

            return from_file
        url = settings.jwks_url

        async def fetched() -> bytes:
            nonlocal url
            if url is None:
                url = await self._discover()
            return await self._get(url)

        return fetched

    async def _discover(self) -> str:
        """The ``jwks_uri`` of the issuer's metadata, whose ``issuer`` must be ours."""
        issuer = self.settings.issuer
        for where in _metadata_urls(issuer):
            try:
                metadata = json.loads(await self._get(where))
            except (KeysUnavailable, ValueError, RecursionError):
                continue
            if not isinstance(metadata, dict) or metadata.get("issuer") != issuer:
                continue  # a document for another issuer says nothing about ours
            jwks_uri = metadata.get("jwks_uri")
            if isinstance(jwks_uri, str) and urlsplit(jwks_uri).scheme in ("https", "http"):
                if urlsplit(jwks_uri).scheme == "http" and urlsplit(issuer).scheme == "https":
                    continue  # never downgrade to plain HTTP for the keys
                return jwks_uri
        raise KeysUnavailable("the issuer's metadata names no JWKS")

    async def _get(self, url: str) -> bytes:
        if self._client is None:
            self._client = httpx2.AsyncClient(
                timeout=httpx2.Timeout(_FETCH_SECONDS), follow_redirects=False
            )
        try:
            async with self._client.stream("GET", url, headers={"accept": "application/json"}) as r:
                if r.status_code != 200:
                    raise KeysUnavailable(f"the issuer answered {r.status_code}")
                body = b""
                async for chunk in r.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_JWKS_BYTES:
                        raise KeysUnavailable("the issuer's document is too large")
                return body
        except httpx2.HTTPError:
            raise KeysUnavailable("the issuer cannot be reached") from None


def _metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata is: RFC 8414's well-known path (inserted before the
    issuer's own path), then OpenID Connect discovery's (appended to it)."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


_DESCRIPTIONS = {
    "token-expired": "The access token has expired",
    "token-not-yet-valid": "The access token is not valid yet",
    "token-audience": "The access token was not issued for this resource",
    "token-issuer": "The access token was not issued by the trusted issuer",
    "token-signature": "The access token's signature does not verify",
    "token-claims": "The access token lacks a required claim (exp, iss or aud) or one is wrong",
    "token-malformed": "The access token is malformed",
}


def refused(code: str) -> TokenError:
    """The refusal of a token for a claim that does not hold, described in its own words."""
    return TokenError(code, _DESCRIPTIONS[code])


def _code(error: PyJWTError) -> str:
    """The code for what PyJWT found; its own messages are not passed on, since some quote
    parts of the token or the key."""
    if isinstance(error, ExpiredSignatureError):
        return "token-expired"
    if isinstance(error, ImmatureSignatureError):
        return "token-not-yet-valid"
    if isinstance(error, InvalidAudienceError):
        return "token-audience"
    if isinstance(error, InvalidIssuerError):
        return "token-issuer"
    if isinstance(error, InvalidSignatureError):
        return "token-signature"
    if isinstance(error, MissingRequiredClaimError):
        return "token-claims"
    return "token-malformed"
