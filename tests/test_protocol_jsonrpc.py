"""The JSON-RPC 2.0 envelope: decoding, envelope rules per revision, error replies, pairing."""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

import mcp_types.jsonrpc
import pytest

from strictmcp.protocol import (
    Decoded,
    Message,
    RequestTracker,
    Revision,
    Rule,
    check_envelope,
    decode,
    error_response,
    jsonrpc_error_for,
)
from strictmcp.protocol import jsonrpc as jr
from strictmcp.protocol.violations import Violation

ALL = list(Revision)
NO_BATCHES = [r for r in Revision if not r.allows_batches]
SECRET = "hunter2-SECRET"


def decoded(message: Any, revision: Revision | None = None) -> Decoded:
    return decode(json.dumps(message), revision)


def rules(result: Decoded) -> list[tuple[Rule | Enum, str]]:
    return [(v.rule, v.pointer) for v in result.violations]


REQUEST: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/list",
    "params": {"cursor": "c"},
}
NOTIFICATION: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}
RESPONSE: dict[str, Any] = {"jsonrpc": "2.0", "id": "a", "result": {"tools": []}}
ERROR: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 7,
    "error": {"code": -32601, "message": "Method not found"},
}


def with_result_type(message: dict[str, Any], revision: Revision | None) -> dict[str, Any]:
    """2026-07-28 results carry resultType."""
    if revision is Revision.V2026_07_28 and isinstance(message.get("result"), dict):
        return {**message, "result": {**message["result"], "resultType": "complete"}}
    return message


# --- the four shapes -------------------------------------------------------------------------


@pytest.mark.parametrize("revision", [None, *ALL])
@pytest.mark.parametrize(
    ("message", "kind"),
    [
        (REQUEST, "request"),
        (NOTIFICATION, "notification"),
        (RESPONSE, "response"),
        (ERROR, "error"),
    ],
)
def test_valid_envelopes_decode(
    message: dict[str, Any], kind: str, revision: Revision | None
) -> None:
    message = with_result_type(message, revision)
    result = decoded(message, revision)
    assert result.valid
    assert result.violations == ()
    assert not result.batch
    (only,) = result.messages
    assert only.kind == kind
    assert only.raw == message
    assert only.id == message.get("id")
    assert only.method == message.get("method")
    assert only.params == message.get("params")
    assert only.result == message.get("result")
    assert only.error == message.get("error")


def test_size_is_the_length_of_the_input() -> None:
    text = json.dumps(REQUEST)
    assert decode(text).size == len(text)
    assert decode(text.encode()).size == len(text.encode())
    assert decode("é" * 3).size == 3


# --- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"{",
        b"",
        b'{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}',  # duplicate key
        b'{"jsonrpc": "2.0", "id": NaN, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": Infinity, "method": "ping"}',
        b"\xff\xfe",
        b"[" * 100_000,
    ],
)
def test_unreadable_json_is_a_parse_error(data: bytes) -> None:
    result = decode(data)
    assert rules(result) == [(Rule.PARSE_ERROR, "")]
    assert result.messages == ()
    assert not result.valid


def test_size_is_checked_before_parsing() -> None:
    data = b'{"jsonrpc": "2.0", "method": "x", "params": {"a": "' + b"x" * 100 + b'"}}'
    assert decode(data, max_size=len(data)).valid
    result = decode(data + b" ", max_size=len(data))
    assert rules(result) == [(Rule.MESSAGE_TOO_LARGE, "")]
    # Not even parsed: malformed text over the bound is refused for its size alone.
    assert rules(decode(b"{" * 50, max_size=10)) == [(Rule.MESSAGE_TOO_LARGE, "")]


@pytest.mark.parametrize("document", ["5", '"ping"', "null", "true"])
def test_a_message_is_an_object(document: str) -> None:
    assert rules(decode(document)) == [(Rule.INVALID_MESSAGE, "")]


