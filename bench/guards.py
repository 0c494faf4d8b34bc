"""Guard benchmark: what each of strictmcp's argument guards costs per call, and a whole policy.

Run ``python bench/guards.py`` (``make bench``) for the full run, ``--quick`` for a smoke run,
``--json FILE`` to keep the raw numbers, ``--check`` to check every verdict and exit without
timing. Figures and their reading are in docs/benchmarks.md, section "Guards".

Before any timing the script checks that every guard (and every baseline) gives the verdict it
is expected to give on every value, and refuses to time anything otherwise (exit status 1).
There is no target in the specification for guards, so there is nothing else to check.

- path: :class:`PathGuard` on a temporary root this script creates (a few directories deep,
  with one symbolic link inside the root pointing inside it), on a realistic path through that
  link, on a path whose ``..`` segments escape the root, and on a sibling whose name starts
  with the root's (``<root>_secret``). Its baseline is what naive servers do,
  ``os.path.realpath(p).startswith(root)``, which is insecure: it accepts the sibling.
- url: :class:`UrlGuard` with ``resolve=False``; with ``resolve=True`` and a fake in-memory
  resolver (the guard's own cost of resolving); and with ``resolve=True`` and the real system
  resolver (:class:`SystemResolver`: a thread and ``getaddrinfo``) on the name ``localhost``
  only. No other name is ever looked up: that guard allows only the host ``localhost``, its
  resolver refuses any other name before looking it up, and a URL that fails a static check
  (the obfuscated-IP one) never reaches a resolver. The guard refuses localhost names by
  default, so this guard sets ``allow_private``. And the script refuses to run unless the
  system resolver answers ``localhost`` from the hosts file (``/etc/hosts`` maps it to
  loopback and, on Linux, ``nsswitch.conf`` consults ``files`` first), so not even that name
  becomes a DNS query: nothing leaves the machine.
- sql: :class:`SqlGuard` (PostgreSQL) on a SELECT with a CTE and a join, and on a stacked
  ``; DROP TABLE``; argv and text guards on typical values; and a whole ``Policy.check`` for a
  tool with three guarded arguments (path, url with the fake resolver, text: the values the
  path, url and text rows check alone), in a policy of five rules, two of which are for other
  tools; and the same policy with every guard a no-op, which times the policy's own work.

Every ratio is against a baseline timed in the same process: an empty ``Policy().check`` (no
rules) for all, the naive realpath check for the path guard. The measurement is
bench/engine.py's, imported from it (run this file as a script, so that bench/ is on
``sys.path``): batches of back-to-back calls timed with ``time.perf_counter_ns``, the cyclic GC
off inside a batch, contenders round-robin with a rotating start, medians with the 10th-90th
percentile spread, and ratios of medians from the same run with the spread of the per-round
paired ratios.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any, ClassVar

from engine import (
    Contender,
    Ratio,
    _calls,
    calibrate,
    environment,
    fmt_ratio,
    measure,
    ratio,
    write_numbers,
)
from strictmcp.guards import (
    ArgvGuard,
    Guard,
    GuardCode,
    GuardFinding,
    PathGuard,
    SqlGuard,
    SystemResolver,
    TextGuard,
    UrlGuard,
)
from strictmcp.guards import path as path_module
from strictmcp.guards.claims import ClaimGuard
from strictmcp.policy import GuardRule, Identity, Policy
from strictmcp.protocol import Violation

BASELINE = ("policy", "empty")  # the (group, key) every "vs empty policy" figure is taken against

TOOL = "download_file"
VALID_URL = "https://api.example.com/v1/reports/2025-06.csv?format=csv&page=2"
LOOPBACK_NAME = "localhost"
LOOPBACK_URL = "https://localhost:8443/v1/reports/2025-06.csv?format=csv&page=2"
# 169.254.169.254, the cloud metadata service, spelled as one decimal number.
OBFUSCATED_URL = "https://2852039166/latest/meta-data/iam/security-credentials/"
# What the fake resolver answers for every name: example.com's public addresses.
FAKE_ANSWER = ("93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c")

SELECT = """WITH recent AS (
    SELECT customer_id, SUM(total) AS spent
    FROM orders
    WHERE created_at >= NOW() - INTERVAL '30 days'
    GROUP BY customer_id
)
SELECT c.id, c.name, c.email, r.spent
FROM customers AS c
JOIN recent AS r ON r.customer_id = c.id
WHERE c.country = 'DE' AND c.active
ORDER BY r.spent DESC
LIMIT 20"""
STACKED = "SELECT id, name FROM customers WHERE id = 42; DROP TABLE customers"

ARGV = ["git", "log", "--oneline", "-n", "20", "--", "src/app/main.py"]
ARGUMENT = "feature/login-page"
TEXT = (
    "Monthly revenue report for June, grouped by country.\n"
    "Please flag any customer whose spend dropped by more than 20% compared with May, "
    "and attach the CSV to the ticket so finance can check the totals before Friday."
)
TEXT_UNICODE = "Réunion à 14 h — déjà vu, 東京の会議室 👩‍💻 ❤️ 🇩🇪, ça marche !"


# --- the filesystem the path guard checks ---------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """A temporary root with a symlink inside, a sibling sharing its prefix, and three paths."""

    root: str
    inside: str  # through the symlink to an existing file
    target: str  # what ``inside`` resolves to
    escaping: str  # '..' out of the root, to /etc/passwd
    sibling: str  # <root>_secret/credentials.txt: a string prefix match, not a path inside


def make_tree(base: str) -> Tree:
    base = os.path.realpath(base)
    root = os.path.join(base, "data")
    release = os.path.join(root, "projects", "acme", "releases", "2025-06")
    os.makedirs(os.path.join(release, "src", "app"))
    target = os.path.join(release, "src", "app", "main.py")
    Path(target).write_text("print('hello')\n")
    # The one symlink: relative, inside the root, pointing inside it.
    os.symlink(
        os.path.join("releases", "2025-06"), os.path.join(root, "projects", "acme", "current")
    )
    sibling_dir = root + "_secret"
    os.makedirs(sibling_dir)
    Path(sibling_dir, "credentials.txt").write_text("secret\n")
    depth = len([part for part in root.split("/") if part])
    return Tree(
        root=root,
        inside=os.path.join(root, "projects", "acme", "current", "src", "app", "main.py"),
        target=target,
        escaping=os.path.join(root, "projects", *[".."] * (depth + 1), "etc", "passwd"),
        sibling=os.path.join(sibling_dir, "credentials.txt"),
    )


# What the guard asks the filesystem on the path inside (the label of the lstat row says so):
# one lstat per component (the link's target's components included) and a last one for the
# result, and one readlink.
INSIDE_SYSCALLS = (12, 1)


def path_syscalls(guard: PathGuard, value: str) -> tuple[int, int]:
    """How many ``lstat`` and ``readlink`` calls one check makes (through the names the
    guard's module routes its filesystem reads through, as its tests do)."""
    counts = [0, 0]
    lstat, readlink = path_module._lstat, path_module._readlink

    def counted_lstat(*args: Any, **kwargs: Any) -> Any:
        counts[0] += 1
        return lstat(*args, **kwargs)

    def counted_readlink(*args: Any, **kwargs: Any) -> Any:
        counts[1] += 1
        return readlink(*args, **kwargs)

    path_module._lstat, path_module._readlink = counted_lstat, counted_readlink
    try:
        guard.check(value)
    finally:
        path_module._lstat, path_module._readlink = lstat, readlink
    return counts[0], counts[1]


def naive_check(root: str) -> Callable[[str], bool]:
    """What naive servers do: resolve the path, then a string prefix check. Insecure: any
    sibling whose name starts with the root's name passes."""

    def allowed(path: str) -> bool:
        return os.path.realpath(path).startswith(root)

    return allowed


# --- resolvers --------------------------------------------------------------------------------


@dataclass
class FakeResolver:
    """An in-memory resolver: the guard's cost of resolving, without any lookup."""

    answer: tuple[str, ...] = FAKE_ANSWER
    calls: int = 0

    def __call__(self, host: str) -> Sequence[str]:
        self.calls += 1
        return self.answer


@dataclass(frozen=True)
class LoopbackOnly:
    """The real :class:`SystemResolver`, for the name ``localhost`` only: any other name is
    refused before anything is looked up, so this benchmark sends nothing off the machine."""

    system: SystemResolver = field(default_factory=SystemResolver)

    def __call__(self, host: str) -> list[str]:
        if host != LOOPBACK_NAME:
            raise PermissionError("this benchmark resolves the name localhost only")
        return self.system(host)


def localhost_problem(hosts: Path = Path("/etc/hosts")) -> str | None:
    """Why looking up ``localhost`` here might send a DNS query off the machine, or None.

    The system resolver must answer the name from the hosts file, without asking DNS: the hosts
    file maps ``localhost`` to a loopback address and, on Linux, ``/etc/nsswitch.conf`` consults
    ``files`` first (glibc stops at the first source that answers).
    """
    try:
        lines = hosts.read_text().splitlines()
    except OSError:
        return f"{hosts} cannot be read"
    mapped = []
    for line in lines:
        address, *names = line.partition("#")[0].split() or [""]
        if LOOPBACK_NAME in names:
            mapped.append(address)
    if not mapped or not all_loopback(mapped):
        return f"{hosts} does not map localhost to loopback addresses only"
    if sys.platform.startswith("linux"):
        try:
            nsswitch = Path("/etc/nsswitch.conf").read_text().splitlines()
        except OSError:
            return "/etc/nsswitch.conf cannot be read (glibc's default asks DNS first)"
        sources = next((ln.split()[1:] for ln in nsswitch if ln.startswith("hosts:")), [])
        if sources[:1] != ["files"]:
            return "/etc/nsswitch.conf does not consult files first for hosts"
    return None


def getaddrinfo_localhost(_: object) -> object:
    return socket.getaddrinfo(LOOPBACK_NAME, None, proto=socket.IPPROTO_TCP)


def all_loopback(addresses: object) -> bool:
    """Whether ``addresses`` (strings, or ``getaddrinfo`` tuples) are all loopback, and some."""
    if not isinstance(addresses, (list, tuple)) or not addresses:
        return False
    texts = [str(a[4][0]) if isinstance(a, tuple) else str(a) for a in addresses]
    try:
        return all(ipaddress.ip_address(t.partition("%")[0]).is_loopback for t in texts)
    except ValueError:
        return False


# --- cases: what is timed, and the verdict it must give -----------------------------------------


@dataclass(frozen=True)
class Case:
    """One contender, with the verdict ``call(arg)`` must give (as ``verdict`` reads it)."""

    group: str
    key: str
    label: str
    call: Callable[[Any], object]
    arg: Any
    expected: object
    verdict: Callable[[object], object] = field(default=lambda result: result)

    def got(self) -> object:
        return self.verdict(self.call(self.arg))


def codes(found: object) -> frozenset[str]:
    """The codes of a guard's findings, or of a policy's violations."""
    if not isinstance(found, list):
        raise TypeError(f"expected a list of findings, got {type(found).__name__}")
    out: set[str] = set()
    for item in found:
        if isinstance(item, GuardFinding):
            out.add(item.code.value)
        elif isinstance(item, Violation):
            out.add(item.code)
        else:
            raise TypeError(f"expected a finding, got {type(item).__name__}")
    return frozenset(out)


def codes_of(*names: GuardCode) -> frozenset[str]:
    return frozenset(code.value for code in names)


def is_regular_file(status: object) -> bool:
    return isinstance(status, os.stat_result) and stat.S_ISREG(status.st_mode)


NONE: frozenset[str] = frozenset()


@dataclass(frozen=True)
class NullGuard:
    """A guard that finds nothing and does nothing: a policy made of these costs only the
    policy's own work (matching tool globs, selecting arguments by pointer)."""

    kind: ClassVar[str] = "null"

    def check(self, value: Any) -> list[GuardFinding]:
        return []


def rules(url: Guard, path: Guard, text: Guard, sql: Guard, argv: Guard) -> tuple[GuardRule, ...]:
    """The benchmark policy's five rules: three for the timed tool, two for other tools."""
    return (
        GuardRule(TOOL, "/url", url),
        GuardRule(TOOL, "/destination", path),
        GuardRule(TOOL, "/note", text),
        GuardRule("run_query", "/sql", sql),
        GuardRule("exec_*", "/argv", argv),
    )


@dataclass
class Setup:
    """Everything the cases use, built once: guards, resolvers, the tree, the policies."""

    tree: Tree
    path: PathGuard
    url_static: UrlGuard
    url_fake: UrlGuard
    url_system: UrlGuard
    fake: FakeResolver
    loopback: LoopbackOnly
    sql: SqlGuard
    argv: ArgvGuard
    text: TextGuard
    policy: Policy
    machinery: Policy
    empty: Policy
    per_caller: Policy
    caller: Identity
    arguments: dict[str, Any]


def setup(tree: Tree) -> Setup:
    fake, loopback = FakeResolver(), LoopbackOnly()
    path = PathGuard(roots=(tree.root,))
    url_fake = UrlGuard(resolve=True, resolver=fake)
    text = TextGuard(max_length=4000)
    policy = Policy(rules=rules(url_fake, path, text, SqlGuard(), ArgvGuard()))
    # The same policy with the path root taken from the caller's claim ("data" names the
    # tree's root), as a policy's `roots = [".../{claim.tenant}"]` makes it.
    template = os.path.join(os.path.dirname(tree.root), "{claim.tenant}")
    per_caller = ClaimGuard("path", {"roots": (template,)}, lambda o: PathGuard(**o), ("tenant",))
    null = NullGuard()
    return Setup(
        tree=tree,
        path=path,
        url_static=UrlGuard(resolve=False),
        url_fake=url_fake,
        url_system=UrlGuard(
            resolve=True, resolver=loopback, hosts=(LOOPBACK_NAME,), allow_private=True
        ),
        fake=fake,
        loopback=loopback,
        sql=SqlGuard(),
        argv=ArgvGuard(
            allow_options=("--oneline", "-n", "--"), executables=("git",), first_is_executable=True
        ),
        text=text,
        policy=policy,
        machinery=Policy(rules=rules(null, null, null, null, null)),
        empty=Policy(),
        per_caller=Policy(rules=rules(url_fake, per_caller, text, SqlGuard(), ArgvGuard())),
        caller=Identity("alice", claims={"tenant": os.path.basename(tree.root)}),
        # The same values the path, url and text rows check on their own.
        arguments={"url": VALID_URL, "destination": tree.inside, "note": TEXT, "overwrite": False},
    )


def build_cases(s: Setup) -> list[Case]:
    tree, naive = s.tree, naive_check(s.tree.root)
    outside = codes_of(GuardCode.PATH_OUTSIDE_ROOTS)
    obfuscated = codes_of(GuardCode.URL_OBFUSCATED_ADDRESS, GuardCode.URL_PRIVATE_ADDRESS)
    path_cases = (
        ("path: inside, via a symlink", tree.inside, True, NONE),
        ("path: '..' escaping the root", tree.escaping, False, outside),
        ("path: sibling prefix (<root>_secret)", tree.sibling, True, outside),
    )
    cases = [
        Case(
            "policy",
            "empty",
            "empty `Policy().check` (no rules) (baseline)",
            partial(s.empty.check, TOOL),
            s.arguments,
            NONE,
            codes,
        ),
        Case(
            "policy",
            "p",
            f"`Policy.check`: {TOOL}, 3 guarded arguments (path, url fake-resolved, text)",
            partial(s.policy.check, TOOL),
            s.arguments,
            NONE,
            codes,
        ),
        Case(
            "policy",
            "c",
            "the same policy, its path root per caller (`{claim.tenant}`), as one caller calls",
            partial(s.per_caller.check, TOOL, identity=s.caller),
            s.arguments,
            NONE,
            codes,
        ),
        Case(
            "policy",
            "o",
            "the same policy with every guard a no-op: the policy's own work",
            partial(s.machinery.check, TOOL),
            s.arguments,
            NONE,
            codes,
        ),
    ]
    for group, value, naive_accepts, expected in path_cases:
        if value is tree.inside:
            cases.append(
                Case(
                    group,
                    "l",
                    f"one `os.lstat(p)`, for scale (the guard makes {INSIDE_SYSCALLS[0]} "
                    "and a `readlink` here)",
                    os.lstat,
                    value,
                    True,
                    is_regular_file,
                )
            )
        cases += [
            Case(
                group,
                "n",
                "`os.path.realpath(p).startswith(root)` (naive, insecure)",
                naive,
                value,
                naive_accepts,
            ),
            Case(
                group, "g", "`PathGuard(roots=(root,)).check`", s.path.check, value, expected, codes
            ),
        ]
    for group, url, system_url, expected, system_expected in (
        ("url: valid https", VALID_URL, LOOPBACK_URL, NONE, NONE),
        (
            "url: obfuscated IP (169.254.169.254 as a decimal)",
            OBFUSCATED_URL,
            OBFUSCATED_URL,
            obfuscated,
            codes_of(GuardCode.URL_OBFUSCATED_ADDRESS, GuardCode.URL_HOST_NOT_ALLOWED),
        ),
    ):
        cases += [
            Case(group, "s", "`resolve=False`", s.url_static.check, url, expected, codes),
            Case(
                group,
                "f",
                "`resolve=True`, fake in-memory resolver",
                s.url_fake.check,
                url,
                expected,
                codes,
            ),
            Case(
                group,
                "r",
                "`resolve=True`, system resolver, `localhost` only"
                + (" (URL on localhost, `allow_private`)" if url is VALID_URL else ""),
                s.url_system.check,
                system_url,
                system_expected,
                codes,
            ),
        ]
    cases += [
        Case(
            "dns: localhost",
            "d1",
            '`socket.getaddrinfo("localhost", None, proto=TCP)`',
            getaddrinfo_localhost,
            None,
            True,
            all_loopback,
        ),
        Case(
            "dns: localhost",
            "d2",
            '`SystemResolver()("localhost")` (a thread + getaddrinfo)',
            s.loopback,
            LOOPBACK_NAME,
            True,
            all_loopback,
        ),
        Case(
            "sql",
            "q",
            "`SqlGuard()`: SELECT with a CTE and a join",
            s.sql.check,
            SELECT,
            NONE,
            codes,
        ),
        Case(
            "sql",
            "x",
            "`SqlGuard()`: stacked `; DROP TABLE`",
            s.sql.check,
            STACKED,
            codes_of(GuardCode.SQL_MULTIPLE_STATEMENTS, GuardCode.SQL_NOT_READ_ONLY),
            codes,
        ),
        Case(
            "argv",
            "v",
            f"`ArgvGuard`: a vector of {len(ARGV)} (`git log ...`)",
            s.argv.check,
            ARGV,
            NONE,
            codes,
        ),
        Case(
            "argv",
            "a",
            "`ArgvGuard()`: one argument (a branch name)",
            ArgvGuard().check,
            ARGUMENT,
            NONE,
            codes,
        ),
        Case(
            "text",
            "t",
            f"`TextGuard`: {len(TEXT)} ASCII characters, a newline",
            s.text.check,
            TEXT,
            NONE,
            codes,
        ),
        Case(
            "text",
            "u",
            f"`TextGuard`: {len(TEXT_UNICODE)} characters, accents, CJK, emoji ZWJ and flag",
            s.text.check,
            TEXT_UNICODE,
            NONE,
            codes,
        ),
    ]
    return cases


def check_verdicts(s: Setup, cases: list[Case]) -> list[str]:
    """Every wrong verdict, as a message; an empty list when all are as expected."""
    wrong = [
        f"{c.group} ({c.key}): expected {c.expected!r}, got {got!r}"
        for c in cases
        if (got := c.got()) != c.expected
    ]
    tree = s.tree
    if s.path.resolve(tree.inside) != tree.target:
        wrong.append("path: the guard did not resolve the symlink to its target")
    if not os.path.islink(os.path.join(tree.root, "projects", "acme", "current")):
        wrong.append("path: the tree has no symlink")
    if (calls := path_syscalls(s.path, tree.inside)) != INSIDE_SYSCALLS:
        wrong.append(f"path: the guard made {calls} (lstat, readlink) calls, not {INSIDE_SYSCALLS}")
    if naive_check(tree.root)(tree.sibling) is not True:
        wrong.append("path: the naive check refused the sibling; the docs call it insecure")
    s.fake.calls = 0
    findings, addresses = s.url_fake.check_resolved(VALID_URL)
    if findings or addresses != FAKE_ANSWER or s.fake.calls != 1:
        wrong.append("url: the fake resolver was not used exactly once for the valid URL")
    s.fake.calls = 0
    s.url_fake.check(OBFUSCATED_URL)
    if s.fake.calls:
        wrong.append("url: a statically refused URL reached the resolver")
    findings, addresses = s.url_system.check_resolved(LOOPBACK_URL)
    if findings or not all_loopback(addresses):
        wrong.append("url: localhost did not resolve to loopback addresses only")
    try:
        s.loopback("example.com")
    except PermissionError:
        pass
    else:
        wrong.append("url: the loopback-only resolver looked up another name")
    refused = s.policy.check(
        TOOL, {"url": OBFUSCATED_URL, "destination": tree.sibling, "note": "ok\u202e"}
    )
    pointers = {(v.pointer, v.rule.value) for v in refused}
    wanted = {
        ("/params/arguments/url", GuardCode.URL_OBFUSCATED_ADDRESS.value),
        ("/params/arguments/url", GuardCode.URL_PRIVATE_ADDRESS.value),
        ("/params/arguments/destination", GuardCode.PATH_OUTSIDE_ROOTS.value),
        ("/params/arguments/note", GuardCode.TEXT_BIDI_CONTROL.value),
    }
    if pointers != wanted or not s.policy.blocks(refused):
        wrong.append(f"policy: a bad call gave {sorted(pointers)}")
    return wrong


# --- report -----------------------------------------------------------------------------------


def fmt_us(ns: float) -> str:
    return f"{ns / 1_000:,.2f} µs"


def per_second(ns: float) -> str:
    return f"{1e9 / ns:,.0f}"


def report(contenders: list[Contender], ratios: list[Ratio]) -> str:
    by = {(c.group, c.key): c for c in contenders}
    base = by[BASELINE]
    lines = [
        "| case | contender | median per call | p10-p90 | calls/s | vs empty policy "
        "| calls/batch |",
        "|---|---|--:|--:|--:|--:|--:|",
    ]
    for c in contenders:
        low, high = c.spread
        lines.append(
            f"| {c.group} | ({c.key}) {c.label} | {fmt_us(c.median)} | "
            f"{fmt_us(low)} - {fmt_us(high)} | {per_second(c.median)} | "
            f"{fmt_ratio(c.median / base.median)} | {c.batch} |"
        )
    lines += ["", "| ratio | median | p10-p90 (paired by round) |", "|---|--:|--:|"]
    lines += [
        f"| {r.name} | {fmt_ratio(r.value)} | {fmt_ratio(r.low)} - {fmt_ratio(r.high)} |"
        for r in ratios
    ]
    return "\n".join(lines)


def ratios_of(contenders: list[Contender]) -> list[Ratio]:
    by = {(c.group, c.key): c for c in contenders}
    groups = list(dict.fromkeys(c.group for c in contenders))

    def pair(group: str, top: str, bottom: str, name: str) -> Ratio:
        return ratio(f"{group}: {name}", by[(group, top)], by[(group, bottom)])

    out = [
        pair(g, "g", "n", "PathGuard (g) / naive realpath (n)")
        for g in groups
        if g.startswith("path")
    ]
    for group in (g for g in groups if g.startswith("url")):
        out += [
            pair(group, "f", "s", "fake-resolved (f) / resolve=False (s)"),
            pair(group, "r", "f", "system resolver (r) / fake (f)"),
        ]
    out += [
        pair("dns: localhost", "d2", "d1", "SystemResolver (d2) / bare getaddrinfo (d1)"),
        pair("sql", "x", "q", "stacked DROP (x) / SELECT (q)"),
        pair("policy", "p", "empty", "Policy.check (p) / empty policy"),
        pair("policy", "o", "empty", "no-op guards (o) / empty policy"),
        pair("policy", "c", "p", "root per caller (c) / fixed root (p)"),
    ]
    # The policy against its three guards timed alone on the same values, summed round by round.
    parts = [
        by[("path: inside, via a symlink", "g")],
        by[("url: valid https", "f")],
        by[("text", "t")],
    ]
    summed = Contender("sum", "policy", "the three guards alone", lambda n: None)
    summed.samples = [sum(round_) for round_ in zip(*(p.samples for p in parts), strict=True)]
    out.append(
        ratio("policy: Policy.check (p) / its 3 guards alone, summed", by[("policy", "p")], summed)
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fast smoke run (CI)")
    parser.add_argument("--json", metavar="FILE", type=Path, help="write the raw numbers here")
    parser.add_argument(
        "--check", action="store_true", help="check every verdict and exit, without timing"
    )
    args = parser.parse_args(argv)

    # quick: ~1 ms batches, 20 rounds, at least 40 calls each; full: ~2 ms batches, 500 rounds
    batch_ns, rounds, min_calls = (1_000_000, 20, 40) if args.quick else (2_000_000, 500, 0)
    problem = localhost_problem()
    if problem is not None:
        print(f"not resolving localhost, which could query DNS: {problem}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="strictmcp-bench-") as base:
        started = time.perf_counter()
        s = setup(make_tree(base))
        cases = build_cases(s)
        wrong = check_verdicts(s, cases)
        for message in wrong:
            print(f"wrong verdict: {message}", file=sys.stderr)
        if wrong:
            return 1
        if args.check:
            print(f"all {len(cases)} timed cases and the extra checks give the expected verdicts")
            return 0
        contenders = [Contender(c.key, c.group, c.label, _calls(c.call, c.arg)) for c in cases]
        for contender in contenders:
            calibrate(contender, batch_ns)
        measure(contenders, rounds, min_calls)
        elapsed = time.perf_counter() - started
    ratios = ratios_of(contenders)

    env = environment() | {"sqlglot": version("sqlglot")}
    mode = "quick" if args.quick else "full"
    print(
        f"strictmcp guard benchmark ({mode}): Python {env['python']}, sqlglot {env['sqlglot']}, "
        f"{env['cpus']} CPUs ({env['processor']}); {rounds} rounds, {elapsed:.0f} s; "
        "DNS: localhost only\n"
    )
    print(report(contenders, ratios))

    if args.json is not None:
        verdicts = [{"group": c.group, "key": c.key, "expected": repr(c.expected)} for c in cases]
        write_numbers(
            args.json, mode, rounds, elapsed, env, contenders, ratios, {"verdicts": verdicts}
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
