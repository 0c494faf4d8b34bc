"""Protocol benchmark: a tools/call request and its result through strictmcp's protocol layer.

Run ``python bench/protocol.py`` (``make bench``) for the full run, ``--quick`` for a smoke
run, ``--json FILE`` to keep the raw numbers, ``--check`` to exit 1 when a guard fails. Figures
and their reading are in docs/benchmarks.md, section "Protocol layer".

Each check starts from the raw bytes of one JSON-RPC message, as a proxy or an SDK receives
it, and does the whole work of accepting or refusing it:

- strictmcp, a request: ``decode`` + ``check_request`` + ``check_call(registry, params,
  json_size=decoded.size)``; a result: ``decode`` + ``check_method_result`` +
  ``check_result(registry, name, result, json_size=...)``; a request and its result through
  ``Conversation.observe``, the path the proxy uses.
- the MCP Python SDK v1 way: ``json.loads`` + mcp-types' pydantic models for the JSON-RPC
  message and for the method (``validate_client_request`` / ``validate_server_result``) +
  ``jsonschema.validate(instance, schema)`` on the arguments or ``structuredContent``; and the
  same with a cached python-jsonschema validator instead (what SDK 2.x's client does).

The measurement is bench/engine.py's, imported from it (run this file as a script, so that
bench/ is on ``sys.path``): batches of back-to-back calls timed
with ``time.perf_counter_ns``, the cyclic GC off inside a batch, contenders round-robin with a
rotating start, medians with the 10th-90th percentile spread, and ratios of medians from the
same run with the spread of the per-round paired ratios.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
from mcp_types.jsonrpc import jsonrpc_message_adapter
from mcp_types.methods import validate_client_request, validate_server_result

from engine import (
    INVALID_INSTANCE,
    VALID_INSTANCE,
    Contender,
    Ratio,
    _calls,
    calibrate,
    environment,
    fmt_ratio,
    fmt_time,
    measure,
    ratio,
    write_numbers,
)
from strictmcp.protocol import (
    Conversation,
    Direction,
    Revision,
    Rule,
    Severity,
    ToolRegistry,
    Violation,
    check_call,
    check_method_result,
    check_request,
    check_result,
    decode,
)
from tool_schema import SCHEMA

REVISION = Revision.V2025_06_18
LATEST = Revision.V2026_07_28
TOOL_NAME = "create_issue"

# What the tool returns: the kind of outputSchema a typed SDK derives from a return type.
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "number": {"type": "integer", "minimum": 1},
        "url": {
            "type": "string",
            "pattern": "^https://github\\.com/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/issues/[0-9]+$",
            "maxLength": 300,
        },
        "state": {"enum": ["open", "closed", "triage"]},
        "labels": {
            "type": "array",
            "items": {"type": "string", "maxLength": 50},
            "maxItems": 10,
        },
        "created_at": {"type": "string", "maxLength": 40},
    },
    "required": ["number", "url", "state"],
    "additionalProperties": False,
}

TOOL: dict[str, Any] = {
    "name": TOOL_NAME,
    "title": "Create issue",
    "description": "Open an issue in a GitHub repository.",
    "inputSchema": SCHEMA,
    "outputSchema": OUTPUT_SCHEMA,
}

VALID_OUTPUT: dict[str, Any] = {
    "number": 1234,
    "url": "https://github.com/modelcontextprotocol/python-sdk/issues/1234",
    "state": "open",
    "labels": ["bug", "area:config", "good-first-issue"],
    "created_at": "2025-06-18T12:00:00Z",
}

# A server that drifted from its own schema: three independent mistakes.
INVALID_OUTPUT: dict[str, Any] = {
    "number": 0,
    "url": "https://github.com/modelcontextprotocol/python-sdk/issues/1234",
    "state": "merged",
    "labels": ["bug"],
    "created_at": "2025-06-18T12:00:00Z",
    "html_url": "https://github.com/modelcontextprotocol/python-sdk/issues/1234",
}

# 2026-07-28 is stateless: every request carries its own protocol metadata.
LATEST_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": LATEST.value,
    "io.modelcontextprotocol/clientInfo": {"name": "bench-client", "version": "1.0.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}

REQUEST_ID = 7


def request_bytes(arguments: dict[str, Any], revision: Revision) -> bytes:
    params: dict[str, Any] = {"name": TOOL_NAME, "arguments": arguments}
    if revision is LATEST:
        params["_meta"] = LATEST_META
    message = {"jsonrpc": "2.0", "id": REQUEST_ID, "method": "tools/call", "params": params}
    return json.dumps(message).encode()


def result_object(output: dict[str, Any], revision: Revision) -> dict[str, Any]:
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": json.dumps(output)}],
        "structuredContent": output,
        "isError": False,
    }
    if revision is LATEST:
        result["resultType"] = "complete"  # required on every result from 2026-07-28
    return result


def result_bytes(output: dict[str, Any], revision: Revision) -> bytes:
    message = {"jsonrpc": "2.0", "id": REQUEST_ID, "result": result_object(output, revision)}
    return json.dumps(message).encode()


def tools_list_result(revision: Revision) -> dict[str, Any]:
    result: dict[str, Any] = {"tools": [TOOL]}
    if revision is LATEST:
        result["resultType"] = "complete"
    return result


def registry_for(revision: Revision) -> ToolRegistry:
    registry = ToolRegistry(revision)
    if registry.update(tools_list_result(revision)):
        raise SystemExit(f"the benchmark tool is not a valid tool in {revision.value}")
    return registry


# --- the contenders' work, one check each ---------------------------------------------------


def _cached(schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def _raise_best(validator: Any, instance: Any) -> None:
    """``jsonschema.validate`` without checking the schema and building a validator."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is not None:
        raise error


