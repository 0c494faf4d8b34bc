"""Reading untrusted JSON text into instances, with the engine's bounds applied first."""

from __future__ import annotations

import json
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


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (_INFINITY, -_INFINITY):
        # 1e400 reads as infinity, which has no JSON spelling: checked as one value, written
        # again as another (or as invalid JSON).
        raise JSONInputError("json-number-too-large", "a number is too large to read")
    return value


_INFINITY = float("inf")

# Built once: json.loads with hooks would build a decoder per call, a third of the parse time.
_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=_unique_keys
)


def load_json(data: bytes | str, *, max_size: int) -> Any:
    """Parse JSON text after checking its size; duplicate keys and NaN/Infinity are refused.

    Raises :class:`JSONInputError` with a stable code. Nesting is bounded by the parser's own
    recursion guard; the validator then applies its (lower) instance depth bound. Numbers
    are bounded too: an integer longer than the interpreter converts (4,300 digits by
    default) or a number that overflows a double is ``json-number-too-large``.
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
