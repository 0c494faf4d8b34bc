"""strictmcp's own counters: plain integers and fixed-bucket histograms, counted on the hot
path and read off it (the Prometheus text of ``/metrics``, the OTLP exporter).

Counting costs a dictionary update per message: no OpenTelemetry object is touched per
message, and with metrics off nothing here exists. Every label value a peer could choose is
bounded: a tool is named only when a server listed it (:meth:`Metrics.tool_label`, else
``_OTHER``), a method only when MCP defines it, and past :data:`MAX_SERIES` label sets a
family counts the rest under ``_OTHER``, so that no client can grow what is kept.

The names follow OpenTelemetry's MCP semantic conventions (``mcp.server.operation.duration``
and the others, seconds, the conventions' buckets); strictmcp's own are ``strictmcp.*``
(docs/observability.md lists every one).
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""The bucket bounds, in seconds, the MCP semantic conventions give every duration."""

OVERHEAD_BUCKETS = (5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0)
"""The bucket bounds, in microseconds, of ``strictmcp.proxy.overhead``: what the proxy adds
lies below the conventions' first bucket (10 ms), where their buckets cannot tell it apart."""

OTHER = "_OTHER"
"""The label value of everything not named: a tool no server listed, a method MCP does not
define, a label set past :data:`MAX_SERIES`."""

MAX_SERIES = 2000
"""The label sets a family keeps; past it, new ones are counted under ``_OTHER``."""

MAX_TOOLS = 10_000
"""The tool names kept as label values (those servers listed); past it, ``_OTHER``."""

Labels = tuple[str, ...]

# The operation label sets whose slots are kept found (:meth:`Metrics.operation`): each
# family keeps at most MAX_SERIES label sets, and an error code a server chooses may vary.
_MAX_OPERATIONS = 2 * MAX_SERIES


@dataclass
class Family:
    """One metric: its OpenTelemetry ``name``, ``unit`` (UCUM), ``kind`` (``counter``,
    ``histogram`` or ``gauge``), ``help`` text, the OpenTelemetry names of its ``labels``, and
    for a histogram its ``bounds``. A gauge is read when exported (``read``)."""

    name: str
    unit: str
    kind: str
    help: str
    labels: tuple[str, ...]
    bounds: tuple[float, ...] = ()
    read: Callable[[], Iterable[tuple[Labels, float]]] | None = None
    # A counter's series: labels -> count. A histogram's: labels -> [bucket counts..., sum],
    # the counts not cumulative (one bisect and one increment per value).
    series: dict[Labels, list[float]] = field(default_factory=dict)

    def slot(self, labels: Labels) -> list[float]:
        """The values kept under ``labels`` (past :data:`MAX_SERIES` label sets, under
        ``_OTHER``), made on first use: a caller that counts under the same labels again may
        keep it and count into it (:func:`put`) without looking it up each time."""
        slot = self.series.get(labels)
        if slot is None:
            if len(self.series) >= MAX_SERIES:
                labels = (OTHER,) * len(self.labels)
                slot = self.series.get(labels)
                if slot is not None:
                    return slot
            slot = [0.0] * (len(self.bounds) + 2 if self.kind == "histogram" else 1)
            self.series[labels] = slot
        return slot

    def add(self, labels: Labels, amount: float = 1) -> None:
        """Count ``amount`` more under ``labels``."""
        self.slot(labels)[0] += amount

    def observe(self, labels: Labels, value: float) -> None:
        """Put ``value`` in its bucket under ``labels``."""
        put(self.slot(labels), self.bounds, value)

    def points(self) -> Iterator[tuple[Labels, list[float]]]:
        """Each label set and its values (a gauge's read now), in the order first seen."""
        if self.read is not None:
            for labels, value in self.read():
                yield labels, [value]
            return
        yield from list(self.series.items())

    def summed(self, others: Sequence[object]) -> Iterable[tuple[Labels, list[float]]]:
        """:meth:`points` with those of this family in ``others`` added (other workers'
        :meth:`Metrics.snapshot`, as decoded from JSON), label set by label set; a point of
        another shape than this family's is left out."""
        points = self.points()
        if not others:
            return points
        summed = {labels: list(values) for labels, values in points}
        width = len(self.bounds) + 2 if self.kind == "histogram" else 1
        for other in others:
            found = other.get(self.name) if isinstance(other, dict) else None
            for point in found if isinstance(found, list) else ():
                if not (isinstance(point, list) and len(point) == 2):
                    continue
                labels, values = point
                if not (
                    isinstance(labels, list)
                    and len(labels) == len(self.labels)
                    and all(isinstance(label, str) for label in labels)
                    and isinstance(values, list)
                    and len(values) == width
                    and all(_is_number(value) for value in values)
                ):
                    continue
                slot = summed.setdefault(tuple(labels), [0.0] * width)
                for index, value in enumerate(values):
                    slot[index] += value
        return summed.items()