# --- batches ---------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", [None, *ALL])
def test_batches_only_where_the_revision_allows_them(revision: Revision | None) -> None:
    result = decoded([REQUEST, NOTIFICATION], revision)
    assert result.batch
    assert [m.kind for m in result.messages] == ["request", "notification"]
    if revision is None or revision.allows_batches:
        assert result.valid
    else:
        assert rules(result) == [(Rule.BATCH_NOT_ALLOWED, "")]


@pytest.mark.parametrize("revision", [None, Revision.V2025_03_26])
def test_batch_of_responses(revision: Revision | None) -> None:
    assert decoded([RESPONSE, ERROR], revision).valid


@pytest.mark.parametrize("revision", [None, Revision.V2025_03_26])
def test_empty_batch(revision: Revision | None) -> None:
    assert rules(decode("[]", revision)) == [(Rule.EMPTY_BATCH, "")]


def test_batch_items_are_located_by_index() -> None:
    bad_params = {**REQUEST, "params": [1, 2]}
    result = decoded([REQUEST, 5, bad_params, {**NOTIFICATION, "jsonrpc": "1.0"}])
    assert rules(result) == [
        (Rule.INVALID_MESSAGE, "/1"),
        (Rule.INVALID_MESSAGE, "/2/params"),
        (Rule.INVALID_MESSAGE, "/3/jsonrpc"),
    ]
    assert [m.raw for m in result.messages] == [REQUEST]


def test_batch_must_not_mix_requests_and_responses() -> None:
    assert rules(decoded([REQUEST, RESPONSE])) == [(Rule.INVALID_MESSAGE, "")]
    assert decoded([REQUEST, REQUEST | {"id": 2}]).valid


def test_batch_not_allowed_still_reports_items() -> None:
    result = decoded([REQUEST, {"jsonrpc": "2.0"}], Revision.V2025_06_18)
    assert rules(result) == [(Rule.BATCH_NOT_ALLOWED, ""), (Rule.INVALID_MESSAGE, "/1")]


# --- envelope members ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ({"id": 1, "method": "ping"}, [(Rule.INVALID_MESSAGE, "")]),
        ({**REQUEST, "jsonrpc": "1.0"}, [(Rule.INVALID_MESSAGE, "/jsonrpc")]),
        ({**REQUEST, "jsonrpc": 2.0}, [(Rule.INVALID_MESSAGE, "/jsonrpc")]),
        ({**REQUEST, "method": 5}, [(Rule.INVALID_MESSAGE, "/method")]),
        ({**NOTIFICATION, "method": None}, [(Rule.INVALID_MESSAGE, "/method")]),
        # a request and a response at once, both results, or nothing at all
        ({**REQUEST, "result": {}}, [(Rule.INVALID_MESSAGE, "")]),
        ({**NOTIFICATION, "error": ERROR["error"]}, [(Rule.INVALID_MESSAGE, "")]),
        ({**RESPONSE, "error": ERROR["error"]}, [(Rule.INVALID_MESSAGE, "")]),
        ({"jsonrpc": "2.0", "id": 1}, [(Rule.INVALID_MESSAGE, "")]),
        # params: an object, never by position, never null
        ({**REQUEST, "params": [1]}, [(Rule.INVALID_MESSAGE, "/params")]),
        ({**NOTIFICATION, "params": None}, [(Rule.INVALID_MESSAGE, "/params")]),
        ({**NOTIFICATION, "params": "x"}, [(Rule.INVALID_MESSAGE, "/params")]),
        ({**REQUEST, "params": {"_meta": [1]}}, [(Rule.INVALID_MESSAGE, "/params/_meta")]),
        (
            {**REQUEST, "params": {"_meta": {"progressToken": 1.5}}},
            [(Rule.INVALID_MESSAGE, "/params/_meta/progressToken")],
        ),
        (
            {**REQUEST, "params": {"_meta": {"progressToken": True}}},
            [(Rule.INVALID_MESSAGE, "/params/_meta/progressToken")],
        ),
        # result: an object, with an object _meta
        ({**RESPONSE, "result": [1]}, [(Rule.INVALID_MESSAGE, "/result")]),
        ({**RESPONSE, "result": None}, [(Rule.INVALID_MESSAGE, "/result")]),
        ({**RESPONSE, "result": {"_meta": 1}}, [(Rule.INVALID_MESSAGE, "/result/_meta")]),
        # error: an object with an integer code and a string message
        ({**ERROR, "error": "boom"}, [(Rule.INVALID_MESSAGE, "/error")]),
        ({**ERROR, "error": {"message": "m"}}, [(Rule.INVALID_MESSAGE, "/error")]),
        ({**ERROR, "error": {"code": 1}}, [(Rule.INVALID_MESSAGE, "/error")]),
        (
            {**ERROR, "error": {"code": 1.5, "message": "m"}},
            [(Rule.INVALID_MESSAGE, "/error/code")],
        ),
        (
            {**ERROR, "error": {"code": True, "message": "m"}},
            [(Rule.INVALID_MESSAGE, "/error/code")],
        ),
        ({**ERROR, "error": {"code": 1, "message": 2}}, [(Rule.INVALID_MESSAGE, "/error/message")]),
    ],
)
@pytest.mark.parametrize("revision", [None, *ALL])
def test_invalid_envelopes(
    message: dict[str, Any], expected: list[tuple[Rule, str]], revision: Revision | None
) -> None:
    result = decoded(with_result_type(message, revision), revision)
    assert rules(result) == expected
    assert result.messages == ()


