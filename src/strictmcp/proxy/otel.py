"""OpenTelemetry for the proxy and the gateway: the ``[otel]`` extra's SDK and OTLP exporter,
configured the standard way (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``,
``OTEL_TRACES_SAMPLER``, ``OTEL_SDK_DISABLED``, ...).

Imported only when the environment asks for OTLP (:func:`configured`): without it, nothing
here is loaded and tracing costs nothing. The sampler is the environment's, or when it names
none, parent-based with a ratio of 0.01 (:data:`DEFAULT_RATIO`): a caller's sampled trace is
always continued, one it did not sample is passed on unsampled, and one message in a hundred
that comes without a trace context starts its own; the other 99 make no span at all.

Metrics go over OTLP too (``OTEL_METRICS_EXPORTER``, every ``OTEL_METRIC_EXPORT_INTERVAL``
milliseconds): :class:`MetricsExport` reads strictmcp's own counters on a thread of its own,
off the event loop.
"""

from __future__ import annotations

import contextvars
import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..enforce.metrics import Family, Metrics
from ..extras import needs

Span = Any
"""An OpenTelemetry span (the SDK's type; ``Any`` so that nothing else imports it)."""

DEFAULT_RATIO = 0.01
"""The ratio of traces started here that are sampled when ``OTEL_TRACES_SAMPLER`` is unset."""

REQUEST_HEADERS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "strictmcp_request_headers", default=None
)
"""The trace headers (``traceparent``, ``tracestate``) and ``mcp-session-id`` of the HTTP
request being handled, set by :class:`~.http_observe.Observed` while tracing is on."""

_TRACE_HEADERS = ("traceparent", "tracestate", "mcp-session-id")


def configured(environ: Mapping[str, str] = os.environ) -> tuple[bool, bool]:
    """Whether the environment asks for traces, and for metrics, over OTLP: an OTLP endpoint
    is named (for all signals or for that one), the SDK is not disabled and the signal's
    exporter is not ``none``."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False, False
    common = bool(environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))

    def wanted(signal: str) -> bool:
        exporter = environ.get(f"OTEL_{signal}_EXPORTER", "otlp").strip().lower()
        endpoint = common or bool(environ.get(f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT"))
        return endpoint and exporter != "none"

    return wanted("TRACES"), wanted("METRICS")


def _resource() -> Any:
    with needs("otel"):
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource  # noqa: PLC0415
    from .. import __version__  # noqa: PLC0415

    defaults = {SERVICE_NAME: "strictmcp", "service.version": __version__}
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES over these.
    return Resource.create(defaults)


class Tracing:
    """Spans of the MCP conventions, to the OTLP/HTTP exporter the environment configures;
    :class:`~.observe.SessionObserver` makes them."""

    def __init__(self) -> None:
        with needs("otel"):
            from opentelemetry import trace  # noqa: PLC0415
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
                OTLPSpanExporter,
            )
            from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
            from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: PLC0415
            from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased  # noqa: PLC0415
            from opentelemetry.trace.propagation.tracecontext import (  # noqa: PLC0415
                TraceContextTextMapPropagator,
            )
        # The default sampler's ratio is applied here, before any span exists (:meth:`rooted`):
        # the SDK is left only the parent's flag to follow, and a message no one traces costs
        # no span object. A sampler the environment names decides everything itself.
        sampler = None if os.environ.get("OTEL_TRACES_SAMPLER") else ParentBased(ALWAYS_ON)
        self._ratio = None if sampler is None else DEFAULT_RATIO
        self._random = random.Random()
        self._provider = TracerProvider(sampler=sampler, resource=_resource())
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        from .. import __version__  # noqa: PLC0415

        self._tracer = self._provider.get_tracer("strictmcp", __version__)
        self._trace = trace
        self._kinds = (trace.SpanKind.SERVER, trace.SpanKind.CLIENT)
        self._propagator = TraceContextTextMapPropagator()
        self._error = trace.StatusCode.ERROR
        self._status = trace.Status

    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` of the HTTP request being handled, if any."""
        headers = REQUEST_HEADERS.get()
        return headers.get("mcp-session-id") if headers is not None else None

    def parent(self, meta: dict[str, Any] | None, from_client: bool) -> Any:
        """The trace context a message continues: its ``_meta`` ``traceparent`` and
        ``tracestate`` (SEP-414), else (from the client) the HTTP request's headers."""
        if meta is not None and isinstance(meta.get("traceparent"), str):
            keys = ("traceparent", "tracestate")
            carrier = {k: meta[k] for k in keys if isinstance(meta.get(k), str)}
            return self._propagator.extract(carrier)
        headers = REQUEST_HEADERS.get() if from_client else None
        if headers is not None and "traceparent" in headers:
            return self._propagator.extract(headers)
        return None

    def rooted(self) -> bool:
        """Whether a message with no trace context of its own (:meth:`parent` is None) gets
        spans: under the default sampler, one in :data:`DEFAULT_RATIO`; under the
        environment's, always (its sampler decides)."""
        return self._ratio is None or self._random.random() < self._ratio

    def start(
        self,
        name: str,
        *,
        server: bool,
        attributes: dict[str, Any],
        started: int | None,
        parent: Any,
    ) -> Span:
        """A span of kind SERVER (``server``) or CLIENT, begun at ``started``
        (``perf_counter_ns``; None: now), under ``parent`` (a context, or a span)."""
        if (
            parent is not None
            and not isinstance(parent, contextvars.Context)
            and hasattr(parent, "get_span_context")
        ):
            parent = self._trace.set_span_in_context(parent)
        start_time = None
        if started is not None:
            start_time = time.time_ns() - (time.perf_counter_ns() - started)
        return self._tracer.start_span(
            name,
            context=parent,
            kind=self._kinds[0] if server else self._kinds[1],
            attributes=attributes,
            start_time=start_time,
        )

    def carrier(self, span: Span, *, incoming: bool) -> dict[str, str] | None:
        """The ``traceparent`` (and ``tracestate``) that carry ``span`` upstream: for a span
        being recorded, or a message that came with a trace context of its own (which is
        then continued); None otherwise, and the message goes on as it came."""
        if not (incoming or span.is_recording()):
            return None
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier, self._trace.set_span_in_context(span))
        return carrier

    def end(self, span: Span, code: int | None, error: str | None) -> None:
        """End ``span`` with its ``rpc.response.status_code`` and ``error.type``: an error
        status when there is one."""
        if span.is_recording():
            if code is not None:
                span.set_attribute("rpc.response.status_code", str(code))
            if error is not None:
                span.set_attribute("error.type", error)
                span.set_status(self._status(self._error, error))
        span.end()

    def shutdown(self) -> None:
        """Export what is left, then stop."""
        self._provider.shutdown()


