"""``[[flow]]``: data read from one gateway server, on its way to another.

The tracker alone (``enforce/flows.py``: every encoding, write-back, eviction, redaction), then
the real gateway: npm ``server-filesystem`` reads a file holding a planted key and the
recording fixture server (tests/proxy_fixtures/flow_server.py) or npm ``server-everything``
is the sink, over stdio and streamable HTTP; what reached the sink is read from its own record.
"""

from __future__ import annotations

import base64
import json
import os
import random
import string
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from auth_support import authorization_server, free_port
from strictmcp.enforce import Auditor, Enforcer
from strictmcp.enforce.flows import FlowTracker, _format_characters
from strictmcp.guards.secrets import redact
from strictmcp.policy import FlowAction, FlowRule, Policy, PolicyError
from strictmcp.protocol import LATEST, ToolRegistry
from test_gateway import gateway_session, raw_gateway, run, server_table, write_policy
from test_proxy_bridge import LEGACY, Bridged, _text
from test_proxy_http import (  # noqa: F401 - a fixture
    Process,
    answer,
    handshake,
    in_session,
    processes,
    request,
)
from test_proxy_session import nested
from test_proxy_third_party import everything_command, filesystem_command, text_of

SERVER = Path(__file__).resolve().parent / "proxy_fixtures" / "flow_server.py"
# A planted AWS key of the real format, and a GitHub token of it.
AWS = "AKIA5MZXN8QRF3WBY6OE"
GITHUB = "ghp_" + "Zq9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa"
RULE = FlowRule(sources=("files",), sinks=("*",))


def result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def tracked(*rules: FlowRule, **options: Any) -> FlowTracker:
    tracker = FlowTracker(rules or (RULE,), **options)
    tracker.taint("files", result(f"AWS_ACCESS_KEY_ID={AWS}\nGITHUB_TOKEN={GITHUB}\n"))
    return tracker


# --- the tracker ------------------------------------------------------------------------------


def _b64(text: str, prefix: str = "") -> str:
    return base64.b64encode((prefix + text).encode()).decode()


ENCODED: dict[str, Callable[[str], str]] = {
    "verbatim": lambda s: s,
    "inside sql": lambda s: f"INSERT INTO notes (body) VALUES ('{s}')",
    "glued to text": lambda s: f"x{s}y",
    "base64": _b64,
    "base64 offset 1": lambda s: _b64(s, "a"),
    "base64 offset 2": lambda s: _b64(s, "ab"),
    "base64 unpadded": lambda s: _b64(s, "a").rstrip("="),
    "base64 misaligned in a run": lambda s: "QQ" + _b64(s),
    "base64 url-safe": lambda s: base64.urlsafe_b64encode(b"\xfb\xff" + s.encode()).decode(),
    "hex lower": lambda s: s.encode().hex(),
    "hex upper": lambda s: s.encode().hex().upper(),
    "hex misaligned": lambda s: "f" + s.encode().hex(),
    "percent": lambda s: quote(s, safe=""),
    "percent, partly": lambda s: s[:5] + quote(s[5:], safe=""),
    "base64 in a url": lambda s: "https://x.example/?q=" + quote(_b64(s), safe=""),
}


@pytest.mark.parametrize("encoding", list(ENCODED))
@pytest.mark.parametrize("secret", [AWS, GITHUB])
def test_tainted_data_is_found_in_every_encoding(encoding: str, secret: str) -> None:
    tracker = tracked()
    sent = {"nested": [{"body": ENCODED[encoding](secret)}]}
    flowed = tracker.check("sink", sent, "/params/arguments")
    assert flowed.action == "refuse"
    assert [v.pointer for v in flowed.found] == ["/params/arguments/nested/0/body"]
    message = str(flowed.found[0])
    assert "'files'" in message
    assert "'sink'" in message
    assert secret not in message
    assert flowed.found[0].code == "flow-cross-server"


@pytest.mark.parametrize(
    "sent",
    [
        AWS[:-1],  # a part is not the value
        AWS.lower(),
        "AKIA5MZXN8QRF3WBY6OX",  # another key of the same shape
        "the weather in Paris",
        _b64(AWS[:-2]),
    ],
)
def test_other_data_passes(sent: str) -> None:
    assert tracked().check("sink", {"q": sent}, "/a").action is None


def test_writing_back_to_the_source_is_no_flow() -> None:
    tracker = tracked(FlowRule(sources=("files", "sink"), sinks=("*",)))
    assert tracker.check("files", {"q": AWS}, "/a").action is None
    # The same value read from the sink too: the sink has it already.
    tracker.taint("sink", result(AWS))
    assert tracker.check("sink", {"q": AWS}, "/a").action is None
    assert tracker.check("other", {"q": AWS}, "/a").action == "refuse"


def test_a_value_seen_before_any_read_is_no_flow() -> None:
    tracker = FlowTracker((RULE,))
    assert tracker.check("sink", {"q": AWS}, "/a").action is None
    tracker.taint("files", result("nothing secret here"))
    assert tracker.check("sink", {"q": AWS}, "/a").action is None


def test_taints_belong_to_their_owner() -> None:
    tracker = FlowTracker((RULE,))
    tracker.taint("files", result(AWS), owner=("alice", None))
    assert tracker.check("sink", {"q": AWS}, "/a", owner=("alice", None)).action == "refuse"
    assert tracker.check("sink", {"q": AWS}, "/a", owner=("bob", None)).action is None
    assert tracker.check("sink", {"q": AWS}, "/a").action is None


def test_rules_choose_the_pairs_and_the_strictest_action_wins() -> None:
    rules = (
        FlowRule(sources=("files",), sinks=("mail",), action="audit"),
        FlowRule(sources=("f*",), sinks=("mail", "db"), action="redact"),
        FlowRule(sources=("files",), sinks=("db",)),
    )
    tracker = tracked(*rules)
    assert tracker.check("mail", {"q": AWS}, "/a").action == "redact"
    assert tracker.check("db", {"q": AWS}, "/a").action == "refuse"
    assert tracker.check("web", {"q": AWS}, "/a").action is None


