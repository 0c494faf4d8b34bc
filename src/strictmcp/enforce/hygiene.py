"""Hygiene of what flows back to the model: tool results, and everything else a server
sends that a client may show a model (:func:`clean_message`), elicitation messages, sampling
requests.

A result is the server's text, and a model obeys what it reads: hidden characters (tag
characters spelling instructions, bidirectional controls, zero-width characters) and terminal
control sequences are found with the text guard's own classes (:func:`~strictmcp.guards.text.
scrub`) in text content, embedded resource text, resource links' names, titles and
descriptions, ``structuredContent`` strings and keys, and ``_meta`` strings. Per tool (the
policy's ``[[result]]``, :class:`~strictmcp.policy.ResultRule`): ``flag`` records them
and annotates the result's ``_meta`` (:data:`HYGIENE_META_KEY`) without changing any content;
``strip`` removes them. A ``structuredContent`` key with hidden characters is never renamed
(a new name can collide with another, or break the ``outputSchema``): under ``strip`` the
result is refused (:attr:`HygieneRule.HIDDEN_KEY`). Optionally the result is labelled
untrusted (:data:`UNTRUSTED_META_KEY`, and a delimiter around each text item), its size and
number of items are bounded, and secrets are redacted. Nothing found, nothing configured: the
result is left exactly as it came.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..guards.codes import GuardCode
from ..guards.secrets import redact
from ..guards.text import scrub
from ..policy import Hygiene, ResultRule
from ..protocol import RELATED_TASK, Severity, Violation

HYGIENE_META_KEY = "dev.strictmcp/hygiene"
"""``_meta`` key of a result, or request, hygiene found something in:
``{"action": "flagged" | "stripped", "found": {code: count}}``."""
UNTRUSTED_META_KEY = "dev.strictmcp/untrusted"
"""``_meta`` key labelling a result as content from a tool, not instructions:
``{"source": "tool", "tool": NAME}``."""
# Data is walked this deep at most (the walk's own recursion bounded, whatever called it);
# what lies deeper is never passed on uncleaned (HygieneRule.TOO_DEEP).
_MAX_DEPTH = 64


class HygieneRule(str, Enum):
    """Stable codes of hygiene findings beyond the text guard's classes."""

    SECRET_REDACTED = "secret-redacted"
    RESULT_TOO_LARGE = "result-too-large"
    RESULT_TOO_MANY_ITEMS = "result-too-many-items"
    #: A ``structuredContent`` key with hidden characters, under ``strip``: the result is
    #: refused; a key of free-form data (``_meta``, an error's or a log message's ``data``)
    #: is dropped with its value.
    HIDDEN_KEY = "result-hidden-key"
    #: Data nested deeper than hygiene walks (:data:`_MAX_DEPTH`), under ``strip`` or
    #: redaction: refused in ``structuredContent``, dropped from free-form data; noted under
    #: ``flag``.
    TOO_DEEP = "result-too-deep"


@dataclass
class Cleaned:
    """What hygiene made of a result or request: ``value`` (what came in, unless
    ``changed``), the findings (pointers into the message, counts in the messages, never a
    value), and ``refused``: bounds it breaks, which refuse it when enforcing."""

    value: dict[str, Any]
    found: list[Violation] = field(default_factory=list)
    refused: list[Violation] = field(default_factory=list)
    changed: bool = False