class MetricsExport:
    """strictmcp's counters over OTLP/HTTP every ``OTEL_METRIC_EXPORT_INTERVAL`` ms
    (default 60000), cumulative, from a thread of its own; once more when stopped."""

    def __init__(self, metrics: Metrics) -> None:
        #: The other processes' counters to add to ``metrics`` at each export (with
        #: ``--workers``, the supervisor's export gathers its workers'); None: none.
        self.others: Callable[[], Sequence[object]] | None = None
        with needs("otel"):
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # noqa: PLC0415
                OTLPMetricExporter,
            )
            from opentelemetry.sdk.metrics.export import (  # noqa: PLC0415
                AggregationTemporality,
                Gauge,
                Histogram,
                HistogramDataPoint,
                Metric,
                MetricsData,
                NumberDataPoint,
                ResourceMetrics,
                ScopeMetrics,
                Sum,
            )
            from opentelemetry.sdk.util.instrumentation import (  # noqa: PLC0415
                InstrumentationScope,
            )
        self._metrics = metrics
        self._exporter = OTLPMetricExporter()
        self._types = (
            AggregationTemporality.CUMULATIVE,
            Gauge,
            Histogram,
            HistogramDataPoint,
            Metric,
            MetricsData,
            NumberDataPoint,
            ResourceMetrics,
            ScopeMetrics,
            Sum,
            InstrumentationScope,
        )
        self._resource = _resource()
        self._start = int(metrics.started * 1e9)
        interval = float(os.environ.get("OTEL_METRIC_EXPORT_INTERVAL", "60000")) / 1000
        self._interval = max(interval, 0.05)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="strictmcp-otlp", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.export()

    def export(self) -> None:
        """Send every metric as it stands now."""
        (
            cumulative,
            gauge,
            histogram,
            point,
            metric,
            data,
            number,
            resource,
            scope,
            total,
            instrumentation,
        ) = self._types
        now = time.time_ns()
        metrics = []
        others = self.others() if self.others is not None else ()
        for family in self._metrics.families():
            points = list(family.summed(others))
            if not points:
                continue
            if family.kind == "histogram":
                body: Any = histogram(
                    [
                        point(
                            _attributes(family, labels),
                            self._start,
                            now,
                            int(sum(values[:-1])),
                            values[-1],
                            [int(v) for v in values[:-1]],
                            list(family.bounds),
                            None,  # type: ignore[arg-type]  # not kept: an unset field
                            None,  # type: ignore[arg-type]
                        )
                        for labels, values in points
                    ],
                    cumulative,
                )
            else:
                numbers = [
                    number(_attributes(family, labels), self._start, now, _value(values[0]))
                    for labels, values in points
                ]
                body = (
                    total(numbers, cumulative, True) if family.kind == "counter" else gauge(numbers)
                )
            metrics.append(metric(family.name, family.help, family.unit, body))
        from .. import __version__  # noqa: PLC0415

        batch = data(
            [
                resource(
                    self._resource,
                    [scope(instrumentation("strictmcp", __version__), metrics, "")],
                    "",
                )
            ]
        )
        self._exporter.export(batch)

    def shutdown(self) -> None:
        """Export once more, then stop."""
        self._stop.set()
        self._thread.join(timeout=5)
        self.export()
        self._exporter.shutdown()


def _attributes(family: Family, labels: tuple[str, ...]) -> dict[str, str]:
    return {key: value for key, value in zip(family.labels, labels, strict=False) if value}


def _value(value: float) -> int | float:
    return int(value) if value == int(value) else value


def remember_headers(headers: Mapping[str, str]) -> contextvars.Token[dict[str, str] | None]:
    """Keep the trace headers and session id of the HTTP request now handled (this task's
    context) for its spans; the token resets them."""
    found = {name: headers[name] for name in _TRACE_HEADERS if name in headers}
    return REQUEST_HEADERS.set(found or None)
