"""The refusal of a token, apart from what verifies tokens: the HTTP proxy answers with it
whether or not the [auth] extra (PyJWT) is installed."""

from __future__ import annotations

__all__ = ["TokenError"]


class TokenError(Exception):
    """A token refused: ``code`` is stable (``token-missing``, ``token-malformed``,
    ``token-too-large``, ``token-algorithm``, ``token-key-unknown``, ``token-signature``,
    ``token-expired``, ``token-not-yet-valid``, ``token-issuer``, ``token-audience``,
    ``token-claims``, ``token-inactive``, and ``token-keys-unavailable`` and
    ``token-introspection-unavailable`` when the issuer cannot be asked), ``description``
    says why in words fit for the client and never quotes the token."""

    def __init__(self, code: str, description: str) -> None:
        super().__init__(f"{description} [{code}]")
        self.code = code
        self.description = description