class _Walk:
    """One pass over the strings of a message: scrub (and redact) each, recording findings;
    ``refused`` holds the keys that cannot be cleaned (:attr:`HygieneRule.HIDDEN_KEY`)."""

    def __init__(
        self, hygiene: Hygiene, secrets: bool, pointer: str, flags: tuple[str, ...]
    ) -> None:
        self.hygiene = hygiene
        self.secrets = secrets
        self.pointer = pointer
        self.flags = flags
        self.found: list[Violation] = []
        self.refused: list[Violation] = []
        self.counts: dict[str, int] = {}

    def text(self, value: str, where: str) -> str:
        if self.hygiene != "off":
            scrubbed = scrub(
                value, strip=self.hygiene == "strip", allow_subdivision_flags=self.flags
            )
            for code, count in scrubbed.found.items():
                self._note(code, count, where, f"{count} found ({code.value})")
            value = scrubbed.text
        if self.secrets:
            redacted = redact(value)
            for kind, count in redacted.found.items():
                self._note(HygieneRule.SECRET_REDACTED, count, where, f"{count} {kind} redacted")
            value = redacted.text
        return value

    def tree(self, value: Any, where: str, depth: int = 0, *, schema: bool = False) -> Any:
        """``value`` with every string cleaned, keys looked at too: one with hidden
        characters is noted; under ``strip`` it is dropped with its value, or, in data a
        schema holds (``schema``), refused."""
        if isinstance(value, str):
            return self.text(value, where)
        if depth >= _MAX_DEPTH:
            return self._too_deep(value, where, schema)
        # A container nothing changed in is returned as it is: clean results are not copied.
        if isinstance(value, dict):
            tree = {}
            for key, item in value.items():
                if not self._key_kept(key, where, schema):
                    continue
                tree[key] = self.tree(item, f"{where}/{_escape(key)}", depth + 1, schema=schema)
            same = len(tree) == len(value) and all(tree[k] is v for k, v in value.items())
            return value if same else tree
        if isinstance(value, list):
            items = [
                self.tree(v, f"{where}/{i}", depth + 1, schema=schema) for i, v in enumerate(value)
            ]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        return value

    def _too_deep(self, value: Any, where: str, schema: bool) -> Any:
        """A container below the deepest level walked: what a walk would not clean is
        refused in data a schema holds, dropped (None) elsewhere, noted under ``flag``."""
        if not isinstance(value, (dict, list)) or not value:
            return value
        if self.hygiene == "off" and not self.secrets:
            return value
        message = f"nested deeper than {_MAX_DEPTH} levels, which hygiene does not walk"
        if self.hygiene != "strip" and not self.secrets:
            self._note(HygieneRule.TOO_DEEP, 1, where, message)
            return value
        if schema:
            message += "; the result is refused"
            self.refused.append(Violation(HygieneRule.TOO_DEEP, message, self.pointer + where))
            return value
        self._note(HygieneRule.TOO_DEEP, 1, where, message + "; dropped")
        return None

    def _key_kept(self, key: str, where: str, schema: bool) -> bool:
        """Whether ``key`` (of the object at ``where``) stays; its hidden characters noted,
        at the object, since the key itself is not a pointer to hand on."""
        if self.hygiene == "off":
            return True
        found = scrub(key, strip=False).found
        if not found:
            return True
        for code, count in found.items():
            self._note(code, count, where, f"{count} found in a key ({code.value})")
        if self.hygiene != "strip":
            return True
        if schema:
            message = "a key of structuredContent has hidden characters; it is not renamed"
            self.refused.append(Violation(HygieneRule.HIDDEN_KEY, message, self.pointer + where))
        return False

    def _note(self, code: GuardCode | HygieneRule, count: int, where: str, message: str) -> None:
        self.counts[code.value] = self.counts.get(code.value, 0) + count
        self.found.append(Violation(code, message, self.pointer + where, Severity.WARNING))

    def meta(self) -> dict[str, Any] | None:
        if not self.counts:
            return None
        action = "stripped" if self.hygiene == "strip" else "flagged"
        return {"action": action, "found": dict(sorted(self.counts.items()))}


