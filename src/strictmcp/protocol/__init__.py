"""MCP protocol validation: JSON-RPC envelopes, method params and results, tools, elicitation,
sampling and prompts, for every revision from 2024-11-05 to 2026-07-28. Transport-independent:
the proxy and the SDK integrations use exactly this layer."""

from .capture import CaptureFinding, CaptureFormatError, CaptureReport, validate_capture
from .conversation import ASSUMED_REVISION, Conversation, Direction, own_message
from .elicitation import (
    AppliedDefaults,
    apply_defaults,
    check_elicit_result,
    check_requested_schema,
)
from .jsonrpc import (
    Decoded,
    Message,
    RequestTracker,
    answer_digest,
    answer_id,
    check_envelope,
    decode,
    error_response,
    jsonrpc_error_for,
)
from .methods import Sender, check_notification, check_request, sender_of
from .methods import check_result as check_method_result
from .prompts import check_prompt_arguments
from .revisions import LATEST, Revision
from .rules import Rule
from .sampling import check_create_message, check_create_message_result
from .tasks import RELATED_TASK, TaskRecord, task_id_of
from .tool_calls import (
    VALIDATION_META_KEY,
    CallCheck,
    DeclaredArguments,
    check_call,
    check_result,
    declared_arguments,
)
from .tool_names import check_tool_name
from .tool_registry import ToolRegistry
from .tools import CheckedTool, check_tool, check_tools
from .violations import Severity, Violation, errors

__all__ = [
    "ASSUMED_REVISION",
    "LATEST",
    "RELATED_TASK",
    "VALIDATION_META_KEY",
    "AppliedDefaults",
    "CallCheck",
    "CaptureFinding",
    "CaptureFormatError",
    "CaptureReport",
    "CheckedTool",
    "Conversation",
    "DeclaredArguments",
    "Decoded",
    "Direction",
    "Message",
    "RequestTracker",
    "Revision",
    "Rule",
    "Sender",
    "Severity",
    "TaskRecord",
    "ToolRegistry",
    "Violation",
    "answer_digest",
    "answer_id",
    "apply_defaults",
    "check_call",
    "check_create_message",
    "check_create_message_result",
    "check_elicit_result",
    "check_envelope",
    "check_method_result",
    "check_notification",
    "check_prompt_arguments",
    "check_request",
    "check_requested_schema",
    "check_result",
    "check_tool",
    "check_tool_name",
    "check_tools",
    "declared_arguments",
    "decode",
    "error_response",
    "errors",
    "jsonrpc_error_for",
    "own_message",
    "sender_of",
    "task_id_of",
    "validate_capture",
]
