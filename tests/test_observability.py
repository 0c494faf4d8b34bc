"""Metrics, health and traces of the proxy and the gateway, read by the real tools.

A real Prometheus server (Debian's ``prometheus``, started here on loopback) scrapes the
proxy's ``/metrics``; the values are read back through its HTTP query API and compared with
the calls made. Traces and OTLP metrics are received by a small OTLP/HTTP receiver on
loopback and decoded with the official ``opentelemetry-proto`` definitions.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from strictmcp.enforce.metrics import Metrics
from strictmcp.proxy.observe import Telemetry
from test_proxy_http import (  # noqa: F401 - processes is a fixture
    _ACCEPT,
    FIXTURES,
    Process,
    answer,
    handshake,
    in_session,
    modern,
    processes,
    request,
    run,
)
from test_proxy_session import TOOL, Session, messages
from test_proxy_workers import _replaced, children

_PROMETHEUS = shutil.which("prometheus")
_INSTALL = "Debian's prometheus is needed: apt-get install -y prometheus (make install-test)"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _proxy(
    tmp_path: Path, started: list[Process], *options: str, env: dict[str, str] | None = None
) -> str:
    """``strictmcp proxy --listen`` in front of the SDK fixture server; its base URL."""
    script = FIXTURES / "sdk_server.py"
    args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0", *options]
    args += ["--", sys.executable, str(script), str(tmp_path / "calls")]
    process = Process(args, tmp_path, "stderr", env=env)
    started.append(process)
    url = process.wait_for("listening on").rsplit(" ", 1)[1]
    return url.removesuffix("/mcp")


def _calls(base: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """One session making ``calls`` (tool, arguments) after listing the tools; the answers."""
    url = base + "/mcp"
    answers = []
    with httpx2.Client(timeout=30) as http:
        import asyncio  # noqa: PLC0415

        async def session_id() -> str:
            async with httpx2.AsyncClient(timeout=30) as client:
                return await handshake(client, url)

        sid = asyncio.run(session_id())
        headers = in_session(sid)
        listed = answer(http.post(url, json=request("tools/list", 1), headers=headers))
        assert "tools" in listed["result"]
        for number, (tool, arguments) in enumerate(calls, start=2):
            params = {"name": tool, "arguments": arguments}
            answers.append(
                answer(http.post(url, json=request("tools/call", number, params), headers=headers))
            )
    return answers


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[Any]:
    """Starts Debian's Prometheus scraping the targets given, on loopback; its query URL."""
    assert _PROMETHEUS is not None, _INSTALL
    started: list[subprocess.Popen[bytes]] = []

    def start(target: str) -> str:
        port = _free_port()
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n"
            "scrape_configs:\n  - job_name: strictmcp\n"
            f"    static_configs:\n      - targets: ['{target}']\n",
            encoding="utf-8",
        )
        process = subprocess.Popen(
            [
                _PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(process)
        return f"http://127.0.0.1:{port}"

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=20)


def _query(prometheus: str, expression: str, *, until: float = 60) -> dict[str, float]:
    """The instant vector ``expression`` gives, by its labels (JSON), once it is not empty."""
    deadline = time.monotonic() + until
    while True:
        try:
            response = httpx2.get(
                prometheus + "/api/v1/query", params={"query": expression}, timeout=10
            )
            result = response.json()["data"]["result"]
        except (httpx2.HTTPError, KeyError, ValueError):
            result = []
        if result:
            return {
                json.dumps(
                    {
                        k: v
                        for k, v in r["metric"].items()
                        if k not in ("job", "instance", "__name__")
                    },
                    sort_keys=True,
                ): float(r["value"][1])
                for r in result
            }
        assert time.monotonic() < deadline, f"Prometheus never had {expression}"
        time.sleep(0.5)


def _settled(prometheus: str, expression: str, expected: dict[str, float]) -> dict[str, float]:
    """``expression``'s values once they equal ``expected`` (scrapes lag), else the last."""
    deadline = time.monotonic() + 30
    while True:
        got = _query(prometheus, expression)
        if got == expected or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def _key(**labels: str) -> str:
    return json.dumps(labels, sort_keys=True)


def test_prometheus_scrapes_the_calls_made(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    prometheus: Any,
) -> None:
    base = _proxy(tmp_path, processes)
    server = prometheus(base.removeprefix("http://"))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("echo", {"text": "one"}),
        ("echo", {"text": "two"}),
        ("echo", {"text": 5}),  # refused at the arguments stage
        ("word_count", {"text": "a b c"}),
        ("no_such_tool_planted", {}),  # unknown: counted as _OTHER, never by its name
    ]
    answers = _calls(base, calls)
    assert "result" in answers[0]
    assert answers[2]["result"]["isError"] is True
    got = _settled(
        server,
        "strictmcp_calls_total",
        {
            _key(strictmcp_decision="allowed", gen_ai_tool_name="echo"): 2,
            _key(strictmcp_decision="refused", gen_ai_tool_name="echo"): 1,
            _key(strictmcp_decision="allowed", gen_ai_tool_name="word_count"): 1,
            _key(strictmcp_decision="refused", gen_ai_tool_name="_OTHER"): 1,
        },
    )
    assert got == {
        _key(strictmcp_decision="allowed", gen_ai_tool_name="echo"): 2,
        _key(strictmcp_decision="refused", gen_ai_tool_name="echo"): 1,
        _key(strictmcp_decision="allowed", gen_ai_tool_name="word_count"): 1,
        _key(strictmcp_decision="refused", gen_ai_tool_name="_OTHER"): 1,
    }
    # Every finding by stage and rule: the wrong type at the arguments stage.
    by_tool = "sum by (gen_ai_tool_name, strictmcp_action) "
    findings = _query(server, by_tool + '(strictmcp_findings_total{strictmcp_stage="arguments"})')
    assert findings == {
        _key(gen_ai_tool_name="echo", strictmcp_action="refused"): 1,
        _key(gen_ai_tool_name="_OTHER", strictmcp_action="refused"): 1,
    }
    # The conventions' histogram: one tools/call observation per call.
    calls_made = 'mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"}'
    durations = _query(server, f"sum by (gen_ai_tool_name) ({calls_made})")
    assert durations == {
        _key(gen_ai_tool_name="echo"): 3,
        _key(gen_ai_tool_name="word_count"): 1,
        _key(gen_ai_tool_name="_OTHER"): 1,
    }
    upstream = _query(
        server, 'sum(mcp_client_operation_duration_seconds_count{mcp_method_name="tools/call"})'
    )
    assert upstream == {_key(): 3}  # the refused two never went upstream
    buckets = _query(server, 'mcp_server_operation_duration_seconds_bucket{le="300"}')
    assert buckets  # the conventions' buckets, as they are exported
    overhead = _query(server, "sum(strictmcp_proxy_overhead_microseconds_count)")
    assert next(iter(overhead.values())) >= 2 * 3 + 3
    sessions = _query(server, "strictmcp_sessions_open")
    assert sessions == {_key(): 1}
    scraped = httpx2.get(base + "/metrics").text
    assert "no_such_tool_planted" not in scraped