def test_sensitive_pointers_taint_their_values_from_min_length() -> None:
    rule = FlowRule(
        sources=("crm",), sinks=("*",), sensitive=("/structuredContent/people/*/email",)
    )
    tracker = FlowTracker((rule,))
    people = [{"email": "ada@example.com"}, {"email": "b@x.io"}]
    tracker.taint("crm", {"content": [], "structuredContent": {"people": people}})
    assert tracker.check("mail", {"to": "ada@example.com"}, "/a").action == "refuse"
    assert tracker.check("mail", {"to": "write to ada@example.com"}, "/a").action == "refuse"
    # Shorter than min_length (8): never tainted.
    assert tracker.check("mail", {"to": "b@x.io"}, "/a").action is None
    # A server the rule's `from` does not name taints nothing at its pointers.
    other = FlowTracker((rule,))
    other.taint("files", {"content": [], "structuredContent": {"people": people}})
    assert other.check("mail", {"to": "ada@example.com"}, "/a").action is None


def test_a_reload_keeps_the_taints_and_narrows_their_shadows() -> None:
    tracker = tracked(FlowRule(sources=("files",), sinks=("*",), min_length=12))
    # A reload (the same rules again, or others): what the session read is tainted still.
    tracker.use((FlowRule(sources=("files",), sinks=("*",), min_length=12),))
    assert tracker.check("sink", {"q": AWS}, "/a").action == "refuse"
    # Shorter values count now: what was kept is found by narrower shadows, beside new ones.
    pin = FlowRule(
        sources=("files",), sinks=("*",), min_length=4, sensitive=("/structuredContent/pin",)
    )
    tracker.use((pin,))
    tracker.taint("files", {"content": [], "structuredContent": {"pin": "4921"}})
    for sent in (AWS, _b64(AWS, "x"), GITHUB.encode().hex(), "pin 4921", _b64("4921")):
        assert tracker.check("sink", {"q": sent}, "/a").action == "refuse", sent
    # Wider again: the shadows cannot widen, and what is kept is found still; the rules say
    # which lengths count.
    tracker.use((FlowRule(sources=("files",), sinks=("*",), min_length=16),))
    assert tracker.check("sink", {"q": _b64(AWS)}, "/a").action == "refuse"
    assert tracker.check("sink", {"q": "pin 4921"}, "/a").action is None


def test_many_taints_are_found_after_their_shadows_narrow() -> None:
    values = [f"value-{n:04d}-of-many" for n in range(40)]
    tracker = held(*values)
    tracker.use((FlowRule(sources=("crm",), sinks=("*",), min_length=4, sensitive=("/x",)),))
    assert all(refused(tracker, f"about {value}.") for value in values)
    assert all(refused(tracker, _b64(value)) for value in values[::7])
    assert not refused(tracker, "value-9999-of-many")


def test_resource_contents_blobs_and_prompt_messages_are_tainted() -> None:
    tracker = FlowTracker((RULE,))
    blob = base64.b64encode(f"key: {AWS}".encode()).decode()
    tracker.taint("files", {"contents": [{"uri": "file:///k", "blob": blob}]})
    assert tracker.check("sink", {"q": AWS}, "/a").action == "refuse"
    tracker = FlowTracker((RULE,))
    message = {"role": "user", "content": {"type": "text", "text": GITHUB}}
    tracker.taint("files", {"messages": [message]})
    assert tracker.check("sink", {"q": GITHUB}, "/a").action == "refuse"


def test_at_the_bound_the_oldest_taint_is_evicted_and_counted() -> None:
    tracker = FlowTracker((RULE,), max_taints=2)
    keys = [f"AKIA{index:016d}" for index in range(3)]
    evicted = [tracker.taint("files", result(key)) for key in keys]
    assert evicted == [0, 0, 1]
    assert tracker.evicted == 1
    assert tracker.check("sink", {"q": keys[0]}, "/a").action is None
    assert tracker.check("sink", {"q": keys[1]}, "/a").action == "refuse"
    assert tracker.check("sink", {"q": keys[2]}, "/a").action == "refuse"


def test_a_stateless_caller_forgotten_at_the_bound_is_counted() -> None:
    tracker = FlowTracker((RULE,), max_callers=2)
    alice, bob, carol = ("alice", None), ("bob", None), ("carol", None)
    assert tracker.taint("files", result(f"{AWS} {GITHUB}"), owner=alice) == 0
    assert tracker.taint("files", result(GITHUB), owner=bob) == 0
    # A third caller: the least recently tainted one's two values are forgotten, and said.
    assert tracker.taint("files", result(GITHUB), owner=carol) == 2
    assert tracker.evicted == 2
    assert tracker.check("sink", {"q": AWS}, "/a", owner=alice).action is None
    assert tracker.check("sink", {"q": GITHUB}, "/a", owner=bob).action == "refuse"
    assert tracker.check("sink", {"q": GITHUB}, "/a", owner=carol).action == "refuse"


def test_redact_replaces_the_data_and_keeps_the_rest() -> None:
    tracker = tracked(FlowRule(sources=("files",), sinks=("*",), action="redact"))
    sent = {"query": f"INSERT INTO t VALUES ('{AWS}', 'keep me')", "n": 3, "b64": _b64(GITHUB)}
    flowed = tracker.check("sink", sent, "/params/arguments")
    assert flowed.action == "redact"
    out = json.dumps(flowed.params)
    assert AWS not in out
    assert _b64(GITHUB) not in out
    assert "keep me" in out
    assert flowed.params["n"] == 3
    assert "[redacted: data of 'files']" in flowed.params["query"]
    # Written back to its source, it is left as it is.
    assert tracker.check("files", sent, "/a").params is sent


def test_keys_are_searched_and_no_pointer_quotes_what_was_found() -> None:
    tracker = tracked()
    sent = {
        "arguments": {AWS: "x", "fine": [{"deep": {GITHUB: {"below": f"again {AWS}"}}}]},
        "_meta": {"note": {_b64(AWS): 1}},
    }
    flowed = tracker.check("sink", sent, "/params")
    assert flowed.action == "refuse"
    pointers = {finding.pointer for finding in flowed.found}
    # Each at the object holding the key; what lies below such a key, there too.
    assert pointers == {"/params/_meta/note", "/params/arguments", "/params/arguments/fine/0/deep"}
    assert AWS not in repr(flowed.found)
    assert GITHUB not in repr(flowed.found)
    # A key with nothing tainted in it is a pointer as before.
    assert tracker.check("sink", {"k": {"q": AWS}}, "/a").found[0].pointer == "/a/k/q"


