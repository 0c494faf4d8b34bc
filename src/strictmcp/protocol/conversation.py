"""Both directions of one MCP session, checked message by message.

A :class:`Conversation` is what ties the protocol checks together: it learns the revision from
the ``initialize`` exchange (or, from 2026-07-28, from each request's own metadata), pairs
responses with requests, keeps the tools, prompts and client capabilities the session has
shown, and so can check a ``tools/call`` against the schema its tool was listed with, an
elicitation answer against the schema it was asked with, and a sampling result against the
request that offered tools. The capture validator and the proxy both drive one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..schema import Limits, to_pointer
from .elicitation import check_elicit_result, check_requested_schema
from .jsonrpc import Kind, Message, RequestTracker
from .methods import (
    Sender,
    check_create_task_result,
    check_notification,
    check_request,
    is_mcp_request,
)
from .methods import check_result as check_method_result
from .prompts import check_prompt_arguments
from .revisions import Revision
from .rules import Rule
from .sampling import check_create_message, check_create_message_result
from .tasks import (
    AUGMENTABLE,
    DEFAULT_MAX_TASKS,
    NAMES_A_TASK,
    TASK_METHODS,
    TaskBook,
    TaskRecord,
    augmentation_violations,
    check_task_message,
    declares_tasks,
    extension_declared,
    refused_task_call,
    task_augmented,
    task_id_of,
    unknown_task,
)
from .tool_calls import CallCheck, check_call
from .tool_calls import check_result as check_tool_result
from .tool_registry import ToolRegistry
from .tools import CheckedTool
from .violations import Severity, Violation, under
from .wire import declared_capabilities

Direction = Literal["c2s", "s2c"]
"""Who sent a message: the client (``c2s``) or the server (``s2c``)."""

# The revision a session is checked against when nothing in it says which: the newest one
# with an initialize handshake, the most common in traffic today.
ASSUMED_REVISION = Revision.V2025_11_25
_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
# For isinstance on hot paths: a decoded object is a dict, answered without the ABC's own hook
# (ten times slower); None is tested before, for the same reason.
_MAPPING = (dict, Mapping)
_V2025_11_25 = Revision.V2025_11_25
_TASKS_2026 = TASK_METHODS[Revision.V2026_07_28]
_TASK_STATUS = "notifications/tasks/status"
# A member the direct result of each request a 2025-11-25 task may answer always has.
_RESULT_KEY = {
    "tools/call": "content",
    "sampling/createMessage": "role",
    "elicitation/create": "action",
}


@dataclass(slots=True)
class _Pending:
    """What a request left behind for checking its response; never changed once made (not
    frozen only because a frozen dataclass costs three times as much to make, once a call)."""

    tool: CheckedTool | None = None
    elicitation: bool = False
    requested_schema: Any = None
    elicitation_mode: Literal["form", "url"] = "form"
    sampling_params: Mapping[str, Any] | None = None
    cursor: bool = False
    # From 2026-07-28 capabilities travel with each request, and its result is read by them.
    client_capabilities: Mapping[str, Any] | None = None
    # Tasks: the request asked for one (2025-11-25's ``task``, 2026-07-28's extension), or
    # names one (``tasks/*``: the task as it was when asked about, None when unknown).
    task_asked: bool = False
    method: str | None = None
    params: Mapping[str, Any] | None = None
    task: TaskRecord | None = None


# Most requests leave nothing behind: this one shared instance says so, and is only ever
# compared by identity (comparing by value costs more than the rest of remembering).
_NOTHING = _Pending()


class Conversation:
    """Checks every message of one session, in the order it was seen.

    ``revision`` fixes the revision; without it the session's own ``initialize`` exchange (or
    2026-07-28 request metadata) decides, and until then :data:`ASSUMED_REVISION` is used with
    one warning. ``strict`` refuses unknown methods and fields and undeclared tool arguments;
    ``portable_names`` applies the strict tool-name profile. Memory is bounded by
    ``max_tracked`` requests in flight per direction and as many remembered prompts and input
    requests. Not thread-safe: one conversation per session, driven by one task.
    """

    def __init__(
        self,
        revision: Revision | None = None,
        *,
        strict: bool = False,
        portable_names: bool = False,
        limits: Limits | None = None,
        max_tracked: int = 10_000,
        max_tasks: int = DEFAULT_MAX_TASKS,
    ) -> None:
        self.strict = strict
        self.call: CallCheck | None = None
        self.portable_names = portable_names
        self.limits = limits
        self._fixed = revision is not None
        self._revision = revision
        self._warned_assumed = False
        self._requests: dict[Direction, RequestTracker] = {
            "c2s": RequestTracker(max_tracked),
            "s2c": RequestTracker(max_tracked),
        }
        self._pending: dict[Direction, OrderedDict[int | str, _Pending]] = {
            "c2s": OrderedDict(),
            "s2c": OrderedDict(),
        }
        self._max_tracked = max_tracked
        self._registries: dict[Revision, ToolRegistry] = {}
        # The last result checked by its answer's digest, with the method and revision it
        # was checked for, and its violations: the same answer again is not checked again.
        self._result_checked: tuple[bytes, str, Revision, list[Violation]] | None = None
        self._prompts: OrderedDict[str, Mapping[str, Any]] = OrderedDict()
        # Requests each side cancelled: a response may already be on its way (the spec says
        # to ignore it), so it is not unmatched.
        self._cancelled: dict[Direction, OrderedDict[int | str, None]] = {
            "c2s": OrderedDict(),
            "s2c": OrderedDict(),
        }
        self._input_requests: OrderedDict[str, tuple[str, Mapping[str, Any]]] = OrderedDict()
        # The client's initialize: asked (and not refused), or answered: a second one is not
        # the same session any more.
        self._initializing = False
        self._client_capabilities: Mapping[str, Any] | None = None
        self._server_capabilities: Mapping[str, Any] | None = None
        # Tasks by the direction of the requests that created them: "c2s" are the server's.
        self._tasks: dict[Direction, TaskBook] = {
            "c2s": TaskBook(max_tasks),
            "s2c": TaskBook(max_tasks),
        }

    # --- what the session has shown so far ---------------------------------------------------

    @property
    def revision(self) -> Revision | None:
        """The revision the session has settled on, if it has."""
        return self._revision

    def tasks_open(self) -> int:
        """How many tasks the session remembers, both sides' together."""
        return sum(len(book) for book in self._tasks.values())

    @property
    def tools(self) -> ToolRegistry:
        """The tools listed so far, for the session's revision."""
        return self._registry(self._revision or ASSUMED_REVISION)

    def response_direction(self, message: Message) -> Direction | None:
        """Who sent a response, judged by which side has a request with its id in flight;
        None when neither or both do."""
        client, server = (message.id in self._requests[d] for d in ("c2s", "s2c"))
        if client != server:
            return "s2c" if client else "c2s"
        return None

    def fits(self, message: Message, direction: Direction) -> bool:
        """Whether a response, sent in ``direction``, is a valid result of the request it
        would answer (a hint for captures that do not say who sent what)."""
        request = self.request_answered_by(message, direction)
        if request is None or request.method is None:
            return False
        if message.kind == "error":
            return True
        sender: Sender = "client" if direction == "c2s" else "server"
        revision = self._revision or ASSUMED_REVISION
        return not check_method_result(request.method, message.result, revision, sender)

    def task(self, requestor: Direction, task_id: str | None) -> TaskRecord | None:
        """The task ``task_id`` created for a request sent in ``requestor``'s direction
        (``"c2s"``: the server's tasks), unless unknown, expired or forgotten."""
        return self._tasks[requestor].get(task_id)

    def request_answered_by(self, message: Message, direction: Direction) -> Message | None:
        """The request in flight that a response sent in ``direction`` would answer."""
        if message.id is None:
            return None
        return self._requests["s2c" if direction == "c2s" else "c2s"].get(message.id)

    def confusable(self, message: Message, direction: Direction) -> list[int | str]:
        """The ids of the requests in flight that a response sent in ``direction`` does not
        answer but some peer could read it as answering (``"7"`` for 7; see
        :func:`~strictmcp.protocol.jsonrpc.id_readings`)."""
        if message.id is None:
            return []
        return self._requests["s2c" if direction == "c2s" else "c2s"].confusable(message.id)

    # --- checking ----------------------------------------------------------------------------

    def observe(
        self,
        message: Message,
        direction: Direction,
        *,
        size: int | None = None,
        digest: bytes | None = None,
    ) -> list[Violation]:
        """Check one message sent in ``direction`` and learn what it says about the session;
        its violations.

        ``size`` is the length of the JSON text the message came in, handed to the schema
        engine so it need not measure tool arguments again. ``digest`` is that text's
        :func:`~strictmcp.protocol.answer_digest`, when the caller took it: a ``tools/list``
        answer identical to the last one reuses its tools' check (:class:`ToolRegistry`).
        A ``tools/call`` is checked once, here: the verdict is :attr:`call` until the next
        message is observed (its violations are among those returned too), for a caller that
        answers refused calls itself.
        """
        sender: Sender = "client" if direction == "c2s" else "server"
        violations: list[Violation] = []
        self.call = None
        if message.kind == "request":
            duplicate = self._requests[direction].sent(message)
            violations += duplicate
            if message.method == "initialize" and direction == "c2s" and not duplicate:
                if self._initializing:
                    violations.append(
                        Violation(
                            Rule.ALREADY_INITIALIZED,
                            "the session was initialized already: a new one starts anew",
                        )
                    )
                self._initializing = True
            revision = self._revision_of(message, violations)
            if revision.at_least(Revision.V2026_07_28) and message.method in _TASKS_2026:
                violations += self._task_request(message, direction)
            else:
                violations += check_request(message, revision, sender, strict=self.strict)
            # A duplicate id keeps the first request's expectations: the response is paired
            # with that one.
            self._request(message, direction, revision, size, violations, remember=not duplicate)
        elif message.kind == "notification":
            revision = self._revision_of(message, violations)
            if message.method == _TASK_STATUS:
                violations += self._task_status(message, direction, revision)
            else:
                violations += check_notification(message, revision, sender, strict=self.strict)
            if message.method == "notifications/tools/list_changed" and direction == "s2c":
                self._registry(revision).mark_stale()
            elif message.method == "notifications/cancelled" and message.params:
                self._forget(message.params.get("requestId"), direction)
        else:
            answers: Direction = "s2c" if direction == "c2s" else "c2s"
            request, unmatched = self._requests[answers].answered(message)
            if unmatched and message.id is not None and message.id in self._cancelled[answers]:
                del self._cancelled[answers][message.id]
                unmatched = []
            violations += unmatched
            if request is None or request.id is None:
                return violations
            pending = self._pending[answers].pop(request.id, _NOTHING)
            if request.method == "initialize" and answers == "c2s" and message.kind == "error":
                self._initializing = False  # refused: the client may try again
            known = is_mcp_request(request.method or "")
            if request.method is not None and message.kind == "response" and known:
                # The initialize result settles the revision; other results are read by the
                # revision their request was made under.
                said = message if request.method == "initialize" else request
                revision = self._revision_of(said, violations)
                task = self._task_answer(request, message, pending, answers, revision)
                if task is not None:
                    violations += task
                else:
                    violations += self._checked_result(
                        request.method, message.result, revision, sender, digest
                    )
                    violations += self._result(request, message, pending, size, digest)
        return violations

    def _checked_result(
        self, method: str, result: Any, revision: Revision, sender: Sender, digest: bytes | None
    ) -> list[Violation]:
        """The violations of ``result`` against ``method``'s result schema; an answer with the
        same ``digest`` as the last one checked (the same text but for its id) takes its."""
        kept = self._result_checked
        if kept is not None and digest == kept[0] and (method, revision) == (kept[1], kept[2]):
            return list(kept[3])
        found = check_method_result(
            method, result, revision, sender, strict=self.strict, pointer="/result"
        )
        if digest is not None:
            self._result_checked = (digest, method, revision, list(found))
        return found

    # --- the revision ------------------------------------------------------------------------

    def _revision_of(self, message: Message, violations: list[Violation]) -> Revision:
        """The revision to check ``message`` against, learning it from the message if it says."""
        declared = _declared_revision(message)
        if declared is not None and not self._fixed:
            # Said is said: an unknown version is its own warning, not "nothing said".
            self._warned_assumed = True
            try:
                self._revision = Revision.parse(declared)
            except ValueError:
                violations.append(
                    Violation(
                        Rule.UNKNOWN_REVISION,
                        "the protocol version declared here is not a revision strictmcp "
                        f"knows; checking as {(self._revision or ASSUMED_REVISION).value}",
                        _version_pointer(message),
                        severity=Severity.WARNING,
                    )
                )
        if self._revision is not None:
            return self._revision
        if not self._warned_assumed:
            self._warned_assumed = True
            violations.append(
                Violation(
                    Rule.UNKNOWN_REVISION,
                    "the session has not said which MCP revision it speaks (no initialize "
                    f"exchange seen); checking as {ASSUMED_REVISION.value}",
                    severity=Severity.WARNING,
                )
            )
        return ASSUMED_REVISION

    def _registry(self, revision: Revision) -> ToolRegistry:
        if revision not in self._registries:
            self._registries[revision] = ToolRegistry(
                revision, portable=self.portable_names, limits=self.limits
            )
        return self._registries[revision]

    # --- requests ----------------------------------------------------------------------------

    def _request(
        self,
        message: Message,
        direction: Direction,
        revision: Revision,
        size: int | None,
        violations: list[Violation],
        *,
        remember: bool,
    ) -> None:
        params = message.params or {}
        method = message.method
        pending = _NOTHING
        asked = self._task_asked(message, direction, revision, violations)
        if method in TASK_METHODS.get(revision, ()) and method in NAMES_A_TASK:
            pending = self._naming(params, direction, revision, violations)
        if direction == "c2s":
            meta = params.get("_meta")
            capabilities = None  # this request's own (2026-07-28)
            if method == "initialize" and isinstance(params.get("capabilities"), Mapping):
                self._client_capabilities = params["capabilities"]
            elif (
                meta is not None
                and isinstance(meta, _MAPPING)
                and isinstance(meta.get(_META_CAPABILITIES), Mapping)
            ):
                capabilities = self._client_capabilities = meta[_META_CAPABILITIES]
                if method != "tools/call":  # a call's pending entry is made whole below
                    pending = replace(pending, client_capabilities=capabilities)
            violations += self._input_responses(params, revision)
            if method == "tools/call":
                check = check_call(
                    self._registry(revision), params, strict=self.strict, json_size=size
                )
                if (
                    check.allowed
                    and check.tool is not None
                    and revision is _V2025_11_25
                    and declares_tasks("tools/call", self._server_capabilities)
                ):
                    refused = refused_task_call(params["name"], check.tool.definition, asked)
                    if refused is not None:
                        violation, error = refused
                        check = CallCheck(
                            (*check.violations, violation), jsonrpc_error=error, tool=check.tool
                        )
                self.call = check
                violations += check.violations
                if check.tool is not None or capabilities is not None or asked:
                    pending = _Pending(
                        tool=check.tool,
                        client_capabilities=capabilities,
                        task_asked=asked or extension_declared(capabilities),
                        method=method,
                        params=params,
                    )
            elif method == "tools/list" and params.get("cursor") is not None:
                pending = replace(pending, cursor=True)
            elif method == "prompts/get" and isinstance(params.get("name"), str):
                prompt = self._prompts.get(params["name"])
                if prompt is not None:
                    violations += check_prompt_arguments(prompt, params.get("arguments"))
        elif method == "elicitation/create" and revision.has_elicitation:
            mode = _elicitation_mode(params)
            if mode == "form":
                violations += check_requested_schema(params.get("requestedSchema"), revision)
            pending = _Pending(
                elicitation=True,
                requested_schema=params.get("requestedSchema"),
                elicitation_mode=mode,
                task_asked=asked,
                method=method,
                params=params,
            )
        elif method == "sampling/createMessage":
            violations += check_create_message(params, revision, self._client_capabilities)
            pending = _Pending(
                sampling_params=params, task_asked=asked, method=method, params=params
            )
        if remember and pending is not _NOTHING and message.id is not None:
            _remember(self._pending[direction], message.id, pending, self._max_tracked)

    # --- tasks (tasks.py) ------------------------------------------------------------------

    def _task_asked(
        self,
        message: Message,
        direction: Direction,
        revision: Revision,
        violations: list[Violation],
    ) -> bool:
        """Whether a 2025-11-25 request asks for a task, checked against the receiver's
        capabilities (2026-07-28 asks by declaring the extension instead)."""
        params = message.params or {}
        if not task_augmented(message.method, params, revision):
            return False
        receiver = self._server_capabilities if direction == "c2s" else self._client_capabilities
        assert message.method is not None  # a request
        violations += augmentation_violations(message.method, receiver)
        return True

    def _naming(
        self,
        params: Mapping[str, Any],
        direction: Direction,
        revision: Revision,
        violations: list[Violation],
    ) -> _Pending:
        """A ``tasks/*`` request naming a task: an unknown one is reported (its answers
        cannot be checked); a known one is kept with the request, for its answer."""
        task_id = task_id_of(params)
        if task_id is None:
            return _NOTHING  # its shape check says so
        capabilities = None
        if revision.at_least(Revision.V2026_07_28):
            capabilities = declared_capabilities(params)
            if not extension_declared(capabilities):
                return _NOTHING  # refused by the server before any task is looked up
        record = self._tasks[direction].get(task_id)
        if record is None:
            violations.append(unknown_task("/params/taskId"))
            return _NOTHING
        return _Pending(task=record, client_capabilities=capabilities)

    def _task_request(self, message: Message, direction: Direction) -> list[Violation]:
        """A 2026-07-28 ``tasks/*`` request: its params, and the extension declared with it
        (a request without it is answered -32021 by the server)."""
        params = message.params
        method = message.method or ""
        shape = "tasks/update params" if method == "tasks/update" else "params"
        found = check_task_message(
            shape,
            params if params is not None else {},
            Rule.INVALID_PARAMS,
            "/params",
            strict=self.strict,
        )
        if direction != "c2s":
            found.append(
                Violation(Rule.WRONG_DIRECTION, f"{method} is sent by the client", "/method")
            )
        elif not extension_declared(declared_capabilities(params)):
            found.append(
                Violation(
                    Rule.TASK_NOT_NEGOTIATED,
                    f"{method} needs the tasks extension declared in the request's own "
                    "client capabilities",
                    "/params/_meta",
                )
            )
        return found

    def _task_status(
        self, message: Message, direction: Direction, revision: Revision
    ) -> list[Violation]:
        """``notifications/tasks/status``: its shape, the transition, and from 2026-07-28 a
        final result inline, checked as a direct one would be."""
        sender: Sender = "client" if direction == "c2s" else "server"
        params = message.params or {}
        requestor: Direction = "s2c" if direction == "c2s" else "c2s"
        task_id = task_id_of(params)
        if not revision.at_least(Revision.V2026_07_28):
            found = check_notification(message, revision, sender, strict=self.strict)
            if task_id is not None:
                found += self._tasks[requestor].moved(task_id, params.get("status"), "/params")
            return found
        found = check_task_message(
            _TASK_STATUS, params, Rule.INVALID_NOTIFICATION, "/params", strict=self.strict
        )
        if direction != "s2c":
            found.append(
                Violation(Rule.WRONG_DIRECTION, f"{_TASK_STATUS} is sent by the server", "/method")
            )
        record = self._tasks[requestor].get(task_id)
        if record is None:
            if "result" in params:
                found.append(unknown_task("/params/result"))
            return found
        found += self._tasks[requestor].moved(task_id or "", params.get("status"), "/params")
        return found + self._inline(record, params, revision, "/params")

    def _task_answer(
        self,
        request: Message,
        response: Message,
        pending: _Pending,
        requestor: Direction,
        revision: Revision,
    ) -> list[Violation] | None:
        """The checks of a response that creates a task or answers a ``tasks/*`` request,
        or None for any other response (checked the usual way)."""
        result = response.result
        method = request.method or ""
        if not isinstance(result, _MAPPING):
            return None
        if revision.at_least(Revision.V2026_07_28):
            if method in _TASKS_2026:
                return self._task_result_2026(method, result, pending, requestor, revision)
            if result.get("resultType") != "task":
                return None
            if method != "tools/call" or not pending.task_asked:
                return [_not_requested(method)]
            found = check_task_message(
                "CreateTaskResult", result, Rule.INVALID_RESULT, "/result", strict=self.strict
            )
            self._created(result, pending, requestor)
            return found
        if method in ("tasks/get", "tasks/cancel") and pending.task is not None:
            task_id = task_id_of(result)
            found = check_method_result(
                method, result, revision, _sender(requestor), strict=self.strict, pointer="/result"
            )
            if task_id is not None:
                found += self._tasks[requestor].moved(task_id, result.get("status"), "/result")
            return found
        if method == "tasks/result":
            found = check_method_result(
                method, result, revision, _sender(requestor), strict=self.strict, pointer="/result"
            )
            if pending.task is None:
                return [*found, unknown_task("/result")]
            return found + self._payload(pending.task, result, revision, "/result")
        if method not in AUGMENTABLE or not isinstance(result.get("task"), _MAPPING):
            return None
        if not pending.task_asked:
            if _RESULT_KEY[method] in result:
                return None  # a direct result with a stray member: its own check says so
            return [_not_requested(method)]
        found = check_create_task_result(result, revision, strict=self.strict, pointer="/result")
        task = result.get("task")
        if isinstance(task, _MAPPING):
            self._created(task, pending, requestor)
        return found

    def _task_result_2026(
        self,
        method: str,
        result: Mapping[str, Any],
        pending: _Pending,
        requestor: Direction,
        revision: Revision,
    ) -> list[Violation]:
        found = check_task_message(
            method, result, Rule.INVALID_RESULT, "/result", strict=self.strict
        )
        if method != "tasks/get":
            return found
        record = pending.task
        if record is None:
            return [*found, unknown_task("/result")] if "result" in result else found
        task_id = task_id_of(result)
        if task_id is not None:
            found += self._tasks[requestor].moved(task_id, result.get("status"), "/result")
        capabilities = pending.client_capabilities or self._client_capabilities
        if result.get("status") == "input_required":
            found += self._input_requests_of(result, revision, capabilities)
        return found + self._inline(record, result, revision, "/result")

    def _inline(
        self, record: TaskRecord, task: Mapping[str, Any], revision: Revision, pointer: str
    ) -> list[Violation]:
        """A 2026-07-28 task's final result, carried inline, checked as a direct one."""
        payload = task.get("result")
        if not isinstance(payload, _MAPPING):
            return []
        if "resultType" not in payload:  # inline, the result's own kind goes without saying
            payload = {**payload, "resultType": "complete"}
        return self._payload(record, payload, revision, f"{pointer}/result")

    def _payload(
        self, record: TaskRecord, payload: Mapping[str, Any], revision: Revision, pointer: str
    ) -> list[Violation]:
        """A task's final result, checked as the result of the request that made it."""
        sender: Sender = "server" if record.method == "tools/call" else "client"
        found = check_method_result(
            record.method, payload, revision, sender, strict=self.strict, pointer=pointer
        )
        if record.method == "tools/call" and record.name is not None:
            registry = self._registry(revision)
            checked = check_tool_result(registry, record.name, payload, tool=record.tool)
            return found + under(pointer, checked)
        return found + _check_answer(record.method, record.params, payload, revision, pointer)

    def _created(self, task: Mapping[str, Any], pending: _Pending, requestor: Direction) -> None:
        params = pending.params if pending.params is not None else {}
        name = params.get("name") if pending.method == "tools/call" else None
        record = TaskRecord(
            method=pending.method or "",
            params=params,
            name=name if isinstance(name, str) else None,
            tool=pending.tool,
            status=str(task.get("status")),
            deadline=None,
        )
        self._tasks[requestor].created(task, record)

    def _forget(self, request_id: Any, direction: Direction) -> None:
        if isinstance(request_id, (int, str)) and request_id in self._requests[direction]:
            self._requests[direction].discard(request_id)
            self._pending[direction].pop(request_id, None)
            _remember(self._cancelled[direction], request_id, None, self._max_tracked)

    # --- results -----------------------------------------------------------------------------

    def _result(
        self,
        request: Message,
        response: Message,
        pending: _Pending,
        size: int | None,
        digest: bytes | None = None,
    ) -> list[Violation]:
        result = response.result if isinstance(response.result, _MAPPING) else {}
        revision = self._revision or ASSUMED_REVISION
        method = request.method
        if method == "tools/list":
            registry = self._registry(revision)
            # An answer to a request without a cursor starts a fresh listing.
            if pending.cursor:
                found = registry.add_page(result)
            else:
                found = registry.update(result, digest=digest)
            return under("/result", found)
        if method == "prompts/list":
            self._remember_prompts(result.get("prompts"))
        if method == "initialize" and isinstance(result.get("capabilities"), _MAPPING):
            self._server_capabilities = result["capabilities"]
        if result.get("resultType") == "input_required":
            capabilities = pending.client_capabilities or self._client_capabilities
            return self._input_requests_of(result, revision, capabilities)
        if method == "tools/call" and request.params is not None:
            name = request.params.get("name")
            if isinstance(name, str) and pending.tool is not None:
                found = check_tool_result(
                    self._registry(revision), name, result, json_size=size, tool=pending.tool
                )
                return under("/result", found)
        if method == "elicitation/create" and pending.elicitation:
            return check_elicit_result(
                pending.requested_schema, result, revision, mode=pending.elicitation_mode
            )
        if method == "sampling/createMessage" and pending.sampling_params is not None:
            return check_create_message_result(result, pending.sampling_params, revision)
        return []

    def _remember_prompts(self, prompts: Any) -> None:
        if not isinstance(prompts, list):
            return
        for prompt in prompts:
            if isinstance(prompt, Mapping) and isinstance(prompt.get("name"), str):
                _remember(self._prompts, prompt["name"], prompt, self._max_tracked)

    # --- 2026-07-28: input requests travel inside results, answers inside the next request ----

    def _input_requests_of(
        self,
        result: Mapping[str, Any],
        revision: Revision,
        capabilities: Mapping[str, Any] | None,
    ) -> list[Violation]:
        requests = result.get("inputRequests")
        if not isinstance(requests, Mapping):
            return []
        violations: list[Violation] = []
        for key, request in requests.items():
            if not isinstance(request, Mapping) or not isinstance(request.get("params"), Mapping):
                continue
            method, params = request.get("method"), request["params"]
            at = "/result" + to_pointer(["inputRequests", key, "params"])
            if method == "elicitation/create":
                if _elicitation_mode(params) == "form":
                    violations += check_requested_schema(
                        params.get("requestedSchema"), revision, at=at + "/requestedSchema"
                    )
            elif method == "sampling/createMessage":
                violations += check_create_message(params, revision, capabilities, at=at)
            else:
                continue
            _remember(self._input_requests, key, (method, params), self._max_tracked)
        return violations

    def _input_responses(self, params: Mapping[str, Any], revision: Revision) -> list[Violation]:
        responses = params.get("inputResponses")
        if responses is None or not isinstance(responses, _MAPPING):
            return []
        violations: list[Violation] = []
        for key, response in responses.items():
            asked = self._input_requests.pop(key, None)
            if asked is None or not isinstance(response, Mapping):
                continue
            method, request_params = asked
            at = "/params" + to_pointer(["inputResponses", key])
            violations += _check_answer(method, request_params, response, revision, at)
        return violations