def put(slot: list[float], bounds: tuple[float, ...], value: float) -> None:
    """Count ``value`` into ``slot``, a histogram's :meth:`Family.slot` of ``bounds``."""
    slot[bisect.bisect_left(bounds, value)] += 1
    slot[-1] += value


# The methods MCP defines (every revision): any other is counted as _OTHER.
_METHODS = frozenset(
    {
        "initialize",
        "ping",
        "server/discover",
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "subscriptions/listen",
        "completion/complete",
        "logging/setLevel",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "tasks/cancel",
        "notifications/initialized",
        "notifications/cancelled",
        "notifications/progress",
        "notifications/message",
        "notifications/resources/updated",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/roots/list_changed",
        "notifications/tasks/status",
        "notifications/elicitation/complete",
        "notifications/subscriptions/acknowledged",
    }
)

_OPERATION = (
    "mcp.method.name",
    "gen_ai.tool.name",
    "gen_ai.operation.name",
    "error.type",
    "rpc.response.status_code",
    "mcp.protocol.version",
    "network.transport",
)
_SESSION = ("mcp.protocol.version", "network.transport", "error.type")


class Metrics:
    """Every counter of one proxy or gateway process; see the module documentation."""

    def __init__(self) -> None:
        self.started = time.time()
        self._tools: set[str] = set()
        self._sessions: dict[object, Callable[[], int]] = {}  # live session -> its tasks open
        self._operations: dict[
            tuple[str, str, str | None, int | None, str, str], tuple[list[float], list[float]]
        ] = {}
        self.health = Health()
        self.server_operation = Family(
            "mcp.server.operation.duration",
            "s",
            "histogram",
            "MCP request or notification duration as observed on the receiver (the proxy, "
            "from a client's message received until its answer is sent)",
            _OPERATION,
            DURATION_BUCKETS,
        )
        self.client_operation = Family(
            "mcp.client.operation.duration",
            "s",
            "histogram",
            "MCP request or notification duration as observed on the sender (the proxy, from "
            "a message sent on until its answer arrives)",
            _OPERATION,
            DURATION_BUCKETS,
        )
        self.server_session = Family(
            "mcp.server.session.duration",
            "s",
            "histogram",
            "The duration of the MCP session as observed on the MCP server (the proxy, its "
            "client's side)",
            _SESSION,
            DURATION_BUCKETS,
        )
        self.client_session = Family(
            "mcp.client.session.duration",
            "s",
            "histogram",
            "The duration of the MCP session as observed on the MCP client (the proxy, its "
            "server's side)",
            _SESSION,
            DURATION_BUCKETS,
        )
        self.overhead = Family(
            "strictmcp.proxy.overhead",
            "us",
            "histogram",
            "What the proxy adds to a message: from its line read until decided",
            ("strictmcp.direction",),
            OVERHEAD_BUCKETS,
        )
        self.calls = Family(
            "strictmcp.calls",
            "{call}",
            "counter",
            "tools/call requests by what the proxy did with them",
            ("strictmcp.decision", "gen_ai.tool.name", "strictmcp.server"),
        )
        self.findings = Family(
            "strictmcp.findings",
            "{finding}",
            "counter",
            "Findings by stage, action and rule code (one per audit record)",
            (
                "strictmcp.stage",
                "strictmcp.action",
                "strictmcp.rule",
                "strictmcp.direction",
                "gen_ai.tool.name",
                "strictmcp.server",
            ),
        )
        self.rate_limited = Family(
            "strictmcp.rate_limited",
            "{call}",
            "counter",
            "Calls over a rate limit (refused, or in audit mode let through)",
            ("strictmcp.action", "gen_ai.tool.name", "strictmcp.server"),
        )
        self.upstream_errors = Family(
            "strictmcp.upstream.errors",
            "{request}",
            "counter",
            "Requests sent upstream that got no usable answer",
            ("error.type", "strictmcp.server"),
        )
        self.restarts = Family(
            "strictmcp.upstream.restarts",
            "{restart}",
            "counter",
            "Servers started again after they exited or could not start",
            ("strictmcp.server",),
        )
        self.sessions_open = Family(
            "strictmcp.sessions.open",
            "{session}",
            "gauge",
            "Sessions open now",
            (),
            read=lambda: [((), float(len(self._sessions)))],
        )
        self.tasks_open = Family(
            "strictmcp.tasks.open",
            "{task}",
            "gauge",
            "Tasks the open sessions remember",
            (),
            read=lambda: [((), float(sum(tasks() for tasks in self._sessions.values())))],
        )

    def families(self) -> tuple[Family, ...]:
        """Every metric, in the order they are exported."""
        return (
            self.server_operation,
            self.client_operation,
            self.server_session,
            self.client_session,
            self.overhead,
            self.calls,
            self.findings,
            self.rate_limited,
            self.upstream_errors,
            self.restarts,
            self.sessions_open,
            self.tasks_open,
        )

    # --- labels ----------------------------------------------------------------------------

    def operation(
        self,
        method: str,
        tool: str,
        error: str | None,
        code: int | None,
        revision: str,
        transport: str,
    ) -> tuple[list[float], list[float]]:
        """The slots (:meth:`Family.slot`) of ``mcp.server.operation.duration`` and
        ``mcp.client.operation.duration`` under these operation labels, looked up once per
        label set: every call of a session counts under the same few."""
        key = (method, tool, error, code, revision, transport)
        found = self._operations.get(key)
        if found is not None:
            return found
        labels = (
            method,
            tool,
            "execute_tool" if method == "tools/call" else "",
            error or "",
            "" if code is None else str(code),
            revision,
            transport,
        )
        found = (self.server_operation.slot(labels), self.client_operation.slot(labels))
        if len(self._operations) < _MAX_OPERATIONS:
            self._operations[key] = found
        return found

    def learn_tools(self, names: Iterable[str]) -> None:
        """Tools a server listed: named as label values from now on (up to
        :data:`MAX_TOOLS`)."""
        known = self._tools
        for name in names:
            if len(known) >= MAX_TOOLS:
                return
            known.add(name)

    def tool_label(self, tool: str | None) -> str:
        """``tool`` as a label value: itself when a server listed it, else ``_OTHER``; empty
        for none."""
        if not tool:
            return ""
        return tool if tool in self._tools else OTHER

    @staticmethod
    def method_label(method: str | None) -> str:
        """``method`` as a label value: itself when MCP defines it, else ``_OTHER``."""
        return method if method is not None and method in _METHODS else OTHER

    # --- sessions --------------------------------------------------------------------------

    def opened(self, key: object, tasks: Callable[[], int]) -> None:
        """A session opened: counted open until :meth:`closed`; ``tasks`` says how many
        tasks it remembers."""
        self._sessions[key] = tasks

    def closed(self, key: object) -> None:
        """A session ended."""
        self._sessions.pop(key, None)

    # --- findings --------------------------------------------------------------------------

    def finding(
        self,
        code: str,
        *,
        stage: str,
        action: str,
        direction: str,
        tool: str | None,
        server: str | None,
    ) -> None:
        """Count one audit record (and a rate-limit refusal, at the rate stage)."""
        label = self.tool_label(tool)
        self.findings.add((stage, action, code, direction, label, server or ""))
        if stage == "rate":
            self.rate_limited.add((action, label, server or ""))

    # --- Prometheus ------------------------------------------------------------------------

    def snapshot(self) -> dict[str, list[tuple[Labels, list[float]]]]:
        """Every metric's points now by its name, as JSON can carry them: what one worker of
        ``--workers`` hands the worker that answers a scrape."""
        return {family.name: list(family.points()) for family in self.families()}

    def prometheus(self, others: Sequence[object] = ()) -> str:
        """Every metric in Prometheus' text format (version 0.0.4), with ``others`` (other
        workers' :meth:`snapshot`) added: counters, histogram buckets and gauges summed label
        set by label set (:meth:`Family.summed`)."""
        out: list[str] = []
        for family in self.families():
            name, suffix = prometheus_name(family)
            out.append(f"# HELP {name} {family.help}\n")
            out.append(f"# TYPE {name} {family.kind}\n")
            keys = [_prometheus_label(label) for label in family.labels]
            for labels, values in family.summed(others):
                pairs = [f'{k}="{_escape(v)}"' for k, v in zip(keys, labels, strict=True) if v]
                if family.kind == "histogram":
                    running = 0.0
                    for bound, count in zip((*family.bounds, math.inf), values, strict=False):
                        running += count
                        le = "+Inf" if bound == math.inf else _number(bound)
                        bucket = _braces([*pairs, 'le="' + le + '"'])
                        out.append(f"{name}_bucket{bucket} {_number(running)}\n")
                    out.append(f"{name}_sum{_braces(pairs)} {_number(values[-1])}\n")
                    out.append(f"{name}_count{_braces(pairs)} {_number(running)}\n")
                else:
                    out.append(f"{name}{suffix}{_braces(pairs)} {_number(values[0])}\n")
        return "".join(out)