def clean_result(
    result: dict[str, Any],
    tool: str,
    rule: ResultRule,
    *,
    plain: bool = False,
    allow_subdivision_flags: tuple[str, ...] = (),
) -> Cleaned:
    """Hygiene of one ``tools/call`` result of ``tool`` under ``rule``; see the module
    documentation. Pointers are into the JSON-RPC response (``/result/content/0/text``).
    ``plain``: every string of the result is known to be printable ASCII, tabs and line
    breaks (the caller read it from such text), so that there is nothing to scrub.
    ``allow_subdivision_flags``: the policy's, as :func:`~strictmcp.guards.text.scrub`
    takes them."""
    refused = _bounds(result, rule)
    if refused:
        return Cleaned(result, refused=refused)
    if plain and not rule.redact and not rule.label and rule.delimiter is None:
        return Cleaned(result)  # the common case, told from the text without a walk
    walk = _Walk(rule.hygiene, rule.redact, "/result", allow_subdivision_flags)
    content = result.get("content")
    items = content if isinstance(content, list) else []
    new_items = [
        _block(walk, item, f"/content/{index}", rule.delimiter) for index, item in enumerate(items)
    ]
    structured = result.get("structuredContent")
    cleaned_structured = (
        walk.tree(structured, "/structuredContent", schema=True) if structured is not None else None
    )
    if walk.refused:
        return Cleaned(result, walk.found, refused=walk.refused)
    task = result.get("task")  # a task-augmented call's answer: the task made
    cleaned_task = _task(walk, task, "/task") if task is not None else None
    meta = _meta(walk, result["_meta"], "/_meta") if "_meta" in result else None
    labelled = rule.label or rule.delimiter is not None
    if not walk.found and not labelled:
        return Cleaned(result)
    if walk.found and rule.hygiene == "flag" and not rule.redact and not labelled:
        # Flagged only: the content stays as it came, the annotation says what is in it.
        return Cleaned(_annotated(result, walk.meta(), None), walk.found, changed=True)
    out = dict(result)
    if isinstance(content, list):
        out["content"] = new_items
    if structured is not None:
        out["structuredContent"] = cleaned_structured
    if task is not None:
        out["task"] = cleaned_task
    if "_meta" in result:
        out["_meta"] = meta
    untrusted = {"source": "tool", "tool": tool} if rule.label else None
    return Cleaned(_annotated(out, walk.meta(), untrusted), walk.found, changed=True)


def clean_message(
    message: dict[str, Any],
    method: str | None,
    rule: ResultRule,
    *,
    allow_subdivision_flags: tuple[str, ...] = (),
) -> Cleaned:
    """Hygiene of one JSON-RPC message a server sent, other than a ``tools/call`` result
    (:func:`clean_result`), under ``rule``: an error's ``message`` and ``data`` (answering
    any request: ``method`` is the request's); the result of ``resources/read`` (each
    content's ``text``: a ``blob`` is bytes, shown to no model as text), ``prompts/get``
    (its ``description`` and each message's content) and ``completion/complete`` (the
    values), with their ``_meta``; ``notifications/message`` (``logger`` and ``data``) and
    ``notifications/progress`` (``message``). ``value`` is the whole message; flagged, a
    result's or a notification's ``_meta`` says what was found (an error has none: the
    audit records do). Pointers are into the message (``/error/message``)."""
    walk = _Walk(rule.hygiene, rule.redact, "", allow_subdivision_flags)
    if "error" in message:
        body = message["error"]
        holder, surfaces = "error", _ERROR
    elif "result" in message:
        body = message["result"]
        holder, surfaces = "result", _RESULTS.get(method or "", {})
    else:
        body = message.get("params")
        holder, surfaces = "params", _NOTIFICATIONS.get(method or "", {})
    if not surfaces or not isinstance(body, dict):
        return Cleaned(message)
    out = dict(body)
    for key, clean in surfaces.items():
        if key in body:
            out[key] = clean(walk, body[key], f"/{holder}/{key}")
    if not walk.found:
        return Cleaned(message)
    if rule.hygiene == "flag" and not rule.redact:
        out = body  # flagged only: the content stays as it came
    if holder != "error":
        out = _annotated(out, walk.meta(), None)
    if out is body:
        return Cleaned(message, walk.found)
    return Cleaned({**message, holder: out}, walk.found, changed=True)


