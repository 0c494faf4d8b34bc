"""What a schema document is made of, learned once at compile time.

The walk enforces the schema bounds before any backend sees the schema (a native backend can
overflow its stack on a deep enough document), and decides two things the hot path relies on:
whether validation can recurse (then instance depth must be checked on every call) and how much
the recursion branches (then explaining a failure can cost exponential time).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

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
_DEFINITIONS = frozenset({"$defs", "definitions"})
_ANCHOR_KEYWORDS = ("$anchor", "$dynamicAnchor")

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class SchemaProfile:
    """Facts about a schema document that bound the cost of validating against it.

    - ``depth``: nesting of JSON containers in the document.
    - ``evaluation_depth``: the longest chain of subschemas validation can nest through on one
      instance level, following references (each costs the native backend stack).
    - ``evaluation_paths``: how many ways validation can reach subschemas, following references:
      what one instance level can cost. References to one place from many make it grow.
    - ``fanout``: references that re-enter a subschema being evaluated (recursion); 0 means
      validation cannot descend deeper than the schema itself.
    """

    depth: int
    subschemas: int
    #: (JSON Pointer to the keyword, its value) for every ``$ref``-like keyword.
    references: tuple[tuple[str, str], ...]
    evaluation_depth: int
    evaluation_paths: int
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
    children: dict[Path, list[Path]] = field(default_factory=dict)
    refs: list[tuple[Path, str, str]] = field(default_factory=list)
    anchors: dict[str, Path] = field(default_factory=dict)


def profile_schema(schema: Any, limits: Limits, *, id_keyword: str = "$id") -> SchemaProfile:
    """Walk a schema document once, enforcing the schema bounds, and describe it.

    Raises :class:`SchemaError` when the document is too deep (as written, or through its
    references), has too many subschemas, can be evaluated in too many ways, or is not made
    of JSON values.
    """
    walk = _walk(schema, limits, id_keyword)
    graph = _graph(schema, walk)
    return SchemaProfile(
        depth=walk.depth,
        subschemas=walk.subschemas,
        references=tuple(
            (to_pointer((*path, keyword)), value) for path, keyword, value in walk.refs
        ),
        evaluation_depth=_bounded(graph.depth, limits.max_schema_depth, SchemaErrorCode.TOO_DEEP),
        evaluation_paths=_bounded(
            graph.paths, limits.max_evaluation_paths, SchemaErrorCode.TOO_EXPENSIVE
        ),
        fanout=graph.fanout,
    )


def _bounded(value: int, limit: int, code: SchemaErrorCode) -> int:
    if value > limit:
        what = (
            f"subschemas nest more than {limit} levels deep through their references"
            if code is SchemaErrorCode.TOO_DEEP
            else f"validation can reach subschemas in more than {limit} ways through "
            "references (a reference graph that multiplies work at every level)"
        )
        raise SchemaError(code, what)
    return value


def _walk(schema: Any, limits: Limits, id_keyword: str) -> _Walk:
    walk = _Walk()
    # (node, path, depth, role, owner): an explicit stack, because the documents measured here
    # may be deep enough to overflow Python's own recursion. ``owner`` is the nearest enclosing
    # subschema, whose evaluation leads into this one.
    stack: list[tuple[Any, Path, int, _Role, Path | None]] = [(schema, (), 1, _SCHEMA, None)]
    while stack:
        node, path, depth, role, owner = stack.pop()
        if depth > walk.depth:
            walk.depth = depth
            if depth > limits.max_schema_depth:
                raise SchemaError(
                    SchemaErrorCode.TOO_DEEP,
                    f"schema nesting exceeds {limits.max_schema_depth} levels",
                    location=to_pointer(path[: limits.max_schema_depth]),
                )
        if role is _SCHEMA and isinstance(node, (dict, bool)):
            walk.subschemas += 1
            walk.children[path] = []
            # Definitions are evaluated only where a reference leads to them.
            defined = len(path) >= 2 and path[-2] in _DEFINITIONS and path[:-2] == owner
            if owner is not None and not defined:
                walk.children[owner].append(path)
            owner = path
            if isinstance(node, dict):
                _note_schema(node, path, walk, id_keyword)
        if isinstance(node, dict):
            for key, value in node.items():
                if not isinstance(key, str):
                    raise SchemaError(
                        SchemaErrorCode.NOT_A_SCHEMA,
                        "schema object keys must be strings",
                        location=to_pointer(path),
                    )
                stack.append((value, (*path, key), depth + 1, _child_role(role, key), owner))
        elif isinstance(node, list):
            # A list in a schema position holds subschemas (allOf, prefixItems) or names
            # (required, type); under a data keyword it is data.
            for index, value in enumerate(node):
                stack.append((value, (*path, index), depth + 1, role, owner))
        elif not isinstance(node, (str, int, float, bool)) and node is not None:
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
    return walk


class _Role:
    """What a value in a schema document is: a subschema, a name map of them, or data."""


_SCHEMA, _MAP, _DATA = _Role(), _Role(), _Role()


def _child_role(role: _Role, key: str) -> _Role:
    if role is _SCHEMA:
        if key in _DATA_KEYWORDS:
            return _DATA
        return _MAP if key in _MAP_KEYWORDS else _SCHEMA
    return _SCHEMA if role is _MAP else _DATA


def _note_schema(node: dict[str, Any], path: Path, walk: _Walk, id_keyword: str) -> None:
    for keyword in _REF_KEYWORDS:
        target = node.get(keyword)
        if isinstance(target, str):
            walk.refs.append((path, keyword, target))
    for keyword in _ANCHOR_KEYWORDS:
        name = node.get(keyword)
        if isinstance(name, str):
            walk.anchors.setdefault(name, path)
    identifier = node.get(id_keyword)
    if isinstance(identifier, str):
        if identifier.startswith("#"):
            # draft-07 and earlier spell a plain-name anchor as an `$id` fragment.
            walk.anchors.setdefault(identifier[1:], path)
        elif path:
            walk.nested_ids = True


@dataclass(frozen=True)
class _Graph:
    depth: int
    paths: int
    fanout: int


def _graph(schema: Any, walk: _Walk) -> _Graph:
    """Depth, path count and recursion of the graph of subschemas and references.

    References that cannot be resolved here (to other documents, or through embedded
    resources, whose dynamic scopes could also redirect a dynamic reference) are assumed to
    recurse: that only costs an instance depth check per call.
    """
    edges = {path: list(children) for path, children in walk.children.items()}
    unknown = 0
    for path, _, ref in walk.refs:
        target = None if walk.nested_ids else _resolve(schema, ref, walk)
        if target is None or target not in edges:
            unknown += 1
        else:
            edges[path].append(target)
    order, back_edges = _depth_first(edges)
    # Longest chain and number of paths from the root, over the graph without its back
    # edges (those are the recursion, measured by `fanout`). Counts saturate: beyond the
    # limit only "too many" matters, and exact counts of hostile graphs are astronomically big.
    cap = 1 << 62
    depth = dict.fromkeys(order, 0)
    paths = dict.fromkeys(order, 0)
    paths[()] = 1
    for node in order:
        for child in edges[node]:
            if (node, child) in back_edges:
                continue
            depth[child] = max(depth[child], depth[node] + 1)
            paths[child] = min(cap, paths[child] + paths[node])
    return _Graph(
        depth=max(depth.values(), default=0) + 1,
        paths=min(cap, sum(paths.values())),
        fanout=len(back_edges) + unknown,
    )


def _depth_first(edges: dict[Path, list[Path]]) -> tuple[list[Path], set[tuple[Path, Path]]]:
    """Nodes reachable from the root in topological order, and the edges that close a cycle."""
    on_stack: set[Path] = set()
    done: set[Path] = set()
    back: set[tuple[Path, Path]] = set()
    postorder: list[Path] = []
    stack: list[tuple[Path, int]] = [((), 0)]
    on_stack.add(())
    while stack:
        node, index = stack[-1]
        children = edges[node]
        if index < len(children):
            stack[-1] = (node, index + 1)
            child = children[index]
            if child in on_stack:
                back.add((node, child))
            elif child not in done:
                on_stack.add(child)
                stack.append((child, 0))
        else:
            stack.pop()
            on_stack.discard(node)
            done.add(node)
            postorder.append(node)
    postorder.reverse()
    return postorder, back


def _resolve(schema: Any, ref: str, walk: _Walk) -> Path | None:
    """The path a same-document reference points at, or None when it leaves the document."""
    base, _, fragment = ref.partition("#")
    root_id = schema.get("$id") if isinstance(schema, dict) else None
    if base and not (isinstance(root_id, str) and urljoin(root_id, base) == root_id.split("#")[0]):
        return None
    if fragment and not fragment.startswith("/"):
        return walk.anchors.get(fragment)
    tokens = from_fragment("#" + fragment)
    if tokens is None:
        return None
    node: Any = schema
    path: list[str | int] = []
    step: str | int
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node, step = node[token], token
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node, step = node[int(token)], int(token)
        else:
            return None
        path.append(step)
    return tuple(path)