class SdkWay:
    """The work the MCP Python SDK v1 does on a message, with mcp-types as its models.

    ``cached`` swaps ``jsonschema.validate`` for one python-jsonschema validator per schema,
    built once. A check returns whether the message was accepted.
    """

    def __init__(self, revision: Revision, *, cached: bool) -> None:
        self.version = revision.value
        self.cached = cached
        self.input = _cached(SCHEMA)
        self.output = _cached(OUTPUT_SCHEMA)

    def _schema(self, instance: Any, schema: dict[str, Any], validator: Any) -> bool:
        try:
            if self.cached:
                _raise_best(validator, instance)
            else:
                jsonschema.validate(instance, schema)
        except jsonschema.ValidationError:
            return False
        return True

    def request(self, raw: bytes) -> bool:
        message = json.loads(raw)
        jsonrpc_message_adapter.validate_python(message)
        params = message["params"]
        validate_client_request("tools/call", self.version, params)
        return self._schema(params.get("arguments", {}), SCHEMA, self.input)

    def result(self, raw: bytes) -> bool:
        message = json.loads(raw)
        jsonrpc_message_adapter.validate_python(message)
        result = message["result"]
        validate_server_result("tools/call", self.version, result)
        return self._schema(result["structuredContent"], OUTPUT_SCHEMA, self.output)

    def pair(self, raws: tuple[bytes, bytes]) -> bool:
        return self.request(raws[0]) & self.result(raws[1])


class StrictWay:
    """The same work through strictmcp's protocol functions, one registry per revision."""

    def __init__(self, revision: Revision) -> None:
        self.revision = revision
        self.registry = registry_for(revision)

    def request(self, raw: bytes) -> bool:
        decoded = decode(raw, self.revision)
        if not decoded.valid:
            return False
        message = decoded.messages[0]
        if check_request(message, self.revision, "client"):
            return False
        return check_call(self.registry, message.params, json_size=decoded.size).allowed

    def result(self, raw: bytes) -> bool:
        decoded = decode(raw, self.revision)
        if not decoded.valid:
            return False
        result = decoded.messages[0].result
        if check_method_result("tools/call", result, self.revision, "server"):
            return False
        return not check_result(self.registry, TOOL_NAME, result, json_size=decoded.size)

    def pair(self, raws: tuple[bytes, bytes]) -> bool:
        decoded = decode(raws[0], self.revision)
        message = decoded.messages[0]
        accepted = decoded.valid and not check_request(message, self.revision, "client")
        call = check_call(self.registry, message.params, json_size=decoded.size)
        decoded = decode(raws[1], self.revision)
        result = decoded.messages[0].result
        accepted &= decoded.valid and not check_method_result(
            "tools/call", result, self.revision, "server"
        )
        found = check_result(
            self.registry, TOOL_NAME, result, json_size=decoded.size, tool=call.tool
        )
        return accepted and call.allowed and not found


