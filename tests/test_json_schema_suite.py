"""The official JSON-Schema-Test-Suite, run through strictmcp's public API only.

Covered: every required file (the top-level ``*.json``) of draft2020-12, draft2019-09 and draft7,
and ``optional/format/`` of draft2020-12. One pytest case per suite test, named
``<draft>/<file>::<group>::<test>``; select one with ``-k`` or by that node id.

A suite test the engine cannot pass is listed by name in :data:`XFAIL` with its reason and runs
as a strict xfail: nothing is skipped, and a stale entry fails the run.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from strictmcp.schema import (
    Dialect,
    IssueCode,
    Registry,
    SchemaError,
    SchemaErrorCode,
    Validator,
    compile_schema,
)

SUITE = Path(__file__).resolve().parents[1].parent / "shared" / "json-schema-test-suite"
REMOTES_URI = "http://localhost:1234/"
DRAFTS = {
    "draft2020-12": Dialect.DRAFT2020_12,
    "draft2019-09": Dialect.DRAFT2019_09,
    "draft7": Dialect.DRAFT7,
}
# Optional folders run on top of each draft's required files; the suite asserts `format` in
# these, so they compile with formats=True.
OPTIONAL_FOLDERS = {"draft2020-12": ("optional/format",)}
MISSING = (
    f"the JSON-Schema-Test-Suite is missing at {SUITE}: check out "
    "https://github.com/json-schema-org/JSON-Schema-Test-Suite (its tests/ folder's draft "
    "directories and its remotes/ folder) there; these tests never skip"
)

#: Suite tests strictmcp does not pass, by "file::group::test", with why.
XFAIL: dict[str, str] = {}

# A verdict of "invalid" that comes from the engine's own bounds, or from a reference that
# failed at run time, is not the suite's verdict, even when the suite expects "invalid".
_ENGINE_CODES = frozenset(
    {
        IssueCode.INSTANCE_TOO_DEEP,
        IssueCode.INSTANCE_TOO_LARGE,
        IssueCode.INSTANCE_NOT_JSON,
        IssueCode.VALIDATION_TIMEOUT,
        IssueCode.UNRESOLVABLE_REF,
    }
)
# Filled as suite tests pass, for test_no_suite_test_is_dropped.
PASSED: Counter[str] = Counter()


@dataclass(frozen=True)
class Case:
    """One suite test: where it is, and what it expects."""

    draft: str
    file: str  # relative to the suite root, e.g. "draft7/ref.json"
    group_index: int
    group: str
    test: str
    data: Any
    valid: bool

    @property
    def key(self) -> str:
        """The name used in :data:`XFAIL` and as the pytest id."""
        return f"{self.file}::{self.group}::{self.test}"

    @property
    def formats(self) -> bool:
        # The required files expect the spec's default: `format` is only an annotation.
        return "/optional/" in self.file


def _suite_files(draft: str) -> list[Path]:
    root = SUITE / draft
    files = sorted(root.glob("*.json"))
    for folder in OPTIONAL_FOLDERS.get(draft, ()):
        files += sorted((root / folder).glob("*.json"))
    return files


@cache
def _groups(file: str) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = json.loads((SUITE / file).read_text(encoding="utf-8"))
    return groups


def _cases() -> list[Case]:
    cases: list[Case] = []
    for draft in DRAFTS:
        for path in _suite_files(draft):
            file = path.relative_to(SUITE).as_posix()
            for index, group in enumerate(_groups(file)):
                cases.extend(
                    Case(
                        draft,
                        file,
                        index,
                        group["description"],
                        test["description"],
                        test["data"],
                        test["valid"],
                    )
                    for test in group["tests"]
                )
    return cases


CASES = _cases() if SUITE.is_dir() else []


def _params() -> list[Any]:
    if not CASES:
        # An empty parametrization would be reported as a skip; make it a failure instead.
        return [pytest.param(None, id="suite-missing")]
    return [
        pytest.param(
            case,
            id=case.key,
            marks=[pytest.mark.xfail(strict=True, reason=XFAIL[case.key])]
            if case.key in XFAIL
            else [],
        )
        for case in CASES
    ]


def _remotes(draft: str) -> dict[str, Any]:
    """The suite's remotes/ folder, as the documents a draft's tests may reference.

    A document in another version's folder (``draft2019-09/``, ``v1/``, ...) that does not
    declare its own ``$schema`` is written for that version, and read in this draft's dialect
    it can be broken: ``v1/nested-absolute-ref-to-string.json`` keeps an ``$id`` under
    ``$defs``, which draft 7 does not know, so its ``$ref`` points outside the registry.
    jsonschema-rs resolves every registry document up front, so such a document makes every
    compile with the registry fail (see test_foreign_remotes_fail_as_schema_errors). Those are
    left out: Bowtie, the JSON Schema organisation's own harness, leaves out the same documents
    of other drafts' folders, and ``v1/`` is the folder of a later version. No test of the
    draft under test references them, and the 2019-09 and 2020-12 tests pass with all of them.
    """
    root = SUITE / "remotes"
    documents: dict[str, Any] = {}
    for path in sorted(root.rglob("*.json")):
        relative = path.relative_to(root).as_posix()
        document = json.loads(path.read_text(encoding="utf-8"))
        folder = relative.partition("/")[0]
        versioned = folder.startswith("draft") or folder == "v1"
        declared = isinstance(document, dict) and "$schema" in document
        if versioned and folder != draft and not declared:
            continue
        documents[REMOTES_URI + relative] = document
    return documents


@cache
def _registry(draft: str) -> Registry:
    return Registry(_remotes(draft), dialect=DRAFTS[draft])


@cache
def _validator(draft: str, file: str, group_index: int, formats: bool) -> Validator:
    # cache=None: the suite's ~1,000 schemas would only churn the shared validator cache.
    return compile_schema(
        _groups(file)[group_index]["schema"],
        default_dialect=DRAFTS[draft],
        registry=_registry(draft),
        formats=formats,
        cache=None,
    )


@pytest.mark.parametrize("case", _params())
def test_suite_case(case: Case | None) -> None:
    if case is None:
        pytest.fail(MISSING)
    validator = _validator(case.draft, case.file, case.group_index, case.formats)
    result = validator.validate(case.data)
    codes = [issue.code.value for issue in result.issues]
    assert result.valid is case.valid, f"expected valid={case.valid}, got issues {codes}"
    engine = [issue.code.value for issue in result.issues if issue.code in _ENGINE_CODES]
    assert not engine, f"the verdict came from the engine's bounds, not the schema: {engine}"
    PASSED[case.draft] += 1


def _tests_on_disk(draft: str) -> int:
    # Counted straight from the files, apart from _cases(), so a bug there cannot hide itself.
    return sum(
        len(group["tests"])
        for path in _suite_files(draft)
        for group in json.loads(path.read_text(encoding="utf-8"))
    )


def test_no_suite_test_is_dropped(request: pytest.FixtureRequest) -> None:
    assert SUITE.is_dir(), MISSING
    keys = [case.key for case in CASES]
    assert len(set(keys)) == len(keys), "two suite tests share a name, so one could hide"
    stale = sorted(set(XFAIL) - set(keys))
    assert not stale, f"XFAIL names tests the suite does not have: {stale}"
    expected = {}
    for draft in DRAFTS:
        on_disk = _tests_on_disk(draft)
        assert on_disk > 0, f"no suite tests found for {draft} under {SUITE / draft}"
        expected[draft] = on_disk - sum(1 for key in XFAIL if key.startswith(f"{draft}/"))
        parametrized = sum(1 for c in CASES if c.draft == draft and c.key not in XFAIL)
        assert parametrized >= expected[draft], f"{draft}: {parametrized} of {on_disk} collected"
    # Passes are counted only when this session ran every suite case before this test (it is
    # defined after them, so it runs after them); a -k selection or a worker process of
    # pytest-xdist sees only part of them.
    selected = sum(
        1
        for item in request.session.items
        if getattr(item, "originalname", "") == "test_suite_case"
    )
    if selected == len(CASES) and not hasattr(request.config, "workerinput"):
        for draft in DRAFTS:
            assert PASSED[draft] >= expected[draft], (
                f"{draft}: {PASSED[draft]} suite tests passed, expected {expected[draft]}"
            )


def test_foreign_remotes_fail_as_schema_errors() -> None:
    """The whole remotes/ folder read as draft 7 fails with a SchemaError, never a raw error.

    Three documents without ``$schema`` in later versions' folders do not resolve as draft 7,
    and jsonschema-rs resolves every registry document up front, so every compile with this
    registry fails, even of a schema that references nothing. Should the engine ever resolve
    registry documents only when reached, this compile succeeds and this test must change.
    """
    assert SUITE.is_dir(), MISSING
    root = SUITE / "remotes"
    documents = {
        REMOTES_URI + path.relative_to(root).as_posix(): json.loads(path.read_text("utf-8"))
        for path in root.rglob("*.json")
    }
    registry = Registry(documents, dialect=Dialect.DRAFT7)
    with pytest.raises(SchemaError) as raised:
        compile_schema({"type": "string"}, default_dialect=Dialect.DRAFT7, registry=registry)
    assert raised.value.code is SchemaErrorCode.EXTERNAL_REF
    assert str(raised.value.detail).endswith("/the-nested-id.json")
