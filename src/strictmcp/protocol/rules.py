"""Stable codes for every protocol rule strictmcp checks.

Each code names one rule, never changes meaning once released, and is what audit logs,
``isError`` results and capture reports carry. Sections group rules by the module that checks
them.
"""

from __future__ import annotations

from enum import Enum


class Rule(str, Enum):
    """A protocol rule; its value is the stable code."""

    # JSON-RPC envelope (jsonrpc.py)
    PARSE_ERROR = "jsonrpc-parse-error"
    INVALID_MESSAGE = "jsonrpc-invalid-message"
    BATCH_NOT_ALLOWED = "jsonrpc-batch-not-allowed"
    EMPTY_BATCH = "jsonrpc-empty-batch"
    BAD_ID = "jsonrpc-bad-id"
    DUPLICATE_ID = "jsonrpc-duplicate-id"
    UNMATCHED_RESPONSE = "jsonrpc-unmatched-response"
    MESSAGE_TOO_LARGE = "jsonrpc-message-too-large"
    UNPAIRED_SURROGATE = "jsonrpc-unpaired-surrogate"

    # method params and results (methods.py)
    INVALID_PARAMS = "mcp-invalid-params"
    INVALID_RESULT = "mcp-invalid-result"
    INVALID_NOTIFICATION = "mcp-invalid-notification"
    METHOD_NOT_IN_REVISION = "mcp-method-not-in-revision"
    WRONG_DIRECTION = "mcp-wrong-direction"
    UNKNOWN_METHOD = "mcp-unknown-method"
    UNKNOWN_FIELD = "mcp-unknown-field"
    UNKNOWN_REVISION = "mcp-unknown-revision"
    ALREADY_INITIALIZED = "mcp-already-initialized"

    # captures of traffic (capture.py)
    CAPTURE_DIRECTION_UNKNOWN = "capture-direction-unknown"

    # tool definitions (tools.py, tool_names.py)
    TOOL_NAME_INVALID = "tool-name-invalid"
    TOOL_NAME_NOT_PORTABLE = "tool-name-not-portable"
    TOOL_NAME_DUPLICATE = "tool-name-duplicate"
    TOOL_INPUT_SCHEMA_INVALID = "tool-input-schema-invalid"
    TOOL_INPUT_SCHEMA_NOT_OBJECT = "tool-input-schema-not-object"
    TOOL_OUTPUT_SCHEMA_INVALID = "tool-output-schema-invalid"
    TOOL_OUTPUT_SCHEMA_NOT_OBJECT = "tool-output-schema-not-object"
    TOOL_OUTPUT_SCHEMA_NOT_IN_REVISION = "tool-output-schema-not-in-revision"

    # tool calls and results (tool_calls.py)
    TOOL_UNKNOWN = "tool-unknown"
    TOOL_ARGUMENTS_INVALID = "tool-arguments-invalid"
    TOOL_ARGUMENT_UNDECLARED = "tool-argument-undeclared"
    TOOL_STRUCTURED_CONTENT_MISSING = "tool-structured-content-missing"
    TOOL_STRUCTURED_CONTENT_INVALID = "tool-structured-content-invalid"
    TOOL_STRUCTURED_CONTENT_NOT_OBJECT = "tool-structured-content-not-object"

    # tasks (tasks.py)
    TASK_NOT_NEGOTIATED = "task-not-negotiated"
    TASK_NOT_SUPPORTED = "task-not-supported"
    TASK_REQUIRED = "task-required"
    TASK_NOT_REQUESTED = "task-not-requested"
    TASK_UNKNOWN = "task-unknown"
    TASK_STATUS_TRANSITION = "task-status-transition"

    # elicitation (elicitation.py)
    ELICITATION_SCHEMA_UNSUPPORTED = "elicitation-schema-unsupported"
    ELICITATION_RESPONSE_INVALID = "elicitation-response-invalid"
    ELICITATION_ENUM_NAMES_MISMATCH = "elicitation-enum-names-mismatch"

    # sampling (sampling.py)
    SAMPLING_TOOLS_NOT_DECLARED = "sampling-tools-not-declared"
    SAMPLING_TOOL_RESULT_MIXED = "sampling-tool-result-mixed"
    SAMPLING_TOOL_RESULT_UNMATCHED = "sampling-tool-result-unmatched"
    SAMPLING_TOOL_USE_UNANSWERED = "sampling-tool-use-unanswered"
    SAMPLING_TOOL_USE_NOT_OFFERED = "sampling-tool-use-not-offered"
    SAMPLING_STOP_REASON_INCONSISTENT = "sampling-stop-reason-inconsistent"
    SAMPLING_TOOL_CHOICE_WITHOUT_TOOLS = "sampling-tool-choice-without-tools"
    SAMPLING_TOOL_USE_REQUIRED = "sampling-tool-use-required"
    SAMPLING_CONTEXT_NOT_DECLARED = "sampling-context-not-declared"

    # prompts (prompts.py)
    PROMPT_ARGUMENT_MISSING = "prompt-argument-missing"
    PROMPT_ARGUMENT_NOT_STRING = "prompt-argument-not-string"
    PROMPT_ARGUMENT_UNKNOWN = "prompt-argument-unknown"
