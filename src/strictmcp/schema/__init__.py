"""The JSON Schema engine: compiled once, cached, bounded, offline, with value-free errors.

>>> from strictmcp.schema import compile_schema
>>> validator = compile_schema({"type": "object", "properties": {"n": {"type": "integer"}}})
>>> validator.validate({"n": "seven"}).issues[0].code.value
'wrong-type'
"""

from .analysis import SchemaProfile
from .cache import LRUCache
from .codes import IssueCode, SchemaErrorCode
from .dialects import DEFAULT_DIALECT, Dialect, dialect_of
from .errors import SchemaError
from .limits import Limits
from .messages import quote_name
from .pointer import from_fragment, to_pointer
from .registry import Registry
from .result import HIDDEN, VALID, Issue, ValidationResult
from .validator import VALIDATOR_CACHE, Validator, compile_schema, get_backend

__all__ = [
    "DEFAULT_DIALECT",
    "HIDDEN",
    "VALID",
    "VALIDATOR_CACHE",
    "Dialect",
    "Issue",
    "IssueCode",
    "LRUCache",
    "Limits",
    "Registry",
    "SchemaError",
    "SchemaErrorCode",
    "SchemaProfile",
    "ValidationResult",
    "Validator",
    "compile_schema",
    "dialect_of",
    "from_fragment",
    "get_backend",
    "quote_name",
    "to_pointer",
]
