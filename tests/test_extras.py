"""The extras (issue 24): what ``pip install strictmcp`` leaves out, and the one error a
feature gives when its extra is missing.

Each extra's absence is made for real: a fresh ``strictmcp`` process whose ``sitecustomize``
puts a finder first on ``sys.meta_path`` that refuses the extra's modules, as an environment
without them would. The command must exit 2 with one line naming the extra and how to install
it, never a traceback, and (where a server is named) before the server is started.
"""

from __future__ import annotations

import ast
import importlib.metadata
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

from strictmcp.extras import EXTRAS, Extra, MissingExtra, needs, require

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "src" / "strictmcp"
STRICTMCP = str(Path(sys.executable).with_name("strictmcp"))
BLOCKER = """\
import os
import sys

BLOCKED = frozenset(os.environ["STRICTMCP_TEST_BLOCK"].split(","))


class _Blocker:
    # First on sys.meta_path: an import of a blocked module fails as if it were not installed.
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Blocker())
"""
SERVER = """\
import pathlib, sys
pathlib.Path(sys.argv[1]).write_text("started")
"""


def blocked(modules: str, argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``argv`` run where the modules ``modules`` (comma-separated) cannot be imported."""
    blocker = tmp_path / "blocker"
    blocker.mkdir(exist_ok=True)
    (blocker / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    env = dict(os.environ, STRICTMCP_TEST_BLOCK=modules)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(blocker), env.get("PYTHONPATH")]))
    return subprocess.run(
        argv,
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )


def without(extra: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``strictmcp ARGS`` in an environment where ``extra``'s modules cannot be imported."""
    return blocked(",".join(EXTRAS[extra].modules), [STRICTMCP, *args], tmp_path)


def policy(tmp_path: Path, text: str) -> str:
    path = tmp_path / "policy.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def server(tmp_path: Path) -> list[str]:
    """A server command that only leaves a mark that it was started."""
    script = tmp_path / "server.py"
    script.write_text(SERVER, encoding="utf-8")
    return [sys.executable, str(script), str(tmp_path / "started")]


POSTGRES = """\
[[deep]]
tool = "run_query"
argument = "/query"
kind = "sql"
database = "postgres"
dsn_env = "JOBS_DSN"
"""
RATE_STORE = """\
[[rate_limit]]
tools = ["*"]
calls = 5

[rate_store]
url = "redis://127.0.0.1:1"
"""
AUTH = """\
[auth]
issuer = "https://issuer.example"
resource = "http://127.0.0.1:{port}/mcp"
scopes = ["mcp:read"]
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def expect_missing(done: subprocess.CompletedProcess[str], command: str, extra: str) -> None:
    """Exit 2 and exactly one line: the command, the extra, and the pip command that adds it."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"strictmcp {command}: "), lines
    assert lines[0].endswith(f"needs the [{extra}] extra: pip install 'strictmcp[{extra}]'"), lines
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_check_without_the_check_extra(tmp_path: Path) -> None:
    done = without("check", ["check", "--", *server(tmp_path)], tmp_path)
    expect_missing(done, "check", "check")
    assert "generating inputs" in done.stderr
    assert not (tmp_path / "started").exists()


def test_check_help_without_the_check_extra(tmp_path: Path) -> None:
    expect_missing(without("check", ["check", "--help"], tmp_path), "check", "check")


def test_the_other_commands_need_no_extra(tmp_path: Path) -> None:
    """Every extra missing at once: the core commands still answer."""
    everything = ",".join(sorted({m for extra in EXTRAS.values() for m in extra.modules}))
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "object", "additionalProperties": false}', encoding="utf-8")
    for args in (["--help"], ["schema", "check", str(schema)], ["lint", "--help"]):
        done = blocked(everything, [STRICTMCP, *args], tmp_path)
        assert done.returncode == 0, (args, done.stderr)


@pytest.mark.parametrize(
    ("command", "policy_text"),
    [(["proxy"], POSTGRES), (["check"], POSTGRES), (["policy", "check"], POSTGRES)],
)
def test_a_postgres_check_without_the_postgres_extra(
    tmp_path: Path, command: list[str], policy_text: str
) -> None:
    """The policy does not load: a check that cannot run must stop the proxy from starting,
    not let every query through or refuse every call later."""
    path = policy(tmp_path, policy_text)
    if command == ["policy", "check"]:
        args = [*command, path]
    else:
        args = [*command, "--policy", path, "--", *server(tmp_path)]
    done = without("postgres", args, tmp_path)
    expect_missing(done, command[0], "postgres")
    assert not (tmp_path / "started").exists()


def test_a_rate_store_without_the_redis_extra(tmp_path: Path) -> None:
    path = policy(tmp_path, RATE_STORE)
    done = without("redis", ["proxy", "--policy", path, "--", *server(tmp_path)], tmp_path)
    expect_missing(done, "proxy", "redis")
    assert "[rate_store]" in done.stderr
    assert not (tmp_path / "started").exists()


def test_tokens_without_the_auth_extra(tmp_path: Path) -> None:
    port = free_port()
    path = policy(tmp_path, AUTH.format(port=port))
    listen = ["--listen", f"127.0.0.1:{port}"]
    done = without("auth", ["proxy", *listen, "--policy", path, "--", *server(tmp_path)], tmp_path)
    expect_missing(done, "proxy", "auth")
    assert "access tokens" in done.stderr
    assert not (tmp_path / "started").exists()


