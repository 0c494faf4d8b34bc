"""strictmcp's layers, bottom up, each importing only those below it.

``extras``, ``html_page`` and ``schema`` < ``protocol`` < ``guards`` < ``policy`` (the policy
file) < lint's rules < ``connect`` (the transport) <
``identity`` (verified access tokens) < ``enforce`` < the leaves (``proxy``, ``check``,
``integrations``, ``policy_cmd``, ``pin``, ``install``, ``audit_cmd``, ``interceptor`` and
lint's command side) < the command line (``cli``, ``__main__``). Leaves never import each
other. Every import counts: inside functions and ``TYPE_CHECKING`` blocks too, since either
can still tie one layer to another.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "strictmcp"
SOURCE = Path(__file__).resolve().parent.parent / "src" / PACKAGE

LEAF = 8
LAYERS = {
    # The extras and their one error, for every layer that imports an optional dependency.
    "extras": 0,
    # Which build runs (compiled or pure Python), for the package and its --version.
    "_build": 0,
    # The page every HTML report is, for check's and audit's alike.
    "html_page": 0,
    "schema": 0,
    "protocol": 1,
    "guards": 2,
    "policy": 3,
    "lint": 4,
    "connect": 5,
    "identity": 6,
    "enforce": 7,
    "proxy": LEAF,
    "check": LEAF,
    "integrations": LEAF,
    "policy_cmd": LEAF,
    "pin": LEAF,
    "install": LEAF,
    "audit_cmd": LEAF,
    "interceptor": LEAF,
    "cli": 9,
    "__main__": 9,
}
"""The layer of each part of the package, by its name under ``strictmcp``."""

LINT_COMMAND_SIDE = frozenset({"lint.cli"})
"""The modules of lint that are a leaf, the ``strictmcp lint`` command, not its rules."""


@dataclass(frozen=True)
class Layer:
    """Where a module sits: its layer and, for a leaf, which one (leaves may not mix)."""

    level: int
    leaf: str | None = None


def layer_of(module: str) -> Layer:
    """The layer of ``module`` (a dotted name under ``strictmcp``); KeyError when the module
    belongs to no layer yet (give its package one in :data:`LAYERS`)."""
    parts = module.split(".")
    assert parts[0] == PACKAGE, module
    if len(parts) == 1:
        return Layer(0)  # the package itself holds the version and re-exports the schema layer
    if ".".join(parts[1:3]) in LINT_COMMAND_SIDE:
        return Layer(LEAF, "lint command side")
    level = LAYERS[parts[1]]
    return Layer(level, parts[1] if level == LEAF else None)


@dataclass(frozen=True)
class Offence:
    """One import that goes against the layers."""

    path: str
    line: int
    importer: str
    imported: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.importer} imports {self.imported}: {self.why}"


def imports_of(
    module: str, source: str, *, is_package: bool, known: set[str]
) -> list[tuple[int, str]]:
    """The strictmcp modules ``module`` imports, with the line of each import; relative
    imports are resolved, and ``from package import name`` is the submodule ``name`` when
    ``known`` has one of that name (otherwise the package)."""
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: -(node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.append((node.lineno, submodule if submodule in known else target))
    # One line importing several names of one module is one import of it.
    return sorted({(line, name) for line, name in found if name.split(".")[0] == PACKAGE})


def offences(
    module: str, source: str, path: str, *, is_package: bool = False, known: set[str] | None = None
) -> list[Offence]:
    """Every import of ``module`` (whose text is ``source``) that breaks the layers: one of a
    higher layer, or of another leaf. Importing ``a.b.c`` runs the packages ``a`` and ``a.b``
    too, so they count as imported."""
    mine = layer_of(module)
    found = []
    for line, name in imports_of(module, source, is_package=is_package, known=known or set()):
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):
            imported = ".".join(parts[:depth])
            if module == imported or module.startswith(f"{imported}."):
                continue  # its own package, which is run before it anyway
            theirs = layer_of(imported)
            if theirs.level > mine.level:
                why = f"layer {theirs.level} is above layer {mine.level}"
            elif mine.leaf and theirs.leaf and mine.leaf != theirs.leaf:
                why = f"the {mine.leaf} leaf may not import the {theirs.leaf} leaf"
            else:
                continue
            found.append(Offence(path, line, module, imported, why))
    return found


def package_modules() -> dict[str, Path]:
    """Every module of the installed source tree, by dotted name."""
    modules = {}
    for path in sorted(SOURCE.rglob("*.py")):
        parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def test_every_import_respects_the_layers() -> None:
    modules = package_modules()
    known = set(modules)
    unmapped = []
    found: list[Offence] = []
    for module, path in modules.items():
        try:
            layer_of(module)
        except KeyError:
            unmapped.append(module)
            continue
        found += offences(
            module,
            path.read_text(encoding="utf-8"),
            str(path.relative_to(SOURCE.parent.parent)),
            is_package=path.name == "__init__.py",
            known=known,
        )
    assert not unmapped, f"modules in no layer (add their package to LAYERS): {unmapped}"
    assert not found, "imports against the layers:\n" + "\n".join(map(str, found))


def test_the_source_tree_is_found() -> None:
    """An empty walk would pass the layer test without checking anything."""
    modules = package_modules()
    assert {"strictmcp.connect.client", "strictmcp.proxy.stdio", "strictmcp.lint.engine"} <= set(
        modules
    )


KNOWN = {"strictmcp.proxy", "strictmcp.proxy.session", "strictmcp.check", "strictmcp.check.runner"}


@pytest.mark.parametrize(
    ("module", "source", "imported"),
    [
        # A rule importing the proxy: relative, two levels up.
        ("strictmcp.lint.engine", "from ..proxy import session\n", "strictmcp.proxy"),
        # Absolute, and hidden in a function.
        ("strictmcp.protocol.tools", "def f():\n    import strictmcp.cli\n", "strictmcp.cli"),
        # Only for type checking still ties the layers.
        (
            "strictmcp.connect.client",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..check import runner\n",
            "strictmcp.check",
        ),
        # One leaf importing another.
        ("strictmcp.check.runner", "from ..proxy.session import ProxySession\n", "strictmcp.proxy"),
        # lint's rules may not import lint's command side, nor lint's command side the proxy.
        ("strictmcp.lint.rules", "from .cli import lint\n", "strictmcp.lint.cli"),
        ("strictmcp.lint.cli", "from ..proxy import session\n", "strictmcp.proxy"),
    ],
)
def test_a_planted_violation_is_caught(module: str, source: str, imported: str) -> None:
    found = offences(module, source, "planted.py", known=KNOWN)
    assert imported in {offence.imported for offence in found}, found
    assert all(offence.path == "planted.py" and offence.line >= 1 for offence in found)


@pytest.mark.parametrize(
    ("module", "source", "is_package"),
    [
        ("strictmcp.check.runner", "from ..connect.client import McpClient\n", False),
        ("strictmcp.check.lint_bridge", "from ..lint import lint_tools\n", False),
        ("strictmcp.proxy.stdio", "from ..connect.process import start_process\n", False),
        ("strictmcp.cli", "from .proxy.cli import proxy\n", False),
        ("strictmcp.connect", "from .upstream import Upstream\n", True),
        ("strictmcp.lint.families.text", "from ...guards import TextGuard\n", False),
    ],
)
def test_imports_downwards_are_allowed(module: str, source: str, is_package: bool) -> None:
    assert offences(module, source, "allowed.py", is_package=is_package) == []


def test_the_architecture_page_draws_every_layer() -> None:
    """docs/architecture.md's diagram names every package of :data:`LAYERS`: a layer added
    without it would leave a newcomer's map wrong."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()
    diagram = page.split("```text\n", 1)[1].split("```", 1)[0]
    missing = [
        name
        for name in LAYERS
        if name not in ("__main__",) and f"{name}/" not in diagram and f"{name}.py" not in diagram
    ]
    assert not missing, f"docs/architecture.md's diagram lacks: {missing}"
