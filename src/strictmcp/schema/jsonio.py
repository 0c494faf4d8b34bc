"""Reading untrusted JSON text into instances, with the engine's bounds applied first."""

from __future__ import annotations

import json
import sys
from decimal import Decimal
from typing import Any

from .codes import IssueCode


class JSONInputError(ValueError):
    """JSON text that cannot become an instance: malformed, too large, too deep or ambiguous."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _reject_constant(name: str) -> Any:
    raise JSONInputError("json-not-finite", f"{name} is not valid JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        # Two readers of the same text may keep different duplicates: one validates, the other
        # acts. Refuse the ambiguity instead of picking a side.
        raise JSONInputError("json-duplicate-key", "an object has the same key twice")
    return out


# Number literals are checked against what a reader of doubles (JavaScript, most JSON
# libraries, perhaps the server behind the proxy) or of decimals makes of them, since strictmcp
# forwards a literal as it was written: a value checked as one number must not be acted on as
# another. A double holds 17 significant digits. Only a literal long enough to have more (an
# integer of 18 characters, a number with a point or an exponent of 19), or one that reads as
# zero, a subnormal or infinity, can be inexact: for any other the check costs a length test
# and a comparison.
_DIGITS = 17
_LONG_INTEGER = _DIGITS + 1
_LONG_FLOAT = _DIGITS + 2
_SMALLEST_NORMAL = sys.float_info.min
_LARGEST = sys.float_info.max
_INEXACT = (
    "a number cannot be read exactly: it is not zero yet reads as zero or a subnormal, or it"
    " has more than 17 significant digits that a double does not hold"
)


def _exact_float(text: str) -> float:
    value = float(text)
    if len(text) < _LONG_FLOAT and _SMALLEST_NORMAL <= abs(value) <= _LARGEST:
        return value
    if not value and not text.strip("-0."):
        return value  # zero written as zero (0.0, -0.00), common enough to skip the rest
    _check_float(text, value)
    return value


def _check_float(text: str, value: float) -> None:
    """Refuse a literal with a fraction or an exponent that a double does not hold."""
    if value in (_INFINITY, -_INFINITY):
        # 1e400 reads as infinity, which has no JSON spelling: checked as one value, written
        # again as another (or as invalid JSON).
        raise JSONInputError("json-number-too-large", "a number is too large to read")
    mantissa = text.partition("e")[0].partition("E")[0]
    digits = mantissa.replace(".", "").lstrip("-").strip("0")
    if abs(value) < _SMALLEST_NORMAL:
        if digits:
            # 1e-400 reads as 0, 4e-320 as a subnormal that other readers flush to zero:
            # checked as zero (below every minimum), acted on as something else.
            raise JSONInputError("json-number-inexact", _INEXACT)
        return  # zero with an exponent: 0e5
    # Trailing zeros hold nothing (1.0000000000000000000 is 1.0); a literal with more
    # digits than a double's 17 that is not exactly that double is read differently by a
    # reader of decimals, which may be the one acting on it (10.0000000000000000001).
    if len(digits) > _DIGITS and Decimal(text) != Decimal(value):
        raise JSONInputError("json-number-inexact", _INEXACT)


def _exact_int(text: str) -> int:
    value = int(text)
    if len(text) >= _LONG_INTEGER:
        _check_int(text, value)
    return value


def _check_int(text: str, value: int) -> None:
    """Refuse an integer literal that a double does not hold: Python reads it exactly, a
    reader of doubles does not, and the two would act on different numbers."""
    try:
        double = float(value)
    except OverflowError:
        # 10 followed by 400 zeros is 1e400, refused as such.
        raise JSONInputError("json-number-too-large", "a number is too large to read") from None
    # Compared as integers: compiled, a float compared with an int may be the int made a
    # float, which would hide the very rounding looked for.
    if len(text.lstrip("-").rstrip("0")) > _DIGITS and int(double) != value:
        raise JSONInputError("json-number-inexact", _INEXACT)


_INFINITY = float("inf")

# Built once: json.loads with hooks would build a decoder per call, a third of the parse time.
_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant,
    parse_float=_exact_float,
    parse_int=_exact_int,
    object_pairs_hook=_unique_keys,
)


def load_json(data: bytes | str, *, max_size: int) -> Any:
    """Parse JSON text after checking its size; duplicate keys and NaN/Infinity are refused.

    Raises :class:`JSONInputError` with a stable code. Nesting is bounded by the parser's own
    recursion guard; the validator then applies its (lower) instance depth bound. Numbers
    are bounded too: a number that overflows a double, integers included (a literal of
    4,300 digits and more is not even converted), is ``json-number-too-large``. A number that
    a double does not hold is ``json-number-inexact``: one that is not zero but reads as
    zero or a subnormal (``1e-400``, ``4e-320``), and one with more than 17 significant
    digits (trailing zeros not counted) that is not exactly the double it reads as
    (``10.0000000000000000001``, ``12345678901234567890``). Messages never quote the number.
    """
    if len(data) > max_size:
        raise JSONInputError(
            IssueCode.INSTANCE_TOO_LARGE.value, f"input is larger than {max_size} bytes"
        )
    try:
        if isinstance(data, bytes):
            # JSON exchanged between systems is UTF-8 (RFC 8259); a leading BOM is tolerated.
            data = data.decode("utf-8").removeprefix("\ufeff")
        return _DECODER.decode(data)
    except RecursionError:
        raise JSONInputError(
            IssueCode.INSTANCE_TOO_DEEP.value, "input is nested too deeply to read"
        ) from None
    except UnicodeDecodeError:
        raise JSONInputError("json-invalid", "input is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise JSONInputError(
            "json-invalid",
            f"not valid JSON: {error.msg} at line {error.lineno} column {error.colno}",
        ) from None
    except JSONInputError:
        raise
    except ValueError:
        # int() refuses a literal past sys.get_int_max_str_digits(); nothing else in the
        # decoder raises a plain ValueError.
        raise JSONInputError(
            "json-number-too-large", "a number has too many digits to read"
        ) from None