def test_redact_replaces_keys_and_keeps_every_member() -> None:
    tracker = tracked(FlowRule(sources=("files",), sinks=("*",), action="redact"))
    marker = "[redacted: data of 'files']"
    sent = {"a": {AWS: 1, f"x{AWS}": 2, marker: 3, GITHUB: {AWS: AWS}}}
    flowed = tracker.check("sink", sent, "/params/arguments")
    assert flowed.action == "redact"
    assert AWS not in json.dumps(flowed.params)
    assert GITHUB not in json.dumps(flowed.params)
    kept = flowed.params["a"]
    assert len(kept) == 4  # no two members made one
    assert kept[marker] == 3  # the client's own key is left
    assert kept[f"x{marker}"] == 2
    assert sorted(value for value in kept.values() if isinstance(value, int)) == [1, 2, 3]
    assert {marker: marker} in kept.values()


@pytest.mark.parametrize("action", ["refuse", "redact"])
def test_a_tainted_number_is_found_however_it_is_written(action: FlowAction) -> None:
    rule = FlowRule(
        sources=("files",), sinks=("*",), sensitive=("/structuredContent/account",), action=action
    )
    tracker = FlowTracker((rule,))
    tracker.taint("files", {"content": [], "structuredContent": {"account": 123456789012.0}})
    for sent in (123456789012, 1.23456789012e11, "123456789012", "no. 123456789012", 4123456789012):
        flowed = tracker.check("sink", {"n": sent, "flag": True, "small": 12}, "/a")
        assert flowed.action == action, sent
        assert [finding.pointer for finding in flowed.found] == ["/a/n"]
        if action == "redact":
            assert "123456789012" not in json.dumps(flowed.params)
            assert flowed.params["small"] == 12
    assert tracker.check("sink", {"n": 12345678901}, "/a").action is None


def test_data_is_tainted_found_and_redacted_however_deep() -> None:
    # As deep as the strict reader reads (it refuses past about a thousand levels).
    tracker = FlowTracker((FlowRule(sources=("files",), sinks=("*",), action="redact"),))
    tracker.taint("files", {"structuredContent": nested(f"AWS_ACCESS_KEY_ID={AWS}", 900)})
    flowed = tracker.check("sink", {"meta": nested(f"x {AWS} y", 900)}, "/params")
    assert flowed.action == "redact"
    assert AWS not in json.dumps(flowed.params)
    assert "x [redacted: data of 'files'] y" in json.dumps(flowed.params)
    assert json.dumps(flowed.params).count("[") == json.dumps(nested("", 900)).count("[") + 1


WRITTEN: dict[str, Callable[[str], str]] = {
    "zero-width spaces between": "\u200b".join,
    "bidirectional marks between": lambda s: "\u2066" + "\u200e".join(s) + "\u2069",
    "fullwidth": lambda s: "".join(chr(ord(c) + 0xFEE0) for c in s),
    "json escapes": lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
    "json escapes, partly": lambda s: f"x \\u{ord(s[0]):04X}{s[1:]} y",
    "html references": lambda s: "".join(f"&#{ord(c)};" for c in s),
    "html hex references": lambda s: "".join(f"&#x{ord(c):x};" for c in s),
    "percent-encoded zero-width": lambda s: quote("\u200b".join(s), safe=""),
}


@pytest.mark.parametrize("written", list(WRITTEN))
def test_data_written_to_read_as_itself_is_found(written: str) -> None:
    sent = {"q": f"see {WRITTEN[written](AWS)} here", "other": "kept"}
    assert tracked().check("sink", sent, "/a").action == "refuse"
    # Redacted, the whole string goes (no span of it is the value's own).
    redacting = tracked(FlowRule(sources=("files",), sinks=("*",), action="redact"))
    flowed = redacting.check("sink", sent, "/a")
    assert flowed.params == {"q": "[redacted: data of 'files']", "other": "kept"}


def test_a_value_written_shorter_than_itself_is_found() -> None:
    # NFKC lengthens: a circled number is two digits. Written so, an AWS key is 12
    # characters, shorter than the shortest value held (20), in a value or a key.
    key = "AKIA1213141516171819"
    written = "AKIA" + "".join(chr(0x2460 + n - 1) for n in range(12, 20))
    assert len(written) < len(key)
    tracker = FlowTracker((RULE,))
    tracker.taint("files", result(f"AWS_ACCESS_KEY_ID={key}"))
    assert tracker.check("sink", {"q": written}, "/a").action == "refuse"
    assert tracker.check("sink", {written: 1}, "/a").action == "refuse"


