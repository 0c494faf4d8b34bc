"""The README's main job: the proxy demo, run as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "examples" / "proxy" / "demo.py"


def test_proxy_demo_lets_the_good_call_through_and_keeps_the_bad_one_out() -> None:
    run = subprocess.run(
        [sys.executable, str(DEMO)], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "tools through the proxy: get_weather, validate" in run.stdout
    assert "valid call   -> Paris: 18.5 degrees, cloudy" in run.stdout
    assert "[pattern-mismatch]" in run.stdout
    assert "calls that reached the server: 1" in run.stdout
    assert "sk-live" not in run.stdout + run.stderr
    assert "refused" in run.stderr