def clean_request(
    params: dict[str, Any],
    hygiene: Hygiene,
    pointer: str,
    *,
    allow_subdivision_flags: tuple[str, ...] = (),
) -> Cleaned:
    """Hygiene of the params of a server's ``elicitation/create`` or
    ``sampling/createMessage`` request: the message shown to the user, the messages and the
    system prompt given to the model (their text content), flagged or stripped."""
    walk = _Walk(hygiene, False, pointer, allow_subdivision_flags)
    out = dict(params)
    for key in ("message", "systemPrompt"):
        if isinstance(params.get(key), str):
            out[key] = walk.text(params[key], f"/{key}")
    messages = params.get("messages")
    if isinstance(messages, list):
        out["messages"] = [
            _message(walk, message, f"/messages/{index}") for index, message in enumerate(messages)
        ]
    schema = params.get("requestedSchema")
    if isinstance(schema, dict):
        out["requestedSchema"] = _form(walk, schema, "/requestedSchema")
    if not walk.found:
        return Cleaned(params)
    kept = params if hygiene == "flag" else out
    return Cleaned(_annotated(kept, walk.meta(), None), walk.found, changed=True)


def _form(walk: _Walk, schema: dict[str, Any], where: str) -> dict[str, Any]:
    """An elicitation's ``requestedSchema`` as the user reads the form: its own and each
    field's ``title`` and ``description``, each field's ``enumNames``, and the ``title`` of
    each choice of a titled enum (``oneOf``/``anyOf`` items)."""
    out: dict[str, Any] = _strings(walk, schema, where, _FORM_TEXT)
    fields = schema.get("properties")
    if not isinstance(fields, dict):
        return out
    shown: dict[str, Any] = {}
    for name, field_ in fields.items():
        at = f"{where}/properties/{_escape(name)}"
        if not isinstance(field_, dict):
            shown[name] = field_
            continue
        cleaned = _strings(walk, field_, at, _FORM_TEXT)
        names = field_.get("enumNames")
        if isinstance(names, list):
            listed = [
                walk.text(n, f"{at}/enumNames/{i}") if isinstance(n, str) else n
                for i, n in enumerate(names)
            ]
            cleaned = {**cleaned, "enumNames": listed}
        for key in ("oneOf", "anyOf"):
            choices = field_.get(key)
            if isinstance(choices, list):
                titled = [
                    _strings(walk, c, f"{at}/{key}/{i}", _FORM_TEXT) if isinstance(c, dict) else c
                    for i, c in enumerate(choices)
                ]
                cleaned = {**cleaned, key: titled}
        shown[name] = cleaned
    return {**out, "properties": shown}


_FORM_TEXT = ("title", "description")


def _message(walk: _Walk, message: Any, where: str) -> Any:
    if not isinstance(message, dict):
        return message
    content = message.get("content")
    if isinstance(content, list):
        return {
            **message,
            "content": [
                _text_block(walk, c, f"{where}/content/{i}") for i, c in enumerate(content)
            ],
        }
    return {**message, "content": _text_block(walk, content, f"{where}/content")}


def _text_block(walk: _Walk, block: Any, where: str) -> Any:
    if (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ):
        return {**block, "text": walk.text(block["text"], f"{where}/text")}
    return block


def _block(walk: _Walk, item: Any, where: str, delimiter: str | None = None) -> Any:
    """A content block as the model reads it: a text's ``text`` (in ``delimiter``, when
    given), an embedded resource's ``text``, a resource link's ``name``, ``title`` and
    ``description``. Images, audio and blobs are bytes, not text."""
    if not isinstance(item, dict):
        return item
    kind = item.get("type")
    if kind == "text" and isinstance(item.get("text"), str):
        text = walk.text(item["text"], f"{where}/text")
        if delimiter is not None:
            text = delimiter.replace("{text}", text)
        return item if text is item["text"] else {**item, "text": text}
    resource = item.get("resource")
    if kind == "resource" and isinstance(resource, dict) and isinstance(resource.get("text"), str):
        text = walk.text(resource["text"], f"{where}/resource/text")
        return (
            item if text is resource["text"] else {**item, "resource": {**resource, "text": text}}
        )
    if kind == "resource" and isinstance(resource, dict):
        blob = _blob(walk, resource, f"{where}/resource")
        return item if blob is resource else {**item, "resource": blob}
    if kind == "resource_link":
        return _strings(walk, item, where, _LINK_TEXT)
    return item