class Health:
    """What ``/readyz`` reads: for each server (the gateway's, by name; the proxy's own as
    ``""``), how many of its runs are up and whether the last ended or failed to start.
    ``required`` are those the policy marks so."""

    def __init__(self) -> None:
        self.required: frozenset[str] = frozenset()
        self._up: dict[str, int] = {}
        self._failed: dict[str, bool] = {}

    def up(self, server: str) -> None:
        """A run of ``server`` started."""
        self._up[server] = self._up.get(server, 0) + 1
        self._failed[server] = False

    def started(self, server: str) -> None:
        """``server`` started, its run not watched here (the proxy's, one per session)."""
        self._failed[server] = False

    def stopped(self, server: str) -> None:
        """A run of ``server`` was stopped, not failed (its session ended)."""
        self._up[server] = max(0, self._up.get(server, 0) - 1)

    def down(self, server: str, *, was_up: bool) -> None:
        """A run of ``server`` ended (``was_up``), or could not start."""
        if was_up:
            self._up[server] = max(0, self._up.get(server, 0) - 1)
        self._failed[server] = True

    def unready(self) -> list[str]:
        """The servers that make the process unready, by name: every required one that is
        down, and, when none can serve, all of them; empty when it is ready."""
        down = sorted(
            name for name, failed in self._failed.items() if failed and not self._up.get(name)
        )
        if down and len(down) == len(self._failed) and not any(self._up.values()):
            return down
        return [name for name in down if name in self.required]


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def prometheus_name(family: Family) -> tuple[str, str]:
    """The Prometheus name of ``family`` (its unit spelled out, as OpenTelemetry's Prometheus
    exporter spells it) and the suffix of a counter's samples."""
    base = family.name.replace(".", "_")
    unit = {"s": "_seconds", "us": "_microseconds"}.get(family.unit, "")
    return base + unit, "_total" if family.kind == "counter" else ""


def _prometheus_label(name: str) -> str:
    return name.replace(".", "_")


def _braces(pairs: list[str]) -> str:
    return "{" + ",".join(pairs) + "}" if pairs else ""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 2**53 else repr(value)