def test_params_may_be_omitted_and_unknown_members_pass() -> None:
    assert decoded({"jsonrpc": "2.0", "id": 1, "method": "ping"}).valid
    assert decoded({**REQUEST, "x-trace": {"a": 1}}).valid
    assert decoded({**ERROR, "error": {**ERROR["error"], "data": None, "more": 1}}).valid


# --- ids -------------------------------------------------------------------------------------

BAD_IDS = [1.5, 1.0, True, False, None, [1], {"a": 1}]


@pytest.mark.parametrize("value", BAD_IDS)
@pytest.mark.parametrize("base", [REQUEST, RESPONSE])
def test_ids_are_strings_or_integers(value: Any, base: dict[str, Any]) -> None:
    assert rules(decoded({**base, "id": value})) == [(Rule.BAD_ID, "/id")]


@pytest.mark.parametrize("value", [0, -1, 2**70, "", "x", "1"])
@pytest.mark.parametrize("base", [REQUEST, RESPONSE, ERROR])
def test_good_ids(value: Any, base: dict[str, Any]) -> None:
    result = decoded({**base, "id": value})
    assert result.valid
    assert result.messages[0].id == value


def test_a_response_needs_an_id() -> None:
    assert rules(decoded({"jsonrpc": "2.0", "result": {}})) == [(Rule.BAD_ID, "")]


@pytest.mark.parametrize("revision", [None, *ALL])
def test_error_response_ids(revision: Revision | None) -> None:
    # null: the request's id could not be read (JSON-RPC 2.0); any revision.
    assert decoded({**ERROR, "id": None}, revision).valid
    assert rules(decoded({**ERROR, "id": 1.5}, revision)) == [(Rule.BAD_ID, "/id")]
    # omitted: allowed from 2025-11-25, and when the revision is not known yet
    without = {key: value for key, value in ERROR.items() if key != "id"}
    if revision is None or revision.at_least(Revision.V2025_11_25):
        assert decoded(without, revision).valid
    else:
        assert rules(decoded(without, revision)) == [(Rule.BAD_ID, "")]


# --- 2026-07-28 results carry resultType -------------------------------------------------------