class Session:
    """One :class:`Conversation` that has seen the tool listed: request, then result."""

    def __init__(self, revision: Revision) -> None:
        self.revision = revision
        self.conversation = Conversation(revision)
        listing = {"jsonrpc": "2.0", "id": "list", "method": "tools/list"}
        answer = {"jsonrpc": "2.0", "id": "list", "result": tools_list_result(revision)}
        directions: tuple[Direction, Direction] = ("c2s", "s2c")
        for message, direction in zip((listing, answer), directions, strict=True):
            if self.observe(json.dumps(message).encode(), direction):
                raise SystemExit("the conversation refused the tool listing")

    def observe(self, raw: bytes, direction: Direction) -> list[Violation]:
        decoded = decode(raw, self.revision)
        found = list(decoded.violations)
        for message in decoded.messages:
            found += self.conversation.observe(message, direction, size=decoded.size)
        return found

    def pair(self, raws: tuple[bytes, bytes]) -> list[Violation]:
        return self.observe(raws[0], "c2s") + self.observe(raws[1], "s2c")


# --- verdicts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One row group: a request, a result, or both, valid or not, in one revision."""

    group: str
    revision: Revision
    kind: str  # "request", "result" or "pair": the name of the method that checks it
    valid: bool
    request: bytes
    result: bytes

    @property
    def arg(self) -> Any:
        """What the checking method takes: the message's bytes, or both messages' bytes."""
        if self.kind == "pair":
            return (self.request, self.result)
        return self.request if self.kind == "request" else self.result


def cases() -> list[Case]:
    out = []
    for revision, suffix in ((REVISION, ""), (LATEST, f" {LATEST.value}")):
        kinds = ("request", "result", "pair") if revision is REVISION else ("request",)
        for valid, word in ((True, "valid"), (False, "invalid")):
            arguments = VALID_INSTANCE if valid else INVALID_INSTANCE
            output = VALID_OUTPUT if valid else INVALID_OUTPUT
            request, result = request_bytes(arguments, revision), result_bytes(output, revision)
            out += [
                Case(f"{word} {kind}{suffix}", revision, kind, valid, request, result)
                for kind in kinds
            ]
    order = {"request": 0, "result": 1, "pair": 2}
    return sorted(out, key=lambda c: (c.revision is LATEST, order[c.kind], not c.valid))


def check_verdicts(all_cases: list[Case]) -> None:
    """Refuse to time anything on which strictmcp and the baselines disagree, layer by layer."""
    for case in all_cases:
        sdk, cached = SdkWay(case.revision, cached=False), SdkWay(case.revision, cached=True)
        strict = StrictWay(case.revision)
        if case.kind == "pair":
            verdicts = {
                "SDK v1": sdk.pair(case.arg),
                "cached python-jsonschema": cached.pair(case.arg),
                "strictmcp": strict.pair(case.arg),
            }
            found = Session(case.revision).pair(case.arg)
            refused = [v for v in found if v.severity is Severity.ERROR]
            verdicts["Conversation"] = not refused
            expected = set() if case.valid else _SCHEMA_RULES
            if {v.rule for v in refused} != expected or any(
                v.severity is not Severity.ERROR for v in found
            ):
                raise SystemExit(f"{case.group}: Conversation found {[str(v) for v in found]}")
        else:
            _check_layers(case)
            verdicts = {
                "SDK v1": getattr(sdk, case.kind)(case.arg),
                "cached python-jsonschema": getattr(cached, case.kind)(case.arg),
                "strictmcp": getattr(strict, case.kind)(case.arg),
            }
        wrong = [name for name, accepted in verdicts.items() if accepted is not case.valid]
        if wrong:
            raise SystemExit(f"{case.group}: wrong verdict from {', '.join(wrong)}")


_SCHEMA_RULES = {Rule.TOOL_ARGUMENTS_INVALID, Rule.TOOL_STRUCTURED_CONTENT_INVALID}


def _check_layers(case: Case) -> None:
    """Envelope and method models accept every message; the schemas decide, error for error."""
    revision = case.revision
    decoded = decode(case.arg, revision)
    obj = json.loads(case.arg)
    jsonrpc_message_adapter.validate_python(obj)
    if not decoded.valid or decoded.messages[0].raw != obj:
        raise SystemExit(f"{case.group}: decode disagrees with json.loads and mcp-types")
    message = decoded.messages[0]
    if case.kind == "request":
        validate_client_request("tools/call", revision.value, obj["params"])
        if check_request(message, revision, "client"):
            raise SystemExit(f"{case.group}: check_request disagrees with mcp-types")
        instance, schema = obj["params"]["arguments"], SCHEMA
        call = check_call(registry_for(revision), message.params, json_size=decoded.size)
        issues = [i for v in call.violations for i in v.issues]
    else:
        validate_server_result("tools/call", revision.value, obj["result"])
        if check_method_result("tools/call", message.result, revision, "server"):
            raise SystemExit(f"{case.group}: check_method_result disagrees with mcp-types")
        instance, schema = obj["result"]["structuredContent"], OUTPUT_SCHEMA
        found = check_result(registry_for(revision), TOOL_NAME, message.result)
        issues = [i for v in found for i in v.issues]
    expected = list(_cached(schema).iter_errors(instance))
    if len(issues) != len(expected) or bool(expected) is case.valid:
        counts = f"{len(issues)} strictmcp issues, {len(expected)} python-jsonschema errors"
        raise SystemExit(f"{case.group}: {counts}")


