"""Refused authentications in the audit log, and an outage of the issuer's keys on stderr,
through a real proxy and a real authorization server (tests/test_proxy_auth.py's)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from auth_support import AuthorizationServer, attacker_key, forge, parts
from test_proxy_auth import (  # noqa: F401 - launch, provider and processes are fixtures
    ROLES,
    Caller,
    Launch,
    launch,
    provider,
    refused,
)
from test_proxy_http import processes  # noqa: F401 - a fixture

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


def test_log_format_json_writes_one_object_per_line_from_every_part(
    launch: Launch,  # noqa: F811 - the fixture imported above
    provider: AuthorizationServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    jwks = tmp_path / "jwks.json"
    options = ("--log-format", "json")
    proxy = launch(f'jwks_file = "{jwks}"', "jwks_refresh = 1", tail=ROLES, options=options)
    token = provider.token("reader", proxy.url)
    refused(proxy.post(token), 503, "token-keys-unavailable", None)
    jwks.write_text(json.dumps(provider.jwks()), encoding="utf-8")
    time.sleep(1.1)
    reader = Caller(proxy, token)
    reader.open()
    assert "error" in reader.call("read_file", {"path": "/etc/hostname"})
    proxy.process.stop()
    lines = [json.loads(line) for line in proxy.process.output().splitlines()]
    assert all({"time", "level", "event", "command", "message"} <= set(r) for r in lines)
    events = {r["event"]: r for r in lines}
    assert events["listening"]["message"].startswith("listening on http://127.0.0.1:")
    assert events["listening"]["level"] == "info"
    keys = [(r["level"], r["message"][:33]) for r in lines if r["event"] == "issuer-keys"]
    assert keys == [
        ("error", "the issuer's keys cannot be loade"),
        ("info", "the issuer's keys could be loaded"),
    ]
    finding = events["finding"]
    assert finding["level"] == "warning"
    assert "read_file" in finding["message"]
    assert len(finding["session"]) == 12  # the session's audit id
    assert token not in proxy.process.output()


def test_concurrent_stateless_calls_each_name_their_own_request(
    launch: Launch,  # noqa: F811 - the fixture imported above
    provider: AuthorizationServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    audit = tmp_path / "audit.jsonl"
    options = ("--audit-log", str(audit), "--audit", "all")
    proxy = launch(tail=ROLES, options=options)
    admin_token = provider.token("admin", proxy.url, scope="mcp:read mcp:admin")
    callers = {"reader": Caller(proxy, provider.token("reader", proxy.url))}
    callers["admin"] = Caller(proxy, admin_token)
    hello = tmp_path / "hello.txt"
    hello.write_text("hello", encoding="utf-8")

    def call(who: str) -> Any:
        return callers[who].call("read_file", {"path": str(hello)}, alone=True)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(call, ["reader", "admin"] * 8))
    assert all("error" in a for a in answers[0::2])
    assert all(a["result"]["isError"] is False for a in answers[1::2])
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    denials = [r for r in records if r.get("stage") == "access"]
    calls = [r for r in records if r.get("event") == "call" and r["method"] == "tools/call"]
    # A shared session's requests are named by the id each client sent (both callers send
    # 1 to 8: the identity tells them apart): one each, and every record names its own
    # request and caller.
    assert len(denials) == 8
    assert all(r["identity"]["subject"] == "reader" for r in denials)
    ended = {(r["identity"]["subject"], r["request"]): r["outcome"] for r in calls}
    assert len(ended) == len(calls) == 16
    expected = {("admin", n): "answered" for n in range(1, 9)}
    expected.update({("reader", n): "refused" for n in range(1, 9)})
    assert ended == expected
    assert {("reader", r["request"]) for r in denials} == {("reader", n) for n in range(1, 9)}
