"""Input generation and mutation for ``strictmcp check``: deterministic, and confirmed by
the engine; plus the pure pieces (judging answers, redacting secrets)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from strictmcp.check.cases import KINDS, PLANTED, VALID, Fault
from strictmcp.check.generate import declared_only, generate_valid
from strictmcp.check.judge import (
    judge_call,
    judge_fault_call,
    judge_fault_validate,
    judge_validate,
    validate_verdict,
)
from strictmcp.check.mutate import mutations
from strictmcp.check.redact import redact_argv, redact_text, redact_url
from strictmcp.connect.client import RpcError, Success, TransportFailure
from strictmcp.schema import compile_schema

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "maxLength": 30},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "mode": {"enum": ["fast", "slow"]},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "when": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        "name": {"type": "string", "minLength": 2},
    },
    "required": ["path", "tags", "name"],
    "additionalProperties": False,
}


def _generate(seed: int, count: int = 8) -> tuple[Any, ...]:
    return generate_valid(SCHEMA, compile_schema(SCHEMA), count=count, seed_value=seed).inputs


def test_generation_is_deterministic_and_valid() -> None:
    first, again, other = _generate(3), _generate(3), _generate(4)
    assert first == again
    assert first != other
    assert len(first) == 8
    validator = compile_schema(SCHEMA)
    assert all(validator.validate(value).valid for value in first)


def test_a_schema_hypothesis_cannot_handle_is_a_note() -> None:
    schema = {"$ref": "https://example.com/schema.json"}  # never fetched
    validator = compile_schema({"type": "string"})
    generated = generate_valid(schema, validator, count=3, seed_value=0)
    assert generated.inputs == ()
    assert generated.note is not None
    assert generated.note.startswith("could not generate")


def test_unsatisfiable_schema_is_a_note() -> None:
    schema = {"type": "integer", "minimum": 5, "maximum": 1}
    generated = generate_valid(schema, compile_schema(schema), count=3, seed_value=0)
    assert generated.inputs == ()
    assert generated.note is not None


def test_declared_only_closes_objects_but_not_combinators() -> None:
    schema = {
        "type": "object",
        "properties": {"inner": {"type": "object", "properties": {"x": {}}}},
        "allOf": [{"properties": {"y": {}}}],
    }
    tight = declared_only(schema)
    assert "additionalProperties" not in tight
    assert tight["properties"]["inner"]["additionalProperties"] is False
    assert declared_only({"properties": {}, "additionalProperties": True}) == {
        "properties": {},
        "additionalProperties": True,
    }


def test_mutations_cover_every_kind_and_are_confirmed_invalid() -> None:
    validator = compile_schema(SCHEMA)
    cases = mutations(SCHEMA, validator, _generate(0), per_kind=4)
    kinds = {case.kind for case in cases}
    assert kinds == set(KINDS) - {VALID, PLANTED}  # planted ones come from a policy
    for case in cases:
        verdict = validator.validate(case.arguments).valid
        assert verdict == (case.expect == "suspicious"), case
        assert case.kind == "attack" or case.expect == "invalid"
    counts = {kind: sum(case.kind == kind for case in cases) for kind in kinds}
    assert max(counts.values()) <= 4
    pointers = {(case.kind, case.pointer) for case in cases}
    assert ("max-length", "/path") in pointers
    assert ("extra-property", "/strictmcp_unexpected") in pointers
    assert ("missing-required", "/tags") in pointers
    # A path-like argument gets path attacks, and they are labelled as such.
    assert any(c.kind == "attack" and "../" in str(c.arguments.get("path")) for c in cases)


def test_bounds_are_crossed_by_exactly_one() -> None:
    validator = compile_schema(SCHEMA)
    cases = mutations(SCHEMA, validator, _generate(0), per_kind=50)
    lengths = {len(c.arguments["path"]) for c in cases if c.kind == "max-length"}
    assert lengths == {31}
    counts = {
        c.arguments["count"] for c in cases if c.pointer == "/count" and c.kind != "wrong-type"
    }
    assert counts <= {0, 11}
    ratios = {
        c.arguments["ratio"] for c in cases if c.pointer == "/ratio" and c.kind != "wrong-type"
    }
    assert ratios <= {0, 1}
    items = {len(c.arguments["tags"]) for c in cases if c.kind in ("max-items", "min-items")}
    assert items == {0, 4}


def test_mutations_are_deterministic() -> None:
    validator = compile_schema(SCHEMA)
    one = mutations(SCHEMA, validator, _generate(1), per_kind=5)
    two = mutations(SCHEMA, validator, _generate(1), per_kind=5)
    assert json.dumps([c.arguments for c in one]) == json.dumps([c.arguments for c in two])


@pytest.mark.parametrize(
    ("expect", "outcome", "status"),
    [
        ("invalid", Success({"content": [], "isError": True}), "pass"),
        ("invalid", RpcError(-32602, "bad"), "pass"),
        ("invalid", RpcError(-32603, "internal"), "warn"),
        ("invalid", Success({"content": []}), "fail"),
        ("invalid", TransportFailure("gone", "the server is gone"), "fail"),
        ("valid", Success({"content": []}), "pass"),
        ("valid", Success({"content": [], "isError": True}), "warn"),
        ("valid", TransportFailure("timeout", "no answer"), "fail"),
        ("suspicious", Success({"content": []}), "warn"),
        ("suspicious", Success({"content": [], "isError": True}), "pass"),
    ],
)
def test_judge_call(expect: Any, outcome: Any, status: str) -> None:
    assert judge_call(expect, outcome, [])[0] == status


def test_judge_validate() -> None:
    yes = Success({"content": [{"type": "text", "text": '{"valid": true}'}]})
    no = Success({"content": [], "structuredContent": {"valid": False}})
    assert judge_validate("invalid", no)[0] == "pass"
    assert judge_validate("invalid", yes)[0] == "fail"
    assert judge_validate("valid", no)[0] == "fail"
    assert judge_validate("suspicious", yes)[0] == "warn"
    assert judge_validate("valid", Success({"content": []}))[0] == "fail"
    assert validate_verdict({"isError": True, "structuredContent": {"valid": True}}) is None


def test_crash_message_masks_secrets_in_stderr() -> None:
    failure = TransportFailure("gone", "the server is gone", ("boom token=hunter2",))
    status, messages = judge_call("valid", failure, [])
    assert status == "fail"
    assert "hunter2" not in messages[0]
    assert "crashed" in messages[0]


def test_redaction() -> None:
    argv = ["srv", "--api-key", "s3cr3t", "--token=abc", "API_KEY=zzz", "https://u:p@h:8/x?k=v"]
    assert redact_argv(argv) == [
        "srv",
        "--api-key",
        "***",
        "--token=***",
        "API_KEY=***",
        "https://h:8/x?k=***",
    ]
    assert redact_url("http://user:pw@127.0.0.1/mcp") == "http://127.0.0.1/mcp"
    assert "ghp_" not in redact_text("using ghp_abcdefghijklmnopqrstuvwxyz0123")
    assert redact_text("Authorization: Bearer abc.def") == "Authorization: ***"
    assert redact_text("sent bearer abc.def") == "sent bearer ***"


def _validated(valid: bool, errors: list[str], warnings: list[str] | None = None) -> Success:
    verdict = {"valid": valid, "errors": errors, "warnings": warnings or []}
    return Success({"content": [], "structuredContent": verdict})


def test_a_valid_input_the_checks_refuse_passes_naming_them() -> None:
    outcome = _validated(False, ["/path: outside [path-outside-roots]"])
    status, messages = judge_validate("valid", outcome)
    assert status == "pass"
    assert messages == ["validate refuses it by its guards or deep checks (path-outside-roots)"]
    # Refused for the schema's reasons, it is still the failure it was.
    assert judge_validate("valid", _validated(False, ["/n: too big [maximum]"]))[0] == "fail"


CRON = Fault("a cron expression that never parses", "61 25 * * *", "deep-cron-invalid")
OFTEN = Fault("a schedule too often", "* * * * *", "deep-cron-too-frequent", warning=True)


@pytest.mark.parametrize(
    ("fault", "outcome", "status", "caught"),
    [
        (
            CRON,
            _validated(False, ["/cron: not valid [deep-cron-invalid]", "/x: no [path-relative]"]),
            "pass",
            ("deep-cron-invalid",),
        ),
        (OFTEN, _validated(True, [], ["/cron: too often [deep-cron-too-frequent]"]), "pass", ()),
        (CRON, _validated(True, []), "fail", ()),
        (CRON, _validated(False, ["/cron: odd [deep-invalid]"]), "warn", ("deep-invalid",)),
        (CRON, _validated(False, ["/path: out [path-outside-roots]"]), "warn", ()),
        (CRON, _validated(False, ["the cron is wrong"]), "pass", ()),  # no codes to read
        (CRON, Success({"content": [], "isError": True}), "fail", ()),
    ],
)
def test_a_planted_fault_asked_of_validate(
    fault: Fault, outcome: Success, status: str, caught: tuple[str, ...]
) -> None:
    judged, messages, codes = judge_fault_validate(fault, "/cron", outcome)
    assert judged == status
    assert bool(messages) == (status != "pass")
    assert set(caught) <= set(codes)
    if status == "pass" and caught:
        assert fault.code in codes


def test_a_planted_fault_really_called() -> None:
    problems = [{"code": "deep-cron-invalid", "message": "x", "pointer": "/cron"}]
    refused = Success(
        {
            "content": [],
            "isError": True,
            "_meta": {"dev.strictmcp/validation": {"problems": problems}},
        }
    )
    assert judge_fault_call(CRON, "/cron", refused) == ("pass", [], ("deep-cron-invalid",))
    assert judge_fault_call(CRON, "/cron", RpcError(-32602, "bad"))[0] == "pass"
    accepted = Success({"content": []})
    status, messages, _ = judge_fault_call(CRON, "/cron", accepted)
    assert (status, messages) == (
        "fail",
        ["the call accepts a cron expression that never parses: deep-cron-invalid expected"],
    )
    assert judge_fault_call(OFTEN, "/cron", accepted)[0] == "warn"