# What of a resource link (and of a resource's contents) a client shows as text.
_LINK_TEXT = ("name", "title", "description")
_CONTENTS_TEXT = ("text",)


def _strings(walk: _Walk, item: dict[str, Any], where: str, keys: tuple[str, ...]) -> Any:
    """``item`` with the strings at ``keys`` cleaned (the very object when none changed)."""
    out = item
    for key in keys:
        value = item.get(key)
        if isinstance(value, str):
            text = walk.text(value, f"{where}/{key}")
            if text is not value:
                out = {**out, key: text}
    return out


def _meta(walk: _Walk, meta: Any, where: str) -> Any:
    """A ``_meta`` cleaned; a task's reference in it (an id, not text) is left as it is."""
    if not isinstance(meta, dict) or RELATED_TASK not in meta:
        return walk.tree(meta, where)
    kept = {k: v for k, v in meta.items() if k != RELATED_TASK}
    cleaned = walk.tree(kept, where)
    return meta if cleaned is kept else {**cleaned, RELATED_TASK: meta[RELATED_TASK]}


def _text(walk: _Walk, value: Any, where: str) -> Any:
    return walk.text(value, where) if isinstance(value, str) else value


def _tree(walk: _Walk, value: Any, where: str) -> Any:
    return walk.tree(value, where)


def _contents(walk: _Walk, value: Any, where: str) -> Any:
    if not isinstance(value, list):
        return value
    items = [
        _blob(walk, _strings(walk, item, f"{where}/{index}", _CONTENTS_TEXT), f"{where}/{index}")
        if isinstance(item, dict)
        else item
        for index, item in enumerate(value)
    ]
    return value if all(a is b for a, b in zip(items, value, strict=True)) else items


