"""An older official client through ``strictmcp proxy --listen``: the Python SDK 1.9, which
speaks 2025-03-26, installed in its own virtual environment by ``make install-test``
(``.venv-mcp1``). Before 2025-11-25 an answer stream has no priming event; that client reads
one's empty ``data`` as a message and logs a parse error with a traceback for every request.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_proxy_http import FIXTURES, Process

ROOT = Path(__file__).resolve().parent.parent
OLD_PYTHON = ROOT / ".venv-mcp1" / "bin" / "python"
CLIENT = Path(__file__).resolve().parent / "old_client" / "client_1x.py"


def test_sdk_1_client_through_the_http_proxy_sees_no_parse_error(tmp_path: Path) -> None:
    assert OLD_PYTHON.exists(), "run `make install-test`: it makes .venv-mcp1 with mcp 1.9.4"
    version = subprocess.run(
        [str(OLD_PYTHON), "-c", "import importlib.metadata as m; print(m.version('mcp'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version.startswith("1."), version
    server = [sys.executable, str(FIXTURES / "sdk_server.py"), str(tmp_path / "calls")]
    args = [sys.executable, "-m", "strictmcp.proxy", "--listen", "127.0.0.1:0", "--", *server]
    proxy = Process(args, tmp_path, "stderr")
    try:
        url = proxy.wait_for("listening on").rsplit(" ", 1)[1]
        client = subprocess.run(
            [str(OLD_PYTHON), str(CLIENT), url],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        proxy.stop()
    assert client.returncode == 0, client.stderr[-3000:]
    got = json.loads(client.stdout.strip().splitlines()[-1])
    assert got["version"] == "2025-03-26"
    assert "echo" in got["tools"]
    assert "validate" in got["tools"]
    assert got["good"] == ["hello"]
    assert got["bad"] is True
    for sign in ("Traceback", "Error parsing", "JSONDecodeError", "ValidationError"):
        assert sign not in client.stderr, client.stderr[-3000:]
    assert "Traceback" not in proxy.output()
    # Only the valid call reached the server.
    calls = [json.loads(line) for line in (tmp_path / "calls").read_text().splitlines()]
    assert [call["name"] for call in calls] == ["echo"]
