"""Issue 21, holes 7 and 8, through the real proxy in front of a recording server: the routes
around a path guard (``resources/read``, ``resources/subscribe``, ``prompts/get`` arguments,
``completion/complete`` values) refused before the server ever sees them, and every text a
server sends that a client may show a model (errors, log and progress notifications, resource
links, ``_meta``, resource contents, prompts, completions) through the results' hygiene."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from proxy_fixtures.surfaces_server import HIDDEN
from strictmcp.enforce.hygiene import HYGIENE_META_KEY
from strictmcp.protocol import VALIDATION_META_KEY
from test_proxy_http import (  # noqa: F401 - processes is a fixture
    FIXTURES,
    Process,
    answer,
    handshake,
    in_session,
    processes,
    request,
)
from test_proxy_stdio import SECRET, Raw, raw_proxy, stderr_of

INVALID_PARAMS = -32602


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A root with one file, a link out of it, and a sibling holding a secret's name."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "hello.txt").write_text("hello", encoding="utf-8")
    (tmp_path / "data_secret").mkdir()
    (tmp_path / "data_secret" / f"{SECRET}.txt").write_text("private", encoding="utf-8")
    (data / "etc").symlink_to("/etc")
    (data / "sibling").symlink_to(tmp_path / "data_secret")
    return tmp_path


def guards(workspace: Path) -> str:
    """Path guards on every route around the tools, and a url guard beside the path guard
    on resources/read."""
    roots = json.dumps([str(workspace / "data")])
    entries = [
        ("resources/read", "/uri", f"kind = 'path'\nroots = {roots}"),
        ("resources/read", "/uri", "kind = 'url'\nhosts = ['docs.example.com']\nresolve = false"),
        ("resources/subscribe", "/uri", f"kind = 'path'\nroots = {roots}"),
        ("prompts/get", "/arguments/*", f"kind = 'path'\nroots = {roots}"),
        ("completion/complete", "/argument/value", f"kind = 'path'\nroots = {roots}"),
    ]
    return "".join(
        f"[[guard]]\nmethod = '{method}'\nargument = '{argument}'\n{options}\n\n"
        for method, argument, options in entries
    )


def received(workspace: Path, method: str) -> list[Any]:
    """The params of every ``method`` request that reached the server."""
    lines = (workspace / "calls").read_text(encoding="utf-8").splitlines()
    return [m.get("params") for m in map(json.loads, lines) if m.get("method") == method]


def start(proxy: Raw) -> None:
    proxy.handshake()
    assert "result" in proxy.request("tools-0", "tools/list", {})


def test_routes_around_the_path_guard_are_refused_before_the_server(workspace: Path) -> None:
    (workspace / "policy.toml").write_text(guards(workspace), encoding="utf-8")
    data = workspace / "data"
    refused_uris = [
        "file:///etc/passwd",
        f"file://{data}/../data_secret/{SECRET}.txt",  # '..' out of the root
        "file:///%65tc/passwd",  # percent-encoded: /etc/passwd once decoded
        f"file://{data}/%2e%2e/data_secret/{SECRET}.txt",  # encoded dots
        "file://localhost/etc/passwd",
        "FILE:///etc/passwd",  # schemes are case-insensitive
        f"file://{data}/etc/passwd",  # a real symbolic link out of the root
        f"file://{data}/sibling/{SECRET}.txt",  # a link to the sibling
        f"file://{data}%2F..%2Fdata_secret",  # an encoded '/' servers read either way
        f"file://{data}/hello.txt?x=1",  # a query servers read either way
        "file://evil.example/etc/passwd",  # a share on another host
        f" file://{data}/../data_secret",  # WHATWG strips the space, then reads it
        f"file://{data}\\..\\..\\etc\\passwd",  # WHATWG reads '\\' as '/'
        "/etc/passwd",  # no scheme: a careless server opens it as a path
        "https://169.254.169.254/latest/meta-data/",  # the url guard's
        "http://docs.example.com/a",  # a scheme the url guard does not allow
        "gopher://docs.example.com/a",
    ]
    allowed_uris = [
        f"file://{data}/hello.txt",
        f"file://localhost{data}/hello.txt",
        f"file://{data}/h%65llo.txt",
        "https://docs.example.com/a",
    ]
    with raw_proxy(
        workspace, "--policy", "policy.toml", "--audit-log", "audit.jsonl", server="surfaces"
    ) as proxy:
        start(proxy)
        for index, uri in enumerate(refused_uris):
            answer = proxy.request(index + 1, "resources/read", {"uri": uri})
            assert answer["error"]["code"] == INVALID_PARAMS, uri
            assert "refused by strictmcp" in answer["error"]["message"]
            assert SECRET not in json.dumps(answer)
            assert "passwd" not in json.dumps(answer)
        for index, uri in enumerate(allowed_uris):
            answer = proxy.request(f"ok-{index}", "resources/read", {"uri": uri})
            assert "result" in answer, uri
        refused = proxy.request("s-1", "resources/subscribe", {"uri": "file:///etc/passwd"})
        assert refused["error"]["data"] == {"codes": ["path-outside-roots"]}
        sub = {"uri": f"file://{data}/hello.txt"}
        assert proxy.request("s-2", "resources/subscribe", sub)["result"] == {}
        for index, value in enumerate(["/etc/passwd", f"{data}/../data_secret", "../../etc"]):
            prompt = {"name": "summarize", "arguments": {"file": value}}
            assert "error" in proxy.request(f"p-{index}", "prompts/get", prompt), value
            complete = {
                "ref": {"type": "ref/resource", "uri": "file:///{path}"},
                "argument": {"name": "path", "value": value},
            }
            assert "error" in proxy.request(f"c-{index}", "completion/complete", complete)
        good_prompt = {"name": "summarize", "arguments": {"file": f"{data}/hello.txt"}}
        assert "result" in proxy.request("p-ok", "prompts/get", good_prompt)
        good_value = {
            "ref": {"type": "ref/resource", "uri": "file:///{path}"},
            "argument": {"name": "path", "value": f"{data}/he"},
        }
        assert "result" in proxy.request("c-ok", "completion/complete", good_value)
        # A refused request without an id has no one to answer: dropped, not sent on.
        proxy.send({"jsonrpc": "2.0", "method": "resources/read", "params": {"uri": "file:///"}})
        assert proxy.request("last", "ping")["id"] == "last"
    # The server saw the allowed requests only.
    assert [p["uri"] for p in received(workspace, "resources/read")] == allowed_uris
    assert received(workspace, "resources/subscribe") == [sub]
    assert received(workspace, "prompts/get") == [good_prompt]
    assert received(workspace, "completion/complete") == [good_value]
    log = (workspace / "audit.jsonl").read_text(encoding="utf-8")
    assert SECRET not in log
    assert "passwd" not in log
    records = [json.loads(line) for line in log.splitlines()]
    refusals = [r for r in records if r["action"] == "refused"]
    # The request without an id is refused as a message (a notification that names a
    # request), before any guard; every other refusal is the policy's.
    by_message = [r for r in refusals if r["stage"] == "message"]
    assert [(r["method"], r["code"]) for r in by_message] == [
        ("resources/read", "jsonrpc-invalid-message")
    ]
    assert {r["stage"] for r in refusals if r not in by_message} == {"policy"}
    assert {r["method"] for r in refusals} == {
        "resources/read",
        "resources/subscribe",
        "prompts/get",
        "completion/complete",
    }
    assert {r["code"] for r in refusals} >= {
        "path-outside-roots",
        "path-symlink-escape",
        "path-uri-invalid",
        "url-invalid",
        "url-scheme-not-allowed",
        "url-private-address",
    }
    assert "resources/read refused" in stderr_of(workspace)


def test_audit_mode_sends_every_route_on_and_reports_it(workspace: Path) -> None:
    (workspace / "policy.toml").write_text(guards(workspace), encoding="utf-8")
    options = ("--policy", "policy.toml", "--mode", "audit", "--audit-log", "audit.jsonl")
    with raw_proxy(workspace, *options, server="surfaces") as proxy:
        start(proxy)
        assert "result" in proxy.request(1, "resources/read", {"uri": "file:///etc/passwd"})
    assert [p["uri"] for p in received(workspace, "resources/read")] == ["file:///etc/passwd"]
    records = [json.loads(line) for line in (workspace / "audit.jsonl").read_text().splitlines()]
    assert {(r["method"], r["action"]) for r in records if r["stage"] == "policy"} == {
        ("resources/read", "allowed")
    }


STRIP = (
    "".join(
        f"[[result]]\nmethod = '{method}'\nhygiene = 'strip'\n\n"
        for method in (
            "resources/read",
            "prompts/get",
            "completion/complete",
            "notifications/message",
            "notifications/progress",
        )
    )
    + "[[result]]\ntool = '*'\nhygiene = 'strip'\n"
)


def strings(value: Any) -> list[str]:
    """Every string in ``value``, keys too."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


