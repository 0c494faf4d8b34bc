"""Tool definitions: SEP-986 and portable names, schemas compiled and checked, the registry."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from enum import Enum
from typing import Any

import pytest

from strictmcp.protocol import (
    LATEST,
    CheckedTool,
    Revision,
    Rule,
    Severity,
    ToolRegistry,
    Violation,
    check_call,
    check_tool,
    check_tool_name,
    check_tools,
)
from strictmcp.schema import VALIDATOR_CACHE, Limits

ALL = list(Revision)
ENFORCING = [r for r in Revision if r.enforces_tool_names]
LENIENT = [r for r in Revision if not r.enforces_tool_names]
STRUCTURED = [r for r in Revision if r.has_structured_output]
UNSTRUCTURED = [r for r in Revision if not r.has_structured_output]
OBJECT_OUTPUT = [r for r in STRUCTURED if not r.structured_content_any_json]
ANY_OUTPUT = [r for r in Revision if r.structured_content_any_json]

ARGS = {"type": "object", "properties": {"q": {"type": "string"}}}
# What pydantic writes for a recursive model: the root is a $ref, with no "type" of its own.
RECURSIVE_MODEL = {
    "$defs": {
        "Node": {
            "properties": {
                "name": {"title": "Name", "type": "string"},
                "children": {
                    "default": [],
                    "items": {"$ref": "#/$defs/Node"},
                    "title": "Children",
                    "type": "array",
                },
            },
            "required": ["name"],
            "title": "Node",
            "type": "object",
        }
    },
    "$ref": "#/$defs/Node",
}


def found(violations: list[Violation] | tuple[Violation, ...]) -> set[tuple[Rule | Enum, Severity]]:
    return {(v.rule, v.severity) for v in violations}


def tool(name: str = "search", **fields: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": ARGS, **fields}


# --- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", ALL)
@pytest.mark.parametrize("name", ["get_weather", "a", "A-Z_09", "x" * 64])
def test_valid_portable_names_pass_everywhere(revision: Revision, name: str) -> None:
    assert check_tool_name(name, revision, portable=True) == []


@pytest.mark.parametrize("revision", ALL)
def test_a_128_character_dotted_name_is_valid_but_not_portable(revision: Revision) -> None:
    for name in ("github.create_issue", "x" * 128):
        assert found(check_tool_name(name, revision)) == {
            (Rule.TOOL_NAME_NOT_PORTABLE, Severity.WARNING)
        }
        assert found(check_tool_name(name, revision, portable=True)) == {
            (Rule.TOOL_NAME_NOT_PORTABLE, Severity.ERROR)
        }


BAD_NAMES = [
    ("", "is empty"),
    ("x" * 129, "is 129 characters long"),
    ("get weather", "U+0020 SPACE"),
    ("a/b", "'/' (U+002F SOLIDUS) at character 2"),
    ("get,weather", "U+002C"),
    ("caf\u00e9", "U+00E9 LATIN SMALL LETTER E WITH ACUTE, a non-ASCII character"),
    ("tab\there", "control or format character"),
]


@pytest.mark.parametrize("revision", ENFORCING)
@pytest.mark.parametrize(("name", "says"), BAD_NAMES)
def test_sep986_names_are_errors_from_2025_11_25(revision: Revision, name: str, says: str) -> None:
    (invalid,) = [v for v in check_tool_name(name, revision) if v.rule is Rule.TOOL_NAME_INVALID]
    assert invalid.severity is Severity.ERROR
    assert says in invalid.message
    assert "does not restrict" not in invalid.message


@pytest.mark.parametrize("revision", LENIENT)
@pytest.mark.parametrize(("name", "says"), BAD_NAMES)
def test_sep986_names_are_warnings_before_it(revision: Revision, name: str, says: str) -> None:
    (invalid,) = [v for v in check_tool_name(name, revision) if v.rule is Rule.TOOL_NAME_INVALID]
    assert invalid.severity is Severity.WARNING
    assert says in invalid.message
    assert f"{revision.value} does not restrict tool names" in invalid.message


@pytest.mark.parametrize("revision", ALL)
@pytest.mark.parametrize("name", [None, 7, ["a"]])
def test_a_name_that_is_not_a_string_is_an_error_everywhere(revision: Revision, name: Any) -> None:
    assert found(check_tool_name(name, revision, pointer="/tools/0/name")) == {
        (Rule.TOOL_NAME_INVALID, Severity.ERROR)
    }


@pytest.mark.parametrize(
    ("char", "kind"),
    [
        ("\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE, a bidirectional control character"),
        ("\u2066", "U+2066 LEFT-TO-RIGHT ISOLATE, a bidirectional control character"),
        ("\u200f", "U+200F RIGHT-TO-LEFT MARK, a bidirectional control character"),
        ("\u200b", "U+200B ZERO WIDTH SPACE, an invisible zero-width character"),
        ("\ufeff", "U+FEFF ZERO WIDTH NO-BREAK SPACE, an invisible zero-width character"),
        ("\u0430", "U+0430 CYRILLIC SMALL LETTER A, a non-ASCII character"),
    ],
)
def test_invisible_and_lookalike_characters_are_named_never_printed(char: str, kind: str) -> None:
    name = f"read{char}_file" + "x" * 10_000 + "\u202e"
    violations = check_tool_name(name, Revision.V2025_11_25)
    assert found(violations) == {
        (Rule.TOOL_NAME_INVALID, Severity.ERROR),
        (Rule.TOOL_NAME_NOT_PORTABLE, Severity.WARNING),
    }
    for violation in violations:
        assert kind in violation.message
        assert "at character 5 (and 1 more)" in violation.message
        assert violation.message.isascii()  # escaped: nothing can reorder or hide text
        assert len(violation.message) < 400  # bounded, however long the name
        assert '"read\\u' in violation.message


# --- definitions ------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", ALL)
def test_a_plain_tool_is_usable(revision: Revision) -> None:
    checked = check_tool(tool(), revision)
    assert checked.usable
    assert checked.violations == ()
    assert checked.name == "search"
    assert checked.input_validator is not None
    assert checked.output_validator is None


@pytest.mark.parametrize("revision", ALL)
@pytest.mark.parametrize(
    ("definition", "says"),
    [
        ({"name": "t"}, "tool has no inputSchema"),
        (tool(inputSchema=True), "must be a JSON Schema object, not a boolean"),
        (tool(inputSchema=None), "not null"),
        (tool(inputSchema="object"), "not a string"),
        (
            tool(inputSchema={"type": "object", "$schema": "https://example.com/meta"}),
            "[schema-unknown-dialect] at /$schema",
        ),
        (
            tool(inputSchema={"type": "object", "properties": {"a": {"pattern": "(?<=x)y"}}}),
            "[schema-pattern-needs-backtracking] at /properties/a/pattern",
        ),
        (tool(inputSchema={"type": "object", "minProperties": "2"}), "[schema-invalid]"),
    ],
)
def test_an_input_schema_that_does_not_compile_makes_the_tool_unusable(
    revision: Revision, definition: dict[str, Any], says: str
) -> None:
    checked = check_tool(definition, revision, pointer="/tools/4")
    invalid = [v for v in checked.violations if v.rule is Rule.TOOL_INPUT_SCHEMA_INVALID]
    assert len(invalid) == 1
    assert invalid[0].severity is Severity.ERROR
    assert invalid[0].pointer.startswith("/tools/4/inputSchema")
    assert says in invalid[0].message
    assert checked.input_validator is None
    assert not checked.usable


def test_a_schema_error_points_into_the_schema() -> None:
    definition = tool(inputSchema={"type": "object", "properties": {"a": {"pattern": "(?=x)"}}})
    (violation,) = check_tools([tool("ok"), definition], Revision.V2025_06_18)[1].violations
    assert violation.pointer == "/tools/1/inputSchema/properties/a/pattern"


def test_bounds_apply_to_tool_schemas() -> None:
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(10):
        deep = {"type": "object", "properties": {"a": deep}}
    checked = check_tool(tool(inputSchema=deep), LATEST, limits=Limits(max_schema_depth=8))
    assert "[schema-too-deep]" in checked.violations[0].message
    assert check_tool(tool(inputSchema=deep), LATEST).usable


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """Fails the test on any Python-level connection; yields a listener for native code.

    The engine's backend is native code that would not go through Python's socket module, so
    the test also points a reference at a real local listener and checks nobody knocked.
    """

    def refuse(*args: Any, **kwargs: Any) -> Any:
        pytest.fail("a schema reference was fetched over the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    yield listener
    with pytest.raises(BlockingIOError):
        listener.accept()  # a connection attempt would be waiting here
    listener.close()


@pytest.mark.parametrize("revision", ALL)
def test_an_external_ref_is_refused_and_never_fetched(
    revision: Revision, no_network: socket.socket
) -> None:
    port = no_network.getsockname()[1]
    for ref in (
        f"http://127.0.0.1:{port}/args.json",
        f"http://127.0.0.1:{port}/defs.json#/$defs/Path",
        "file:///etc/passwd",
        "https://example.com/schema.json",
    ):
        schema = {"type": "object", "properties": {"path": {"$ref": ref}}}
        checked = check_tools([tool(inputSchema=schema)], revision)[0]
        (violation,) = checked.violations
        assert violation.rule is Rule.TOOL_INPUT_SCHEMA_INVALID
        assert "[schema-external-ref]" in violation.message
        assert "never fetches" in violation.message
        assert violation.pointer.startswith("/tools/0/inputSchema")
        assert not checked.usable


@pytest.mark.parametrize("revision", STRUCTURED)
def test_an_external_ref_in_an_output_schema_is_refused_too(
    revision: Revision, no_network: socket.socket
) -> None:
    port = no_network.getsockname()[1]
    output = {"type": "object", "$ref": f"http://127.0.0.1:{port}/out.json"}
    checked = check_tool(tool(outputSchema=output), revision)
    assert found(checked.violations) == {(Rule.TOOL_OUTPUT_SCHEMA_INVALID, Severity.ERROR)}
    assert "[schema-external-ref]" in checked.violations[0].message
    assert checked.output_validator is None
    assert not checked.usable


@pytest.mark.parametrize("revision", ALL)
@pytest.mark.parametrize(
    ("schema", "severity", "says"),
    [
        ({"type": ["object"]}, Severity.WARNING, 'declares "type" as the list ["object"]'),
        (RECURSIVE_MODEL, Severity.WARNING, "only through its root $ref"),
        ({"properties": {"a": {}}}, Severity.ERROR, "it has no type"),
        ({"type": "string"}, Severity.ERROR, 'it has type "string"'),
        ({"type": ["object", "null"]}, Severity.ERROR, 'it has type ["object", "null"]'),
        ({"$ref": "#/$defs/S", "$defs": {"S": {"type": "string"}}}, Severity.ERROR, "no type"),
        ({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/A"}}}, Severity.ERROR, "no type"),
        ({"anyOf": [{"type": "object"}]}, Severity.ERROR, "it has no type"),
        ({}, Severity.ERROR, "it has no type"),
    ],
)
def test_input_schemas_are_object_rooted_in_every_revision(
    revision: Revision, schema: dict[str, Any], severity: Severity, says: str
) -> None:
    checked = check_tool(tool(inputSchema=schema), revision)
    (violation,) = checked.violations
    assert (violation.rule, violation.severity) == (Rule.TOOL_INPUT_SCHEMA_NOT_OBJECT, severity)
    assert violation.pointer == "/inputSchema"
    assert says in violation.message
    assert checked.usable is (severity is Severity.WARNING)
    assert checked.input_validator is not None
    if severity is Severity.WARNING:
        # In use, because validation still refuses anything but an object.
        assert not checked.input_validator.validate([]).valid


@pytest.mark.parametrize("revision", ALL)
def test_an_object_root_may_also_compose(revision: Revision) -> None:
    schema = {
        "type": "object",
        "$ref": "#/$defs/Base",
        "$defs": {"Base": {"properties": {"a": {"type": "integer"}}}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
    }
    assert check_tool(tool(inputSchema=schema), revision).violations == ()


@pytest.mark.parametrize("revision", UNSTRUCTURED)
def test_an_output_schema_before_2025_06_18_is_ignored_with_a_warning(revision: Revision) -> None:
    for output in ({"type": "object"}, {"type": "array"}, "nonsense"):
        checked = check_tool(tool(outputSchema=output), revision, pointer="/tools/0")
        assert found(checked.violations) == {
            (Rule.TOOL_OUTPUT_SCHEMA_NOT_IN_REVISION, Severity.WARNING)
        }
        assert checked.violations[0].pointer == "/tools/0/outputSchema"
        assert checked.output_validator is None
        assert checked.usable


@pytest.mark.parametrize("revision", STRUCTURED)
def test_an_object_output_schema_compiles(revision: Revision) -> None:
    checked = check_tool(tool(outputSchema={"type": "object"}), revision)
    assert checked.violations == ()
    assert checked.output_validator is not None


@pytest.mark.parametrize("revision", OBJECT_OUTPUT)
@pytest.mark.parametrize(
    ("output", "severity"),
    [
        ({"type": "array", "items": {"type": "string"}}, Severity.ERROR),
        ({"type": "string"}, Severity.ERROR),
        ({}, Severity.ERROR),
        (RECURSIVE_MODEL, Severity.WARNING),
    ],
)
def test_output_schemas_are_object_rooted_before_2026_07_28(
    revision: Revision, output: dict[str, Any], severity: Severity
) -> None:
    checked = check_tool(tool(outputSchema=output), revision)
    assert found(checked.violations) == {(Rule.TOOL_OUTPUT_SCHEMA_NOT_OBJECT, severity)}
    assert checked.output_validator is not None


@pytest.mark.parametrize("revision", ANY_OUTPUT)
@pytest.mark.parametrize(
    "output",
    [{"type": "array", "items": {"type": "string"}}, {"type": "string"}, {}, RECURSIVE_MODEL],
)
def test_any_output_schema_is_allowed_from_2026_07_28(
    revision: Revision, output: dict[str, Any]
) -> None:
    checked = check_tool(tool(outputSchema=output), revision)
    assert checked.violations == ()
    assert checked.output_validator is not None


@pytest.mark.parametrize("revision", STRUCTURED)
@pytest.mark.parametrize(
    ("output", "says"),
    [
        (True, "must be a JSON Schema object, not a boolean"),
        (None, "not null"),
        ({"type": "object", "properties": {"a": {"type": "strng"}}}, "[schema-invalid]"),
    ],
)
def test_an_output_schema_that_does_not_compile_makes_the_tool_unusable(
    revision: Revision, output: Any, says: str
) -> None:
    checked = check_tool(tool(outputSchema=output), revision)
    invalid = [v for v in checked.violations if v.rule is Rule.TOOL_OUTPUT_SCHEMA_INVALID]
    assert len(invalid) == 1
    assert says in invalid[0].message
    assert not checked.usable


@pytest.mark.parametrize("revision", ALL)
def test_duplicate_names_are_errors_and_point_at_the_repeat(revision: Revision) -> None:
    checked = check_tools([tool("a"), tool("b"), tool("a")], revision)
    assert [c.usable for c in checked] == [True, True, False]
    (duplicate,) = checked[2].violations
    assert (duplicate.rule, duplicate.severity) == (Rule.TOOL_NAME_DUPLICATE, Severity.ERROR)
    assert duplicate.pointer == "/tools/2/name"
    assert check_tools([tool("a")], revision, already_listed={"a"})[0].violations == (
        Violation(Rule.TOOL_NAME_DUPLICATE, duplicate.message, "/tools/0/name"),
    )


def test_names_differing_only_in_case_or_invisibles_are_not_duplicates() -> None:
    checked = check_tools([tool("a"), tool("A"), tool("a\u200b")], Revision.V2025_03_26)
    assert all(v.rule is not Rule.TOOL_NAME_DUPLICATE for c in checked for v in c.violations)


@pytest.mark.parametrize("entry", ["search", None, 3, ["a"]])
def test_an_entry_that_is_not_an_object_is_reported_not_raised(entry: Any) -> None:
    (checked,) = check_tools([entry], Revision.V2025_11_25)
    assert found(checked.violations) == {(Rule.INVALID_RESULT, Severity.ERROR)}
    assert checked.violations[0].pointer == "/tools/0"
    assert checked.name is None
    assert not checked.usable


def test_name_violations_point_at_the_name() -> None:
    checked = check_tools([tool("ok"), tool("a b")], Revision.V2025_11_25)
    assert {v.pointer for v in checked[1].violations} == {"/tools/1/name"}


# --- registry ---------------------------------------------------------------------------------


def page(*names: str, cursor: str | None = None, schema: Any = ARGS) -> dict[str, Any]:
    result: dict[str, Any] = {"tools": [tool(n, inputSchema=schema) for n in names]}
    if cursor is not None:
        result["nextCursor"] = cursor
    return result


def test_a_single_page_listing_takes_one_call() -> None:
    registry = ToolRegistry(Revision.V2025_11_25)
    assert not registry.listed
    assert registry.update(page("a", "b")) == []
    assert registry.listed
    assert not registry.listing
    assert registry.names() == ["a", "b"]
    assert len(registry) == 2
    assert "a" in registry
    assert isinstance(registry.get("a"), CheckedTool)
    assert registry.get("c") is None


def test_pages_are_swapped_in_only_when_the_listing_is_complete() -> None:
    registry = ToolRegistry(Revision.V2025_06_18)
    registry.update(page("old"))
    registry.update(page("a", cursor="p2"))
    assert registry.listing
    assert registry.names() == ["old"]  # readers keep the previous complete listing
    registry.add_page(page("b", cursor="p3"))
    assert registry.names() == ["old"]
    registry.add_page(page("c"))
    assert registry.names() == ["a", "b", "c"]
    assert not registry.listing


def test_add_page_alone_starts_and_ends_a_listing() -> None:
    registry = ToolRegistry(Revision.V2025_06_18)
    registry.add_page(page("a"))
    assert registry.names() == ["a"]


def test_begin_listing_drops_the_pages_of_an_abandoned_listing() -> None:
    registry = ToolRegistry(Revision.V2025_06_18)
    registry.update(page("stale-page", cursor="p2"))
    registry.begin_listing()
    registry.add_page(page("fresh"))
    assert registry.names() == ["fresh"]
    registry.update(page("x", cursor="p2"))
    registry.update(page("y"))  # a new uncursored listing restarts too
    assert registry.names() == ["y"]


def test_finish_listing_swaps_in_the_pages_so_far() -> None:
    registry = ToolRegistry(Revision.V2025_06_18)
    registry.finish_listing()  # nothing under way: nothing happens
    assert not registry.listed
    registry.update(page("a", cursor="p2"))
    registry.finish_listing()
    assert registry.names() == ["a"]
    assert registry.listed


@pytest.mark.parametrize("revision", ALL)
def test_duplicates_across_pages_point_into_their_page(revision: Revision) -> None:
    registry = ToolRegistry(revision)
    assert registry.update(page("a", "b", cursor="p2")) == []
    violations = registry.add_page(page("c", "a"))
    assert [(v.rule, v.pointer) for v in violations] == [
        (Rule.TOOL_NAME_DUPLICATE, "/tools/1/name")
    ]
    duplicate = registry.get("a")
    assert duplicate is not None
    assert not duplicate.usable  # an ambiguous name is refused, never guessed
    assert registry.names() == ["a", "b", "c"]


def test_page_violations_include_definitions_and_result_shape() -> None:
    registry = ToolRegistry(Revision.V2025_11_25)
    violations = registry.update({"tools": [tool("bad name"), 5, tool("ok")]})
    assert [(v.rule, v.pointer) for v in violations] == [
        (Rule.TOOL_NAME_INVALID, "/tools/0/name"),
        (Rule.TOOL_NAME_NOT_PORTABLE, "/tools/0/name"),
        (Rule.INVALID_RESULT, "/tools/1"),
    ]
    assert registry.names() == ["bad name", "ok"]
    assert registry.update({"nextCursor": "p2"}) == [
        Violation(Rule.INVALID_RESULT, "tools/list result has no tools array", "/tools")
    ]
    assert registry.listing  # the cursor still continues the listing
    (violation,) = registry.add_page({"tools": [], "nextCursor": 7})
    assert violation.pointer == "/nextCursor"
    assert not registry.listing  # a cursor that cannot be followed ends it


def test_list_changed_marks_the_listing_stale_until_it_is_redone() -> None:
    registry = ToolRegistry(Revision.V2025_06_18)
    registry.update(page("a"))
    assert not registry.stale
    registry.mark_stale()
    assert registry.stale
    assert "stale" in repr(registry)
    # Calls keep being checked against the last listing meanwhile.
    assert check_call(registry, {"name": "a", "arguments": {"q": "x"}}).allowed
    unknown = check_call(registry, {"name": "b"})
    assert "list them again" in unknown.violations[0].message
    registry.update(page("a", "b"))
    assert not registry.stale
    assert check_call(registry, {"name": "b"}).allowed


def test_a_listing_under_way_when_tools_changed_is_stale_when_finished() -> None:
    registry = ToolRegistry(Revision.V2025_06_18)
    registry.update(page("a", cursor="p2"))
    registry.mark_stale()
    registry.add_page(page("b"))
    assert registry.names() == ["a", "b"]
    assert registry.stale
    registry.update(page("a", "b", "c"))
    assert not registry.stale


def test_unchanged_schemas_reuse_the_compiled_validator_and_changed_ones_recompile() -> None:
    registry = ToolRegistry(Revision.V2025_11_25)
    first = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 41}}}
    registry.update(page("count", "other", schema=first))
    before = registry.get("count")
    assert before is not None
    hits = VALIDATOR_CACHE.hits
    registry.update(page("count", "other", schema=json.loads(json.dumps(first))))
    same = registry.get("count")
    assert same is not None
    assert same.input_validator is before.input_validator
    assert VALIDATOR_CACHE.hits >= hits + 2
    changed = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 43}}}
    registry.update(page("count", schema=changed))
    after = registry.get("count")
    assert after is not None
    assert after.input_validator is not before.input_validator
    assert check_call(registry, {"name": "count", "arguments": {"n": 42}}).allowed
    # The call made under the old listing keeps the tool it was checked against.
    assert before.input_validator is not None
    assert not before.input_validator.validate({"n": 42}).valid


def test_readers_always_see_one_complete_listing_while_a_writer_relists() -> None:
    registry = ToolRegistry(Revision.V2025_11_25)
    listings = [("a1", "a2", "a3"), ("b1", "b2", "b3")]
    registry.update(page(*listings[0]))
    stop = threading.Event()
    seen: set[tuple[str, ...]] = set()

    def read() -> None:
        while not stop.is_set():
            seen.add(tuple(registry.names()))

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    for round_ in range(200):
        names = listings[round_ % 2]
        registry.update(page(names[0], cursor="2"))
        registry.add_page(page(names[1], cursor="3"))
        registry.add_page(page(names[2]))
    stop.set()
    for reader in readers:
        reader.join()
    assert seen <= set(listings)


@pytest.mark.parametrize("portable", [False, True])
def test_the_portable_profile_decides_whether_dotted_names_are_usable(portable: bool) -> None:
    registry = ToolRegistry(Revision.V2025_11_25, portable=portable)
    (violation,) = registry.update(page("git.status"))
    assert violation.rule is Rule.TOOL_NAME_NOT_PORTABLE
    checked = registry.get("git.status")
    assert checked is not None
    assert checked.usable is not portable
    assert check_call(registry, {"name": "git.status"}).allowed is not portable
