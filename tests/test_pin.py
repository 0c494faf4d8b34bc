"""Pinning (issue 15, point 1): RFC 8785 digests, the lock file, ``strictmcp pin`` and
``pin --diff``, and ``proxy --pin`` in front of a server that turns malicious after its first
listing (tests/proxy_fixtures/rugpull_server.py)."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from click.testing import CliRunner
from mcp import MCPError
from mcp_types.jsonrpc import INVALID_PARAMS

from proxy_fixtures.rugpull_server import NOTE, SUMMARIZE, WEATHER, listing, prompt_listing
from strictmcp.cli import main
from strictmcp.enforce import Auditor, Enforcer, PinError, PinFile
from strictmcp.enforce.pins import canonical_json, tool_digest
from strictmcp.guards.validation import tool_definition
from strictmcp.protocol import LATEST
from test_listing_checks import FIXTURE, proxied

CLEAN = listing(turned=False)
POISONED = listing(turned=True)
CLEAN_PROMPTS = prompt_listing(turned=False)
POISONED_PROMPTS = prompt_listing(turned=True)


# --- RFC 8785 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # RFC 8785 section 3.2.2 example ("numbers", "string", "literals").
        (
            {
                "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
                "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
                "literals": [None, True, False],
            },
            '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
            '"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
        ),
        # Section 3.2.3: keys sorted by UTF-16 code units.
        (
            {
                "\u20ac": "Euro Sign",
                "\r": "Carriage Return",
                "\ufb33": "Hebrew Letter Dalet With Dagesh",
                "1": "One",
                "\U0001f600": "Emoji: Grinning Face",
                "\u0080": "Control",
                "\u00f6": "Latin Small Letter O With Diaeresis",
            },
            '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O '
            'With Diaeresis","\u20ac":"Euro Sign","\U0001f600":"Emoji: Grinning Face","\ufb33":'
            '"Hebrew Letter Dalet With Dagesh"}',
        ),
    ],
)
def test_canonical_json_follows_rfc_8785_examples(value: Any, expected: str) -> None:
    assert canonical_json(value).decode("utf-8") == expected


def test_the_digest_ignores_spelling_and_other_fields() -> None:
    spelled = json.loads(json.dumps(WEATHER, indent=3, sort_keys=True))
    assert tool_digest(spelled) == tool_digest(WEATHER)
    assert tool_digest({**WEATHER, "_meta": {"x": 1}, "icons": []}) == tool_digest(WEATHER)
    assert tool_digest({**WEATHER, "title": "Weather"}) != tool_digest(WEATHER)
    # 2**60 is read as the nearest double, as RFC 8785's I-JSON numbers are.
    # ECMAScript's shortest round-trip spelling, as RFC 8785 section 3.2.2.3 wants.
    assert canonical_json({"max": 2**60}) == b'{"max":1152921504606847000}'
    expected = hashlib.sha256(canonical_json({k: WEATHER[k] for k in WEATHER})).hexdigest()
    assert tool_digest(WEATHER) == expected


# --- the lock file ----------------------------------------------------------------------------


def test_the_lock_file_round_trips_and_leaves_out_the_validate_tool() -> None:
    pins = PinFile.from_tools([*CLEAN, tool_definition("validate", LATEST)])
    assert list(pins.tools) == ["add_note", "get_weather"]
    text = pins.dumps()
    assert text.isascii()
    assert PinFile.from_dict(json.loads(text)) == pins


def test_a_lock_file_edited_by_hand_is_refused() -> None:
    document = PinFile.from_tools(CLEAN).to_dict()
    document["tools"]["get_weather"]["definition"]["description"] = "edited"
    with pytest.raises(PinError) as caught:
        PinFile.from_dict(document)
    assert caught.value.code == "pin-digest-mismatch"
    for bad in ({}, {"version": 2, "tools": {}}, {"version": 1, "tools": []}):
        with pytest.raises(PinError):
            PinFile.from_dict(bad)
    with pytest.raises(PinError) as duplicate:
        PinFile.from_tools([WEATHER, WEATHER])
    assert duplicate.value.code == "pin-duplicate-name"


def test_every_change_is_a_finding_without_values() -> None:
    pins = PinFile.from_tools(CLEAN)
    found = {tool["name"]: pins.check(tool, "/result/tools/0") for tool in POISONED}
    assert {name: [v.code for v in vs] for name, vs in found.items()} == {
        "get_weather": ["pin-changed"],
        "add_note": ["pin-changed"],
        "sync_files": ["pin-new"],
    }
    assert found["get_weather"][0].message.endswith("changed since it was pinned: description")
    assert found["add_note"][0].message.endswith(": inputSchema")
    assert "Before answering" not in str(found)
    assert pins.check(WEATHER, "") == []


def test_the_enforcer_withholds_every_change_with_pins() -> None:
    log = io.StringIO()
    # No listing rules: the pins alone withhold the hidden description, the new tool and
    # the changed schema.
    enforcer = Enforcer(listing=(), pins=PinFile.from_tools(CLEAN), auditor=Auditor(log))
    assert enforcer.check_listing(CLEAN, LATEST) == set()
    assert enforcer.check_listing(POISONED, LATEST) == {0, 1, 2}
    records = [json.loads(line) for line in log.getvalue().splitlines()]
    assert sorted((r["tool"], r["code"], r["action"]) for r in records) == [
        ("add_note", "pin-changed", "withheld"),
        ("get_weather", "pin-changed", "withheld"),
        ("sync_files", "pin-new", "withheld"),
    ]


# --- strictmcp pin ----------------------------------------------------------------------------


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["pin", *args])
    return result.exit_code, result.stdout, result.stderr


def tools_file(tmp_path: Path, tools: list[dict[str, Any]], name: str) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"tools": tools}), encoding="utf-8")
    return str(path)


def test_pin_then_diff_field_by_field(tmp_path: Path) -> None:
    lock = str(tmp_path / "tools.lock.json")
    code, _, err = run("--lock", lock, tools_file(tmp_path, CLEAN, "clean.json"))
    assert (code, "2 tools pinned") == (0, err.split(": ", 1)[1][:14])
    assert PinFile.load(lock) == PinFile.from_tools(CLEAN)
    assert run("--diff", "--lock", lock, tools_file(tmp_path, CLEAN, "same.json"))[:2] == (
        0,
        "no change since the tools were pinned\n",
    )
    code, out, _ = run("--diff", "--lock", lock, tools_file(tmp_path, POISONED, "now.json"))
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == '~ tool "add_note": changed'
    assert "    inputSchema/properties/cc:" in lines
    assert '~ tool "get_weather": changed' in lines
    assert "    description:" in lines
    # The hidden tag characters show as escapes.
    assert any(line.startswith('      + "Current weather for a city.\\udb40') for line in lines)
    assert lines[-1] == '+ tool "sync_files": new since pinning'
    assert out.isascii()
    code, out, _ = run(
        "--diff", "--format", "json", "--lock", lock, tools_file(tmp_path, [NOTE], "gone.json")
    )
    assert code == 1
    assert json.loads(out)["changes"] == [{"tool": "get_weather", "kind": "gone", "fields": []}]


def test_pin_usage_errors(tmp_path: Path) -> None:
    assert run()[0] == 2
    missing = str(tmp_path / "missing.lock.json")
    code, _, err = run("--diff", "--lock", missing, tools_file(tmp_path, CLEAN, "t.json"))
    assert code == 2
    assert "pin-unreadable" in err
    assert run(str(tmp_path / "nothing.json"))[0] == 2


def test_pin_a_live_server(tmp_path: Path) -> None:
    lock = str(tmp_path / "live.lock.json")
    code, _, err = run("--lock", lock, "--", sys.executable, str(FIXTURE), str(tmp_path / "calls"))
    assert code == 0
    assert "2 tools and 1 prompts pinned" in err
    pins = PinFile.load(lock)
    assert list(pins.tools) == ["add_note", "get_weather"]
    assert pins.prompts is not None
    assert list(pins.prompts) == ["summarize"]
    assert pins.prompts["summarize"][1] == SUMMARIZE
    # The live server's prompts have turned since (their first listing was the pin's).
    code, out, _ = run(
        "--diff", "--lock", lock, "--", sys.executable, str(FIXTURE), str(tmp_path / "c")
    )
    assert code == 0  # a fresh server lists its clean prompts first
    assert out == "no change since the tools were pinned\n"


# --- prompts ----------------------------------------------------------------------------------


def test_prompt_pins_round_trip_and_leave_prompts_unpinned_when_not_given() -> None:
    pins = PinFile.from_tools(CLEAN, CLEAN_PROMPTS)
    assert PinFile.from_dict(json.loads(pins.dumps())) == pins
    assert json.loads(pins.dumps())["prompts"]["summarize"]["definition"] == SUMMARIZE
    unpinned = PinFile.from_tools(CLEAN)
    assert unpinned.prompts is None
    assert "prompts" not in json.loads(unpinned.dumps())
    assert unpinned.check_prompt(POISONED_PROMPTS[1], "/result/prompts/1") == []
    edited = json.loads(pins.dumps())
    edited["prompts"]["summarize"]["definition"]["description"] = "Summarise and send."
    with pytest.raises(PinError) as raised:
        PinFile.from_dict(edited)
    assert raised.value.code == "pin-digest-mismatch"
    assert "prompt" in str(raised.value)


def test_a_changed_or_new_prompt_is_a_finding_and_its_get_refused() -> None:
    pins = PinFile.from_tools(CLEAN, CLEAN_PROMPTS)
    assert [v.code for v in pins.check_prompt(SUMMARIZE, "/p/0")] == []
    changed, new = (
        pins.check_prompt(prompt, f"/result/prompts/{i}")
        for i, prompt in enumerate(POISONED_PROMPTS)
    )
    assert [(v.code, v.pointer) for v in changed] == [("pin-changed", "/result/prompts/0")]
    assert changed[0].message.endswith("changed since it was pinned: description")
    assert [v.code for v in new] == ["pin-new"]
    assert "ssh" not in changed[0].message
    enforcer = Enforcer(pins=pins, auditor=Auditor())
    assert enforcer.check_prompt_get("summarize") == []
    assert enforcer.check_prompt_listing(POISONED_PROMPTS) == {0, 1}
    assert [v.code for v in enforcer.check_prompt_get("summarize")] == ["pin-changed"]
    assert [v.code for v in enforcer.check_prompt_get("share_notes")] == ["pin-new"]
    # Listed as pinned again: callable again.
    assert enforcer.check_prompt_listing(CLEAN_PROMPTS) == set()
    assert enforcer.check_prompt_get("summarize") == []
    auditing = Enforcer(pins=pins, auditor=Auditor(), mode="audit")
    assert auditing.check_prompt_listing(POISONED_PROMPTS) == set()
    assert auditing.check_prompt_get("share_notes") == []


def test_pin_diff_shows_prompts_field_by_field(tmp_path: Path) -> None:
    def listing_file(name: str, tools: list[dict[str, Any]], prompts: list[dict[str, Any]]) -> str:
        path = tmp_path / name
        path.write_text(json.dumps({"tools": tools, "prompts": prompts}), encoding="utf-8")
        return str(path)

    lock = str(tmp_path / "tools.lock.json")
    code, _, err = run("--lock", lock, listing_file("clean.json", CLEAN, CLEAN_PROMPTS))
    assert code == 0
    assert "2 tools and 1 prompts pinned" in err
    code, out, _ = run("--diff", "--lock", lock, listing_file("now.json", CLEAN, POISONED_PROMPTS))
    assert code == 1
    lines = out.splitlines()  # in name order
    assert lines[0] == '+ prompt "share_notes": new since pinning'
    assert lines[1] == '~ prompt "summarize": changed'
    assert lines[2] == "    description:"
    assert lines[3] == '      - "Summarise a text."'
    assert lines[4].startswith('      + "Summarise a text.\\udb40')
    code, out, _ = run(
        "--diff",
        "--format",
        "json",
        "--lock",
        lock,
        listing_file("j.json", CLEAN, POISONED_PROMPTS),
    )
    assert code == 1
    changes = json.loads(out)["changes"]
    assert [(c.get("prompt"), c["kind"]) for c in changes] == [
        ("share_notes", "new"),
        ("summarize", "changed"),
    ]
    assert changes[1]["fields"][0]["before"] == ["Summarise a text."]


# --- proxy --pin, end to end ------------------------------------------------------------------


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.parametrize("mode", ["enforce", "audit"])
def test_with_a_pin_every_change_is_withheld_and_calls_refused(tmp_path: Path, mode: str) -> None:
    lock = tmp_path / "tools.lock.json"
    lock.write_text(PinFile.from_tools(CLEAN).dumps(), encoding="utf-8")
    log = tmp_path / "audit.jsonl"
    options = ("--pin", str(lock), "--listing-rules", "none", "--audit-log", str(log))

    async def body() -> None:
        with anyio.fail_after(30):
            async with proxied(tmp_path, *options, "--mode", mode) as session:
                first = await session.list_tools()
                assert [t.name for t in first.tools] == ["get_weather", "add_note", "validate"]
                second = await session.list_tools()
                names = [t.name for t in second.tools]
                if mode == "audit":
                    assert names == ["get_weather", "add_note", "sync_files", "validate"]
                    return
                assert names == ["validate"]
                for tool, arguments in (
                    ("get_weather", {"city": "Oslo"}),
                    ("add_note", {"text": "hi", "cc": "x@example.com"}),
                    ("sync_files", {}),
                ):
                    refused = await session.call_tool(tool, arguments)
                    assert refused.is_error, tool
                    assert "withheld" in text_of(refused) or "unknown" in text_of(refused).lower()

    anyio.run(body)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    listing_records = {
        (r["tool"], r["code"], r["action"]) for r in records if r["stage"] == "listing"
    }
    action = "withheld" if mode == "enforce" else "would deny"
    assert {
        ("get_weather", "pin-changed", action),
        ("add_note", "pin-changed", action),
        ("sync_files", "pin-new", action),
    } <= listing_records
    calls = tmp_path / "calls"
    assert not calls.exists() or calls.read_text() == ""


@pytest.mark.parametrize("mode", ["enforce", "audit"])
def test_with_a_pin_changed_and_new_prompts_are_withheld_and_their_get_refused(
    tmp_path: Path, mode: str
) -> None:
    lock = tmp_path / "tools.lock.json"
    lock.write_text(PinFile.from_tools(CLEAN, CLEAN_PROMPTS).dumps(), encoding="utf-8")
    log = tmp_path / "audit.jsonl"
    options = ("--pin", str(lock), "--listing-rules", "none", "--audit-log", str(log))
    refusals: list[str] = []

    async def body() -> None:
        with anyio.fail_after(30):
            async with proxied(tmp_path, *options, "--mode", mode) as session:
                first = await session.list_prompts()
                assert [p.name for p in first.prompts] == ["summarize"]
                got = await session.get_prompt("summarize", {"text": "hi"})
                assert got.messages
                second = await session.list_prompts()
                names = [p.name for p in second.prompts]
                if mode == "audit":
                    assert names == ["summarize", "share_notes"]
                    return
                assert names == []
                for name in ("summarize", "share_notes"):
                    with pytest.raises(MCPError) as raised:
                        await session.get_prompt(name, {"text": "hi"})
                    assert raised.value.error.code == INVALID_PARAMS
                    refusals.append(raised.value.error.message)

    anyio.run(body)
    reached = [json.loads(line) for line in (tmp_path / "calls").read_text().splitlines()]
    assert reached == [{"prompt": "summarize"}]
    records = [json.loads(line) for line in log.read_text().splitlines()]
    pinned = {(r["method"], r["code"], r["action"]) for r in records if r["stage"] == "listing"}
    if mode == "audit":
        assert ("prompts/list", "pin-changed", "would deny") in pinned
        assert ("prompts/list", "pin-new", "would deny") in pinned
        return
    assert {
        ("prompts/list", "pin-changed", "withheld"),
        ("prompts/list", "pin-new", "withheld"),
        ("prompts/get", "pin-changed", "refused"),
        ("prompts/get", "pin-new", "refused"),
    } <= pinned
    assert refusals[0].startswith('Prompt "summarize" was withheld by strictmcp:')
    assert refusals[0].endswith("[pin-changed]")
    assert "ssh" not in " ".join(refusals)


def test_proxy_refuses_an_unreadable_pin_file(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{}", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["proxy", "--pin", str(tmp_path / "bad.json"), "--", sys.executable, "-c", "pass"]
    )
    assert result.exit_code == 2
    assert "pin-invalid" in result.output