def _sender(requestor: Direction) -> Sender:
    """Who answers a request sent in ``requestor``'s direction."""
    return "server" if requestor == "c2s" else "client"


def _not_requested(method: str) -> Violation:
    return Violation(
        Rule.TASK_NOT_REQUESTED,
        f"a task was created for a {method} request that did not ask for one",
        "/result",
    )


def _check_answer(
    method: str,
    request_params: Mapping[str, Any],
    answer: Mapping[str, Any],
    revision: Revision,
    at: str,
) -> list[Violation]:
    """The client's answer (at ``at``) to a server's elicitation or sampling request, against
    the request's params: given as a task's result, or in a later request's inputResponses."""
    if method == "elicitation/create":
        return check_elicit_result(
            request_params.get("requestedSchema"),
            answer,
            revision,
            mode=_elicitation_mode(request_params),
            at=at,
        )
    if method == "sampling/createMessage":
        return check_create_message_result(answer, request_params, revision, at=at)
    return []


def _elicitation_mode(params: Mapping[str, Any]) -> Literal["form", "url"]:
    return "url" if params.get("mode") == "url" else "form"


def _version_pointer(message: Message) -> str:
    if message.kind == "response":
        return "/result/protocolVersion"
    if message.method == "initialize":
        return "/params/protocolVersion"
    return "/params" + to_pointer(["_meta", _META_VERSION])


