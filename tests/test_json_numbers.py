"""Numbers the schema check would round (issue 21, hole 5): a literal that is not zero yet
reads as zero or a subnormal, or that has more than 17 significant digits and is not exactly
the double it reads as, is refused (``json-number-inexact``) by the one strict reading,
``load_json``: in the proxy (the call never reaches the server), ``decode``, the schema and
messages commands alike. Literals that a double holds, however long, still pass."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from strictmcp.check.generate import generate_valid
from strictmcp.cli import main
from strictmcp.protocol import Rule, decode
from strictmcp.schema import compile_schema
from strictmcp.schema.jsonio import JSONInputError, load_json
from test_proxy_stdio import raw_proxy

INEXACT = "json-number-inexact"
TOO_LARGE = "json-number-too-large"

# Each refused literal, and the code.
REFUSED = {
    "-1e-400": INEXACT,
    "1e-400": INEXACT,
    "1E-400": INEXACT,
    "0." + "0" * 400 + "1": INEXACT,
    "-0." + "0" * 330 + "7": INEXACT,
    "4e-320": INEXACT,  # a subnormal
    "5e-324": INEXACT,  # the smallest subnormal
    "2.2250738585072009e-308": INEXACT,  # the largest subnormal
    "1.5e-310": INEXACT,
    "10.0000000000000000001": INEXACT,
    "9.99999999999999999999": INEXACT,
    "0.300000000000000001": INEXACT,
    "1.00000000000000000001e300": INEXACT,
    "12345678901234567890": INEXACT,
    "-12345678901234567890": INEXACT,
    "123456789012345678": INEXACT,  # 18 digits, past 2**53
    "9223372036854775807": INEXACT,  # 2**63 - 1
    "1" + "0" * 30 + "1": INEXACT,
    "1e400": TOO_LARGE,
    "1" + "0" * 400: TOO_LARGE,  # 1e400 spelled out
    "-" + "9" * 320: TOO_LARGE,
}
# Accepted, with the value read: zeros written as zeros, trailing zeros, exact long literals,
# and literals of at most 17 significant digits (how a double is written).
ACCEPTED: dict[str, float | int] = {
    "0": 0,
    "-0": 0,
    "0.0": 0.0,
    "-0.000": -0.0,
    "0e-400": 0.0,
    "0.0E+999": 0.0,
    "1.0000000000000000000": 1.0,
    "0.50000000000000000000": 0.5,
    "0.1000000000000000000000": 0.1,
    "10.00000000000000000000": 10.0,
    "100000000000000000000000": 10**23,
    "18446744073709551616": 2**64,
    "18446744073709551616.0": 2.0**64,
    "0.1000000000000000055511151231257827021181583404541015625": 0.1,  # the double, exactly
    "12345678901234567": 12345678901234567,  # 17 digits
    "9007199254740993": 9007199254740993,  # 16 digits: a double rounds it, the rule lets it be
    "0.30000000000000001": 0.3,
    "2.2250738585072014e-308": 2.2250738585072014e-308,  # the smallest normal
    "1.7976931348623157e308": 1.7976931348623157e308,
    "0.3333333333333333": 1 / 3,
    "-1.2345678901234567e-300": -1.2345678901234567e-300,
}


def refusal(text: str) -> JSONInputError:
    with pytest.raises(JSONInputError) as refused:
        load_json(text, max_size=10_000)
    return refused.value


@pytest.mark.parametrize("literal", list(REFUSED))
@pytest.mark.parametrize("where", ["{}", '{"a": [1, {}]}', "[{}]"])
def test_inexact_literals_are_refused_anywhere(literal: str, where: str) -> None:
    error = refusal(where.replace("{}", f'{{"n": {literal}}}', 1))
    assert error.code == REFUSED[literal]
    assert literal.lstrip("-")[:12] not in error.message


@pytest.mark.parametrize("literal", list(ACCEPTED))
def test_literals_a_double_holds_pass(literal: str) -> None:
    value = load_json(f'{{"n": {literal}}}', max_size=10_000)["n"]
    assert value == ACCEPTED[literal]
    assert type(value) is type(ACCEPTED[literal])


def _verdict(literal: str) -> str | None:
    """The rule, worked out apart from the code: the code a literal is refused with, or None.

    Significant digits are those of the exact decimal, without leading or trailing zeros; the
    double is Python's correctly rounded reading."""
    exact = Decimal(literal)
    try:
        double = float(int(literal)) if literal.lstrip("-").isdigit() else float(literal)
    except OverflowError:
        return TOO_LARGE
    if abs(double) == float("inf"):
        return TOO_LARGE
    if exact != 0 and abs(double) < sys.float_info.min:
        return INEXACT
    digits = "".join(map(str, exact.as_tuple().digits)).strip("0")
    if len(digits) > 17 and Decimal(double) != exact:
        return INEXACT
    return None