def test_the_characters_dropped_as_invisible_are_all_of_unicodes() -> None:
    every = {c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"}
    assert set(_format_characters()) == every


@pytest.mark.parametrize("action", ["refuse", "redact", "audit"])
def test_a_request_too_encoded_to_search_whole_is_refused(action: FlowAction) -> None:
    # The bound made small (a 64-character run decodes to 192 characters, at four alignments,
    # against 64 allowed): what would be left undecoded is never sent on unsearched.
    rule = FlowRule(sources=("files",), sinks=("*",), action=action)
    tracker = FlowTracker((rule,), decoded=(0, 1))
    tracker.taint("files", result(f"AWS_ACCESS_KEY_ID={AWS}"))
    junk = base64.b64encode(bytes(range(48))).decode()
    flowed = tracker.check("sink", {"a": junk, "z": _b64(AWS)}, "/params")
    unsearched = [finding for finding in flowed.found if finding.code == "flow-unsearched"]
    assert [finding.pointer for finding in unsearched] == ["/params"]
    assert flowed.action == ("audit" if action == "audit" else "refuse")  # redaction can't
    assert flowed.params["z"] == _b64(AWS)
    # A session that read nothing, or a request to the server the data came from: no flow.
    assert FlowTracker((rule,), decoded=(0, 1)).check("sink", {"a": junk}, "/p").action is None
    assert tracker.check("files", {"a": junk, "z": _b64(AWS)}, "/params").action is None
    # With the default bound, both are searched.
    roomy = FlowTracker((rule,))
    roomy.taint("files", result(f"AWS_ACCESS_KEY_ID={AWS}"))
    assert [f.code for f in roomy.check("sink", {"a": junk, "z": _b64(AWS)}, "/p").found] == [
        "flow-cross-server"
    ]


def test_redact_also_replaces_secrets_no_server_returned() -> None:
    stripe = "sk_live_" + "4eC7aRm9Kx2bNw5pQj8sYdTu"
    tracker = FlowTracker((FlowRule(sources=("files",), sinks=("db",), action="redact"),))
    flowed = tracker.check("db", {"q": f"VALUES ('{stripe}')"}, "/a")
    assert flowed.found[0].code == "flow-client-secret"
    assert stripe not in json.dumps(flowed.params)
    # Only toward the servers a redact rule protects.
    assert tracker.check("web", {"q": stripe}, "/a").action is None
    refusing = FlowTracker((RULE,))
    assert refusing.check("db", {"q": stripe}, "/a").action is None


def everything_kept(tracker: FlowTracker) -> str:
    """What a tracker holds, as text (compiled, its class has no ``__dict__`` to read)."""
    names = [name for name in dir(tracker) if not name.startswith("__")]
    held = [getattr(tracker, name) for name in names]
    kept = [value for value in held if not callable(value)]
    return repr(kept) + repr(list(tracker._stores.values()))


def test_what_is_kept_is_digests_never_values() -> None:
    tracker = tracked()
    kept = everything_kept(tracker)
    assert AWS not in kept
    assert GITHUB not in kept
    assert AWS.encode() not in b"".join(tracker._stores[None].taints)
    # A value of the very letters the search's shadows are spelled in is not kept either.
    letters = "hijklmnopabcdefg"
    tracker.taint("files", result(f"token: {GITHUB[:4]}{letters}"))
    tracker.check("sink", {"q": "compiles the search"}, "/a")
    assert letters not in everything_kept(tracker)


# --- the search: where a value starts, however many are held --------------------------------

SENSITIVE = FlowRule(sources=("crm",), sinks=("*",), sensitive=("/structuredContent/v/*",))


def held(*values: str, **options: Any) -> FlowTracker:
    tracker = FlowTracker((SENSITIVE,), **options)
    tracker.taint("crm", {"content": [], "structuredContent": {"v": list(values)}})
    return tracker


def refused(tracker: FlowTracker, text: str) -> bool:
    return tracker.check("mail", {"q": text}, "/a").action == "refuse"


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        # Each start of the value's first characters is a place it may start, overlapping ones too.
        ("aaaaaaaaab", "aaaaaaaaaaab"),
        ("abababab-key", "abababababab-key"),
        ("xxxxxxxxxxxxxxxy", "x" * 40 + "y"),
    ],
)
def test_a_value_is_found_after_a_run_of_its_first_characters(value: str, sent: str) -> None:
    assert refused(held(value), sent)
    assert not refused(held(value), sent[:-1])


def test_a_value_is_found_and_redacted_among_characters_of_several_bytes() -> None:
    value = "Grüße-aus-Köln-2026"
    rule = FlowRule(sources=("crm",), sinks=("*",), sensitive=("/v",), action="redact")
    tracker = FlowTracker((rule,))
    tracker.taint("crm", {"content": [], "v": value})
    for before, after in [("«", "» 🙂"), ("日本語 ", ""), ("\ud800 é", "\udfff"), ("", "")]:
        flowed = tracker.check("mail", {"q": before + value + after}, "/a")
        assert flowed.action == "redact"
        assert flowed.params == {"q": f"{before}[redacted: data of 'crm']{after}"}
    assert tracker.check("mail", {"q": "«Grüße-aus-Köln-2025»"}, "/a").action is None


def test_values_added_between_requests_are_each_found() -> None:
    # More values than are looked for one by one: the search is compiled anew as they come.
    tracker = FlowTracker((SENSITIVE,))
    values = [f"{index:03d}-private-{index * 7919:06d}" for index in range(60)]
    for count, value in enumerate(values, 1):
        tracker.taint("crm", {"content": [], "structuredContent": {"v": [value]}})
        for earlier in values[:count]:
            assert refused(tracker, f"send {earlier} now")
        assert not refused(tracker, f"send {values[count % 60][:-1]}! now")


def test_values_evicted_are_not_found_and_those_kept_are() -> None:
    values = [f"{index:03d}-private-{index * 7919:06d}" for index in range(50)]
    tracker = held(*values, max_taints=20)
    assert tracker.evicted == 30
    assert [refused(tracker, value) for value in values] == [False] * 30 + [True] * 20


def test_the_shortest_value_held_is_found_encoded_beside_longer_ones() -> None:
    short = "pin:4711"  # min_length (8)
    tracker = held(short, "a much longer private value of forty-two", AWS)
    for encoding in ("base64", "base64 offset 2", "hex upper", "percent", "base64 in a url"):
        assert refused(tracker, ENCODED[encoding](short)), encoding
    assert not refused(tracker, ENCODED["base64"]("pin:4712"))


def test_values_of_min_length_four_are_found_encoded() -> None:
    rule = FlowRule(sources=("crm",), sinks=("*",), sensitive=("/v",), min_length=4)
    tracker = FlowTracker((rule,))
    tracker.taint("crm", {"content": [], "v": "4711"})
    for encoding in ("verbatim", "base64", "base64 offset 1", "hex lower", "hex misaligned"):
        assert tracker.check("mail", {"q": ENCODED[encoding]("4711")}, "/a").action, encoding
    assert tracker.check("mail", {"q": ENCODED["base64"]("4712")}, "/a").action is None


def test_values_at_random_places_and_encodings_are_found_and_only_they() -> None:
    draw = random.Random(2026)
    alphabets = [string.ascii_letters + string.digits, "abc", "äöü€日本-", string.printable]
    drawn = sorted(
        {"".join(draw.choices(draw.choice(alphabets), k=draw.randint(8, 40))) for _ in range(300)}
    )
    # Sorted, so that the draws below do not depend on the set's order (string hashing varies
    # per process); and none inside another, since sending one would then send both.
    values = [v for v in drawn if not any(v != other and v in other for other in drawn)]
    tracker = held(*values)
    for value in draw.sample(values, 60):
        encoding = draw.choice(list(ENCODED))
        filler = "".join(draw.choices(string.printable + "éß", k=draw.randint(0, 90)))
        at = draw.randint(0, len(filler))
        sent = {"a": filler[:at] + ENCODED[encoding](value) + filler[at:], "b": filler}
        flowed = tracker.check("mail", sent, "/p")
        assert [v.pointer for v in flowed.found] == ["/p/a"], (encoding, value)


# --- the detectors ------------------------------------------------------------------------------