def _blob(walk: _Walk, contents: dict[str, Any], where: str) -> dict[str, Any]:
    """A resource's ``blob`` of a text type (``text/*``, JSON, XML, YAML, scripts), which a
    client may decode and show as text, cleaned as its text would be (encoded again when
    anything was changed); bytes of any other type, or not UTF-8, are left as they are."""
    blob, mime = contents.get("blob"), contents.get("mimeType")
    if not isinstance(blob, str) or not isinstance(mime, str) or not _TEXT_TYPE.match(mime):
        return contents
    try:
        text = base64.b64decode(blob, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return contents
    cleaned = walk.text(text, f"{where}/blob")
    if cleaned is text:
        return contents
    return {**contents, "blob": base64.b64encode(cleaned.encode("utf-8")).decode("ascii")}


# The media types a client may show as text (their parameters, such as charset, allowed).
_TEXT_TYPE = re.compile(
    r"\s*(?:text/|application/(?:[\w.+-]*\+)?(?:json|xml|yaml|x-yaml|javascript|ecmascript|"
    r"x-sh|x-python|sql|toml|graphql)\b)",
    re.IGNORECASE,
)


def _prompt_messages(walk: _Walk, value: Any, where: str) -> Any:
    if not isinstance(value, list):
        return value
    items = []
    for index, message in enumerate(value):
        content = message.get("content") if isinstance(message, dict) else None
        at = f"{where}/{index}/content"
        if isinstance(content, list):
            blocks = [_block(walk, block, f"{at}/{i}") for i, block in enumerate(content)]
            same = all(a is b for a, b in zip(blocks, content, strict=True))
            items.append(message if same else {**message, "content": blocks})
        elif isinstance(message, dict) and content is not None:
            block = _block(walk, content, at)
            items.append(message if block is content else {**message, "content": block})
        else:
            items.append(message)
    return value if all(a is b for a, b in zip(items, value, strict=True)) else items


def _completion(walk: _Walk, value: Any, where: str) -> Any:
    values = value.get("values") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(values, list):
        return value
    cleaned = [_text(walk, item, f"{where}/values/{i}") for i, item in enumerate(values)]
    same = all(a is b for a, b in zip(cleaned, values, strict=True))
    return value if same else {**value, "values": cleaned}


_Surface = Callable[[_Walk, Any, str], Any]
#: What of each message a client may show a model, by where it is: each key of the body
#: (the error, the result, the notification's params) with how it is cleaned.
_ERROR: dict[str, _Surface] = {"message": _text, "data": _tree}


def _tasks(walk: _Walk, value: Any, where: str) -> Any:
    """A ``tasks/list`` result's tasks, each one's ``statusMessage`` cleaned."""
    if not isinstance(value, list):
        return value
    items = [
        _strings(walk, item, f"{where}/{index}", _TASK_TEXT) if isinstance(item, dict) else item
        for index, item in enumerate(value)
    ]
    return value if all(a is b for a, b in zip(items, value, strict=True)) else items


def _listed(walk: _Walk, value: Any, where: str) -> Any:
    """A listing's prompts, resources or resource templates, each one's ``title`` and
    ``description`` (and a prompt's arguments') cleaned: names and URIs are identifiers, left
    as they are (a hidden character in one is the lint's and the pins' to find)."""
    if not isinstance(value, list):
        return value
    items = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            items.append(item)
            continue
        at = f"{where}/{index}"
        cleaned = _strings(walk, item, at, _FORM_TEXT)
        arguments = item.get("arguments")
        if isinstance(arguments, list):
            described = [
                _strings(walk, a, f"{at}/arguments/{i}", _FORM_TEXT) if isinstance(a, dict) else a
                for i, a in enumerate(arguments)
            ]
            if any(a is not b for a, b in zip(described, arguments, strict=True)):
                cleaned = {**cleaned, "arguments": described}
        items.append(cleaned)
    return value if all(a is b for a, b in zip(items, value, strict=True)) else items


def _task(walk: _Walk, value: Any, where: str) -> Any:
    """A task-augmented request's answer (``CreateTaskResult``): its task's ``statusMessage``."""
    return _strings(walk, value, where, _TASK_TEXT) if isinstance(value, dict) else value


_TASK_TEXT = ("statusMessage",)
_RESULTS: dict[str, dict[str, _Surface]] = {
    "resources/read": {"contents": _contents, "_meta": _meta},
    "prompts/get": {"description": _text, "messages": _prompt_messages, "_meta": _meta},
    "completion/complete": {"completion": _completion, "_meta": _meta},
    # What a client shows its model or its user of what a server offers.
    "prompts/list": {"prompts": _listed},
    "resources/list": {"resources": _listed},
    "resources/templates/list": {"resourceTemplates": _listed},
    # What a server tells the client's model of itself (often its system prompt).
    "initialize": {"instructions": _text},
    "server/discover": {"instructions": _text},
    # A task's status, told to the client as text (2025-11-25): its statusMessage.
    "tasks/get": {"statusMessage": _text},
    "tasks/cancel": {"statusMessage": _text},
    "tasks/list": {"tasks": _tasks},
}
_NOTIFICATIONS: dict[str, dict[str, _Surface]] = {
    "notifications/message": {"logger": _text, "data": _tree},
    "notifications/progress": {"message": _text},
    "notifications/tasks/status": {"statusMessage": _text},
}


def _annotated(
    value: dict[str, Any], found: dict[str, Any] | None, untrusted: dict[str, Any] | None
) -> dict[str, Any]:
    meta = value.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    if found is not None:
        meta[HYGIENE_META_KEY] = found
    if untrusted is not None:
        meta[UNTRUSTED_META_KEY] = untrusted
    return {**value, "_meta": meta}


def _bounds(result: dict[str, Any], rule: ResultRule) -> list[Violation]:
    refused = []
    content = result.get("content")
    if rule.max_items is not None and isinstance(content, list) and len(content) > rule.max_items:
        refused.append(
            Violation(
                HygieneRule.RESULT_TOO_MANY_ITEMS,
                f"the result has {len(content)} content items (at most {rule.max_items})",
                "/result/content",
            )
        )
    if rule.max_bytes is not None:
        size = len(json.dumps(result, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > rule.max_bytes:
            refused.append(
                Violation(
                    HygieneRule.RESULT_TOO_LARGE,
                    f"the result is {size} bytes long (at most {rule.max_bytes})",
                    "/result",
                )
            )
    return refused


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
