"""The check itself: list the tools, lint them, run every case, restart a server that died.

Without ``call`` no tool runs: each case is judged by the local engine and, when the server
offers the Validation Protocol's ``validate`` tool, by that dry run too. With ``call`` each
case is a real ``tools/call``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..connect.client import ClientError, McpClient, Outcome, Success, TransportFailure
from ..guards.validation import CAPABILITY, PREFERRED_NAME
from ..lint.model import LintRule
from ..policy import Policy
from ..protocol import ToolRegistry, check_result
from ..protocol.tasks import declares_tasks, task_support
from .cases import Case
from .generate import TIME_BUDGET
from .judge import (
    Judged,
    combine,
    judge_call,
    judge_fault_call,
    judge_fault_validate,
    judge_validate,
)
from .lint_bridge import lint
from .plan import plan_tool
from .plant import plant
from .results import CaseResult, CheckReport, Status, ToolReport

_RESULTS_KEPT = 5


class Progress(Protocol):
    """Told about each tool's cases as they run (a progress bar, or plain lines)."""

    def start(self, tool: str, total: int) -> None:
        """``total`` cases of ``tool`` are about to run."""

    def advance(self) -> None:
        """One more case has run."""

    def finish(self) -> None:
        """The tool's cases are done."""


@dataclass(frozen=True)
class CheckOptions:
    """What to run: ``per_kind`` cases of each kind per tool, from ``seed``.

    ``tools`` limits the run, and lint's findings, to those names (all tools when empty);
    ``call`` really calls them; ``policy`` goes to lint, its guards and deep checks get
    planted faults (:mod:`strictmcp.check.plant`), and the tools its top-level ``tools`` and
    ``exclude_tools`` do not offer are neither checked nor linted. ``lint_rules`` are the
    rules lint runs (``strictmcp lint``'s default selection when None). ``budget`` is the
    seconds spent generating each tool's valid inputs.
    """

    per_kind: int = 20
    seed: int = 0
    call: bool = False
    tools: tuple[str, ...] = ()
    policy: Policy | None = None
    lint_rules: tuple[LintRule, ...] | None = None
    budget: float = TIME_BUDGET


async def run_check(
    client: McpClient,
    options: CheckOptions,
    report: CheckReport,
    progress: Progress | None = None,
) -> CheckReport:
    """Fill ``report`` (its target and mode already set) by checking the server behind
    ``client``. :class:`ClientError` when the tools cannot even be listed."""
    tools = await client.list_tools()
    report.revision = client.revision.value
    report.server = {
        key: client.server_info[key]
        for key in ("name", "title", "version")
        if isinstance(client.server_info.get(key), str)
    }
    registry = ToolRegistry(client.revision)
    registry.update({"tools": tools})
    report.validate_tool = validate_tool_of(client.capabilities, tools)
    names = [name for name in registry.names() if name != report.validate_tool]
    if options.policy is not None:
        # What the policy does not offer no client can call: nothing of it to check.
        offer = options.policy.offer
        refused = [name for name in options.tools if not offer.offers(name)]
        if refused:
            raise ClientError(f"the policy does not offer the tool {', '.join(refused)}")
        names = [name for name in names if offer.offers(name)]
    if options.tools:
        missing = [name for name in options.tools if name not in names]
        if missing:
            raise ClientError(f"the server lists no tool named {', '.join(missing)}")
        names = [name for name in names if name in options.tools]
    runner = _Runner(client, registry, options, report)
    for name in names:
        tool = registry.get(name)
        assert tool is not None
        plan = plan_tool(tool, per_kind=options.per_kind, seed=options.seed, budget=options.budget)
        cases, notes = list(plan.cases), list(plan.notes)
        base = next((case.arguments for case in cases if case.expect == "valid"), None)
        if options.policy is not None and base is not None:
            planted, unplanted = plant(tool, options.policy, base)
            cases += planted
            notes += unplanted
        tool_report = ToolReport(name, notes=notes)
        report.tools.append(tool_report)
        if progress is not None:
            progress.start(name, len(cases))
        for index, case in enumerate(cases, start=1):
            tool_report.cases.append(await runner.run(name, index, case))
            if progress is not None:
                progress.advance()
        if progress is not None:
            progress.finish()
    report.restarts = client.restarts
    # The Validation Protocol fixes the validate tool's schema (its `arguments` are any tool's,
    # so an open object): nothing lint could say of it is the server author's to act on.
    linted = [tool for tool in tools if tool.get("name") != report.validate_tool]
    if options.policy is not None:
        linted = options.policy.offer.listed(linted)
    report.lint = lint(
        linted,
        client.revision,
        options.policy,
        runner.results,
        rules=options.lint_rules,
        only=options.tools,
    )
    return report


