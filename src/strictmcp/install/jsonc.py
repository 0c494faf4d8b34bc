"""JSON, and JSON with comments and trailing commas (VS Code's JSONC), read with the place of
every value, so that a client's config can be changed where its servers are and left as its
owner wrote it everywhere else.

Why not a library: ``json`` gives no places and refuses comments; ``json5`` reads a superset
(single quotes, bare keys, hexadecimal numbers) that VS Code's own parser refuses, and gives
no places either, so a rewrite would drop every comment of the file. The grammar here is JSON's
(RFC 8259) plus ``//`` and ``/* */`` comments and one trailing comma per object or array, as
VS Code reads ``mcp.json``; nothing more is accepted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_MAX_DEPTH = 200
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_SPACE = " \t\r\n"


class JsoncError(ValueError):
    """Text that is not JSON (or JSONC, where comments are allowed): its line and column and
    what was expected there, never the text itself."""


@dataclass(frozen=True)
class Member:
    """One member of an object: its name, where it starts (the name's opening quote) and
    ends (after its value), and its value."""

    name: str
    start: int
    end: int
    node: Node


@dataclass(frozen=True)
class Node:
    """A value and where it is in the text (``text[start:end]``); an object's members too."""

    value: Any
    start: int
    end: int
    members: tuple[Member, ...] = field(default=())

    def member(self, name: str) -> Member | None:
        """The member ``name`` of this object (the last, where a name repeats, as JSON
        readers do), or None."""
        found = None
        for member in self.members:
            if member.name == name:
                found = member
        return found


def parse(text: str, *, comments: bool) -> Node:
    """The value ``text`` holds (a BOM before it is allowed); :class:`JsoncError` where it is
    not JSON, or, with ``comments``, JSONC."""
    parser = _Parser(text, comments)
    parser.index = 1 if text.startswith("\ufeff") else 0
    parser.skip()
    node = parser.value(0)
    parser.skip()
    if parser.index != len(text):
        parser.fail("the end of the file")
    return node


def has_comment(text: str, start: int, end: int, *, skip: tuple[tuple[int, int], ...]) -> bool:
    """Whether a comment lies in ``text[start:end]`` outside the spans ``skip`` (which hold
    whole values, so that a ``//`` inside a string is never taken for one)."""
    index = start
    for skip_start, skip_end in (*sorted(skip), (end, end)):
        gap = text[index:skip_start]
        if "//" in gap or "/*" in gap:
            return True
        index = max(index, skip_end)
    return False


class _Parser:
    def __init__(self, text: str, comments: bool) -> None:
        self.text = text
        self.comments = comments
        self.index = 0

    def fail(self, expected: str) -> Any:
        line = self.text.count("\n", 0, self.index) + 1
        column = self.index - (self.text.rfind("\n", 0, self.index) + 1) + 1
        raise JsoncError(f"line {line}, column {column}: expected {expected}")

    def skip(self) -> None:
        text = self.text
        while self.index < len(text):
            char = text[self.index]
            if char in _SPACE:
                self.index += 1
            elif self.comments and text.startswith("//", self.index):
                newline = text.find("\n", self.index)
                self.index = len(text) if newline < 0 else newline + 1
            elif self.comments and text.startswith("/*", self.index):
                close = text.find("*/", self.index + 2)
                if close < 0:
                    self.fail("the end of the comment (*/)")
                self.index = close + 2
            else:
                return

    def value(self, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            self.fail(f"at most {_MAX_DEPTH} nested objects and arrays")
        start = self.index
        char = self.text[start : start + 1]
        if char == "{":
            return self.object(depth)
        if char == "[":
            return self.array(depth)
        if char == '"':
            return Node(self.string(), start, self.index)
        for word, literal in _LITERALS.items():
            if self.text.startswith(word, start):
                self.index += len(word)
                return Node(literal, start, self.index)
        number = _NUMBER.match(self.text, start)
        if number is None:
            return self.fail("a value")  # type: ignore[no-any-return]
        self.index = number.end()
        return Node(json.loads(number.group()), start, self.index)

    def string(self) -> str:
        match = _STRING.match(self.text, self.index)
        if match is None:
            return self.fail("a string")  # type: ignore[no-any-return]
        self.index = match.end()
        value: str = json.loads(match.group())
        return value

    def object(self, depth: int) -> Node:
        start = self.index
        self.index += 1
        members: list[Member] = []
        values: dict[str, Any] = {}
        self.skip()
        while not self.text.startswith("}", self.index):
            if members:
                self.expect(",", "a comma or }")
                self.skip()
                if self.comments and self.text.startswith("}", self.index):
                    break
            key_start = self.index
            name = self.string()
            self.skip()
            self.expect(":", "a colon")
            self.skip()
            node = self.value(depth + 1)
            members.append(Member(name, key_start, node.end, node))
            values[name] = node.value
            self.skip()
        self.index += 1
        return Node(values, start, self.index, tuple(members))

    def array(self, depth: int) -> Node:
        start = self.index
        self.index += 1
        items: list[Any] = []
        self.skip()
        while not self.text.startswith("]", self.index):
            if items:
                self.expect(",", "a comma or ]")
                self.skip()
                if self.comments and self.text.startswith("]", self.index):
                    break
            items.append(self.value(depth + 1).value)
            self.skip()
        self.index += 1
        return Node(items, start, self.index)

    def expect(self, char: str, what: str) -> None:
        if not self.text.startswith(char, self.index):
            self.fail(what)
        self.index += 1


def replace_object(text: str, node: Node, members: list[str]) -> str:
    """``text`` with the object ``node`` made of ``members`` (each ``"name": value`` text, in
    order), one a line at the indentation the object's first member had (or two spaces more
    than the object's own line); the text around the object is kept as it is."""
    inner = member_indent(text, node)
    outer = _indentation(text[text.rfind("\n", 0, node.start) + 1 : node.start])
    if not members:
        body = "{}"
    else:
        body = "{\n" + ",\n".join(inner + member for member in members) + "\n" + outer + "}"
    return text[: node.start] + body + text[node.end :]


def member_text(name: str, value: Any, indent: str) -> str:
    """``"name": value`` as JSON, laid out over lines indented from ``indent``."""
    lines = json.dumps(value, indent=2, ensure_ascii=False).split("\n")
    return json.dumps(name, ensure_ascii=False) + ": " + f"\n{indent}".join(lines)


def member_indent(text: str, node: Node) -> str:
    """The indentation :func:`replace_object` gives the members of ``node``."""
    line_start = text.rfind("\n", 0, node.start) + 1
    outer = _indentation(text[line_start : node.start])
    if node.members:
        first = node.members[0].start
        head = text[text.rfind("\n", 0, first) + 1 : first]
        if head.strip() == "":
            return head
    return outer + ("\t" if outer.startswith("\t") else "  ")


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]