@pytest.mark.parametrize(
    ("extra", "statement"),
    [
        ("mcp", "import strictmcp.integrations"),
        ("mcp", "import strictmcp.integrations.mcpserver"),
        ("fastmcp", "import strictmcp.integrations.fastmcp"),
        ("reference", "from strictmcp.schema import reference; reference._load()"),
        ("auth", "from strictmcp.identity import TokenVerifier"),
        ("check", "import strictmcp.check.generate"),
    ],
)
def test_the_library_names_the_extra(tmp_path: Path, extra: str, statement: str) -> None:
    """Library users get the same error, as an ImportError they can catch."""
    code = (
        "from strictmcp.extras import MissingExtra\n"
        f"try:\n    {statement}\n"
        "except MissingExtra as error:\n    print(error.extra, error, sep='|')\n"
    )
    modules = ",".join(EXTRAS[extra].modules)
    done = blocked(modules, [sys.executable, "-c", code], tmp_path)
    assert done.returncode == 0, done.stderr
    named, message = done.stdout.strip().split("|")
    assert named == extra
    assert message.endswith(f"pip install 'strictmcp[{extra}]'")


def test_the_identity_names_that_need_no_token_library_load_without_it(tmp_path: Path) -> None:
    """The HTTP proxy's own upstream credentials and its refusals need no PyJWT."""
    code = "from strictmcp.identity import CredentialsError, TokenError, UpstreamAuth"
    done = blocked("jwt,cryptography", [sys.executable, "-c", code], tmp_path)
    assert done.returncode == 0, done.stderr


def test_needs_leaves_other_import_errors_alone() -> None:
    """A module of strictmcp's own or of another package failing to import is a fault, not a
    missing extra: it keeps its own error."""
    with pytest.raises(ModuleNotFoundError) as caught, needs("check"):
        import strictmcp_no_such_module  # type: ignore[import-not-found]  # noqa: F401, PLC0415
    assert not isinstance(caught.value, MissingExtra)
    with pytest.raises(ImportError) as failed, needs("redis"):
        from strictmcp.extras import no_such_name  # type: ignore[attr-defined]  # noqa: F401, PLC0415
    assert not isinstance(failed.value, MissingExtra)


def test_needs_names_a_submodule_by_its_package() -> None:
    with pytest.raises(MissingExtra) as caught, needs("check"):
        raise ModuleNotFoundError(
            "No module named 'hypothesis.internal'", name="hypothesis.internal"
        )
    assert caught.value.extra == "check"
    assert caught.value.feature == EXTRAS["check"].feature


def test_require_finds_what_is_installed_and_names_what_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require("check")  # the test environment has every extra
    monkeypatch.setitem(EXTRAS, "planted", Extra(("strictmcp_no_such_module",), "x"))
    with pytest.raises(MissingExtra, match=r"x needs the \[planted\] extra"):
        require("planted")


# The source: every import of an extra's module sits in a `with needs(EXTRA)` of its extra.


def _owner(module: str) -> str | None:
    root = module.partition(".")[0]
    return next((name for name, extra in EXTRAS.items() if root in extra.modules), None)


def _needed(node: ast.With) -> str | None:
    for item in node.items:
        call = item.context_expr
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "needs"
            and call.args
            and isinstance(call.args[0], ast.Constant)
        ):
            return str(call.args[0].value)
    return None


def unguarded_imports(source: str) -> list[tuple[int, str]]:
    """The imports of an extra's module in ``source`` outside a ``needs`` of that extra."""
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, guarded: frozenset[str]) -> None:
        if isinstance(node, ast.With):
            extra = _needed(node)
            guarded = guarded | {extra} if extra else guarded
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        for module in modules:
            owner = _owner(module)
            if owner is not None and owner not in guarded:
                found.append((getattr(node, "lineno", 0), module))
        for child in ast.iter_child_nodes(node):
            walk(child, guarded)

    walk(ast.parse(source), frozenset())
    return found


def test_every_import_of_an_extra_goes_through_needs() -> None:
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path in sorted(SOURCE.rglob("*.py"))
        for line, module in unguarded_imports(path.read_text(encoding="utf-8"))
    ]
    assert not offences, "imports of an extra outside `with needs(...)`:\n" + "\n".join(offences)


@pytest.mark.parametrize(
    "source",
    [
        "import psycopg\n",
        "def f():\n    from redis.asyncio import Redis\n",
        "with needs('check'):\n    import jwt\n",  # the wrong extra
        "with contextlib.suppress(ImportError):\n    import hypothesis\n",
    ],
)
def test_an_unguarded_import_is_found(source: str) -> None:
    assert unguarded_imports(source)


def test_a_guarded_import_passes() -> None:
    assert unguarded_imports("with needs('redis'):\n    from redis.asyncio import Redis\n") == []


# pyproject.toml: the core leaves every extra out, and the test environment has them all.


def _project() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        project: dict[str, object] = tomllib.load(file)["project"]
    return project


def _name(requirement: str) -> str:
    for stop in "[<>=!~;":
        requirement = requirement.partition(stop)[0]
    return requirement.strip().lower().replace("_", "-")


def _distributions_of(extra: str) -> set[str]:
    """The distributions that install ``extra``'s modules, in this environment."""
    by_module = importlib.metadata.packages_distributions()
    return {_name(d) for m in EXTRAS[extra].modules for d in by_module.get(m, [])}


@pytest.mark.parametrize("extra", ["check", "postgres", "redis", "auth"])
def test_the_core_leaves_the_extra_out(extra: str) -> None:
    project = _project()
    core = {_name(requirement) for requirement in project["dependencies"]}  # type: ignore[attr-defined]
    extras: dict[str, list[str]] = project["optional-dependencies"]  # type: ignore[assignment]
    installs = _distributions_of(extra)
    assert installs, extra
    assert not installs & core
    assert {_name(requirement) for requirement in extras[extra]} & installs
    # [all] names every extra of the command line, and the tests install [all].
    (everything,) = extras["all"]
    assert extra in everything.partition("[")[2].rstrip("]").split(",")
    assert "strictmcp[all]" in extras["test"]