def validate_tool_of(capabilities: Mapping[str, Any], tools: list[dict[str, Any]]) -> str | None:
    """The name of the server's Validation Protocol tool, if it has one.

    The name advertised under ``capabilities.experimental.toolValidation`` wins; otherwise a
    tool called ``validate`` that takes ``tool`` and ``arguments``.
    """
    listed = {tool.get("name"): tool for tool in tools}
    experimental = capabilities.get("experimental")
    entry = experimental.get(CAPABILITY) if isinstance(experimental, Mapping) else None
    named = entry.get("tool") if isinstance(entry, Mapping) else None
    if isinstance(named, str) and named in listed:
        return named
    candidate = listed.get(PREFERRED_NAME)
    schema = candidate.get("inputSchema") if candidate is not None else None
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if isinstance(properties, Mapping) and {"tool", "arguments"} <= set(properties):
        return PREFERRED_NAME
    return None


class _Runner:
    """Runs cases one at a time on one connection, restarting the server after a crash."""

    def __init__(
        self,
        client: McpClient,
        registry: ToolRegistry,
        options: CheckOptions,
        report: CheckReport,
    ) -> None:
        self.client = client
        self.registry = registry
        self.options = options
        self.report = report
        # A few results per tool, for lint's output rules.
        self.results: dict[str, list[dict[str, Any]]] = {}

    def _schema_guarded(self, name: str) -> tuple[str, ...]:
        """The arguments of tool ``name`` the policy's schema guards check."""
        policy = self.options.policy
        if policy is None:
            return ()
        return tuple(
            rule.argument
            for rule in policy.rules
            if rule.applies_to(name) and rule.guard.kind == "schema"
        )

    async def run(self, name: str, index: int, case: Case) -> CaseResult:
        tool = self.registry.get(name)
        assert tool is not None
        assert tool.input_validator is not None
        local_valid = tool.input_validator.validate(case.arguments).valid
        if self.report.aborted:
            return CaseResult(index, case, local_valid, "skip", ("not run: the run was aborted",))
        if case.fault is not None:
            return await self._run_fault(name, index, case, local_valid)
        verdicts: list[tuple[Status, list[str]]] = []
        if self.report.validate_tool is not None:
            request = {"tool": name, "arguments": case.arguments}
            outcome = await self.client.call_tool(self.report.validate_tool, request)
            is_object = isinstance(case.arguments, dict)
            verdicts.append(
                judge_validate(
                    case.expect,
                    outcome,
                    arguments_object=is_object,
                    schema_guarded=self._schema_guarded(name),
                )
            )
            await self._recover(outcome)
        if self.options.call and not self.report.aborted:
            # A tool that runs only as a task is called as one; its final result is judged.
            as_task = task_support(tool.definition) == "required" and declares_tasks(
                "tools/call", self.client.capabilities
            )
            outcome = await self.client.call_tool(name, case.arguments, as_task=as_task)
            output = (
                check_result(self.registry, name, outcome.result, tool=tool)
                if isinstance(outcome, Success)
                else []
            )
            verdicts.append(judge_call(case.expect, outcome, output))
            if isinstance(outcome, Success) and case.expect == "valid":
                kept = self.results.setdefault(name, [])
                if len(kept) < _RESULTS_KEPT:
                    kept.append(outcome.result)
            await self._recover(outcome)
        if not verdicts:
            return CaseResult(index, case, local_valid, "skip", ("judged locally only",))
        status, messages = combine(*verdicts)
        return CaseResult(index, case, local_valid, status, tuple(messages))

    async def _run_fault(self, name: str, index: int, case: Case, local_valid: bool) -> CaseResult:
        """A planted fault: asked of validate, and with ``call`` really sent."""
        fault = case.fault
        assert fault is not None
        verdicts: list[Judged] = []
        if self.report.validate_tool is not None:
            request = {"tool": name, "arguments": case.arguments}
            outcome = await self.client.call_tool(self.report.validate_tool, request)
            verdicts.append(judge_fault_validate(fault, case.pointer, outcome))
            await self._recover(outcome)
        if self.options.call and not self.report.aborted:
            outcome = await self.client.call_tool(name, case.arguments)
            verdicts.append(judge_fault_call(fault, case.pointer, outcome))
            await self._recover(outcome)
        if not verdicts:
            return CaseResult(index, case, local_valid, "skip", ("judged locally only",))
        status, messages = combine(*((status, messages) for status, messages, _ in verdicts))
        caught = tuple(dict.fromkeys(code for _, _, codes in verdicts for code in codes))
        return CaseResult(index, case, local_valid, status, tuple(messages), caught)

    async def _recover(self, outcome: Outcome) -> None:
        # A timed-out server may be stuck for good: both kinds of failure get a fresh one.
        if not isinstance(outcome, TransportFailure):
            return
        try:
            await self.client.restart()
        except ClientError as error:
            self.report.aborted = f"the server could not be restarted: {error}"