NEW_KINDS = {
    "stripe-secret-key": "sk_live_" + "4eC7aRm9Kx2bNw5pQj8sYdTu",
    "slack-token": "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "slack-webhook": "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "gitlab-token": "glpat-" + "abcdefghij0123456789",
    "npm-token": "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
}


@pytest.mark.parametrize("kind", list(NEW_KINDS))
def test_the_new_secret_kinds_are_redacted_and_tainted(kind: str) -> None:
    secret = NEW_KINDS[kind]
    assert redact(f"x {secret} y").found == {kind: 1}
    tracker = FlowTracker((RULE,))
    tracker.taint("files", result(f"value: {secret}"))
    assert tracker.check("sink", {"q": secret}, "/a").action == "refuse"


@pytest.mark.parametrize(
    "short", ["ghp_Xa2bC3dEf4gH5iJk6Lm7nN8oP", "sk_live_4eC7aRm9Kx2bNw5pQj8sYd"]
)
def test_shorter_fixture_tokens_taint_but_are_never_redacted_from_results(short: str) -> None:
    assert redact(short).found == {}
    tracker = FlowTracker((RULE,))
    tracker.taint("files", result(short))
    assert tracker.check("sink", {"q": short}, "/a").action == "refuse"


# --- the policy ---------------------------------------------------------------------------------

_SERVERS = [{"name": "files", "command": ["x"]}, {"name": "sink", "command": ["y"]}]


@pytest.mark.parametrize(
    ("flow", "said"),
    [
        ({"from": ["files"]}, "missing options: to"),
        ({"from": ["files"], "to": ["nowhere"]}, "to 'nowhere' matches no [[server]] name"),
        ({"from": ["files"], "to": ["*"], "action": "block"}, "action must be one of"),
        ({"from": ["files"], "to": ["*"], "sensitive": ["token"]}, "is not a JSON Pointer"),
        ({"from": ["files"], "to": ["*"], "min_length": 2}, "min_length must be at least 4"),
    ],
)
def test_flow_tables_are_checked(flow: dict[str, Any], said: str) -> None:
    with pytest.raises(PolicyError, match="flow") as raised:
        Policy.from_dict({"server": _SERVERS, "flow": [flow]})
    assert said in str(raised.value)


def test_a_flow_table_needs_the_gateway() -> None:
    with pytest.raises(PolicyError, match=r"\[\[flow\]\] needs \[\[server\]\] tables"):
        Policy.from_dict({"flow": [{"from": ["a"], "to": ["b"]}]})


def test_the_enforcers_taints_outlive_a_reload(tmp_path: Path) -> None:
    flows = [{"from": ["files"], "to": ["sink"]}]
    enforcer = Enforcer(policy=Policy.from_dict({"server": _SERVERS, "flow": flows}))
    enforcer.taint("tools/call", {"name": "files__read"}, result(AWS))
    call = {"name": "sink__write", "arguments": {"q": AWS}}
    for again in (
        flows,
        [{**flows[0], "min_length": 4}],
        [*flows, {"from": ["sink"], "to": ["*"]}],
    ):
        enforcer.use(Policy.from_dict({"server": _SERVERS, "flow": again}), None)
        refused, _ = enforcer.check_flow(ToolRegistry(LATEST), "tools/call", call)
        assert refused is not None, again
    # Every [[flow]] table gone: nothing is checked, and nothing kept.
    enforcer.use(Policy.from_dict({"server": _SERVERS}), None)
    assert enforcer.flows is None


def test_a_tasks_deferred_result_is_tainted_by_the_tasks_server() -> None:
    policy = Policy.from_dict({"server": _SERVERS, "flow": [{"from": ["files"], "to": ["sink"]}]})
    call = {"name": "sink__write", "arguments": {"q": AWS}}
    for method, answered in (
        ("tasks/result", result(AWS)),
        # 2026-07-28: tasks/get holds the final result inline.
        ("tasks/get", {"taskId": "files__t-1", "status": "completed", "result": result(AWS)}),
    ):
        enforcer = Enforcer(policy=policy)
        enforcer.taint(method, {"taskId": "files__t-1"}, answered)
        refused, _ = enforcer.check_flow(ToolRegistry(LATEST), "tools/call", call)
        assert refused is not None, method
        # The sink's own task: its data back to it is no flow.
        other = Enforcer(policy=policy)
        other.taint(method, {"taskId": "sink__t-1"}, answered)
        assert other.check_flow(ToolRegistry(LATEST), "tools/call", call)[0] is None


