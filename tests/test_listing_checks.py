"""Listing-time checks (issue 15, point 2): lint rules on every ``tools/list`` at run time.

In-process on the enforcer and the proxy's decisions, then end to end through
``python -m strictmcp.proxy`` in front of a server that turns malicious after its first
listing (tests/proxy_fixtures/rugpull_server.py).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from proxy_fixtures.rugpull_server import HIDDEN, WEATHER, listing, tags
from strictmcp.cli import main
from strictmcp.enforce import Auditor, Enforcer, listing_rules
from strictmcp.lint import UnknownRuleError
from strictmcp.policy import Policy, PolicyError
from strictmcp.protocol import LATEST, answer_digest, answer_id
from strictmcp.proxy.session import ProxySession
from test_proxy_session import Session, messages

FIXTURE = Path(__file__).resolve().parent / "proxy_fixtures" / "rugpull_server.py"
POISONED = listing(turned=True)


def test_the_default_listing_rules_are_hidden_characters_only() -> None:
    assert [rule.code for rule in listing_rules()] == ["SMT401"]
    assert listing_rules([]) == ()
    assert [rule.code for rule in listing_rules(["SMT4"])][:2] == ["SMT401", "SMT402"]
    with pytest.raises(UnknownRuleError):
        listing_rules(["SMT999"])


@pytest.mark.parametrize(
    "hidden",
    [
        tags(HIDDEN),  # tag characters spelling an instruction
        "Weather\u202e.txt",  # a bidi override
        "Wea\u200bther",  # a zero-width space inside a word
        "\x1b[2K\x1b[1Afake line",  # a terminal escape
    ],
)
def test_the_enforcer_withholds_a_tool_with_hidden_characters(hidden: str) -> None:
    log = io.StringIO()
    enforcer = Enforcer(auditor=Auditor(log))
    tools = [{**WEATHER, "description": hidden}, listing(turned=False)[1]]
    assert enforcer.check_listing(tools, LATEST) == {0}
    (record,) = [json.loads(line) for line in log.getvalue().splitlines()]
    assert record["code"] == "SMT401"
    assert (record["stage"], record["action"], record["tool"]) == (
        "listing",
        "withheld",
        "get_weather",
    )
    assert record["pointer"] == "/result/tools/0/description"
    # Value-free: the audit record never quotes the description.
    assert "ssh" not in log.getvalue()
    assert "Weather" not in log.getvalue()


def test_what_is_kept_is_bounded_by_the_registry() -> None:
    enforcer = Enforcer(auditor=Auditor(None))
    for number in range(50):
        poisoned = {**WEATHER, "name": f"tool{number}", "description": tags(HIDDEN)}
        assert enforcer.check_listing([poisoned], LATEST, known={f"tool{number}"}) == {0}
    assert enforcer.withheld == {"tool49"}


def test_audit_mode_reports_and_withholds_nothing() -> None:
    log = io.StringIO()
    enforcer = Enforcer(mode="audit", auditor=Auditor(log))
    assert enforcer.check_listing(POISONED, LATEST) == set()
    (record,) = [json.loads(line) for line in log.getvalue().splitlines()]
    assert (record["action"], record["mode"]) == ("would deny", "audit")


def test_other_rules_by_code_and_only_errors_withhold() -> None:
    enforcer = Enforcer(listing=listing_rules(["SMT401", "SMT402"]), auditor=Auditor(None))
    undescribed = {k: v for k, v in WEATHER.items() if k != "description"}
    # SMT402 is a warning: reported, not withheld.
    assert enforcer.check_listing([undescribed], LATEST) == set()
    assert Enforcer(listing=(), auditor=Auditor(None)).check_listing(POISONED, LATEST) == set()


def test_the_proxy_withholds_the_poisoned_tool_and_refuses_its_calls() -> None:
    session = Session()
    session.start()
    (clean,) = session.list_tools(listing(turned=False))
    assert [tool["name"] for tool in clean["tools"]] == ["get_weather", "add_note", "validate"]
    assert session.client(session.call(1, "get_weather", {"city": "Oslo"})).forward
    session.server({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    (poisoned,) = session.list_tools(POISONED)
    names = [tool["name"] for tool in poisoned["tools"]]
    assert names == ["add_note", "sync_files", "validate"]
    routed = session.client(session.call(2, "get_weather", {"city": "Oslo"}))
    assert not routed.forward
    (answer,) = messages(routed.reply)
    assert answer["result"]["isError"] is True
    text = answer["result"]["content"][0]["text"]
    assert "withheld" in text
    assert "SMT401" in text
    assert "ssh" not in text
    stderr = session.stderr.getvalue()
    assert "tools/list" in stderr
    assert "withheld" in stderr
    assert "SMT401" in stderr
    # The validate tool's dry run says the same as a real call.
    dry = session.client(
        session.call(9, "validate", {"tool": "get_weather", "arguments": {"city": "Oslo"}})
    )
    (verdict,) = messages(dry.reply)
    assert verdict["result"]["structuredContent"]["valid"] is False
    assert "SMT401" in json.dumps(verdict["result"]["structuredContent"])
    # Listed clean again: no longer refused.
    session.list_tools(listing(turned=False))
    assert session.client(session.call(3, "get_weather", {"city": "Oslo"})).forward


def test_audit_mode_proxy_lists_and_forwards_but_reports() -> None:
    session = Session(mode="audit")
    session.start()
    (poisoned,) = session.list_tools(POISONED)
    assert "get_weather" in [tool["name"] for tool in poisoned["tools"]]
    assert session.client(session.call(1, "get_weather", {"city": "Oslo"})).forward


def test_policy_listing_table() -> None:
    policy = Policy.from_dict({"listing": {"rules": ["SMT401", "SMT1"]}})
    assert policy.listing_rules == ("SMT401", "SMT1")
    assert Policy.from_dict({}).listing_rules is None
    bad_tables: list[dict[str, Any]] = [
        {"listing": {"rule": []}},
        {"listing": {"rules": "SMT401"}},
        {"listing": 1},
    ]
    for bad in bad_tables:
        with pytest.raises(PolicyError):
            Policy.from_dict(bad)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--listing-rules", "SMT999"], "--listing-rules"),
        (["--policy", "POLICY"], "[listing] rules"),
    ],
)
def test_an_unknown_listing_rule_is_a_usage_error(
    tmp_path: Path, args: list[str], needle: str
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[listing]\nrules = ["SMT9"]\n', encoding="utf-8")
    args = [str(policy) if arg == "POLICY" else arg for arg in args]
    result = CliRunner().invoke(main, ["proxy", *args, "--", sys.executable, "-c", "pass"])
    assert result.exit_code == 2
    assert needle in result.output


# ---------------------------------------------------------------------------------------------
# End to end


@asynccontextmanager
async def proxied(tmp_path: Path, *options: str) -> AsyncIterator[ClientSession]:
    """The official client, through the proxy, in front of the rug-pull server."""
    args = ["-m", "strictmcp.proxy", *options, "--", sys.executable, str(FIXTURE)]
    params = StdioServerParameters(
        command=sys.executable,
        args=[*args, str(tmp_path / "calls")],
        cwd=str(tmp_path),
        env=dict(os.environ),  # the SDK's client would drop PYTHONPATH
    )
    with (tmp_path / "stderr").open("w", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def reached(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "calls"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_without_a_pin_the_rug_pull_hidden_instruction_is_withheld(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"

    async def body() -> None:
        with anyio.fail_after(30):
            await steps()

    async def steps() -> None:
        async with proxied(tmp_path, "--audit-log", str(log)) as session:
            first = await session.list_tools()
            assert [t.name for t in first.tools] == ["get_weather", "add_note", "validate"]
            second = await session.list_tools()
            assert [t.name for t in second.tools] == ["add_note", "sync_files", "validate"]
            refused = await session.call_tool("get_weather", {"city": "Oslo"})
            assert refused.is_error
            assert "withheld" in text_of(refused)

    anyio.run(body)
    assert reached(tmp_path) == []
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert {(r["stage"], r["action"], r["code"]) for r in records} >= {
        ("listing", "withheld", "SMT401"),
        ("listing", "refused", "SMT401"),
    }
    assert "withheld" in (tmp_path / "stderr").read_text()


# --- a listing identical to the last one checked ---------------------------------------------

CLEAN = listing(turned=False)


def _answer_line(form: str, request_id: int, tools: list[dict[str, Any]]) -> bytes:
    """A ``tools/list`` answer as writers put its id: first (Python SDK), last (TypeScript
    SDK), or elsewhere."""
    result = json.dumps({"tools": tools})
    if form == "first":
        text = f'{{"jsonrpc":"2.0","id":{request_id},"result":{result}}}'
    elif form == "last":
        text = f'{{"result":{result},"jsonrpc":"2.0","id":{request_id}}}'
    else:
        text = f'{{"id":{request_id},"result":{result},"jsonrpc":"2.0"}}'
    return text.encode() + b"\n"


class _Lister:
    """A proxy session whose listings are answered in one id ``form``, ids counting up."""

    def __init__(self, form: str, **options: Any) -> None:
        self.session = Session(**options)
        self.session.start()
        self.form = form
        self.ids = iter(range(100, 10_000))

    def names(self, tools: list[dict[str, Any]]) -> list[str]:
        request_id = next(self.ids)
        self.session.client({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"})
        answer = _answer_line(self.form, request_id, tools)
        routed = anyio.run(self.session.proxy.from_server, answer)
        (forwarded,) = messages(routed.forward)
        assert forwarded["id"] == request_id
        return [tool["name"] for tool in forwarded["result"]["tools"]]

    def calls(self, name: str, arguments: dict[str, Any]) -> bool:
        """Whether a call of ``name`` with ``arguments`` goes on to the server."""
        routed = self.session.client(self.session.call(next(self.ids), name, arguments))
        return bool(routed.forward)


def _with_city(kind: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"city": {"type": kind}}, "required": ["city"]}
    return {**WEATHER, "inputSchema": schema}


EXTRA = {
    "name": "get_tide",
    "description": "Tide times for a harbour.",
    "inputSchema": {"type": "object", "properties": {"harbour": {"type": "string"}}},
}


@pytest.mark.parametrize("form", ["first", "last", "elsewhere"])
def test_a_changed_listing_after_an_identical_one_is_checked_in_full(form: str) -> None:
    lister = _Lister(form)
    for _ in range(2):  # the second is identical to the first: its verdict may be reused
        assert lister.names(CLEAN) == ["get_weather", "add_note", "validate"]
        assert lister.calls("get_weather", {"city": "Oslo"})
    changed = [
        # One schema changed: the call the old schema allowed is refused.
        ([_with_city("integer"), CLEAN[1]], ["get_weather", "add_note", "validate"], False),
        # One tool added: it is known, and callable.
        ([*CLEAN, EXTRA], ["get_weather", "add_note", "get_tide", "validate"], True),
        # A definition the result's schema refuses: withheld from the listing (its calls are
        # checked against its input schema, which is as before).
        ([{**WEATHER, "annotations": "x"}, CLEAN[1]], ["add_note", "validate"], True),
        # One description with a hidden character: that tool is withheld, its calls refused.
        ([{**WEATHER, "description": "Wea\u200bther"}, CLEAN[1]], ["add_note", "validate"], False),
        (
            [{**WEATHER, "description": "Weather" + tags("x")}, CLEAN[1]],
            ["add_note", "validate"],
            False,
        ),
    ]
    for tools, names, weather in changed:
        assert lister.names(CLEAN) == ["get_weather", "add_note", "validate"]
        assert lister.names(tools) == names
        assert lister.calls("get_weather", {"city": "Oslo"}) is weather
        if "get_tide" in names:
            assert lister.calls("get_tide", {"harbour": "Brest"})
        # And back: the clean listing is the clean verdict again.
        assert lister.names(CLEAN) == ["get_weather", "add_note", "validate"]
        assert lister.calls("get_weather", {"city": "Oslo"})
        assert not lister.calls("get_tide", {"harbour": "Brest"})


@pytest.mark.parametrize("form", ["first", "last"])
def test_an_identical_listing_reuses_the_check_and_still_reports(form: str) -> None:
    linted: list[Any] = []
    (rule,) = listing_rules()

    def counted(*args: Any, **kwargs: Any) -> Any:
        linted.append(args)
        return rule.check(*args, **kwargs)

    lister = _Lister(form, listing_rules=(dataclasses.replace(rule, check=counted),))
    poisoned = [CLEAN[0], {**CLEAN[1], "description": "Add\u200b a note"}]
    assert lister.names(poisoned) == ["get_weather", "validate"]
    checked = lister.session.proxy.conversation.tools.get("get_weather")
    first = len(linted)
    assert first >= 2  # each tool linted once
    assert lister.names(poisoned) == ["get_weather", "validate"]
    # Neither the tools' schemas nor the listing rules ran again; the finding is reported
    # again, and the tool still withheld.
    assert lister.session.proxy.conversation.tools.get("get_weather") is checked
    assert len(linted) == first
    assert lister.session.stderr.getvalue().count("SMT401") == 2
    assert not lister.calls("add_note", {"text": "hi"})
    # Another id form of the same listing is another text: checked again, with the same verdict.
    other = "last" if form == "first" else "first"
    lister.form = other
    assert lister.names(poisoned) == ["get_weather", "validate"]
    assert len(linted) > first


def test_answer_digest_is_the_text_less_its_id() -> None:
    tools = [WEATHER]
    first = answer_digest(_answer_line("first", 1, tools))
    assert first is not None
    assert answer_digest(_answer_line("first", 987654, tools)) == first
    assert answer_digest(b'{"jsonrpc": "2.0", "id": "a", "result": {"tools": []}}') is not None
    last = answer_digest(_answer_line("last", 1, tools))
    assert last is not None
    assert last != first
    assert answer_digest(_answer_line("last", 2, tools)) == last
    changed = answer_digest(_answer_line("first", 1, [{**WEATHER, "name": "get_weathes"}]))
    assert changed not in (None, first)
    # An id elsewhere, a key that only ends in "id", or an escaped string id: nothing reused.
    assert answer_digest(_answer_line("elsewhere", 1, tools)) is None
    assert answer_digest(b'{"result":{"tools":[]},"jsonrpc":"2.0","x\\"id":1}') is None
    assert answer_digest(b'{"jsonrpc":"2.0","id":"a\\"b","result":{}}') is None
    assert answer_digest(b'{"jsonrpc":"2.0","id":01,"result":{}}') is None
    # The id itself, without reading the text.
    assert answer_id(_answer_line("first", 42, tools)) == 42
    assert answer_id(_answer_line("last", -3, tools)) == -3
    assert answer_id(b'{"jsonrpc": "2.0", "id": "list-1", "result": {}}') == "list-1"
    assert answer_id(_answer_line("elsewhere", 42, tools)) is None


@pytest.mark.parametrize("form", ["first", "last"])
def test_an_identical_listing_under_a_reloaded_policy_is_shaped_anew(form: str) -> None:
    lister = _Lister(form)
    assert lister.names(CLEAN) == ["get_weather", "add_note", "validate"]
    assert lister.names(CLEAN) == ["get_weather", "add_note", "validate"]
    # The same answer again, but the policy no longer offers add_note: not the text sent last.
    lister.session.proxy.enforcer.use(Policy.from_dict({"exclude_tools": ["add_note"]}), None)
    assert lister.names(CLEAN) == ["get_weather", "validate"]
    assert not lister.calls("add_note", {"text": "hi"})
    lister.session.proxy.enforcer.use(None, None)
    assert lister.names(CLEAN) == ["get_weather", "add_note", "validate"]
    assert lister.calls("add_note", {"text": "hi"})


@pytest.mark.parametrize("form", ["first", "last"])
def test_an_answer_whose_id_has_too_many_digits_is_read_strictly_not_a_crash(form: str) -> None:
    # Every server line's id is looked up without reading the text; an integer of thousands
    # of digits is past what Python turns into an int from text (a ValueError, once a crash
    # of the session), and is no id the session gave: the line is read, and refused, strictly.
    huge = "9" * 5000
    if form == "first":
        line = ('{"jsonrpc":"2.0","id":' + huge + ',"result":{"tools":[]}}').encode()
    else:
        line = ('{"jsonrpc":"2.0","result":{"tools":[]},"id":' + huge + "}").encode()
    assert answer_id(line) is None
    assert answer_digest(line) is None
    session = ProxySession(Auditor(None))

    async def answer() -> Any:
        return await session.from_server(line)

    routed = anyio.run(answer)
    assert routed.forward == []
