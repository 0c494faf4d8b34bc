"""Opt-in rewrites (issue 15, points 5 and 6): JSON-string arguments decoded before
validation, and local ``$ref`` inlined in listed schemas, per tool in the policy."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from strictmcp.enforce.rewrites import decode_json_strings, inline_refs
from strictmcp.policy import Policy, PolicyError
from strictmcp.proxy import Auditor, ProxySession
from strictmcp.schema import compile_schema
from test_proxy_session import Session, messages

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "filter": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "either": {"type": ["object", "string"]},
        "name": {"type": "string"},
    },
    "additionalProperties": False,
}


def test_json_strings_are_decoded_where_the_schema_wants_an_object_or_array() -> None:
    arguments = {"filter": '{"a": 1}', "ids": "[1, 2]", "either": '{"a": 1}', "name": '{"x":1}'}
    decoded, found = decode_json_strings(SCHEMA, arguments, "/params/arguments", 1000)
    assert decoded == {"filter": {"a": 1}, "ids": [1, 2], "either": '{"a": 1}', "name": '{"x":1}'}
    assert [(v.code, v.pointer) for v in found] == [
        ("argument-json-string-decoded", "/params/arguments/filter"),
        ("argument-json-string-decoded", "/params/arguments/ids"),
    ]
    # Says what was done, never the value.
    assert found[0].message == (
        "a JSON string was sent where the schema wants object: decoded before validation"
    )


@pytest.mark.parametrize(
    "value",
    [
        "not json",
        "[1, 2]",  # an array where an object is wanted
        '{"a": 1, "a": 2}',  # duplicate keys: ambiguous, refused
        '{"a": NaN}',
        "x" * 2000,  # over the bound
    ],
)
def test_what_is_not_decoded(value: str) -> None:
    assert decode_json_strings(SCHEMA, {"filter": value}, "", 1000) == (None, [])


POLICY = Policy.from_dict({"tool": [{"tool": "search", "json_strings": True}]})
TOOL = {"name": "search", "description": "Search.", "inputSchema": SCHEMA}


def test_the_proxy_validates_and_forwards_the_decoded_value() -> None:
    session = Session(policy=POLICY)
    session.start()
    session.list_tools([TOOL])
    routed = session.client(session.call(1, "search", {"filter": '{"a": 1}'}))
    (forwarded,) = messages(routed.forward)
    assert forwarded["params"]["arguments"] == {"filter": {"a": 1}}
    # The decoded value is what is validated: a wrong one is refused, never forwarded.
    refused = session.client(session.call(2, "search", {"filter": '{"a": "one"}'}))
    assert not refused.forward
    assert messages(refused.reply)[0]["result"]["isError"] is True


def test_off_by_default_and_in_audit_mode() -> None:
    choices: list[dict[str, Any]] = [{}, {"policy": POLICY, "mode": "audit"}]
    for options in choices:
        session = Session(**options)
        session.start()
        session.list_tools([TOOL])
        line = session.call(1, "search", {"filter": '{"a": 1}'})
        routed = session.client(line)
        if options:
            assert messages(routed.forward) == [line]
        else:  # a string where an object is wanted: refused as it is
            assert not routed.forward


# --- $ref inlining ----------------------------------------------------------------------------

REFERRING: dict[str, Any] = {
    "type": "object",
    "properties": {
        "home": {"$ref": "#/$defs/address"},
        "work": {"$ref": "#/$defs/address", "description": "Office."},
        "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}},
    },
    "$defs": {
        "address": {"type": "object", "properties": {"city": {"$ref": "#/$defs/tag"}}},
        "tag": {"type": "string", "maxLength": 20},
    },
}


def test_local_references_are_inlined_and_defs_dropped() -> None:
    inlined = inline_refs(REFERRING)
    assert inlined.problem is None
    schema = inlined.schema
    assert "$defs" not in schema
    assert "$ref" not in json.dumps(schema)
    tag = {"type": "string", "maxLength": 20}
    assert schema["properties"]["home"] == {"type": "object", "properties": {"city": tag}}
    assert schema["properties"]["work"]["description"] == "Office."
    assert schema["properties"]["tags"]["items"] == tag
    # Same meaning: the same instances valid and invalid.
    for instance, valid in (
        ({"home": {"city": "Oslo"}, "tags": ["a"]}, True),
        ({"home": {"city": "x" * 21}}, False),
        ({"tags": [1]}, False),
    ):
        for version in (REFERRING, schema):
            assert compile_schema(version).validate(instance).valid is valid


def test_a_sibling_that_overlaps_keeps_both_with_all_of() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/n", "maximum": 5}},
        "$defs": {"n": {"type": "integer", "maximum": 10}},
    }
    assert inline_refs(schema).schema["properties"]["n"] == {
        "allOf": [{"type": "integer", "maximum": 10}],
        "maximum": 5,
    }


@pytest.mark.parametrize(
    ("schema", "code"),
    [
        (
            {
                "type": "object",
                "properties": {"tree": {"$ref": "#/$defs/node"}},
                "$defs": {
                    "node": {"type": "object", "properties": {"kids": {"$ref": "#/$defs/node"}}}
                },
            },
            "schema-ref-recursive",
        ),
        ({"type": "object", "properties": {"me": {"$ref": "#"}}}, "schema-ref-recursive"),
        (
            {"type": "object", "properties": {"x": {"$ref": "#/$defs/none"}}},
            "schema-ref-unresolved",
        ),
        (
            {"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}},
            "schema-ref-unresolved",
        ),
    ],
)
def test_what_cannot_be_inlined_is_left_as_it_is(schema: dict[str, Any], code: str) -> None:
    inlined = inline_refs(schema)
    assert inlined.schema is schema
    assert inlined.problem is not None
    assert inlined.problem[0].value == code


def test_inlining_is_bounded() -> None:
    # Each level refers twice to the next: 2**20 copies once inlined.
    defs = {
        f"l{i}": {"type": "array", "items": [{"$ref": f"#/$defs/l{i + 1}"}] * 2} for i in range(20)
    }
    defs["l20"] = {"type": "string"}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/l0"}}, "$defs": defs}
    inlined = inline_refs(schema)
    assert inlined.schema is schema
    assert inlined.problem is not None
    assert inlined.problem[0].value == "schema-ref-too-large"


def test_the_proxy_inlines_for_the_client_and_validates_as_listed() -> None:
    policy = Policy.from_dict({"tool": [{"tool": "*", "inline_refs": True}]})
    log = io.StringIO()
    session = Session()
    session.proxy = ProxySession(Auditor(log), policy=policy)
    session.start()
    recursive = {
        "name": "tree",
        "description": "Tree.",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"$ref": "#/$defs/n"}},
            "$defs": {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/n"}}}},
        },
    }
    referring = {"name": "where", "description": "Where.", "inputSchema": REFERRING}
    (listed,) = session.list_tools([referring, recursive])
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert "$defs" not in tools["where"]["inputSchema"]
    assert tools["tree"]["inputSchema"] == recursive["inputSchema"]
    record = json.loads(log.getvalue().splitlines()[0])
    assert (record["code"], record["tool"]) == ("schema-ref-recursive", "tree")
    assert session.client(session.call(1, "where", {"home": {"city": "x" * 21}})).reply


def test_policy_tool_table() -> None:
    assert POLICY.tool_rule("search").json_strings is True
    assert POLICY.tool_rule("other").json_strings is False
    for bad in ({"tool": [{"json_strings": True}]}, {"tool": [{"tool": "*", "inline": True}]}):
        with pytest.raises(PolicyError):
            Policy.from_dict(bad)
