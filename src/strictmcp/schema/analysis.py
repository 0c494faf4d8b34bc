"""What a schema document is made of, learned once at compile time.

The walk enforces the schema bounds before any backend sees the schema (a native backend can
overflow its stack on a deep enough document), and decides two things the hot path relies on:
whether validation can recurse (then instance depth must be checked on every call) and how much
the recursion branches (then explaining a failure can cost exponential time).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .codes import SchemaErrorCode
from .errors import SchemaError
from .limits import Limits
from .pointer import from_fragment, to_pointer

# Values of these keywords are instance data, not subschemas: a "$ref" key inside them means
# nothing, and their contents are counted only toward the document's depth.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
# Values of these keywords map names to subschemas.
_MAP_KEYWORDS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
# Beyond this many references the exact cycle analysis is skipped and every reference is
# assumed to recurse: safe, and it keeps hostile schemas from making compilation quadratic.
_MAX_ANALYSED_REFS = 256

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class SchemaProfile:
    """Facts about a schema document that bound the cost of validating against it.

    ``fanout`` is the number of references that lie on a reference cycle: 0 means validation
    cannot recurse, so its depth is bounded by the schema's own depth.
    """

    depth: int
    subschemas: int
    #: (JSON Pointer to the keyword, its value) for every ``$ref``-like keyword.
    references: tuple[tuple[str, str], ...]
    fanout: int

    @property
    def refs(self) -> int:
        """How many references the document makes."""
        return len(self.references)

    @property
    def recursive(self) -> bool:
        """Whether validation can descend deeper than the schema document itself."""
        return self.fanout > 0


@dataclass
class _Walk:
    depth: int = 0
    subschemas: int = 0
    nested_ids: bool = False


def profile_schema(schema: Any, limits: Limits, *, id_keyword: str = "$id") -> SchemaProfile:
    """Walk a schema document once, enforcing the schema bounds, and describe it.

    Raises :class:`SchemaError` when the document is too deep, has too many subschemas, or is
    not made of JSON values.
    """
    walk = _Walk()
    refs: list[tuple[Path, str, str]] = []
    # (node, path, depth, role): an explicit stack, because the documents measured here may be
    # deep enough to overflow Python's own recursion.
    stack: list[tuple[Any, Path, int, _Role]] = [(schema, (), 1, _SCHEMA)]
    while stack:
        node, path, depth, role = stack.pop()
        if depth > walk.depth:
            walk.depth = depth
            if depth > limits.max_schema_depth:
                raise SchemaError(
                    SchemaErrorCode.TOO_DEEP,
                    f"schema nesting exceeds {limits.max_schema_depth} levels",
                    location=to_pointer(path[: limits.max_schema_depth]),
                )
        if isinstance(node, dict):
            if role is _SCHEMA:
                walk.subschemas += 1
                _note_schema(node, path, refs, walk, id_keyword)
            for key, value in node.items():
                if not isinstance(key, str):
                    raise SchemaError(
                        SchemaErrorCode.NOT_A_SCHEMA,
                        "schema object keys must be strings",
                        location=to_pointer(path),
                    )
                stack.append((value, (*path, key), depth + 1, _child_role(role, key)))
        elif isinstance(node, list):
            # A list in a schema position holds subschemas (allOf, prefixItems) or names
            # (required, type); under a data keyword it is data.
            for index, value in enumerate(node):
                stack.append((value, (*path, index), depth + 1, role))
        elif role is _SCHEMA and isinstance(node, bool):
            walk.subschemas += 1
        elif not isinstance(node, (str, int, float)) and node is not None:
            raise SchemaError(
                SchemaErrorCode.NOT_A_SCHEMA,
                f"schemas are JSON: a {type(node).__name__} is not a JSON value",
                location=to_pointer(path),
            )
        if walk.subschemas > limits.max_subschemas:
            raise SchemaError(
                SchemaErrorCode.TOO_MANY_SUBSCHEMAS,
                f"schema has more than {limits.max_subschemas} subschemas",
                location=to_pointer(path),
            )
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(
            SchemaErrorCode.NOT_A_SCHEMA,
            f"a schema is an object or a boolean, not a {type(schema).__name__}",
        )
    return SchemaProfile(
        depth=walk.depth,
        subschemas=walk.subschemas,
        references=tuple((to_pointer((*path, keyword)), value) for path, keyword, value in refs),
        fanout=_recursive_refs(refs, walk.nested_ids),
    )


class _Role:
    """What a value in a schema document is: a subschema, a name map of them, or data."""


_SCHEMA, _MAP, _DATA = _Role(), _Role(), _Role()


def _child_role(role: _Role, key: str) -> _Role:
    if role is _SCHEMA:
        if key in _DATA_KEYWORDS:
            return _DATA
        return _MAP if key in _MAP_KEYWORDS else _SCHEMA
    return _SCHEMA if role is _MAP else _DATA


def _note_schema(
    node: dict[str, Any],
    path: Path,
    refs: list[tuple[Path, str, str]],
    walk: _Walk,
    id_keyword: str,
) -> None:
    for keyword in _REF_KEYWORDS:
        target = node.get(keyword)
        if isinstance(target, str):
            refs.append((path, keyword, target))
    if path and isinstance(node.get(id_keyword), str):
        walk.nested_ids = True


def _recursive_refs(refs: list[tuple[Path, str, str]], nested_ids: bool) -> int:
    """How many references lie on a cycle of references (0: validation cannot recurse).

    Exact for documents whose references are all local JSON Pointers and that embed no other
    resources; anything else is counted as recursive, which only costs an instance depth check.
    """
    if not refs:
        return 0
    targets: list[tuple[str, ...]] = []
    for _, keyword, ref in refs:
        # Dynamic references resolve at run time, so their targets cannot be known here.
        target = from_fragment(ref) if keyword == "$ref" else None
        if target is None or nested_ids or len(refs) > _MAX_ANALYSED_REFS:
            return len(refs)
        targets.append(target)
    locations = [tuple(str(part) for part in path) for path, _, _ in refs]
    # Reference i leads on to reference j when j is written inside the subschema i points at.
    edges = [
        [j for j, loc in enumerate(locations) if loc[: len(target)] == target] for target in targets
    ]
    return sum(1 for i in range(len(refs)) if _reaches(i, i, edges))


def _reaches(start: int, goal: int, edges: list[list[int]]) -> bool:
    seen: set[int] = set()
    stack = list(edges[start])
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(edges[node])
    return False
