"""Stable codes for what guards find. Each code names one finding and never changes meaning."""

from __future__ import annotations

from enum import Enum


class GuardCode(str, Enum):
    """A guard's finding; its value is the stable code."""

    NOT_A_STRING = "guard-not-a-string"

    # identity
    ACCESS_DENIED = "access-denied"
    RATE_LIMITED = "rate-limited"
    RATE_STORE_UNAVAILABLE = "rate-store-unavailable"
    CLAIM_MISSING = "identity-claim-missing"
    CLAIM_UNSAFE = "identity-claim-unsafe"
    CLAIM_GUARD_UNUSABLE = "identity-guard-unusable"

    # path
    PATH_OUTSIDE_ROOTS = "path-outside-roots"
    PATH_TRAVERSAL = "path-traversal"
    PATH_NUL = "path-nul"
    PATH_HOME = "path-home"
    PATH_RELATIVE = "path-relative"
    PATH_SYMLINK_ESCAPE = "path-symlink-escape"
    PATH_DANGLING_SYMLINK = "path-dangling-symlink"
    PATH_NOT_FOUND = "path-not-found"
    PATH_WRONG_KIND = "path-wrong-kind"
    PATH_NOT_READABLE = "path-not-readable"
    PATH_NOT_WRITABLE = "path-not-writable"
    PATH_TOO_LONG = "path-too-long"
    PATH_UNRESOLVABLE = "path-unresolvable"
    PATH_WINDOWS_SYNTAX = "path-windows-syntax"
    PATH_LOW_SPACE = "path-low-free-space"
    PATH_FILE_LARGE = "path-file-large"
    PATH_URI_INVALID = "path-uri-invalid"

    # url
    URL_INVALID = "url-invalid"
    URL_SCHEME_NOT_ALLOWED = "url-scheme-not-allowed"
    URL_HOST_NOT_ALLOWED = "url-host-not-allowed"
    URL_PORT_NOT_ALLOWED = "url-port-not-allowed"
    URL_USERINFO = "url-userinfo"
    URL_UNRESOLVABLE = "url-unresolvable"
    URL_PRIVATE_ADDRESS = "url-private-address"
    URL_OBFUSCATED_ADDRESS = "url-obfuscated-address"
    URL_REDIRECT_NOT_ALLOWED = "url-redirect-not-allowed"

    # sql
    SQL_UNPARSEABLE = "sql-unparseable"
    SQL_MULTIPLE_STATEMENTS = "sql-multiple-statements"
    SQL_NOT_READ_ONLY = "sql-not-read-only"
    SQL_DENIED_FUNCTION = "sql-denied-function"
    SQL_FUNCTION_NOT_ALLOWED = "sql-function-not-allowed"
    SQL_IDENTIFIER_NOT_ALLOWED = "sql-identifier-not-allowed"
    SQL_EXECUTABLE_COMMENT = "sql-executable-comment"

    # argv
    ARGV_OPTION_INJECTION = "argv-option-injection"
    ARGV_CONTROL_CHARACTER = "argv-control-character"
    ARGV_EXECUTABLE_NOT_ALLOWED = "argv-executable-not-allowed"
    ARGV_SUBCOMMAND_NOT_ALLOWED = "argv-subcommand-not-allowed"
    ARGV_OPERAND_SCHEME_NOT_ALLOWED = "argv-operand-scheme-not-allowed"

    # text
    TEXT_TOO_SHORT = "text-too-short"
    TEXT_TOO_LONG = "text-too-long"
    TEXT_CONTROL_CHARACTER = "text-control-character"
    TEXT_INVISIBLE_CHARACTER = "text-invisible-character"
    TEXT_BIDI_CONTROL = "text-bidi-control"
    TEXT_TERMINAL_SEQUENCE = "text-terminal-sequence"

    # deep validators written by tool authors
    DEEP_INVALID = "deep-invalid"
    DEEP_TIMEOUT = "deep-timeout"
    DEEP_FAILED = "deep-failed"

    # built-in deep checks declared in a policy: sql against the live database
    DEEP_SQL_DSN = "deep-sql-dsn-missing"
    DEEP_SQL_CONNECTION = "deep-sql-connection-failed"
    DEEP_SQL_SYNTAX = "deep-sql-syntax-error"
    DEEP_SQL_UNKNOWN_TABLE = "deep-sql-unknown-table"
    DEEP_SQL_UNKNOWN_COLUMN = "deep-sql-unknown-column"
    DEEP_SQL_WRITES = "deep-sql-writes"
    DEEP_SQL_TIMEOUT = "deep-sql-timeout"
    DEEP_SQL_REJECTED = "deep-sql-rejected"
    DEEP_SQL_MANY_ROWS = "deep-sql-many-rows"

    # url reachability
    DEEP_URL_UNREACHABLE = "deep-url-unreachable"
    DEEP_URL_STATUS = "deep-url-status"

    # cron and time
    DEEP_CRON_INVALID = "deep-cron-invalid"
    DEEP_CRON_TOO_FREQUENT = "deep-cron-too-frequent"
    DEEP_CRON_NEXT_RUNS = "deep-cron-next-runs"
    DEEP_TIME_INVALID = "deep-time-invalid"
    DEEP_TIME_NOT_FUTURE = "deep-time-not-in-future"
    DEEP_TIME_TOO_FAR = "deep-time-too-far"