def hidden_in(value: Any) -> bool:
    return any(char in text for text in strings(value) for char in HIDDEN)


def every_surface(proxy: Raw) -> list[dict[str, Any]]:
    """Each surface of the fixture asked for once; every message the client got."""
    start(proxy)
    got = [
        proxy.request(1, "resources/read", {"uri": "file:///srv/a.txt"}),
        proxy.request(2, "resources/read", {"uri": "file:///srv/missing"}),
        proxy.request(3, "prompts/get", {"name": "p"}),
        proxy.request(
            4,
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}},
        ),
    ]
    proxy.send(
        {
            "jsonrpc": "2.0",
            "id": 5,
            "method": "tools/call",
            "params": {"name": "links", "arguments": {}, "_meta": {"progressToken": "t"}},
        }
    )
    got += [proxy.message() for _ in range(3)]  # log, progress, result
    got.append(proxy.request(6, "tools/call", {"name": "fail", "arguments": {}}))
    return got


def test_strip_cleans_every_surface_a_model_may_be_shown(workspace: Path) -> None:
    (workspace / "policy.toml").write_text(STRIP, encoding="utf-8")
    with raw_proxy(workspace, "--policy", "policy.toml", server="surfaces") as proxy:
        got = every_surface(proxy)
    assert [not hidden_in(message) for message in got] == [True] * len(got)
    read, missing, prompt, completion, log, progress, links, fail = got
    assert read["result"]["contents"][0]["text"] == "file text"
    assert read["result"]["contents"][1]["blob"] == "aGk="  # bytes, not text: untouched
    assert read["result"]["_meta"]["note"] == "meta"
    assert missing["error"] == {"code": -32002, "message": "Not found", "data": "d"}
    assert prompt["result"]["description"] == "a prompt"
    contents = [m["content"] for m in prompt["result"]["messages"]]
    assert contents[0]["text"] == "prompt"
    assert contents[1]["resource"]["text"] == "embedded"
    assert (contents[2]["name"], contents[2]["description"]) == ("link", "about")
    assert completion["result"]["completion"]["values"] == ["one", "two"]
    assert log["method"] == "notifications/message"
    assert (log["params"]["logger"], log["params"]["data"]) == ("log", {"said": "line"})
    assert progress["params"]["message"] == "half"
    link = links["result"]["content"][1]
    assert (link["name"], link["title"], link["description"]) == ("link", "title", "about")
    assert links["result"]["_meta"]["note"] == "meta"
    assert fail["error"]["message"] == "It broke"
    for message in (read, prompt, completion, log, progress, links):
        body: Any = message.get("result", message.get("params"))
        assert body["_meta"][HYGIENE_META_KEY]["action"] == "stripped"