def test_the_enforcer_reports_flows_at_their_stage_without_values(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    policy = Policy.from_dict(
        {"server": _SERVERS, "flow": [{"from": ["files"], "to": ["sink"], "action": "audit"}]}
    )
    with log.open("w") as sink:
        auditor = Auditor(sink, servers=frozenset({"files", "sink"}))
        enforcer = Enforcer(policy=policy, auditor=auditor)
        enforcer.taint("tools/call", {"name": "files__read"}, result(AWS))
        refused, sent = enforcer.check_flow(
            ToolRegistry(LATEST), "tools/call", {"name": "sink__write", "arguments": {"q": AWS}}
        )
    assert refused is None
    assert sent["arguments"] == {"q": AWS}
    record = json.loads(log.read_text())
    assert record["stage"] == "flow"
    assert record["action"] == "allowed"
    assert record["code"] == "flow-cross-server"
    assert record["server"] == "sink"
    assert AWS not in log.read_text()


# --- through the gateway ------------------------------------------------------------------------


def flow_server(name: str, where: Path, *tools: str) -> list[str]:
    return [sys.executable, str(SERVER), name, str(where), *tools]


def plant(path: Path, text: str) -> None:
    """Write ``path`` whole at once (written aside, then renamed): a fixture server waiting
    for it must never read it half written."""
    aside = path.with_name(path.name + ".part")
    aside.write_text(text, encoding="utf-8")
    os.replace(aside, path)


def calls_of(where: Path, name: str) -> list[dict[str, Any]]:
    record = where / f"{name}.calls.jsonl"
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


def _planted(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    (root / ".env").write_text(f"AWS_ACCESS_KEY_ID={AWS}\nREGION=eu-west-1\n", encoding="utf-8")
    return root


def _policy(tmp_path: Path, action: str = "refuse", *more: str) -> Path:
    root = _planted(tmp_path)
    flow = f'[[flow]]\nfrom = ["files"]\nto = ["*"]\naction = "{action}"\n'
    return write_policy(
        tmp_path,
        server_table("files", filesystem_command(root)),
        server_table("sink", flow_server("sink", tmp_path, "write_query")),
        server_table("everything", everything_command()),
        flow,
        *more,
    )


def test_a_key_read_from_the_filesystem_never_reaches_another_server(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    env = str(tmp_path / "root" / ".env")
    base64_key = _b64(AWS)

    async def test() -> None:
        async with gateway_session(policy, tmp_path / "stderr.log") as session:
            # Before the read: the same value is no flow (no-prior-read).
            early = await session.call_tool("sink__write_query", {"query": f"x {AWS}"})
            assert not early.is_error
            read = await session.call_tool("files__read_text_file", {"path": env})
            assert AWS in text_of(read)
            for query in (f"INSERT INTO t VALUES ('{AWS}')", base64_key, AWS.encode().hex()):
                refused = await session.call_tool("sink__write_query", {"query": query})
                assert refused.is_error
                said = text_of(refused)
                assert "'files'" in said
                assert "'sink'" in said
                assert AWS not in said
            echoed = await session.call_tool("everything__echo", {"message": AWS})
            assert echoed.is_error
            assert AWS not in text_of(echoed)
            # Writing it back to the filesystem is allowed.
            back = str(tmp_path / "root" / "copy.txt")
            written = await session.call_tool("files__write_file", {"path": back, "content": AWS})
            assert not written.is_error
            fine = await session.call_tool("sink__write_query", {"query": "SELECT 1"})
            assert not fine.is_error

    run(test)
    # The ground truth: the sink got the early call and the clean one, never the key.
    got = [call["params"]["arguments"]["query"] for call in calls_of(tmp_path, "sink")]
    assert got == [f"x {AWS}", "SELECT 1"]
    assert (tmp_path / "root" / "copy.txt").read_text() == AWS
    stderr = (tmp_path / "stderr.log").read_text()
    assert "flow-cross-server" in stderr
    assert AWS not in stderr


def test_redact_sends_the_call_without_the_key(tmp_path: Path) -> None:
    policy = _policy(tmp_path, "redact")
    env = str(tmp_path / "root" / ".env")

    async def test() -> None:
        async with gateway_session(policy, tmp_path / "stderr.log") as session:
            await session.call_tool("files__read_text_file", {"path": env})
            sent = await session.call_tool("sink__write_query", {"query": f"VALUES ('{AWS}', 1)"})
            assert not sent.is_error

    run(test)
    [call] = calls_of(tmp_path, "sink")
    query = call["params"]["arguments"]["query"]
    assert AWS not in query
    assert query == "VALUES ('[redacted: data of 'files']', 1)"


def test_audit_reports_and_sends_on(tmp_path: Path) -> None:
    policy = _policy(tmp_path, "audit")
    env = str(tmp_path / "root" / ".env")

    async def test() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", "--audit-log", str(tmp_path / "audit.jsonl")
        ) as session:
            await session.call_tool("files__read_text_file", {"path": env})
            sent = await session.call_tool("sink__write_query", {"query": AWS})
            assert not sent.is_error

    run(test)
    assert [c["params"]["arguments"]["query"] for c in calls_of(tmp_path, "sink")] == [AWS]
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    flows = [r for r in records if r["stage"] == "flow"]
    assert [(r["code"], r["action"], r["server"]) for r in flows] == [
        ("flow-cross-server", "allowed", "sink")
    ]


def test_resources_and_prompts_carry_taint_and_are_checked(tmp_path: Path) -> None:
    (tmp_path / "vault.resource").write_text(f"token={GITHUB}", encoding="utf-8")
    flow = '[[flow]]\nfrom = ["vault"]\nto = ["*"]\n'
    policy = write_policy(
        tmp_path,
        server_table("vault", flow_server("vault", tmp_path, "noop")),
        server_table("sink", flow_server("sink", tmp_path, "write_query")),
        flow,
    )

    async def test() -> None:
        async with gateway_session(policy, tmp_path / "stderr.log") as session:
            await session.list_resources()  # how the gateway learns which server has a URI
            read = await session.read_resource("flow://vault/data")
            assert GITHUB in json.dumps(read.model_dump())
            refused = await session.call_tool("sink__write_query", {"query": GITHUB})
            assert refused.is_error
            with pytest.raises(Exception, match="flow-cross-server"):
                await session.get_prompt("sink__note", {"text": GITHUB})
            # The vault's own prompt may hear it back.
            await session.get_prompt("vault__note", {"text": GITHUB})

    run(test)
    assert calls_of(tmp_path, "sink") == []


def _vault_and_asking_sink(tmp_path: Path, flow: str) -> Path:
    planted = {"content": [{"type": "text", "text": f"AWS_ACCESS_KEY_ID={AWS}"}]}
    (tmp_path / "vault.next.json").write_text(json.dumps(planted), encoding="utf-8")
    return write_policy(
        tmp_path,
        server_table("vault", flow_server("vault", tmp_path, "read_secret")),
        server_table("sink", flow_server("sink", tmp_path, "ask", "write_query")),
        flow,
    )


def _sampled(*texts: str) -> Callable[..., Any]:
    """A sampling callback answering with each of ``texts`` in turn: what the model wrote."""
    replies = iter(texts)

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
        content = types.TextContent(type="text", text=next(replies))
        return types.CreateMessageResult(role="assistant", content=content, model="m")

    return sample


def _answers(tmp_path: Path) -> list[dict[str, Any]]:
    """The client's answers to the sink's sampling requests, as the sink got them."""
    return [call["answer"] for call in calls_of(tmp_path, "sink") if "answer" in call]


def test_the_clients_answer_to_a_servers_request_carries_no_tainted_data(tmp_path: Path) -> None:
    policy = _vault_and_asking_sink(tmp_path, '[[flow]]\nfrom = ["vault"]\nto = ["*"]\n')
    carried = [f"It is {AWS}", _b64(AWS, "x"), quote(f"k={AWS}"), AWS.encode().hex()]
    sample = _sampled(f"early {AWS}", *carried, "Paris")

    async def test() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", sampling_callback=sample
        ) as session:
            # Before the read the same value is no flow.
            await session.call_tool("sink__ask", {"text": "q"})
            read = await session.call_tool("vault__read_secret", {})
            assert AWS in text_of(read)
            for _ in [*carried, "Paris"]:
                await session.call_tool("sink__ask", {"text": "q"})

    run(test)
    # The ground truth: what the sink was told in answer to its own requests.
    early, *withheld, clean = _answers(tmp_path)
    assert early["result"]["content"]["text"] == f"early {AWS}"
    assert len(withheld) == len(carried)
    for given in withheld:
        assert "result" not in given
        assert given["error"]["code"] == -32603
        [found] = given["error"]["data"]
        assert (found["code"], found["pointer"]) == ("flow-cross-server", "/result/content/text")
        assert "'vault'" in found["message"]
        assert AWS not in json.dumps(given)
    assert clean["result"]["content"]["text"] == "Paris"
    stderr = (tmp_path / "stderr.log").read_text()
    assert "flow-cross-server" in stderr
    assert AWS not in stderr


def test_the_clients_answer_is_sent_redacted(tmp_path: Path) -> None:
    flow = '[[flow]]\nfrom = ["vault"]\nto = ["*"]\naction = "redact"\n'
    policy = _vault_and_asking_sink(tmp_path, flow)

    async def test() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", sampling_callback=_sampled(f"It is {AWS}.")
        ) as session:
            await session.call_tool("vault__read_secret", {})
            await session.call_tool("sink__ask", {"text": "q"})

    run(test)
    [answer] = _answers(tmp_path)
    assert answer["result"]["content"]["text"] == "It is [redacted: data of 'vault']."


