"""Bounds on instances, checked before a backend sees them.

The native backend recurses once per level of nesting and crashes the process when a recursive
schema meets a deep enough instance, so depth must be known before it runs. Size is checked
here too, so that a huge instance gets a clear error instead of seconds of work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .codes import IssueCode
from .pointer import to_pointer

_SCALARS = (str, int, float, type(None))


@dataclass(frozen=True)
class BoundsViolation:
    """The first bound an instance crosses, and where."""

    code: IssueCode
    message: str
    path: tuple[str | int, ...]

    @property
    def pointer(self) -> str:
        """The location as a JSON Pointer."""
        return to_pointer(self.path)


def check_instance(instance: Any, max_depth: int, max_size: int | None) -> BoundsViolation | None:
    """Check depth, size and JSON-ness of an instance; ``max_size=None`` skips the size count.

    Size is the approximate length of the JSON text: characters of strings and keys plus one per
    value. The walk stops at the first violation, so it costs at most ``max_size`` steps.
    """
    size = 0
    # (value, path, depth); paths are built only for containers, which are few.
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(instance, (), 0)]
    while stack:
        node, path, depth = stack.pop()
        kind = type(node)
        if (kind is dict or kind is list or kind is tuple) and (
            max_size is not None and len(node) > max_size
        ):
            # Every member costs at least one unit: no need to walk a huge one to know.
            return _too_large(path, max_size)
        if kind is dict:
            if depth >= max_depth:
                return _too_deep(path, max_depth)
            size += 1
            for key, value in node.items():
                if type(key) is not str:
                    return BoundsViolation(
                        IssueCode.INSTANCE_NOT_JSON, "object keys must be strings", path
                    )
                size += len(key) + 1
                if type(value) in (dict, list, tuple):
                    stack.append((value, (*path, key), depth + 1))
                else:
                    size += _scalar_size(value)
                    if size < 0:
                        return _not_json(value, (*path, key))
        elif kind is list or kind is tuple:
            if depth >= max_depth:
                return _too_deep(path, max_depth)
            size += 1
            for index, value in enumerate(node):
                if type(value) in (dict, list, tuple):
                    stack.append((value, (*path, index), depth + 1))
                else:
                    size += _scalar_size(value)
                    if size < 0:
                        return _not_json(value, (*path, index))
        else:
            size += _scalar_size(node)
            if size < 0:
                return _not_json(node, path)
        if max_size is not None and size > max_size:
            return _too_large(path, max_size)
    return None


def _too_large(path: tuple[str | int, ...], max_size: int) -> BoundsViolation:
    return BoundsViolation(
        IssueCode.INSTANCE_TOO_LARGE,
        f"instance is larger than the limit of {max_size} (about that many bytes of JSON)",
        path,
    )


def within_bounds(instance: Any, max_depth: int, max_size: int) -> bool:
    """Whether :func:`check_instance` would find nothing: the fast answer, without locations.

    Recursion is safe here (``max_depth`` is far below the interpreter's limit), and it is the
    cheapest way to walk small JSON in CPython; :func:`check_instance` then locates a failure.
    """
    size = _fitting_size(instance, max_depth, max_size)
    return 0 <= size <= max_size


def _fitting_size(node: Any, depth_left: int, budget: int) -> int:
    """Approximate JSON size of ``node``, or -1 if it is too deep, too large or not JSON."""
    kind = type(node)
    if kind is str:
        return len(node) + 2
    if kind is dict:
        if len(node) > budget:
            return -1
        values: Any = node.values()
        size = 1
        for key in node:
            if type(key) is not str:
                return -1
            size += len(key) + 1
    elif kind is list or kind is tuple:
        if len(node) > budget:
            return -1
        values, size = node, 1
    elif kind is int or kind is bool or node is None:
        return 4
    elif kind is float:
        return 4 if math.isfinite(node) else -1
    else:
        return -1
    if depth_left <= 0:
        return -1
    for value in values:
        vkind = type(value)
        if vkind is str:
            size += len(value) + 2
        elif vkind is int or vkind is bool or value is None:
            size += 4
        else:
            inner = _fitting_size(value, depth_left - 1, budget - size)
            if inner < 0:
                return -1
            size += inner
        if size > budget:
            return -1
    return size


def _scalar_size(value: Any) -> int:
    """Approximate JSON length of a scalar, or a negative number when it is not JSON."""
    if type(value) is str:
        return len(value) + 2
    if type(value) is float and not math.isfinite(value):
        return -(10**18)
    if isinstance(value, _SCALARS):
        return 4
    return -(10**18)


def _too_deep(path: tuple[str | int, ...], max_depth: int) -> BoundsViolation:
    return BoundsViolation(
        IssueCode.INSTANCE_TOO_DEEP, f"instance nesting exceeds {max_depth} levels", path
    )


def _not_json(value: Any, path: tuple[str | int, ...]) -> BoundsViolation:
    what = "a non-finite number" if isinstance(value, float) else f"a {type(value).__name__}"
    return BoundsViolation(IssueCode.INSTANCE_NOT_JSON, f"{what} is not a JSON value", path)


def instance_shape(instance: Any, max_depth: int) -> tuple[int, int]:
    """Levels of nested arrays and objects (a scalar has 0, counting no further than
    ``max_depth``) and the number of values in the instance."""
    deepest = 0
    count = 1
    stack: list[tuple[Any, int]] = [(instance, 1)]
    while stack:
        node, depth = stack.pop()
        kind = type(node)
        if kind is not dict and kind is not list and kind is not tuple:
            continue
        if depth >= max_depth:
            return max_depth, count
        deepest = max(deepest, depth)
        values = node.values() if kind is dict else node
        count += len(values)
        stack.extend((value, depth + 1) for value in values if type(value) in _CONTAINERS)
    return deepest, count


_CONTAINERS = (dict, list, tuple)
