"""Which mcp-types model checks each MCP message, by name, per revision and sender.

This is mcp-types' ``mcp_types.methods`` surface maps (who sends which method in which
revision, and its model) with each model named instead of imported: ``mcp_types.methods``
imports every revision's models, which cost more than the rest of the proxy's start-up, while
a session needs its own revision's only. :mod:`.methods` imports a revision's models the first
time it checks a message of that revision. tests/test_protocol_surfaces.py holds these tables
equal to mcp-types' own.

A name is a class of the revision's era, the module :data:`ERAS` names (2025-11-25's models for
every earlier revision, as mcp-types has it); a tuple of names is the union of those classes (a
2026-07-28 result that may instead be an ``InputRequiredResult``).
"""

from __future__ import annotations

from .revisions import Revision

_Models = dict[str, str | tuple[str, ...]]
_Surface = dict[Revision, _Models]

ERAS = dict.fromkeys(Revision, "mcp_types._v2025_11_25") | {
    Revision.V2026_07_28: "mcp_types._v2026_07_28"
}
"""The mcp-types module whose models check each revision's messages."""

_CLIENT_REQUESTS_2024_11_05: _Models = {
    "completion/complete": "CompleteRequest",
    "initialize": "InitializeRequest",
    "logging/setLevel": "SetLevelRequest",
    "ping": "PingRequest",
    "prompts/get": "GetPromptRequest",
    "prompts/list": "ListPromptsRequest",
    "resources/list": "ListResourcesRequest",
    "resources/read": "ReadResourceRequest",
    "resources/subscribe": "SubscribeRequest",
    "resources/templates/list": "ListResourceTemplatesRequest",
    "resources/unsubscribe": "UnsubscribeRequest",
    "tools/call": "CallToolRequest",
    "tools/list": "ListToolsRequest",
}

_CLIENT_REQUESTS_2026_07_28: _Models = {
    "completion/complete": "CompleteRequest",
    "prompts/get": "GetPromptRequest",
    "prompts/list": "ListPromptsRequest",
    "resources/list": "ListResourcesRequest",
    "resources/read": "ReadResourceRequest",
    "resources/templates/list": "ListResourceTemplatesRequest",
    "server/discover": "DiscoverRequest",
    "subscriptions/listen": "SubscriptionsListenRequest",
    "tools/call": "CallToolRequest",
    "tools/list": "ListToolsRequest",
}

_SERVER_REQUESTS_2024_11_05: _Models = {
    "ping": "PingRequest",
    "roots/list": "ListRootsRequest",
    "sampling/createMessage": "CreateMessageRequest",
}

_SERVER_REQUESTS_2025_06_18: _Models = {
    "elicitation/create": "ElicitRequest",
    "ping": "PingRequest",
    "roots/list": "ListRootsRequest",
    "sampling/createMessage": "CreateMessageRequest",
}

_CLIENT_NOTIFICATIONS_2024_11_05: _Models = {
    "notifications/cancelled": "CancelledNotification",
    "notifications/initialized": "InitializedNotification",
    "notifications/progress": "ProgressNotification",
    "notifications/roots/list_changed": "RootsListChangedNotification",
}

_CLIENT_NOTIFICATIONS_2026_07_28: _Models = {
    "notifications/cancelled": "CancelledNotification",
}

_SERVER_NOTIFICATIONS_2024_11_05: _Models = {
    "notifications/cancelled": "CancelledNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/progress": "ProgressNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
}

_SERVER_NOTIFICATIONS_2025_11_25: _Models = {
    "notifications/cancelled": "CancelledNotification",
    "notifications/elicitation/complete": "ElicitationCompleteNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/progress": "ProgressNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
}

_SERVER_NOTIFICATIONS_2026_07_28: _Models = {
    "notifications/cancelled": "CancelledNotification",
    "notifications/message": "LoggingMessageNotification",
    "notifications/progress": "ProgressNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/list_changed": "ResourceListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
}

_CLIENT_RESULTS_2024_11_05: _Models = {
    "ping": "Result",
    "roots/list": "ListRootsResult",
    "sampling/createMessage": "CreateMessageResult",
}

_CLIENT_RESULTS_2025_06_18: _Models = {
    "elicitation/create": "ElicitResult",
    "ping": "Result",
    "roots/list": "ListRootsResult",
    "sampling/createMessage": "CreateMessageResult",
}