@pytest.mark.parametrize("revision", ALL)
def test_result_type(revision: Revision) -> None:
    without = decoded(RESPONSE, revision)
    wrong = decoded({**RESPONSE, "result": {"resultType": 1}}, revision)
    if revision is Revision.V2026_07_28:
        assert rules(without) == [(Rule.INVALID_MESSAGE, "/result/resultType")]
        assert rules(wrong) == [(Rule.INVALID_MESSAGE, "/result/resultType")]
        assert decoded({**RESPONSE, "result": {"resultType": "complete"}}, revision).valid
    else:
        assert without.valid
        assert wrong.valid


def test_check_envelope_prefixes_pointers() -> None:
    message, violations = check_envelope({**REQUEST, "params": [1]}, None, "/4")
    assert message is None
    assert [(v.rule, v.pointer) for v in violations] == [(Rule.INVALID_MESSAGE, "/4/params")]
    message, violations = check_envelope(REQUEST, Revision.V2025_06_18)
    assert violations == []
    assert message is not None
    assert message.raw is REQUEST


def test_messages_are_frozen() -> None:
    message = decoded(REQUEST).messages[0]
    with pytest.raises(AttributeError):
        message.id = 2  # type: ignore[misc]


# --- no values in messages ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": SECRET, "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": {"k": SECRET}, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [SECRET]},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": SECRET}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "x",
            "params": {"_meta": {"progressToken": [SECRET]}},
        },
        {"jsonrpc": "2.0", "id": 1, "result": SECRET},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": SECRET, "message": [SECRET]}},
        {"jsonrpc": "2.0", "id": 1, "method": SECRET, "result": SECRET},
        [{"jsonrpc": "2.0", "id": SECRET + "x", "result": {}}, SECRET],
    ],
)
def test_violations_never_quote_values(message: Any) -> None:
    result = decoded(message, Revision.V2026_07_28)
    assert not result.valid
    for violation in result.violations:
        assert SECRET not in json.dumps(violation.to_dict())
        assert SECRET not in str(violation)


def test_parse_errors_never_quote_the_text() -> None:
    result = decode('{"jsonrpc": "2.0", "method": "' + SECRET + '", }')
    assert SECRET not in str(result.violations[0])


# --- answering -------------------------------------------------------------------------------


def test_standard_codes_are_mcp_types_own() -> None:
    assert jr.PARSE_ERROR == mcp_types.jsonrpc.PARSE_ERROR == -32700
    assert jr.INVALID_REQUEST == mcp_types.jsonrpc.INVALID_REQUEST == -32600
    assert jr.METHOD_NOT_FOUND == mcp_types.jsonrpc.METHOD_NOT_FOUND == -32601
    assert jr.INVALID_PARAMS == mcp_types.jsonrpc.INVALID_PARAMS == -32602
    assert jr.INTERNAL_ERROR == mcp_types.jsonrpc.INTERNAL_ERROR == -32603


def test_error_response_shape() -> None:
    reply = error_response(3, jr.INVALID_PARAMS, "Invalid params", {"violations": []})
    assert reply == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32602, "message": "Invalid params", "data": {"violations": []}},
    }
    assert error_response(None, jr.PARSE_ERROR, "Parse error") == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error"},
    }
    # What strictmcp sends is itself a valid envelope, in every revision.
    for revision in ALL:
        assert decode(json.dumps(reply), revision).valid
        assert mcp_types.jsonrpc.jsonrpc_message_adapter.validate_python(reply)


@pytest.mark.parametrize(
    ("rule", "code"),
    [
        (Rule.PARSE_ERROR, -32700),
        (Rule.MESSAGE_TOO_LARGE, -32600),
        (Rule.INVALID_MESSAGE, -32600),
        (Rule.BATCH_NOT_ALLOWED, -32600),
        (Rule.EMPTY_BATCH, -32600),
        (Rule.BAD_ID, -32600),
        (Rule.DUPLICATE_ID, -32600),
        (Rule.UNMATCHED_RESPONSE, -32600),
        (Rule.METHOD_NOT_IN_REVISION, -32601),
        (Rule.WRONG_DIRECTION, -32601),
        (Rule.UNKNOWN_METHOD, -32601),
        (Rule.INVALID_PARAMS, -32602),
        (Rule.INVALID_NOTIFICATION, -32602),
        (Rule.UNKNOWN_FIELD, -32602),
        (Rule.TOOL_ARGUMENTS_INVALID, -32602),
        (Rule.INVALID_RESULT, -32603),
    ],
)
def test_jsonrpc_error_for(rule: Rule, code: int) -> None:
    got, message = jsonrpc_error_for(Violation(rule, "m"))
    assert got == code
    assert message in {"Parse error", "Invalid Request", "Method not found", "Invalid params"} | {
        "Internal error"
    }


