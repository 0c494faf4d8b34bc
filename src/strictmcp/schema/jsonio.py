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


# Built once: json.loads with hooks would build a decoder per call, a third of the parse time.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys)


def load_json(data: bytes | str, *, max_size: int) -> Any:
    """Parse JSON text after checking its size; duplicate keys and NaN/Infinity are refused.

    Raises :class:`JSONInputError` with a stable code. Nesting is bounded by the parser's own
    recursion guard; the validator then applies its (lower) instance depth bound.
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
