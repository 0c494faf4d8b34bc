"""Stable codes for everything the engine reports.

A code never changes meaning once released: callers match on it, dashboards count it, and the
protocol layer forwards it to clients. Messages may be reworded; codes may not.
"""

from __future__ import annotations

from enum import Enum


class IssueCode(str, Enum):
    """Why an instance failed validation (one per failing keyword, plus the engine's own bounds)."""

    # type and value
    WRONG_TYPE = "wrong-type"
    NOT_IN_ENUM = "not-in-enum"
    CONST_MISMATCH = "const-mismatch"
    # strings
    TOO_SHORT = "too-short"
    TOO_LONG = "too-long"
    PATTERN_MISMATCH = "pattern-mismatch"
    BAD_FORMAT = "bad-format"
    BAD_CONTENT = "bad-content"
    PATTERN_BACKTRACK_LIMIT = "pattern-backtrack-limit"
    # numbers
    TOO_SMALL = "too-small"
    TOO_LARGE = "too-large"
    NOT_MULTIPLE = "not-multiple"
    # arrays
    TOO_FEW_ITEMS = "too-few-items"
    TOO_MANY_ITEMS = "too-many-items"
    DUPLICATE_ITEMS = "duplicate-items"
    CONTAINS_MISMATCH = "contains-mismatch"
    UNEXPECTED_ITEM = "unexpected-item"
    # objects
    MISSING_REQUIRED = "missing-required"
    UNEXPECTED_PROPERTY = "unexpected-property"
    TOO_FEW_PROPERTIES = "too-few-properties"
    TOO_MANY_PROPERTIES = "too-many-properties"
    BAD_PROPERTY_NAME = "bad-property-name"
    # composition
    NO_MATCH = "no-match"
    MULTIPLE_MATCH = "multiple-match"
    MATCHES_NOT = "matches-not"
    FALSE_SCHEMA = "false-schema"
    # references and custom keywords
    UNRESOLVABLE_REF = "unresolvable-ref"
    CUSTOM = "custom"
    # the engine's own bounds on instances
    INSTANCE_TOO_DEEP = "instance-too-deep"
    INSTANCE_TOO_LARGE = "instance-too-large"
    INSTANCE_NOT_JSON = "instance-not-json"
    VALIDATION_TIMEOUT = "validation-timeout"
    UNEXPLAINED = "invalid-unexplained"


class SchemaErrorCode(str, Enum):
    """Why a schema was refused at compile time."""

    NOT_A_SCHEMA = "schema-not-a-schema"
    INVALID = "schema-invalid"
    UNKNOWN_DIALECT = "schema-unknown-dialect"
    EXTERNAL_REF = "schema-external-ref"
    UNRESOLVABLE_REF = "schema-unresolvable-ref"
    TOO_DEEP = "schema-too-deep"
    TOO_MANY_SUBSCHEMAS = "schema-too-many-subschemas"
    TOO_EXPENSIVE = "schema-too-expensive"
    INVALID_PATTERN = "schema-invalid-pattern"
    PATTERN_NEEDS_BACKTRACKING = "schema-pattern-needs-backtracking"
    PATTERN_TOO_COMPLEX = "schema-pattern-too-complex"
