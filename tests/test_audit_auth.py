"""Refused authentications in the audit log, and an outage of the issuer's keys on stderr,
through a real proxy and a real authorization server (tests/test_proxy_auth.py's)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from auth_support import AuthorizationServer, attacker_key, forge, parts
from test_proxy_auth import (  # noqa: F401 - launch, provider and processes are fixtures
    Launch,
    launch,
    processes,
    provider,
    refused,
)

_OUTAGE = "the issuer's keys cannot be loaded"


def test_refused_authentications_are_recorded_with_their_code_never_the_token(
    launch: Launch,  # noqa: F811 - the fixture imported above
    provider: AuthorizationServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    audit = tmp_path / "audit.jsonl"
    proxy = launch(scopes=("mcp:read", "mcp:admin"), options=("--audit-log", str(audit)))
    reader = provider.token("reader", proxy.url)
    forged = forge(parts(reader)[1], parts(reader)[0], attacker_key())
    other = provider.token("admin", "http://127.0.0.1:1/elsewhere", scope="mcp:read mcp:admin")
    refused(proxy.post(), 401, "token-missing", None)
    refused(proxy.post(forged), 401, "token-signature")
    refused(proxy.post(other), 401, "token-audience")
    refused(proxy.post(reader), 403, "token-scope", "insufficient_scope")
    refused(proxy.post(headers={"authorization": f"DPoP {reader}"}), 401, "token-dpop", None)
    admin = provider.token("admin", proxy.url, scope="mcp:read mcp:admin")
    assert proxy.post(admin).status_code == 200
    text = audit.read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.splitlines()]
    assert [(r["event"], r["status"], r["code"]) for r in records] == [
        ("auth-refused", 401, "token-missing"),
        ("auth-refused", 401, "token-signature"),
        ("auth-refused", 401, "token-audience"),
        ("auth-refused", 403, "token-scope"),
        ("auth-refused", 401, "token-dpop"),
    ]
    assert all(r["resource"] == proxy.url for r in records)
    for token in (reader, forged, other, admin):
        assert token not in text
        assert token.rsplit(".", 1)[-1] not in text


def test_an_outage_of_the_issuers_keys_is_said_once_and_its_end_too(
    launch: Launch,  # noqa: F811 - the fixture imported above
    provider: AuthorizationServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    jwks = tmp_path / "jwks.json"  # absent at first: the issuer's keys cannot be had
    proxy = launch(f'jwks_file = "{jwks}"', "jwks_refresh = 1")
    token = provider.token("reader", proxy.url)
    for _ in range(3):
        refused(proxy.post(token), 503, "token-keys-unavailable", None)
        time.sleep(1.1)  # past the refresh interval: each attempt loads again, and fails
    said = proxy.process.output()
    assert said.count(_OUTAGE) == 1, said
    assert "tokens are refused (503)" in said
    assert str(jwks) not in said  # the reason, not the path
    jwks.write_text(json.dumps(provider.jwks()), encoding="utf-8")
    assert proxy.post(token).status_code == 200
    assert proxy.process.output().count("the issuer's keys could be loaded again") == 1
    # A second outage, with the keys held still in use: said again, once.
    jwks.write_text("not json", encoding="utf-8")
    for _ in range(2):
        time.sleep(1.1)
        header, claims = parts(token)
        unknown = forge(claims, {**header, "kid": f"k{_}"}, attacker_key())
        refused(proxy.post(unknown), 401, "token-key-unknown")
    said = proxy.process.output()
    assert said.count(_OUTAGE) == 2, said
    assert "the keys held stay in use" in said
    assert token not in said
