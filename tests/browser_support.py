"""Debian's headless Chromium for the tests of strictmcp's HTML reports (`make install-test`
installs it; a missing one fails the test), and a PNG reader for its screenshots."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PNG = b"\x89PNG\r\n\x1a\n"


def chromium() -> str:
    """The browser's command; fails the test when it is not installed."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("chromium is not installed: `make install-test` installs it")
    return found


def browser(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium once with its own ``profile``, offline but for loopback."""
    return subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


_MEASURE = """<!DOCTYPE html><html><body><pre id="measured">pending</pre>
<iframe id="page" src="PAGE" width="WIDTH" height="HEIGHT" style="border:0"></iframe>
<script>
document.getElementById("page").onload = function () {
  var found = [];
  this.contentDocument.querySelectorAll("SELECTOR").forEach(function (element) {
    var box = element.getBoundingClientRect();
    found.push({id: element.id, x: box.x, y: box.y, width: box.width, height: box.height,
                shapes: element.querySelectorAll("rect").length});
  });
  document.getElementById("measured").textContent = "MEASURED" + JSON.stringify(found);
};
</script></body></html>
"""


def measure(page: Path, selector: str, profile: Path, size: tuple[int, int]) -> list[Any]:
    """Where each element of ``page`` matching ``selector`` is drawn, as the browser laid it
    out in a window of ``size``: ``{id, x, y, width, height, shapes}`` (``shapes``: its
    ``rect`` elements). The page itself runs no script (its CSP forbids it): a second page
    beside it loads it in a frame and measures it from outside."""
    harness = page.with_name(f"measure-{page.stem}.html")
    harness.write_text(
        _MEASURE.replace("PAGE", page.name)
        .replace("WIDTH", str(size[0]))
        .replace("HEIGHT", str(size[1]))
        .replace("SELECTOR", selector),
        encoding="utf-8",
    )
    dom = browser(
        profile,
        "--allow-file-access-from-files",
        "--virtual-time-budget=10000",
        f"--window-size={size[0] + 40},{size[1] + 80}",
        "--dump-dom",
        harness.as_uri(),
    ).stdout
    marker = dom.find("MEASURED")
    assert marker >= 0, dom[:500]
    found, _ = json.JSONDecoder().raw_decode(dom, marker + len("MEASURED"))
    assert isinstance(found, list)
    return found


@dataclass(frozen=True)
class Image:
    """A decoded PNG: ``rows[y][x]`` is the pixel's (red, green, blue)."""

    width: int
    height: int
    rows: list[list[tuple[int, int, int]]]


def read_png(data: bytes) -> Image:
    """Decode an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's screenshots are)."""
    assert data.startswith(PNG)
    at, idat, header = len(PNG), b"", b""
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        at += 12 + length
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert (depth, interlace) == (8, 0), (depth, interlace)
    assert colour in (2, 6), colour
    size = 4 if colour == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * size
    previous = bytearray(stride)
    rows = []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - size] if i >= size else 0
            up = previous[i]
            corner = previous[i - size] if i >= size else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                guess = left + up - corner
                near = min(
                    (abs(guess - left), 0, left),
                    (abs(guess - up), 1, up),
                    (abs(guess - corner), 2, corner),
                )
                line[i] = (line[i] + near[2]) & 0xFF
        rows.append([(line[x], line[x + 1], line[x + 2]) for x in range(0, stride, size)])
        previous = line
    return Image(width, height, rows)
