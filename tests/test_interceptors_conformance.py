"""The MCP interceptors extension's behaviour fixtures (``relaybleed-*``,
``same-origin-writeback-allowed``, ``no-prior-read-allowed``, ``session-isolation``,
``redaction-*``), replayed through a real ``strictmcp gateway`` by tests/interceptors_adapter.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from interceptors_adapter import FIXTURES, replay

NAMES = sorted(path.name for path in FIXTURES.glob("*.json"))


def test_every_behaviour_fixture_is_here() -> None:
    kinds = {name.split("-")[0] for name in NAMES}
    assert kinds == {"no", "redaction", "relaybleed", "same", "session"}
    assert len(NAMES) == 10


@pytest.mark.parametrize("name", NAMES)
def test_behaviour_fixture(name: str, tmp_path: Path) -> None:
    fixture: dict[str, Any] = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    assert fixture["kind"] == "behavior"

    async def run() -> list[str]:
        with anyio.fail_after(120):
            return await replay(fixture, tmp_path)

    failures = anyio.run(run)
    assert failures == [], f"{fixture['id']} [{fixture['requirement']}]: {failures}"