def test_health_paths_need_no_token_and_say_nothing_more(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    base = _proxy(tmp_path, processes)
    health = httpx2.get(base + "/healthz")
    assert health.status_code == 200
    assert health.json() == {"status": "ok"}
    ready = httpx2.get(base + "/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready"}
    assert httpx2.post(base + "/metrics").status_code == 405


_GATEWAY = """
[[server]]
name = "broken"
command = ["{missing}"]
required = {required}

[[server]]
name = "files"
command = ["{python}", "{script}", "{calls}"]

[gateway]
restart_delay = 0.2
max_restarts = 100
"""


@pytest.mark.parametrize("required", [True, False])
def test_readyz_names_a_required_server_that_is_down(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    required: bool,
) -> None:
    policy = tmp_path / "gateway.toml"
    policy.write_text(
        _GATEWAY.format(
            missing=tmp_path / "no-such-command",
            required="true" if required else "false",
            python=sys.executable,
            script=FIXTURES / "sdk_server.py",
            calls=tmp_path / "calls",
        ),
        encoding="utf-8",
    )
    port = _free_port()
    args = [sys.executable, "-m", "strictmcp", "gateway", "--policy", str(policy)]
    args += ["--metrics", f"127.0.0.1:{port}"]
    process = Process(args, tmp_path, "stderr", stdin=True)
    processes.append(process)
    process.wait_for("metrics on")
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        ready = httpx2.get(base + "/readyz")
        restarts = 'strictmcp_upstream_restarts_total{strictmcp_server="broken"}'
        if restarts in httpx2.get(base + "/metrics").text or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if required:
        assert ready.status_code == 503
        assert ready.json() == {"status": "unready", "down": ["broken"]}
    else:
        assert ready.status_code == 200
    assert restarts in httpx2.get(base + "/metrics").text
    assert httpx2.get(base + "/healthz").status_code == 200


class _Receiver(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: keeps each body by path."""

    bodies: dict[str, list[bytes]]

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        self.bodies.setdefault(self.path, []).append(self.rfile.read(length))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def receiver() -> Iterator[tuple[str, dict[str, list[bytes]]]]:
    bodies: dict[str, list[bytes]] = {}
    handler = type("Receiver", (_Receiver,), {"bodies": bodies})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    server.shutdown()


def _spans(bodies: dict[str, list[bytes]]) -> list[Any]:
    spans = []
    for body in bodies.get("/v1/traces", []):
        export = ExportTraceServiceRequest()
        export.ParseFromString(body)
        for resource in export.resource_spans:
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    return spans


def _attributes(span: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for attribute in span.attributes:
        value = attribute.value
        kind = value.WhichOneof("value")
        if kind == "array_value":
            values[attribute.key] = [v.string_value for v in value.array_value.values]
        else:
            values[attribute.key] = getattr(value, kind)
    return values


def test_traces_continue_the_callers_trace_and_go_upstream(
    tmp_path: Path,
    receiver: Any,  # set up first, ended last: the proxy's last export at its exit reaches it
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    endpoint, bodies = receiver
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": "strictmcp-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_METRIC_EXPORT_INTERVAL": "200",
    }
    base = _proxy(tmp_path, processes, env=env)
    url = base + "/mcp"
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    parent = f"00-{trace_id}-00f067aa0ba902b7-01"
    import asyncio  # noqa: PLC0415

    async def session_id() -> str:
        async with httpx2.AsyncClient(timeout=30) as client:
            return await handshake(client, url)

    sid = asyncio.run(session_id())
    headers = in_session(sid)
    with httpx2.Client(timeout=30) as http:
        answer(http.post(url, json=request("tools/list", 1), headers=headers))
        meta = {"traceparent": parent}
        good = {"name": "echo", "arguments": {"text": "hi"}, "_meta": meta}
        assert "result" in answer(
            http.post(url, json=request("tools/call", 2, good), headers=headers)
        )
        bad = {"name": "echo", "arguments": {"text": 7, "secret": "sk-planted"}, "_meta": meta}
        refused = answer(http.post(url, json=request("tools/call", 3, bad), headers=headers))
        assert refused["result"]["isError"] is True
    wanted = {"mcp.server.operation.duration", "strictmcp.calls"}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        # An export made before the calls were counted holds only some metrics: wait for
        # one with them, not for the first.
        spans = [s for s in _spans(bodies) if s.name == "tools/call echo"]
        if len(spans) >= 3 and wanted <= _exported_metrics(bodies):
            break
        time.sleep(0.2)
    spans = [s for s in _spans(bodies) if s.name == "tools/call echo"]
    server_kind, client_kind = 2, 3  # SPAN_KIND_SERVER, SPAN_KIND_CLIENT
    received = [s for s in spans if s.kind == server_kind]
    onward = [s for s in spans if s.kind == client_kind]
    assert len(received) == 2
    assert len(onward) == 1
    for span in spans:
        assert span.trace_id.hex() == trace_id  # the caller's trace, continued
    by_id = {_attributes(s)["jsonrpc.request.id"]: s for s in received}
    allowed, denied = _attributes(by_id["2"]), _attributes(by_id["3"])
    assert allowed["mcp.method.name"] == "tools/call"
    assert allowed["gen_ai.tool.name"] == "echo"
    assert allowed["gen_ai.operation.name"] == "execute_tool"
    assert allowed["mcp.session.id"] == sid
    assert allowed["network.transport"] == "tcp"
    assert allowed["mcp.protocol.version"] == "2025-11-25"
    assert "error.type" not in allowed
    assert denied["error.type"] == "tool_error"
    assert denied["strictmcp.stages"] == ["arguments"]
    assert onward[0].parent_span_id == by_id["2"].span_id
    dumped = b"".join(bodies.get("/v1/traces", []))
    assert b"sk-planted" not in dumped  # no argument value in any span
    assert wanted <= _exported_metrics(bodies)


def _exported_metrics(bodies: dict[str, list[bytes]]) -> set[str]:
    """The names of the metrics in the OTLP metrics exports received so far."""
    names: set[str] = set()
    for body in list(bodies.get("/v1/metrics", [])):
        export = ExportMetricsServiceRequest()
        export.ParseFromString(body)
        names |= {
            metric.name
            for resource in export.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        }
    return names


def _decisions(scraped: str) -> dict[str, float]:
    """``strictmcp_calls_total`` of one scrape, summed by decision."""
    found: dict[str, float] = {}
    for line in scraped.splitlines():
        if line.startswith("strictmcp_calls_total{"):
            labels, value = line.rsplit(" ", 1)
            decision = labels.split('strictmcp_decision="', 1)[1].split('"', 1)[0]
            found[decision] = found.get(decision, 0) + float(value)
    return found


def _spread(url: str, workers: list[int]) -> dict[str, int]:
    """Calls on new connections (each a client of its own) until every one of ``workers``
    has served some (a worker starts its server with its first call); how many were allowed
    and how many refused."""
    made = {"allowed": 0, "refused": 0}

    async def body() -> None:
        for attempt in range(200):
            async with httpx2.AsyncClient(timeout=30) as http:
                text = {"text": "a"}
                good, headers = modern("tools/call", 1, {"name": "echo", "arguments": text})
                assert "result" in (await http.post(url, json=good, headers=headers)).json()
                made["allowed"] += 1
                if attempt % 2 == 0:
                    wrong = {"text": 5}
                    bad, headers = modern("tools/call", 2, {"name": "echo", "arguments": wrong})
                    refused = (await http.post(url, json=bad, headers=headers)).json()
                    assert refused["result"]["isError"] is True
                    made["refused"] += 1
            if attempt >= 5 and all(children(worker) for worker in workers):
                return
        raise AssertionError("a worker was never reached")

    run(body)
    return made


def test_one_scrape_sees_every_worker(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
    prometheus: Any,
) -> None:
    proxy = _proxy(tmp_path, processes, "--workers", "2")
    workers = children(processes[-1].popen.pid)
    assert len(workers) == 2
    made = _spread(proxy + "/mcp", workers)
    # Each scrape on a new connection, whichever worker takes it: every worker's calls.
    for _ in range(6):
        assert _decisions(httpx2.get(proxy + "/metrics").text) == made
    server = prometheus(proxy.removeprefix("http://"))
    expression = "sum by (strictmcp_decision) (strictmcp_calls_total)"
    expected: dict[str, float] = {
        _key(strictmcp_decision=key): value for key, value in made.items()
    }
    assert _settled(server, expression, expected) == expected
    calls = 'mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"}'
    assert _query(server, f"sum({calls})") == {_key(): sum(made.values())}


def _counter_sockets(pids: list[int]) -> list[Path]:
    """The Unix sockets ``pids`` listen on for their counters (from /proc/net/unix), once
    each listens."""
    names = {f"{pid}.sock" for pid in pids}
    deadline = time.monotonic() + 30
    while True:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
        paths = {Path(line.split()[-1]) for line in lines if line.split()[-1].startswith("/")}
        found = sorted(path for path in paths if path.name in names)
        if len(found) == len(pids) or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_workers_counters_stay_private_and_a_dead_worker_is_left_out(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    proxy = _proxy(tmp_path, processes, "--workers", "2")
    parent = processes[-1].popen.pid
    workers = children(parent)
    sockets = _counter_sockets(workers)
    assert len(sockets) == 2
    directory = sockets[0].parent
    assert sockets[1].parent == directory
    assert directory.stat().st_mode & 0o777 == 0o700  # this user's, no one else's
    made = _spread(proxy + "/mcp", workers)
    assert _decisions(httpx2.get(proxy + "/metrics").text) == made
    os.kill(workers[0], signal.SIGKILL)
    now = _replaced(parent, workers[0], 2)
    processes[-1].wait_for(f"worker {workers[0]} exited")
    assert not (directory / f"{workers[0]}.sock").exists()
    # The dead worker's counts went with it; every scrape still answers, with the rest.
    for _ in range(4):
        scraped = _decisions(httpx2.get(proxy + "/metrics", timeout=10).text)
        assert 0 < scraped.get("allowed", 0) < made["allowed"]
    assert len(_counter_sockets(now)) == 2
    processes[-1].popen.send_signal(signal.SIGTERM)
    assert processes[-1].popen.wait(timeout=60) == 0
    assert not directory.exists()


def test_workers_counters_add_up_label_set_by_label_set() -> None:
    one, two = Metrics(), Metrics()
    one.calls.add(("allowed", "", ""), 2)
    two.calls.add(("allowed", "", ""), 3)
    two.calls.add(("refused", "", ""), 1)
    one.overhead.observe(("request",), 7.0)
    two.overhead.observe(("request",), 700.0)
    two.opened("a session", lambda: 4)
    other = json.loads(json.dumps(two.snapshot()))  # as it crosses the socket
    malformed: list[object] = [
        None,
        [],
        {"strictmcp.calls": "all of them"},
        {"strictmcp.calls": [[["allowed", "", ""], [1e9, 1]]]},  # a histogram's shape
        {"strictmcp.calls": [[["allowed", ""], [1e9]]]},  # labels missing
        {"strictmcp.calls": [[["allowed", "", ""], [True]]]},
        {"strictmcp.calls": [[["allowed", "", ""], ["1e9"]]]},
        {"strictmcp.calls": [[["allowed", "", ""], [float("nan")]]]},
        {"strictmcp.calls": [[[1, 2, 3], [1e9]]]},
    ]
    scraped = one.prometheus([other, *malformed])
    assert 'strictmcp_calls_total{strictmcp_decision="allowed"} 5\n' in scraped
    assert 'strictmcp_calls_total{strictmcp_decision="refused"} 1\n' in scraped
    direction = 'strictmcp_direction="request"'
    assert f'strictmcp_proxy_overhead_microseconds_bucket{{{direction},le="10"}} 1\n' in scraped
    assert f'strictmcp_proxy_overhead_microseconds_bucket{{{direction},le="1000"}} 2\n' in scraped
    assert f"strictmcp_proxy_overhead_microseconds_sum{{{direction}}} 707\n" in scraped
    assert "strictmcp_sessions_open 1\n" in scraped
    assert "strictmcp_tasks_open 4\n" in scraped
    # Without others, a worker's own counters as before.
    assert 'strictmcp_calls_total{strictmcp_decision="allowed"} 2\n' in one.prometheus()


def _exported_calls(body: bytes) -> dict[str, float]:
    """``strictmcp.calls`` of one OTLP export, summed by decision."""
    export = ExportMetricsServiceRequest()
    export.ParseFromString(body)
    found: dict[str, float] = {}
    for resource in export.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != "strictmcp.calls":
                    continue
                for point in metric.sum.data_points:
                    decision = _attributes(point)["strictmcp.decision"]
                    value = point.as_int if point.HasField("as_int") else point.as_double
                    found[decision] = found.get(decision, 0) + value
    return found


def test_the_supervisors_otlp_export_sends_every_workers_counts(
    tmp_path: Path,
    receiver: Any,  # set up first, ended last: the proxy's last export at its exit reaches it
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    endpoint, bodies = receiver
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_TRACES_EXPORTER": "none",
        "OTEL_METRIC_EXPORT_INTERVAL": "200",
    }
    proxy = _proxy(tmp_path, processes, "--workers", "2", env=env)
    workers = children(processes[-1].popen.pid)
    made = _spread(proxy + "/mcp", workers)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        exports = list(bodies.get("/v1/metrics", []))
        if exports and _exported_calls(exports[-1]) == made:
            break
        time.sleep(0.2)
    assert _exported_calls(bodies["/v1/metrics"][-1]) == made


def test_a_stateless_requests_span_names_the_id_its_client_sent(
    tmp_path: Path,
    receiver: Any,  # set up first, ended last: the proxy's last export at its exit reaches it
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    endpoint, bodies = receiver
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_TRACES_SAMPLER": "always_on",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_METRICS_EXPORTER": "none",
    }
    proxy = _proxy(tmp_path, processes, env=env)
    sent: list[int | str] = ["trace-7", 0, "trace-8"]
    with httpx2.Client(timeout=30) as http:
        for request_id in sent:
            text = {"text": "hi"}
            call, headers = modern("tools/call", request_id, {"name": "echo", "arguments": text})
            assert http.post(proxy + "/mcp", json=call, headers=headers).json()["id"] == request_id
    deadline = time.monotonic() + 30
    server_kind = 2  # SPAN_KIND_SERVER
    named: list[str] = []
    while time.monotonic() < deadline and len(named) < len(sent):
        time.sleep(0.2)
        spans = [s for s in _spans(bodies) if s.name.startswith("tools/call")]
        named = [_attributes(s)["jsonrpc.request.id"] for s in spans if s.kind == server_kind]
    assert sorted(named) == sorted(str(request_id) for request_id in sent)


def test_workers_that_cannot_share_their_counters_still_serve_and_say_so(
    tmp_path: Path,
    processes: list[Process],  # noqa: F811 - the fixture imported above
) -> None:
    # A temporary directory too deep for a Unix socket's path (at most 107 bytes).
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    proxy = _proxy(tmp_path, processes, "--workers", "2", env={**os.environ, "TMPDIR": str(deep)})
    workers = children(processes[-1].popen.pid)
    made = _spread(proxy + "/mcp", workers)
    scraped = _decisions(httpx2.get(proxy + "/metrics", timeout=10).text)
    assert 0 < scraped["allowed"] < made["allowed"]  # the answering worker's own
    processes[-1].wait_for("cannot share its counters: AF_UNIX path too long")


# --- sampling and trace context, in-process (the session's forwarded lines are what the server
# gets); the spans through the OTLP receiver -----------------------------------------------------


def _traced(
    monkeypatch: pytest.MonkeyPatch, endpoint: str, sampler: str | None
) -> tuple[Session, Telemetry]:
    """A session traced with the default sampler (``sampler`` None) or the one named, its tool
    listed; spans go to ``endpoint``."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    if sampler is None:
        monkeypatch.delenv("OTEL_TRACES_SAMPLER", raising=False)
    else:
        monkeypatch.setenv("OTEL_TRACES_SAMPLER", sampler)
    telemetry = Telemetry(traces=True)
    session = Session()
    telemetry.attach(session.proxy, "pipe")
    session.start()
    session.list_tools([TOOL])
    return session, telemetry


def _sent_on(session: Session, request_id: int, meta: dict[str, Any] | None) -> dict[str, Any]:
    """The params of a valid call as the session sends it upstream (then answered, which
    ends its spans)."""
    call = session.call(request_id, "read_file", {"path": "a"})
    if meta is not None:
        call["params"]["_meta"] = meta
    forwarded = messages(session.client(call).forward)
    assert len(forwarded) == 1
    result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
    session.server({"jsonrpc": "2.0", "id": request_id, "result": result})
    params: dict[str, Any] = forwarded[0]["params"]
    return params


def _sampled(traceparent: str) -> bool:
    """The sampled flag of a W3C ``traceparent`` (the SDK sets the random flag beside it)."""
    return bool(int(traceparent.rsplit("-", 1)[1], 16) & 1)


@pytest.mark.parametrize("sampler", [None, "always_off", "parentbased_traceidratio"])
def test_a_message_no_one_traces_goes_upstream_as_it_came(
    monkeypatch: pytest.MonkeyPatch, receiver: Any, sampler: str | None
) -> None:
    # A _meta without a trace context, not sampled here: nothing is added to it (a trace
    # context is passed on only for a span being recorded, or one the caller sent).
    endpoint, _ = receiver
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0.01")
    session, telemetry = _traced(monkeypatch, endpoint, sampler)
    try:
        started = 0
        for request_id in range(1, 201):
            meta = {"progressToken": request_id}
            params = _sent_on(session, request_id, meta)
            traceparent = params["_meta"].pop("traceparent", None)
            if traceparent is not None:  # a trace started here: recorded, so passed on
                assert _sampled(traceparent)
                started += 1
            assert params == {"name": "read_file", "arguments": {"path": "a"}, "_meta": meta}
        assert started <= (0 if sampler == "always_off" else 30)
    finally:
        telemetry.close()


@pytest.mark.parametrize("flags", ["01", "00"])
@pytest.mark.parametrize("tracestate", [None, "vendor=abc"])
def test_a_callers_trace_context_is_continued_with_its_flag(
    monkeypatch: pytest.MonkeyPatch, receiver: Any, flags: str, tracestate: str | None
) -> None:
    # Parent-based: the caller's sampled trace is recorded and continued whatever the ratio;
    # one it did not sample is passed on unsampled, and nothing of it is exported.
    endpoint, bodies = receiver
    session, telemetry = _traced(monkeypatch, endpoint, None)
    trace_ids = [f"{index:032x}" for index in range(1, 21)]
    try:
        for request_id, trace_id in enumerate(trace_ids, start=1):
            parent_span = f"{request_id:016x}"
            meta = {"traceparent": f"00-{trace_id}-{parent_span}-{flags}"}
            if tracestate is not None:
                meta["tracestate"] = tracestate
            sent = _sent_on(session, request_id, meta)["_meta"]
            version, sent_trace, sent_span, _ = sent["traceparent"].split("-")
            assert (version, sent_trace) == ("00", trace_id)
            assert _sampled(sent["traceparent"]) is (flags == "01")
            assert sent_span != parent_span  # the proxy's own span, under the caller's
            assert sent.get("tracestate") == tracestate
    finally:
        telemetry.close()
    exported = {span.trace_id.hex() for span in _spans(bodies)}
    if flags == "01":
        assert set(trace_ids) <= exported
    else:
        assert not set(trace_ids) & exported


def test_the_default_sampler_starts_about_one_trace_in_a_hundred(
    monkeypatch: pytest.MonkeyPatch, receiver: Any
) -> None:
    endpoint, bodies = receiver
    session, telemetry = _traced(monkeypatch, endpoint, None)
    started: set[str] = set()
    try:
        for request_id in range(1, 3001):
            params = _sent_on(session, request_id, None)
            if "_meta" in params:
                traceparent = params["_meta"]["traceparent"]
                assert _sampled(traceparent)
                started.add(traceparent.split("-")[1])
            else:
                assert params == {"name": "read_file", "arguments": {"path": "a"}}
    finally:
        telemetry.close()
    assert 5 <= len(started) <= 80  # 30 expected; outside these, a wrong ratio
    exported = {span.trace_id.hex() for span in _spans(bodies) if span.name.startswith("tools")}
    assert exported == started  # every trace started here is recorded; no other is


def test_operation_durations_label_the_error_as_each_side_judges_it() -> None:
    # A caller's error (-32602) is the upstream's error.type on the client side, none on the
    # server side; another code is an error on both; a tool error is tool_error on both.
    telemetry = Telemetry()
    session = Session()
    telemetry.attach(session.proxy, "pipe")
    session.start()
    session.list_tools([TOOL])
    answers = [
        {"error": {"code": -32602, "message": "bad"}},
        {"error": {"code": -32000, "message": "down"}},
        {"result": {"content": [], "isError": True}},
        {"result": {"content": [{"type": "text", "text": "ok"}], "isError": False}},
    ]
    for request_id, answer_ in enumerate(answers, start=1):
        session.client(session.call(request_id, "read_file", {"path": "a"}))
        session.server({"jsonrpc": "2.0", "id": request_id, **answer_})
    text = telemetry.metrics.prometheus()

    def counted(side: str, error: str, code: str) -> float:
        labels = 'mcp_method_name="tools/call",gen_ai_tool_name="read_file",'
        labels += 'gen_ai_operation_name="execute_tool",'
        labels += f'error_type="{error}",' if error else ""
        labels += f'rpc_response_status_code="{code}",' if code else ""
        labels += 'mcp_protocol_version="2025-11-25",network_transport="pipe"'
        name = f"mcp_{side}_operation_duration_seconds_count{{{labels}}}"
        found = [line for line in text.splitlines() if line.startswith(name + " ")]
        return float(found[0].rsplit(" ", 1)[1]) if found else 0.0

    assert counted("client", "-32602", "-32602") == 1
    assert counted("server", "", "-32602") == 1
    assert counted("server", "-32602", "-32602") == 0
    assert counted("client", "-32000", "-32000") == counted("server", "-32000", "-32000") == 1
    assert counted("client", "tool_error", "") == counted("server", "tool_error", "") == 1
    assert counted("client", "", "") == counted("server", "", "") == 1