def test_by_default_every_surface_is_flagged_and_left_as_it_came(workspace: Path) -> None:
    with raw_proxy(workspace, "--audit-log", "audit.jsonl", server="surfaces") as proxy:
        got = every_surface(proxy)
    read, missing, prompt, completion, log, progress, links, _fail = got
    assert read["result"]["contents"][0]["text"] == "file text" + HIDDEN
    assert missing["error"]["message"] == "Not found" + HIDDEN
    for message in (read, prompt, completion, log, progress, links):
        body: Any = message.get("result", message.get("params"))
        assert body["_meta"][HYGIENE_META_KEY]["action"] == "flagged"
    records = [json.loads(line) for line in (workspace / "audit.jsonl").read_text().splitlines()]
    flagged = {(r["method"], r["pointer"]) for r in records if r["stage"] == "result"}
    assert flagged >= {
        ("resources/read", "/result/contents/0/text"),
        ("resources/read", "/result/_meta/note"),
        ("resources/read", "/error/message"),
        ("resources/read", "/error/data"),
        ("prompts/get", "/result/description"),
        ("prompts/get", "/result/messages/0/content/text"),
        ("prompts/get", "/result/messages/1/content/resource/text"),
        ("prompts/get", "/result/messages/2/content/name"),
        ("completion/complete", "/result/completion/values/0"),
        ("notifications/message", "/params/logger"),
        ("notifications/message", "/params/data/said"),
        ("notifications/progress", "/params/message"),
        ("tools/call", "/result/content/1/name"),
        ("tools/call", "/result/content/1/title"),
        ("tools/call", "/result/content/1/description"),
        ("tools/call", "/result/_meta/note"),
        ("tools/call", "/error/message"),
    }
    assert all(r["action"] == "allowed" for r in records)


def test_a_structured_key_with_hidden_characters_refuses_the_result(workspace: Path) -> None:
    (workspace / "policy.toml").write_text(STRIP, encoding="utf-8")
    with raw_proxy(workspace, "--policy", "policy.toml", server="surfaces") as proxy:
        start(proxy)
        answer = proxy.request(1, "tools/call", {"name": "keys", "arguments": {}})
    result = answer["result"]
    assert result["isError"] is True
    assert result["_meta"][VALIDATION_META_KEY]["codes"] == ["result-hidden-key"]
    assert "keys with hidden characters" in result["content"][0]["text"]
    assert not hidden_in(answer)


def test_over_http_a_guarded_read_is_refused_and_a_read_cleaned(
    workspace: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    (workspace / "policy.toml").write_text(guards(workspace) + STRIP, encoding="utf-8")
    server = [sys.executable, str(FIXTURES / "surfaces_server.py"), str(workspace / "calls")]
    args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0"]
    proxy = Process([*args, "--policy", "policy.toml", "--", *server], workspace, "stderr")
    processes.append(proxy)
    url = proxy.wait_for("listening on").rsplit(" ", 1)[1]
    allowed = f"file://{workspace / 'data'}/hello.txt"

    async def body() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session = await handshake(http, url)
            headers = in_session(session)
            for index, uri in enumerate(["file:///etc/passwd", "file:///%65tc/passwd"]):
                read = request("resources/read", index + 1, {"uri": uri})
                refused = answer(await http.post(url, json=read, headers=headers))
                assert refused["error"]["code"] == INVALID_PARAMS
            read = request("resources/read", 9, {"uri": allowed})
            got = answer(await http.post(url, json=read, headers=headers))
            assert got["result"]["contents"][0]["text"] == "file text"
            assert not hidden_in(got)

    anyio.run(body)
    assert [p["uri"] for p in received(workspace, "resources/read")] == [allowed]