def _declared_revision(message: Message) -> str | None:
    """The protocol version a message itself names, if it is one that names one."""
    if message.kind == "request" and message.method == "initialize" and message.params:
        version = message.params.get("protocolVersion")
        return version if isinstance(version, str) else None
    if message.kind == "response" and isinstance(message.result, _MAPPING):
        version = message.result.get("protocolVersion")
        if isinstance(version, str) and "serverInfo" in message.result:
            return version
        return None
    meta = (message.params or {}).get("_meta")
    if meta is not None and isinstance(meta, _MAPPING) and isinstance(meta.get(_META_VERSION), str):
        return str(meta[_META_VERSION])
    return None


def own_message(obj: dict[str, Any]) -> Message:
    """A message a caller made itself (a proxy's own answer), as :func:`decode` would read it,
    for :meth:`Conversation.observe`; ``obj`` must be a valid envelope, which is not checked."""
    kind: Kind
    if "method" in obj:
        kind = "request" if "id" in obj else "notification"
    else:
        kind = "error" if "error" in obj else "response"
    return Message(
        kind,
        obj.get("id"),
        obj.get("method"),
        obj.get("params"),
        obj.get("result"),
        obj.get("error"),
        obj,
    )


def _remember(store: OrderedDict[Any, Any], key: Any, value: Any, cap: int) -> None:
    store[key] = value
    store.move_to_end(key)
    while len(store) > cap:
        store.popitem(last=False)