# --- contenders ------------------------------------------------------------------------------


def build_contenders(all_cases: list[Case]) -> list[Contender]:
    contenders = []
    for case in all_cases:
        sdk, cached = SdkWay(case.revision, cached=False), SdkWay(case.revision, cached=True)
        strict = StrictWay(case.revision)
        noun = {"request": "request", "result": "result", "pair": "request + result"}[case.kind]
        if case.kind == "request":
            ours = "`decode` + `check_request` + `check_call`"
        elif case.kind == "result":
            ours = "`decode` + `check_method_result` + `check_result`"
        else:
            ours = "request's three functions, then the result's"
        arg = case.arg
        contenders += [
            Contender(
                "a",
                case.group,
                f"SDK v1: `json.loads` + mcp-types + `jsonschema.validate()`, per {noun}",
                _calls(getattr(sdk, case.kind), arg),
            ),
            Contender(
                "b",
                case.group,
                "SDK v1 with a cached python-jsonschema validator (SDK 2.x)",
                _calls(getattr(cached, case.kind), arg),
            ),
            Contender(
                "s", case.group, f"strictmcp {ours}", _calls(getattr(strict, case.kind), arg)
            ),
        ]
        if case.kind == "pair":
            session = Session(case.revision)
            contenders.append(
                Contender(
                    "c",
                    case.group,
                    "strictmcp `decode` + `Conversation.observe`, both messages",
                    _calls(session.pair, arg),
                )
            )
    return contenders + part_contenders()


def part_contenders() -> list[Contender]:
    """Each step of a valid request and of a valid result on its own, to show where time goes.

    Every step runs on the same objects again and again, warm in the caches, so the steps of a
    message add up to less than the whole check, which makes new objects every time.
    """
    revision, registry = REVISION, registry_for(REVISION)
    out = []
    for kind, raw in (
        ("request", request_bytes(VALID_INSTANCE, revision)),
        ("result", result_bytes(VALID_OUTPUT, revision)),
    ):
        obj = json.loads(raw)
        decoded = decode(raw, revision)
        message = decoded.messages[0]
        models: Callable[[], object]
        method: Callable[[], object]
        schema: Callable[[], object]
        if kind == "request":
            names = ("validate_client_request", "check_request", "check_call")
            instance, validator = obj["params"]["arguments"], _cached(SCHEMA)
            models = partial(validate_client_request, "tools/call", revision.value, obj["params"])
            method = partial(check_request, message, revision, "client")
            schema = partial(check_call, registry, message.params, json_size=decoded.size)
        else:
            names = ("validate_server_result", "check_method_result", "check_result")
            instance, validator = obj["result"]["structuredContent"], _cached(OUTPUT_SCHEMA)
            models = partial(validate_server_result, "tools/call", revision.value, obj["result"])
            method = partial(check_method_result, "tools/call", message.result, revision, "server")
            schema = partial(
                check_result, registry, TOOL_NAME, message.result, json_size=decoded.size
            )
        group = f"parts of a valid {kind}"
        out += [
            Contender("p1", group, "`json.loads`", _calls(json.loads, raw)),
            Contender(
                "p2",
                group,
                "strictmcp `decode` (parse + envelope)",
                _calls(partial(decode, revision=revision), raw),
            ),
            Contender(
                "p3",
                group,
                "mcp-types `jsonrpc_message_adapter.validate_python`",
                _calls(jsonrpc_message_adapter.validate_python, obj),
            ),
            Contender("p4", group, f"mcp-types `{names[0]}`", _nullary(models)),
            Contender("p5", group, f"strictmcp `{names[1]}` (mcp-types + walk)", _nullary(method)),
            Contender(
                "p6",
                group,
                "cached python-jsonschema, `best_match(iter_errors(x))`",
                _calls(partial(_raise_best, validator), instance),
            ),
            Contender("p7", group, f"strictmcp `{names[2]}(..., json_size=n)`", _nullary(schema)),
        ]
    return out


def _nullary(call: Callable[[], object]) -> Callable[[int], object]:
    """``n`` calls of ``call()``."""

    def run(n: int) -> object:
        for _ in range(n):
            call()
        return None

    return run