def test_a_reload_forgets_nothing_a_session_read(tmp_path: Path) -> None:
    flow = '[[flow]]\nfrom = ["vault"]\nto = ["*"]\n'
    policy = _vault_and_asking_sink(tmp_path, flow)
    audit = tmp_path / "audit.jsonl"

    def reloads() -> list[dict[str, Any]]:
        if not audit.exists():
            return []
        lines = audit.read_text(encoding="utf-8").split("\n")[:-1]
        return [r for r in map(json.loads, lines) if r.get("event") == "policy-reload"]

    async def test() -> None:
        async with gateway_session(
            policy, tmp_path / "stderr.log", "--watch", "--audit-log", str(audit)
        ) as session:
            await session.call_tool("vault__read_secret", {})
            # The rules change (shorter values count now); what was read stays tainted.
            text = policy.read_text(encoding="utf-8")
            policy.write_text(text.replace(flow, flow + "min_length = 4\n"), encoding="utf-8")
            with anyio.fail_after(30):
                while not reloads():
                    await anyio.sleep(0.05)
            assert [r["outcome"] for r in reloads()] == ["applied"]
            for query in (AWS, _b64(AWS)):
                refused = await session.call_tool("sink__write_query", {"query": query})
                assert refused.is_error
                assert "flow-cross-server" in text_of(refused)

    run(test)
    assert calls_of(tmp_path, "sink") == []


def test_a_tasks_deferred_result_taints_what_follows(tmp_path: Path) -> None:
    tasks = Path(__file__).resolve().parent / "proxy_fixtures" / "task_server.py"
    flow = '[[flow]]\nfrom = ["tasks"]\nto = ["*"]\nsensitive = ["/content/*/text"]\n'
    policy = write_policy(
        tmp_path,
        server_table("tasks", [sys.executable, str(tasks), str(tmp_path / "tasks-calls")]),
        server_table("sink", flow_server("sink", tmp_path, "write_query")),
        flow,
    )
    gateway, ask = raw_gateway(policy, tmp_path)

    def write(query: str) -> dict[str, Any]:
        return ask("tools/call", {"name": "sink__write_query", "arguments": {"query": query}})

    said = "batch 12345678901 done"  # what the task's final result says
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
        ask("initialize", {**init, "clientInfo": {"name": "t", "version": "1"}})
        gateway.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ask("tools/list", {})
        created = ask(
            "tools/call", {"name": "tasks__batch", "arguments": {"n": 12345678901}, "task": {}}
        )
        task_id = created["result"]["task"]["taskId"]
        # Made, not read: nothing is tainted yet.
        assert not write(said)["result"].get("isError")
        final = ask("tasks/result", {"taskId": task_id})["result"]
        assert final["content"][0]["text"] == said
        refused = write(said)["result"]
        assert refused["isError"] is True
        assert "flow-cross-server" in json.dumps(refused)
        assert "12345678901" not in json.dumps(refused)
    finally:
        gateway.stop()
    assert [c["params"]["arguments"]["query"] for c in calls_of(tmp_path, "sink")] == [said]


def test_http_sessions_keep_their_own_taints(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    policy = _policy(tmp_path)
    env = str(tmp_path / "root" / ".env")
    args = [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)]
    process = Process([*args, "--listen", "127.0.0.1:0"], tmp_path, "stderr")
    processes.append(process)
    url = process.wait_for("listening on").rsplit(" ", 1)[1]

    async def test() -> None:
        async with (
            streamable_http_client(url) as (read_a, write_a),
            ClientSession(read_a, write_a) as alice,
            streamable_http_client(url) as (read_b, write_b),
            ClientSession(read_b, write_b) as bob,
        ):
            await alice.initialize()
            await bob.initialize()
            await alice.call_tool("files__read_text_file", {"path": env})
            assert (await alice.call_tool("sink__write_query", {"query": AWS})).is_error
            # Bob never read it in his session: his call is his own.
            assert not (await bob.call_tool("sink__write_query", {"query": AWS})).is_error

    run(test)
    assert [c["params"]["arguments"]["query"] for c in calls_of(tmp_path, "sink")] == [AWS]


def test_http_raw_session_refusal_is_an_is_error_result(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    policy = _policy(tmp_path)
    env = str(tmp_path / "root" / ".env")
    args = [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)]
    process = Process([*args, "--listen", "127.0.0.1:0"], tmp_path, "stderr")
    processes.append(process)
    url = process.wait_for("listening on").rsplit(" ", 1)[1]

    async def test() -> None:
        async with httpx2.AsyncClient(timeout=30) as http:
            session_id = await handshake(http, url)
            headers = in_session(session_id)
            listed = await http.post(url, json=request("tools/list", 1), headers=headers)
            assert answer(listed)["result"]["tools"]
            reading = {"name": "files__read_text_file", "arguments": {"path": env}}
            read = request("tools/call", 2, reading)
            assert AWS in json.dumps(answer(await http.post(url, json=read, headers=headers)))
            writing = {"name": "sink__write_query", "arguments": {"query": AWS}}
            call = request("tools/call", 3, writing)
            refused = answer(await http.post(url, json=call, headers=headers))
            assert refused["result"]["isError"] is True
            assert AWS not in json.dumps(refused)
            assert "flow-cross-server" in json.dumps(refused)

    run(test)
    assert calls_of(tmp_path, "sink") == []


