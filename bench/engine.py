"""Engine benchmark: strictmcp's validator against jsonschema-rs and python-jsonschema.

Run ``python bench/engine.py`` (``make bench``) for the full run, ``--quick`` for a smoke run
of a few hundred calls per contender, ``--json FILE`` to keep the raw numbers, ``--check`` to
exit 1 when a target fails. Figures and their reading are in docs/benchmarks.md.

Every contender runs in this one process on the same schema and instances. Each sample is a
batch of N back-to-back calls timed with ``time.perf_counter_ns`` (N is calibrated per
contender so a batch lasts a few milliseconds), with the cyclic garbage collector off inside
the batch as ``timeit`` does. Contenders take turns round-robin, the starting point rotating
each round, so that machine noise falls on all of them alike. A contender's figure is the
median of its per-call batch times, with the 10th-90th percentile spread; each ratio is the
ratio of two medians from the same run, with the spread of the per-round paired ratios.
Nothing is subtracted: every figure includes the ``for`` loop (the empty-loop row shows it).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema.validators
import jsonschema_rs

from strictmcp.schema import Validator, compile_schema
from tool_schema import SCHEMA

VALID_INSTANCE: dict[str, Any] = {
    "repository": "modelcontextprotocol/python-sdk",
    "title": "Server crashes on startup when the config file is empty",
    "body": (
        "Steps to reproduce: create an empty config.toml, run the server, watch it exit with "
        "a KeyError in the settings loader. Expected: a clear error message naming the file."
    ),
    "priority": 2,
    "state": "open",
    "labels": ["bug", "area:config", "good-first-issue"],
    "assignee": {"login": "octocat", "notify": True},
}

# The kind of call a model gets wrong: four independent mistakes.
INVALID_INSTANCE: dict[str, Any] = {
    "repository": "not a repository",
    "title": "Server crashes on startup when the config file is empty",
    "priority": 9,
    "state": "open",
    "labels": ["bug", "Area Config"],
    "assignee": {"login": "octocat", "notify": True},
    "due": "tomorrow",
}

VALID_JSON = json.dumps(VALID_INSTANCE).encode()
INVALID_JSON = json.dumps(INVALID_INSTANCE).encode()

RAW = "c"  # the baseline every ratio is taken against


@dataclass
class Contender:
    """One thing to time: ``run(n)`` makes ``n`` calls."""

    key: str
    group: str
    label: str
    run: Callable[[int], object]
    batch: int = 1
    samples: list[float] = field(default_factory=list)  # ns per call, one per batch

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> tuple[float, float]:
        return _p10_p90(self.samples)


def _p10_p90(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    return deciles[0], deciles[8]


def _calls(call: Callable[[Any], object], arg: Any) -> Callable[[int], object]:
    """``n`` calls of ``call(arg)``."""

    def run(n: int) -> object:
        for _ in range(n):
            call(arg)
        return None

    return run


def _sized_calls(call: Callable[..., object], arg: Any, raw_json: bytes) -> Callable[[int], object]:
    """``n`` calls of ``call(arg, json_size=len(raw_json))``, as the protocol layer makes them."""

    def run(n: int) -> object:
        for _ in range(n):
            call(arg, json_size=len(raw_json))
        return None

    return run


def _gated_calls(validator: Validator, arg: Any, raw_json: bytes) -> Callable[[int], object]:
    """``n`` checks the way the protocol layer makes them: the size bound, then the fast path,
    and :meth:`Validator.validate` only for the details of a failure."""
    fast = validator.fast_path
    if fast is None:
        raise SystemExit("the benchmark schema must have a fast path")
    limit = validator.limits.max_instance_size

    def run(n: int) -> object:
        for _ in range(n):
            if not (len(raw_json) <= limit and fast(arg)):
                validator.validate(arg, json_size=len(raw_json))
        return None

    return run


def _listed_calls(call: Callable[[Any], Iterable[object]], arg: Any) -> Callable[[int], object]:
    """``n`` calls of ``list(call(arg))``: every error, materialized."""

    def run(n: int) -> object:
        for _ in range(n):
            list(call(arg))
        return None

    return run


def build_contenders() -> list[Contender]:
    """Every contender, each timed as a plain ``for`` loop over its own call."""
    schema, good, bad = SCHEMA, VALID_INSTANCE, INVALID_INSTANCE

    # (b) what SDK 2.x's client does: a cached python-jsonschema validator.
    py_cls = jsonschema.validators.validator_for(schema)
    py = py_cls(schema, format_checker=py_cls.FORMAT_CHECKER)
    # (c) the baseline: jsonschema-rs exactly as its README shows it.
    rs = jsonschema_rs.validator_for(schema)
    # (c') jsonschema-rs configured as strictmcp configures it (linear-time regex engine,
    # formats asserted): separates the cost of that configuration from the wrapper's.
    rs_like = jsonschema_rs.validator_for(
        schema, validate_formats=True, pattern_options=jsonschema_rs.RegexOptions()
    )
    # (d), (e) strictmcp, compiled once through its cache.
    validator = compile_schema(schema)
    if validator.profile.recursive:
        raise SystemExit("the benchmark schema must not be recursive")
    _check_verdicts(py, rs, rs_like, validator)

    def sdk_v1(instance: Any) -> None:
        # What MCP Python SDK v1 does for every call: check the schema, build, validate.
        with contextlib.suppress(jsonschema.ValidationError):
            jsonschema.validate(instance, schema)

    def python_jsonschema_build(schema: Any) -> None:
        cls = jsonschema.validators.validator_for(schema)
        cls(schema, format_checker=cls.FORMAT_CHECKER)

    def uncached_compile(schema: Any) -> None:
        compile_schema(schema, cache=None)

    return [
        Contender("a", "valid", "`jsonschema.validate()` per call (SDK v1)", _calls(sdk_v1, good)),
        Contender("b", "valid", "python-jsonschema, cached, `is_valid`", _calls(py.is_valid, good)),
        Contender(
            "c", "valid", "jsonschema-rs, cached, `is_valid` (baseline)", _calls(rs.is_valid, good)
        ),
        Contender(
            "c'", "valid", "jsonschema-rs configured like strictmcp", _calls(rs_like.is_valid, good)
        ),
        Contender(
            "d",
            "valid",
            "strictmcp `validate(x, json_size=n)`",
            _sized_calls(validator.validate, good, VALID_JSON),
        ),
        Contender(
            "g",
            "valid",
            "strictmcp `fast_path` behind the caller's size bound",
            _gated_calls(validator, good, VALID_JSON),
        ),
        Contender(
            "e",
            "valid",
            "strictmcp `validate(x)` (walks the instance)",
            _calls(validator.validate, good),
        ),
        Contender("a", "invalid", "`jsonschema.validate()` per call (SDK v1)", _calls(sdk_v1, bad)),
        Contender(
            "b",
            "invalid",
            "python-jsonschema, cached, `iter_errors`",
            _listed_calls(py.iter_errors, bad),
        ),
        Contender(
            "c",
            "invalid",
            "jsonschema-rs, cached, `iter_errors` (baseline)",
            _listed_calls(rs.iter_errors, bad),
        ),
        Contender(
            "c'",
            "invalid",
            "jsonschema-rs configured like strictmcp",
            _listed_calls(rs_like.iter_errors, bad),
        ),
        Contender(
            "d",
            "invalid",
            "strictmcp `validate(x, json_size=n)`",
            _sized_calls(validator.validate, bad, INVALID_JSON),
        ),
        Contender(
            "e",
            "invalid",
            "strictmcp `validate(x)` (walks the instance)",
            _calls(validator.validate, bad),
        ),
        Contender(
            "f1",
            "compile",
            "strictmcp `compile_schema(s, cache=None)`",
            _calls(uncached_compile, schema),
        ),
        Contender(
            "f2",
            "compile",
            "`jsonschema_rs.validator_for(s)`",
            _calls(jsonschema_rs.validator_for, schema),
        ),
        Contender(
            "f3",
            "compile",
            "python-jsonschema `validator_for(s)` + construction",
            _calls(python_jsonschema_build, schema),
        ),
        Contender(
            "f4",
            "compile",
            "strictmcp `compile_schema(s)`, cache hit",
            _calls(compile_schema, schema),
        ),
        Contender(
            "loop",
            "overhead",
            "empty loop: a no-op Python call per iteration",
            _calls(_nothing, good),
        ),
    ]


def _nothing(instance: Any) -> None:
    return None


def _check_verdicts(py_validator: Any, rs: Any, rs_configured: Any, validator: Any) -> None:
    """Refuse to time anything that does not agree on the verdicts."""
    good, bad = VALID_INSTANCE, INVALID_INSTANCE
    jsonschema.validate(good, SCHEMA)
    try:
        jsonschema.validate(bad, SCHEMA)
    except jsonschema.ValidationError:
        pass
    else:
        raise SystemExit("jsonschema.validate accepted the invalid instance")
    for name, check in (
        ("python-jsonschema", py_validator.is_valid),
        ("jsonschema-rs", rs.is_valid),
        ("jsonschema-rs configured", rs_configured.is_valid),
        ("strictmcp", lambda x: validator.validate(x).valid),
    ):
        if not check(good) or check(bad):
            raise SystemExit(f"{name} gets a verdict wrong")
    counts = {
        "python-jsonschema": len(list(py_validator.iter_errors(bad))),
        "jsonschema-rs": len(list(rs.iter_errors(bad))),
        "strictmcp": len(validator.validate(bad, json_size=len(INVALID_JSON)).issues),
    }
    if len(set(counts.values())) != 1:
        raise SystemExit(f"engines disagree on the number of errors: {counts}")


def calibrate(contender: Contender, batch_ns: int) -> None:
    """Pick N so that one batch of N calls lasts about ``batch_ns``."""
    contender.run(1)  # warm up: first-call caches, lazy reference resolution
    n = 1
    while True:
        start = time.perf_counter_ns()
        contender.run(n)
        elapsed = time.perf_counter_ns() - start
        if elapsed >= batch_ns // 4 or n >= 1_000_000:
            break
        n *= 4
    contender.batch = max(1, round(n * batch_ns / max(elapsed, 1)))


def measure(
    contenders: list[Contender],
    rounds: int,
    min_calls: int,
    clock: Callable[[], int] = time.perf_counter_ns,
) -> None:
    """Round-robin: each round times one batch of every contender, in a rotated order, by
    ``clock`` (``time.process_time_ns``: this process's CPU time, which time spent waiting for
    a core on a busy machine does not count)."""
    for contender in contenders:
        contender.batch = max(contender.batch, -(-min_calls // rounds))
    count = len(contenders)
    gc.collect()
    for round_index in range(rounds):
        offset = round_index % count
        for contender in contenders[offset:] + contenders[:offset]:
            run, n = contender.run, contender.batch
            gc.disable()
            start = clock()
            run(n)
            elapsed = clock() - start
            gc.enable()
            contender.samples.append(elapsed / n)


@dataclass(frozen=True)
class Ratio:
    name: str
    value: float
    low: float
    high: float


def ratio(name: str, top: Contender, bottom: Contender) -> Ratio:
    """Ratio of medians, with the 10th-90th percentile of the per-round paired ratios."""
    paired = [t / b for t, b in zip(top.samples, bottom.samples, strict=True)]
    low, high = _p10_p90(paired)
    return Ratio(name, top.median / bottom.median, low, high)


@dataclass(frozen=True)
class Target:
    name: str
    ratio: Ratio
    bound: float
    at_most: bool  # True: the ratio must be <= bound; False: >= bound
    info: bool = False  # shown for comparison; not one of the targets

    @property
    def passed(self) -> bool:
        return self.ratio.value <= self.bound if self.at_most else self.ratio.value >= self.bound


def fmt_time(ns: float) -> str:
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.2f} µs"
    return f"{ns / 1_000_000:.2f} ms"


def fmt_ratio(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}x"
    return f"{value:.2f}x"


def report(contenders: list[Contender], ratios: list[Ratio], targets: list[Target]) -> str:
    by = {(c.group, c.key): c for c in contenders}
    lines = [
        "| case | contender | median per call | p10-p90 | vs raw jsonschema-rs | calls/batch |",
        "|---|---|--:|--:|--:|--:|",
    ]
    for c in contenders:
        base = by.get((c.group, RAW))
        vs = fmt_ratio(c.median / base.median) if base is not None else "-"
        if c.group == "compile":
            base = by[("compile", "f2")]
            vs = fmt_ratio(c.median / base.median) + " of f2"
        low, high = c.spread
        lines.append(
            f"| {c.group} | ({c.key}) {c.label} | {fmt_time(c.median)} | "
            f"{fmt_time(low)} - {fmt_time(high)} | {vs} | {c.batch} |"
        )
    lines += ["", "| ratio | median | p10-p90 (paired by round) |", "|---|--:|--:|"]
    lines += [
        f"| {r.name} | {fmt_ratio(r.value)} | {fmt_ratio(r.low)} - {fmt_ratio(r.high)} |"
        for r in ratios
    ]
    lines += ["", "Targets:", ""]
    for t in targets:
        sign = "<=" if t.at_most else ">="
        verdict = ("PASS" if t.passed else "FAIL") + (" (info, not a target)" if t.info else "")
        lines.append(
            f"- **{verdict}** {t.name}: {fmt_ratio(t.ratio.value)} (target {sign} "
            f"{fmt_ratio(t.bound)}; p10-p90 {fmt_ratio(t.ratio.low)} - {fmt_ratio(t.ratio.high)})"
        )
    return "\n".join(lines)


def environment() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "system": platform.system(),
        "processor": _cpu_model(),
        "cpus": str(_cpu_count()),
        "jsonschema-rs": version("jsonschema_rs"),
        "jsonschema": version("jsonschema"),
        "strictmcp": version("strictmcp"),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cpu_count() -> int:
    import os  # noqa: PLC0415 - only here

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 0


def write_numbers(
    path: Path,
    mode: str,
    rounds: int,
    elapsed: float,
    env: dict[str, str],
    contenders: list[Contender],
    ratios: list[Ratio],
    extra: dict[str, Any],
) -> None:
    """Write every sample and figure of a run as JSON, for later analysis."""
    numbers = {
        "mode": mode,
        "rounds": rounds,
        "seconds": elapsed,
        "environment": env,
        "contenders": [
            {
                "key": c.key,
                "group": c.group,
                "label": c.label,
                "calls_per_batch": c.batch,
                "median_ns": c.median,
                "p10_ns": c.spread[0],
                "p90_ns": c.spread[1],
                "calls_per_second": 1e9 / c.median,
                "samples_ns": c.samples,
            }
            for c in contenders
        ],
        "ratios": [asdict(r) for r in ratios],
        **extra,
    }
    path.write_text(json.dumps(numbers, indent=2) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fast smoke run (CI)")
    parser.add_argument("--json", metavar="FILE", type=Path, help="write the raw numbers here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    args = parser.parse_args(argv)

    # quick: ~1 ms batches, 30 rounds, at least 300 calls each; full: ~5 ms batches, 500 rounds
    batch_ns, rounds, min_calls = (1_000_000, 30, 300) if args.quick else (5_000_000, 500, 0)
    started = time.perf_counter()
    contenders = build_contenders()
    for contender in contenders:
        calibrate(contender, batch_ns)
    measure(contenders, rounds, min_calls)
    elapsed = time.perf_counter() - started

    by = {(c.group, c.key): c for c in contenders}

    def pair(group: str, top: str, bottom: str, name: str) -> Ratio:
        return ratio(f"{group}: {name}", by[(group, top)], by[(group, bottom)])

    ratios = [
        pair("valid", "d", RAW, "strictmcp (d) / raw jsonschema-rs (c)"),
        pair("valid", "e", RAW, "strictmcp (e) / raw jsonschema-rs (c)"),
        pair("valid", "d", "c'", "strictmcp (d) / jsonschema-rs configured like it (c')"),
        pair("valid", "a", "d", "jsonschema.validate() (a) / strictmcp (d)"),
        pair("valid", "b", "d", "cached python-jsonschema (b) / strictmcp (d)"),
        pair("valid", "a", "e", "jsonschema.validate() (a) / strictmcp (e)"),
        pair("valid", "b", "e", "cached python-jsonschema (b) / strictmcp (e)"),
        pair("valid", "b", RAW, "cached python-jsonschema (b) / raw jsonschema-rs (c)"),
        pair("valid", "g", RAW, "strictmcp fast path (g) / raw jsonschema-rs (c)"),
        pair("valid", "a", "g", "jsonschema.validate() (a) / strictmcp fast path (g)"),
        pair("valid", "b", "g", "cached python-jsonschema (b) / strictmcp fast path (g)"),
        pair("invalid", "d", RAW, "strictmcp (d) / raw jsonschema-rs (c)"),
        pair("invalid", "e", RAW, "strictmcp (e) / raw jsonschema-rs (c)"),
        pair("invalid", "a", "d", "jsonschema.validate() (a) / strictmcp (d)"),
        pair("invalid", "b", "d", "cached python-jsonschema (b) / strictmcp (d)"),
        pair("compile", "f1", "f2", "strictmcp uncached (f1) / jsonschema-rs (f2)"),
        pair("compile", "f4", "f2", "strictmcp cache hit (f4) / jsonschema-rs (f2)"),
    ]
    targets = [
        Target("strictmcp (d) valid path within 1.3x of raw jsonschema-rs", ratios[0], 1.3, True),
        Target("strictmcp (d) >= 3000x faster than jsonschema.validate()", ratios[3], 3000, False),
        Target("strictmcp (d) >= 100x faster than cached python-jsonschema", ratios[4], 100, False),
        Target("strictmcp (g) fast path within 1.3x of raw jsonschema-rs", ratios[8], 1.3, True),
        Target("strictmcp (g) >= 3000x faster than jsonschema.validate()", ratios[9], 3000, False),
        Target(
            "strictmcp (g) >= 100x faster than cached python-jsonschema", ratios[10], 100, False
        ),
        Target("strictmcp (e) within 1.3x of raw jsonschema-rs", ratios[1], 1.3, True, True),
        Target(
            "strictmcp (e) >= 3000x faster than jsonschema.validate()", ratios[5], 3000, False, True
        ),
        Target(
            "strictmcp (e) >= 100x faster than cached python-jsonschema",
            ratios[6],
            100,
            False,
            True,
        ),
    ]

    env = environment()
    mode = "quick" if args.quick else "full"
    print(
        f"strictmcp engine benchmark ({mode}): Python {env['python']}, "
        f"jsonschema-rs {env['jsonschema-rs']}, jsonschema {env['jsonschema']}, "
        f"{env['cpus']} CPUs ({env['processor']}); {rounds} rounds, {elapsed:.0f} s\n"
    )
    print(report(contenders, ratios, targets))

    if args.json is not None:
        checks = [
            {
                "name": t.name,
                "ratio": t.ratio.value,
                "bound": t.bound,
                "passed": t.passed,
                "informational": t.info,
            }
            for t in targets
        ]
        write_numbers(
            args.json, mode, rounds, elapsed, env, contenders, ratios, {"targets": checks}
        )
    return 1 if args.check and not all(t.passed for t in targets if not t.info) else 0


if __name__ == "__main__":
    sys.exit(main())