def test_every_rule_has_a_code() -> None:
    standard = {-32700, -32600, -32601, -32602, -32603}
    assert {jsonrpc_error_for(Violation(rule, ""))[0] for rule in Rule} <= standard


# --- pairing ---------------------------------------------------------------------------------


def msg(message: dict[str, Any]) -> Message:
    result = decoded(message)
    assert result.valid, result.violations
    return result.messages[0]


def test_tracker_pairs_responses_with_requests() -> None:
    tracker = RequestTracker()
    first, second = msg({**REQUEST, "id": 1}), msg({**REQUEST, "id": "a"})
    assert tracker.sent(first) == []
    assert tracker.sent(second) == []
    assert len(tracker) == 2
    assert tracker.answered(msg({**RESPONSE, "id": "a"})) == (second, [])
    assert tracker.answered(msg({**ERROR, "id": 1})) == (first, [])
    assert len(tracker) == 0


# Ids some client reads as the integer 7 (the TypeScript SDK with Number(), Python ones with
# int()), and ids that no client reads as another.
SEVEN_ALIKE = ["7", " 7", "07", "+7", "7.0", "7e0", "0x7", "0o7", "0b111", "\u0667", "7\n"]
NOT_SEVEN = ["7a", "seven", "7.5", "x7", "", "70", "-7"]


@pytest.mark.parametrize("alias", SEVEN_ALIKE)
def test_tracker_ids_a_client_reads_alike_are_duplicates(alias: str) -> None:
    # "1" and 1 are different ids to JSON-RPC, the same to the official clients: a response
    # could not say which it answers, so the second is refused whichever comes first.
    for first, second in ((7, alias), (alias, 7)):
        tracker = RequestTracker()
        assert tracker.sent(msg({**REQUEST, "id": first})) == []
        found = tracker.sent(msg({**REQUEST, "id": second}))
        assert [v.rule for v in found] == [Rule.DUPLICATE_ID]
        # the answer with the other spelling is unmatched, but names the request it mimics
        assert tracker.confusable(second) == [first]
        assert tracker.answered(msg({**RESPONSE, "id": second}))[0] is None
        assert tracker.answered(msg({**RESPONSE, "id": first}))[0] is not None
        assert tracker.confusable(second) == []
        assert tracker.sent(msg({**REQUEST, "id": second})) == []  # free again


@pytest.mark.parametrize("other", NOT_SEVEN)
def test_tracker_ids_no_client_reads_alike_are_distinct(other: str) -> None:
    tracker = RequestTracker()
    assert tracker.sent(msg({**REQUEST, "id": 7})) == []
    assert tracker.sent(msg({**REQUEST, "id": other})) == []
    assert tracker.confusable(other) == []


def test_tracker_large_integers_as_doubles() -> None:
    # A reader with doubles takes 2**53 + 1 for 2**53.
    tracker = RequestTracker()
    assert tracker.sent(msg({**REQUEST, "id": 2**53})) == []
    assert [v.rule for v in tracker.sent(msg({**REQUEST, "id": 2**53 + 1}))] == [Rule.DUPLICATE_ID]
    assert tracker.confusable(str(2**53 + 1)) == [2**53]