# --- stateless (2026-07-28) requests through the gateway ------------------------------------------


def _stateless_gateway(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
    action: str = "refuse",
    *more: str,
    port: int | None = None,
    sink: list[str] | None = None,
) -> Bridged:
    """The gateway over HTTP before a ``vault`` and a ``sink`` fixture server (``sink``: its
    command, if not the flow fixture), one flow rule between them; requests are 2026-07-28's,
    each a POST of its own with no session."""
    policy = write_policy(
        tmp_path,
        server_table("vault", flow_server("vault", tmp_path, "read_secret")),
        server_table("sink", sink or flow_server("sink", tmp_path, "write_query")),
        f'[[flow]]\nfrom = ["vault"]\nto = ["*"]\naction = "{action}"\n',
        *more,
    )
    port = port or free_port()
    args = [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)]
    process = Process([*args, "--listen", f"127.0.0.1:{port}"], tmp_path, "stderr")
    processes.append(process)
    process.wait_for("listening on")
    return Bridged(f"http://127.0.0.1:{port}/mcp", process, tmp_path / "unused")


def _refused(answer: Any) -> bool:
    """Whether a tool call's answer is an ``isError`` result (a result either way)."""
    return answer["result"].get("isError", False) is True


def _read_secret(gateway: Bridged, tmp_path: Path, **options: Any) -> None:
    planted = {"content": [{"type": "text", "text": f"AWS_ACCESS_KEY_ID={AWS}"}]}
    (tmp_path / "vault.next.json").write_text(json.dumps(planted), encoding="utf-8")
    read = gateway.call("vault__read_secret", **options)
    assert AWS in json.dumps(read["result"])


def test_a_stateless_read_taints_the_next_stateless_request(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    gateway = _stateless_gateway(tmp_path, processes)
    # Before any read the value is no flow (no session: the request alone is judged).
    assert not _refused(gateway.call("sink__write_query", {"query": f"early {AWS}"}))
    _read_secret(gateway, tmp_path)
    # Each a request of its own, with no session: the read still taints them, whatever the
    # client calls itself (every unauthenticated caller is one caller).
    carried = [f"VALUES ('{AWS}')", _b64(AWS, "x"), AWS.encode().hex().upper(), quote(f"k={AWS}")]
    for client in ("bridge-test", "another-client"):
        for query in carried:
            refused = gateway.call("sink__write_query", {"query": query}, client=client)
            said = json.dumps(refused)
            assert _refused(refused)
            assert "flow-cross-server" in said
            assert "'vault'" in said
            assert "'sink'" in said
            assert AWS not in said
    # Back to the server it came from is no flow; clean data still goes to the sink.
    back = gateway.call("vault__read_secret", {"note": AWS})
    assert not _refused(back)
    assert not _refused(gateway.call("sink__write_query", {"query": "SELECT 1"}))
    # The ground truth: the sink got the early call and the clean one, nothing tainted.
    got = [call["params"]["arguments"]["query"] for call in calls_of(tmp_path, "sink")]
    assert got == [f"early {AWS}", "SELECT 1"]
    assert AWS not in gateway.process.output()


def test_stateless_redact_replaces_the_data_read_by_an_earlier_request(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    gateway = _stateless_gateway(tmp_path, processes, "redact")
    _read_secret(gateway, tmp_path)
    sent = gateway.call("sink__write_query", {"query": f"VALUES ('{AWS}', 1)"})
    assert not _refused(sent)
    [call] = calls_of(tmp_path, "sink")
    assert call["params"]["arguments"]["query"] == "VALUES ('[redacted: data of 'vault']', 1)"


def test_stateless_taints_are_each_authenticated_callers_own(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with authorization_server() as provider:
        auth = f'[auth]\nissuer = "{provider.issuer}"\nresource = "{url}"\nscopes = ["mcp:read"]\n'
        gateway = _stateless_gateway(tmp_path, processes, "refuse", auth, port=port)
        reader = provider.token("reader", url)
        admin = provider.token("admin", url, scope="mcp:read mcp:admin")
        _read_secret(gateway, tmp_path, token=reader)
        # The reader read it: the reader's next request may not carry it to the sink.
        refused = gateway.call("sink__write_query", {"query": AWS}, token=reader)
        assert _refused(refused)
        assert "flow-cross-server" in json.dumps(refused)
        # Another identity never read it: its request is its own.
        sent = gateway.call("sink__write_query", {"query": AWS}, token=admin)
        assert not _refused(sent)
    assert [call["params"]["arguments"]["query"] for call in calls_of(tmp_path, "sink")] == [AWS]


def test_a_stateless_retry_cannot_carry_tainted_data_in_its_input_responses(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811
) -> None:
    record = tmp_path / "record"
    sink = [sys.executable, str(LEGACY), str(record)]  # asks the client to sample, then says it
    gateway = _stateless_gateway(tmp_path, processes, "refuse", sink=sink)
    _read_secret(gateway, tmp_path)
    sampling: dict[str, Any] = {"sampling": {}}
    first = gateway.call("sink__ask", capabilities=sampling)["result"]
    assert first["resultType"] == "input_required"

    def retry(text: str) -> Any:
        answer = {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}
        params = {
            "name": "sink__ask",
            "arguments": {},
            "inputResponses": {"r1": answer},
            "requestState": first["requestState"],
        }
        return gateway.post("tools/call", params, capabilities=sampling)

    # The answer to the sink's own request is data the client sends it, as arguments are.
    for text in (f"It is {AWS}", _b64(AWS), quote(AWS)):
        refused = retry(text)
        said = json.dumps(refused)
        assert _refused(refused)
        assert "flow-cross-server" in said
        assert "/params/inputResponses/r1/content/text" in said
        assert AWS not in said
    # The call still waits: a clean answer completes it.
    assert _text(retry("Paris")) == "sampled: Paris"
    sent = record.read_text(encoding="utf-8")
    assert "Paris" in sent
    assert AWS not in sent
    assert _b64(AWS) not in sent