_DIGIT_RUNS = st.text(alphabet="0123456789", min_size=1, max_size=25)


@st.composite
def literals(draw: st.DrawFn) -> str:
    """JSON number literals: integers, fractions and exponents, short, long, tiny and huge."""
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(st.one_of(st.just("0"), _DIGIT_RUNS.map(lambda d: "1" + d), st.just("9" * 20)))
    fraction = draw(st.one_of(st.just(""), _DIGIT_RUNS.map(lambda d: "." + d)))
    exponent = draw(
        st.one_of(
            st.just(""),
            st.integers(-420, 420).map(lambda e: f"e{e}"),
            st.integers(0, 330).map(lambda e: f"E+{e}"),
        )
    )
    return sign + whole + fraction + exponent


@settings(max_examples=600, deadline=None)
@given(literals())
@example("10.0000000000000000001")
@example("1" + "0" * 17)
@example("4.9406564584124654e-324")
def test_refused_exactly_when_the_rule_says(literal: str) -> None:
    expected = _verdict(literal)
    if expected is not None:
        assert refusal(f"[{literal}]").code == expected, literal
        return
    value = load_json(f"[{literal}]", max_size=10_000)[0]
    assert value == (int(literal) if literal.lstrip("-").isdigit() else float(literal))


# ---------------------------------------------------------------------------------------------
# decode, and the commands that share load_json


@pytest.mark.parametrize(
    "message",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"set_volume",'
        b'"arguments":{"level":LIT}}}',
        b'{"jsonrpc":"2.0","id":LIT,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{"n":[LIT]}}}',
        b'[{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"progressToken":LIT}}}]',
    ],
)
@pytest.mark.parametrize("literal", ["-1e-400", "10.0000000000000000001", "12345678901234567890"])
def test_decode_refuses_inexact_numbers_as_parse_errors(message: bytes, literal: str) -> None:
    decoded = decode(message.replace(b"LIT", literal.encode()))
    assert decoded.messages == ()
    assert [v.rule for v in decoded.violations] == [Rule.PARSE_ERROR]
    assert "cannot be read exactly" in decoded.violations[0].message
    assert literal not in str(decoded.violations[0].to_dict())


def test_schema_validate_refuses_an_inexact_instance(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "integer", "minimum": 0, "maximum": 10}))
    cases = {"10.0000000000000000001": 2, "1e-400": 2, "10.00000000000000000000": 0, "11": 1}
    for literal, status in cases.items():
        instance = tmp_path / "instance.json"
        instance.write_text(literal)
        result = CliRunner().invoke(
            main, ["schema", "validate", "--format", "json", str(schema), str(instance)]
        )
        assert result.exit_code == status, (literal, result.output)
        if status == 2:
            assert json.loads(result.output)["results"][0]["error"]["code"] == INEXACT
            assert literal not in result.output