def test_tracker_unmatched_response() -> None:
    tracker = RequestTracker()
    request, violations = tracker.answered(msg({**RESPONSE, "id": 9}), "/2")
    assert request is None
    assert [(v.rule, v.pointer) for v in violations] == [(Rule.UNMATCHED_RESPONSE, "/2/id")]
    # answered once, then no longer in flight
    tracker.sent(msg(REQUEST))
    assert tracker.answered(msg({**RESPONSE, "id": 1}))[0] is not None
    assert tracker.answered(msg({**RESPONSE, "id": 1}))[1][0].rule is Rule.UNMATCHED_RESPONSE


def test_tracker_duplicate_id_keeps_the_first_request() -> None:
    tracker = RequestTracker()
    first = msg(REQUEST)
    assert tracker.sent(first) == []
    violations = tracker.sent(msg({**REQUEST, "method": "ping"}))
    assert [(v.rule, v.pointer) for v in violations] == [(Rule.DUPLICATE_ID, "/id")]
    assert tracker.answered(msg({**RESPONSE, "id": 1}))[0] is first
    # once answered, the id may be used again
    assert tracker.sent(msg(REQUEST)) == []


def test_tracker_error_without_id_answers_nothing() -> None:
    tracker = RequestTracker()
    tracker.sent(msg(REQUEST))
    assert tracker.answered(msg({**ERROR, "id": None})) == (None, [])
    assert len(tracker) == 1


def test_tracker_ignores_other_kinds() -> None:
    tracker = RequestTracker()
    assert tracker.sent(msg(NOTIFICATION)) == []
    assert tracker.sent(msg(RESPONSE)) == []
    assert tracker.answered(msg(REQUEST)) == (None, [])
    assert len(tracker) == 0


def test_tracker_memory_is_bounded() -> None:
    tracker = RequestTracker(max_in_flight=3)
    for n in range(5):
        assert tracker.sent(msg({**REQUEST, "id": n})) == []
    assert len(tracker) == 3
    assert tracker.evicted == 2
    # the oldest were forgotten: their responses are unmatched
    assert tracker.answered(msg({**RESPONSE, "id": 0}))[1][0].rule is Rule.UNMATCHED_RESPONSE
    assert tracker.answered(msg({**RESPONSE, "id": 4}))[0] is not None


def test_tracker_discard() -> None:
    tracker = RequestTracker()
    tracker.sent(msg(REQUEST))
    tracker.discard(1)
    tracker.discard("never sent")
    assert len(tracker) == 0


def test_tracker_rejects_a_useless_bound() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RequestTracker(max_in_flight=0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"ping"}', 7),
        (b'{"jsonrpc":"2.0","id":"a\\\\b","method":"ping"}', "a\\b"),
        (b'{"jsonrpc":"2.0","method":"notifications/initialized"}', None),
        (b'{"jsonrpc":"2.0","id":7,"method":5}', 7),
        (b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', None),
        (b"not json", None),
    ],
)
def test_error_id_is_the_id_a_refusal_answers_with(text: bytes, expected: object) -> None:
    # A transport refuses valid messages too (an id still in use): the id must be there.
    assert decode(text).error_id == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Refused, but JSON to a lenient reader: the refusal answers the request it refuses.
        (b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"n":1e-400}}', 5),
        (b'{"jsonrpc":"2.0","id":"a","method":"ping","params":{"n":NaN}}', "a"),
        (b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"k":1,"k":2}}', 7),
        # The id itself in doubt, or no JSON at all: null.
        (b'{"jsonrpc":"2.0","id":5,"id":6,"method":"ping"}', None),
        (b'{"jsonrpc":"2.0","id":1e-400,"method":"ping"}', None),
        (b'{"jsonrpc":"2.0","id":12345678901234567890123,"method":"ping","x":NaN}', None),
        (b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping","x":NaN}', None),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping","x":NaN}', None),
        (b'not json {"id": 5}', None),
    ],
)
def test_a_refused_text_is_answered_with_its_id_when_it_is_certain(
    text: bytes, expected: int | str | None
) -> None:
    result = decode(text)
    assert not result.valid
    assert result.error_id == expected
