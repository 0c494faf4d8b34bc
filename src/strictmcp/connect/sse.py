"""Server-sent events, as streamable HTTP carries JSON-RPC messages: writing and bounded reading."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

_FIELD_OVERHEAD = 1024
"""Room for an event's field names and line endings beside its data."""
_RETRY_DIGITS = 9
"""A reconnection delay longer than this many digits of milliseconds (over 11 days) is not
one: ignored, rather than converted at any length (Python refuses over 4300 digits)."""


def event(data: bytes, event_id: str | None = None) -> bytes:
    """One ``message`` event carrying ``data`` (a JSON text, without line breaks)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: message\ndata: ".encode() + data.rstrip(b"\r\n") + b"\n\n"


def priming(event_id: str, retry_milliseconds: int) -> bytes:
    """The event that opens a stream the client may resume: an id, no data, and how long to
    wait before reconnecting."""
    return f"id: {event_id}\nretry: {retry_milliseconds}\ndata: \n\n".encode()


@dataclass
class Event:
    """One event read from a stream."""

    data: bytes
    name: str = "message"
    event_id: str | None = None


class EventTooLarge(ValueError):
    """An event's data is over the reader's limit."""


class EventReader:
    """Bytes of an event stream as they arrive, cut into events, never holding more than one
    event's worth (``max_size`` of data); comments are skipped. ``last_id`` and ``retry``
    are what a client resuming the stream needs: the last event id given (an event without
    data gives one too: a priming event), and the last reconnection delay, in milliseconds."""

    def __init__(self, max_size: int) -> None:
        self._max = max_size + _FIELD_OVERHEAD
        self._buffer = bytearray()
        self._data: list[bytes] = []
        self._size = 0
        self._name = "message"
        self._id: str | None = None
        self.retry: int | None = None

    @property
    def last_id(self) -> str | None:
        """The last event id the stream gave."""
        return self._id

    def resumed(self) -> EventReader:
        """A reader for the stream that resumes this one: what was cut off is dropped, the
        last event id and the delay are kept."""
        reader = EventReader(self._max - _FIELD_OVERHEAD)
        reader._id, reader.retry = self._id, self.retry
        return reader

    def feed(self, chunk: bytes) -> Iterator[Event]:
        """The events completed by ``chunk``; :class:`EventTooLarge` past the limit."""
        self._buffer += chunk
        while True:
            line, found = self._cut()
            if not found:
                if len(self._buffer) > self._max:
                    raise EventTooLarge("an event is larger than the limit")
                return
            if not line:
                if self._data:
                    yield Event(b"\n".join(self._data), self._name, self._id)
                self._data, self._size, self._name = [], 0, "message"
                continue
            name, _, value = line.partition(b":")
            value = value.removeprefix(b" ")
            if name == b"data":
                self._size += len(value) + 1
                if self._size > self._max:
                    raise EventTooLarge("an event is larger than the limit")
                self._data.append(value)
            elif name == b"event":
                self._name = value.decode("utf-8", "replace")
            elif name == b"id":
                self._id = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit() and len(value) <= _RETRY_DIGITS:
                self.retry = int(value)

    def _cut(self) -> tuple[bytes, bool]:
        """The next whole line (any of the three line endings), and whether there was one."""
        buffer = self._buffer
        ends = [i for i in (buffer.find(b"\n"), buffer.find(b"\r")) if i >= 0]
        if not ends:
            return b"", False
        index = min(ends)
        if buffer[index] == 0x0D and index + 1 == len(buffer):
            return b"", False  # a CR may be the first half of a CRLF
        crlf = buffer[index] == 0x0D and buffer[index + 1] == 0x0A
        line = bytes(buffer[:index])
        del buffer[: index + (2 if crlf else 1)]
        return line, True