def test_messages_validate_reports_the_line_with_an_inexact_number(tmp_path: Path) -> None:
    lines = [
        '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        '"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}',
        '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e-400}}',
        '{"direction":"c2s","message":{"jsonrpc":"2.0","id":2,"method":"ping","params":'
        '{"x":12345678901234567890}}}',
        '{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":1.00000000000000000000}}',
    ]
    capture = tmp_path / "capture.jsonl"
    capture.write_text("".join(f"{line}\n" for line in lines))
    result = CliRunner().invoke(main, ["messages", "validate", "--format", "json", str(capture)])
    report = json.loads(result.output)
    refused = [(f["line"], f["code"]) for f in report["findings"] if f["severity"] == "error"]
    assert refused == [(2, "jsonrpc-parse-error"), (3, "jsonrpc-parse-error")]
    assert "1e-400" not in result.output
    assert "12345678901234567890" not in result.output


def test_check_generates_only_inputs_the_strict_reading_takes() -> None:
    """Hypothesis draws subnormals and integers past 17 digits; ``strictmcp check`` keeps
    none of them as a valid input, since the proxy would refuse it whatever the schema."""
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "x": {"type": "number"}},
        "required": ["n", "x"],
    }
    generated = generate_valid(schema, compile_schema(schema), count=200, seed_value=1)
    assert len(generated.inputs) >= 150
    for value in generated.inputs:
        text = json.dumps(value)
        assert load_json(text, max_size=len(text)) == value


# ---------------------------------------------------------------------------------------------
# Through the real proxy


def test_proxy_never_forwards_a_number_the_schema_check_rounded(tmp_path: Path) -> None:
    """set_volume takes an integer from 0 to 10, scale a number from 0 to 10: every inexact
    literal is answered by the proxy (a structured parse error) and never reaches the server;
    exact ones, however long, reach it as written; the session goes on."""
    refused = [
        ("set_volume", "level", "-1e-400"),
        ("set_volume", "level", "1e-400"),
        ("set_volume", "level", "10.0000000000000000001"),
        ("set_volume", "level", "12345678901234567890"),
        ("set_volume", "level", "0." + "0" * 400 + "1"),
        ("scale", "factor", "10.0000000000000000001"),
        ("scale", "factor", "4e-320"),
        ("scale", "factor", "-1e-400"),
        ("set_volume", "level", "1e400"),
    ]
    allowed = [
        ("set_volume", "level", "5"),
        ("set_volume", "level", "10.00000000000000000000"),
        ("scale", "factor", "0.50000000000000000000"),
        ("scale", "factor", "0e-400"),
    ]
    with raw_proxy(tmp_path, server="number") as proxy:
        proxy.handshake()
        assert [t["name"] for t in proxy.request("l", "tools/list")["result"]["tools"]] == [
            "set_volume",
            "scale",
            "validate",
        ]
        sent = []
        for number, (tool, argument, literal) in enumerate(refused + allowed):
            line = (
                f'{{"jsonrpc":"2.0","id":{number},"method":"tools/call","params":'
                f'{{"name":"{tool}","arguments":{{"{argument}":{literal}}}}}}}\n'
            ).encode()
            sent.append(line)
            proxy.send(line)
            answer = proxy.message()
            if number < len(refused):
                # The refusal answers the request it refuses: its id read leniently.
                assert answer["id"] == number, literal
                assert answer["error"]["code"] == -32700
                assert answer["error"]["data"][0]["code"] == "jsonrpc-parse-error"
                why = "too large" if literal == "1e400" else "cannot be read exactly"
                assert why in answer["error"]["data"][0]["message"]
                assert literal not in json.dumps(answer)
            else:
                assert answer["id"] == number
                assert answer["result"]["isError"] is False, answer
        assert proxy.request("after", "ping")["id"] == "after"
    received = (tmp_path / "calls").read_bytes().splitlines(keepends=True)
    calls = [line for line in received if b'"tools/call"' in line]
    # The exact ones arrived byte for byte, as written; none of the inexact ones did.
    assert calls == sent[len(refused) :]