# --- report -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Guard:
    """A regression guard: strictmcp must not be slower than the way it replaces."""

    ratio: Ratio
    info: bool = False

    @property
    def passed(self) -> bool:
        return self.ratio.value >= 1.0


def per_second(ns: float) -> str:
    return f"{1e9 / ns:,.0f}"


def report(contenders: list[Contender], ratios: list[Ratio], guards: list[Guard]) -> str:
    lines = [
        "| case | contender | median per check | p10-p90 | checks/s | calls/batch |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for c in contenders:
        low, high = c.spread
        lines.append(
            f"| {c.group} | ({c.key}) {c.label} | {fmt_time(c.median)} | "
            f"{fmt_time(low)} - {fmt_time(high)} | {per_second(c.median)} | {c.batch} |"
        )
    lines += ["", "| ratio | median | p10-p90 (paired by round) |", "|---|--:|--:|"]
    lines += [
        f"| {r.name} | {fmt_ratio(r.value)} | {fmt_ratio(r.low)} - {fmt_ratio(r.high)} |"
        for r in ratios
    ]
    lines += [
        "",
        "Guards (no spec target; strictmcp should not be slower than what it replaces):",
        "",
    ]
    for g in guards:
        verdict = ("PASS" if g.passed else "FAIL") + (" (info)" if g.info else "")
        lines.append(
            f"- **{verdict}** {g.ratio.name} >= 1.00x: {fmt_ratio(g.ratio.value)} "
            f"(p10-p90 {fmt_ratio(g.ratio.low)} - {fmt_ratio(g.ratio.high)})"
        )
    return "\n".join(lines)


def ratios_and_guards(contenders: list[Contender]) -> tuple[list[Ratio], list[Guard]]:
    by = {(c.group, c.key): c for c in contenders}
    ratios: list[Ratio] = []
    guards: list[Guard] = []
    groups = list(dict.fromkeys(c.group for c in contenders if not c.key.startswith("p")))
    for group in groups:
        ours = ["s", "c"] if (group, "c") in by else ["s"]
        for mine in ours:
            for theirs, name in (("a", "SDK v1"), ("b", "cached python-jsonschema")):
                r = ratio(
                    f"{group}: {name} ({theirs}) / strictmcp ({mine})",
                    by[(group, theirs)],
                    by[(group, mine)],
                )
                ratios.append(r)
                guards.append(Guard(r, info=theirs == "b"))
        if "c" in ours:
            ratios.append(
                ratio(
                    f"{group}: Conversation (c) / functions (s)", by[(group, "c")], by[(group, "s")]
                )
            )
    return ratios, guards


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fast smoke run (CI)")
    parser.add_argument("--json", metavar="FILE", type=Path, help="write the raw numbers here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a guard fails")
    args = parser.parse_args(argv)

    # quick: ~1 ms batches, 20 rounds, at least 40 calls each; full: ~2 ms batches, 300 rounds
    batch_ns, rounds, min_calls = (1_000_000, 20, 40) if args.quick else (2_000_000, 300, 0)
    started = time.perf_counter()
    all_cases = cases()
    check_verdicts(all_cases)
    contenders = build_contenders(all_cases)
    for contender in contenders:
        calibrate(contender, batch_ns)
    measure(contenders, rounds, min_calls)
    elapsed = time.perf_counter() - started
    ratios, guards = ratios_and_guards(contenders)

    env = environment() | {"mcp-types": version("mcp-types"), "pydantic": version("pydantic")}
    mode = "quick" if args.quick else "full"
    print(
        f"strictmcp protocol benchmark ({mode}): Python {env['python']}, "
        f"mcp-types {env['mcp-types']}, pydantic {env['pydantic']}, "
        f"jsonschema-rs {env['jsonschema-rs']}, jsonschema {env['jsonschema']}, "
        f"{env['cpus']} CPUs ({env['processor']}); {rounds} rounds, {elapsed:.0f} s; "
        f"MCP {REVISION.value} unless the case names a revision\n"
    )
    print(report(contenders, ratios, guards))

    if args.json is not None:
        checks = [
            {"name": g.ratio.name, "ratio": g.ratio.value, "passed": g.passed, "info": g.info}
            for g in guards
        ]
        write_numbers(args.json, mode, rounds, elapsed, env, contenders, ratios, {"guards": checks})
    return 1 if args.check and not all(g.passed for g in guards if not g.info) else 0


if __name__ == "__main__":
    sys.exit(main())