_SERVER_RESULTS_2024_11_05: _Models = {
    "completion/complete": "CompleteResult",
    "initialize": "InitializeResult",
    "logging/setLevel": "Result",
    "ping": "Result",
    "prompts/get": "GetPromptResult",
    "prompts/list": "ListPromptsResult",
    "resources/list": "ListResourcesResult",
    "resources/read": "ReadResourceResult",
    "resources/subscribe": "Result",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/unsubscribe": "Result",
    "tools/call": "CallToolResult",
    "tools/list": "ListToolsResult",
}

_SERVER_RESULTS_2026_07_28: _Models = {
    "completion/complete": "CompleteResult",
    "prompts/get": ("GetPromptResult", "InputRequiredResult"),
    "prompts/list": "ListPromptsResult",
    "resources/list": "ListResourcesResult",
    "resources/read": ("ReadResourceResult", "InputRequiredResult"),
    "resources/templates/list": "ListResourceTemplatesResult",
    "server/discover": "DiscoverResult",
    "subscriptions/listen": "SubscriptionsListenResult",
    "tools/call": ("CallToolResult", "InputRequiredResult"),
    "tools/list": "ListToolsResult",
}

CLIENT_REQUESTS: _Surface = {
    Revision.V2024_11_05: _CLIENT_REQUESTS_2024_11_05,
    Revision.V2025_03_26: _CLIENT_REQUESTS_2024_11_05,
    Revision.V2025_06_18: _CLIENT_REQUESTS_2024_11_05,
    Revision.V2025_11_25: _CLIENT_REQUESTS_2024_11_05,
    Revision.V2026_07_28: _CLIENT_REQUESTS_2026_07_28,
}
"""The requests a client sends, per revision: method → model."""

SERVER_REQUESTS: _Surface = {
    Revision.V2024_11_05: _SERVER_REQUESTS_2024_11_05,
    Revision.V2025_03_26: _SERVER_REQUESTS_2024_11_05,
    Revision.V2025_06_18: _SERVER_REQUESTS_2025_06_18,
    Revision.V2025_11_25: _SERVER_REQUESTS_2025_06_18,
}
"""The requests a server sends, per revision: method → model."""

CLIENT_NOTIFICATIONS: _Surface = {
    Revision.V2024_11_05: _CLIENT_NOTIFICATIONS_2024_11_05,
    Revision.V2025_03_26: _CLIENT_NOTIFICATIONS_2024_11_05,
    Revision.V2025_06_18: _CLIENT_NOTIFICATIONS_2024_11_05,
    Revision.V2025_11_25: _CLIENT_NOTIFICATIONS_2024_11_05,
    Revision.V2026_07_28: _CLIENT_NOTIFICATIONS_2026_07_28,
}
"""The notifications a client sends, per revision: method → model."""

SERVER_NOTIFICATIONS: _Surface = {
    Revision.V2024_11_05: _SERVER_NOTIFICATIONS_2024_11_05,
    Revision.V2025_03_26: _SERVER_NOTIFICATIONS_2024_11_05,
    Revision.V2025_06_18: _SERVER_NOTIFICATIONS_2024_11_05,
    Revision.V2025_11_25: _SERVER_NOTIFICATIONS_2025_11_25,
    Revision.V2026_07_28: _SERVER_NOTIFICATIONS_2026_07_28,
}
"""The notifications a server sends, per revision: method → model."""

CLIENT_RESULTS: _Surface = {
    Revision.V2024_11_05: _CLIENT_RESULTS_2024_11_05,
    Revision.V2025_03_26: _CLIENT_RESULTS_2024_11_05,
    Revision.V2025_06_18: _CLIENT_RESULTS_2025_06_18,
    Revision.V2025_11_25: _CLIENT_RESULTS_2025_06_18,
}
"""The results a client sends, per revision: the request's method → model."""

SERVER_RESULTS: _Surface = {
    Revision.V2024_11_05: _SERVER_RESULTS_2024_11_05,
    Revision.V2025_03_26: _SERVER_RESULTS_2024_11_05,
    Revision.V2025_06_18: _SERVER_RESULTS_2024_11_05,
    Revision.V2025_11_25: _SERVER_RESULTS_2024_11_05,
    Revision.V2026_07_28: _SERVER_RESULTS_2026_07_28,
}
"""The results a server sends, per revision: the request's method → model."""
