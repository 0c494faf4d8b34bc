"""What authentication and authorization cost the HTTP proxy per call.

Run ``python bench/proxy_auth.py`` (``--quick`` for a smoke run, ``--check`` to exit 1 when
the target fails). Two HTTP proxies run side by side, each in front of its own
bench/echo_server.py: one open, one with an ``[auth]`` section (keys from a local JWKS file,
a token this script signs) and two ``[[access]]`` rules. Each gets one session, then rounds
of sequential ``tools/call`` requests through a keep-alive client, the two proxies taking
turns (the order alternating round by round). The figure is the CPU time (user + system, from
``/proc``) each proxy process spent per call: the authenticated proxy verifies the same
token on every request, which after the first is a hash and a cache hit, then checks the
access rules. Target: at most 10 % more CPU per call than the open proxy.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from engine import VALID_INSTANCE

HERE = Path(__file__).resolve().parent
TARGET = 1.10
_ISSUER = "https://issuer.bench.example"
_ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert isinstance(port, int)
        return port


class Proxy:
    """``strictmcp proxy --listen`` with ``policy`` (None: open), and one session in it."""

    def __init__(self, policy: str | None, port: int, token: str | None, work: Path) -> None:
        self.url = f"http://127.0.0.1:{port}/mcp"
        args = [sys.executable, "-m", "strictmcp.proxy", "--listen", f"127.0.0.1:{port}"]
        if policy is not None:
            path = work / f"policy-{port}.toml"
            path.write_text(policy, encoding="utf-8")
            args += ["--policy", str(path)]
        server = [sys.executable, str(HERE / "echo_server.py")]
        self.process = subprocess.Popen(
            [*args, "--", *server], stderr=subprocess.PIPE, text=True, cwd=HERE
        )
        assert self.process.stderr is not None
        assert "listening on" in self.process.stderr.readline()
        self.headers = dict(_ACCEPT)
        if token is not None:
            self.headers["authorization"] = f"Bearer {token}"
        self.client = httpx2.Client(headers=self.headers, timeout=30)
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }
        answer = self.client.post(self.url, json=_request(0, "initialize", init))
        assert answer.status_code == 200, answer.text
        self.client.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        self.client.headers["mcp-protocol-version"] = "2025-06-18"
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert self.client.post(self.url, json=note).status_code == 202
        listed = self.client.post(self.url, json=_request(1, "tools/list", {}))
        assert "create_issue" in listed.text

    def calls(self, n: int) -> float:
        """CPU seconds per call over ``n`` sequential calls."""
        before = self.cpu()
        params = {"name": "create_issue", "arguments": VALID_INSTANCE}
        for i in range(n):
            answer = self.client.post(self.url, json=_request(10 + i, "tools/call", params))
            assert answer.status_code == 200
            assert '"isError":false' in answer.text.replace(" ", "")
        return (self.cpu() - before) / n

    def cpu(self) -> float:
        stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(timeout=10)


def _request(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def setup(work: Path) -> tuple[str, str, int]:
    """The authenticated proxy's policy, a token it accepts, and its port."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    (work / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1"}]}))
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    claims = {
        "iss": _ISSUER,
        "aud": resource,
        "sub": "bench",
        "client_id": "bench",
        "scope": "mcp:tools",
        "exp": int(time.time()) + 3600,
    }
    token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
    policy = "\n".join(
        [
            "[auth]",
            f'issuer = "{_ISSUER}"',
            f'resource = "{resource}"',
            f'jwks_file = "{work / "jwks.json"}"',
            'scopes = ["mcp:tools"]',
            "[[access]]",
            'tools = ["create_*"]',
            'scopes = ["mcp:tools"]',
            "[[access]]",
            'tools = ["*"]',
            'groups = ["ops"]',
        ]
    )
    return policy, token, port


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target fails")
    options = parser.parse_args(argv)
    rounds, calls = (3, 50) if options.quick else (15, 200)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        policy, token, port = setup(work)
        open_proxy = Proxy(None, free_port(), None, work)
        guarded = Proxy(policy, port, token, work)
        try:
            open_proxy.calls(calls)  # warm up both
            guarded.calls(calls)
            plain: list[float] = []
            authed: list[float] = []
            for index in range(rounds):
                pair = [(open_proxy, plain), (guarded, authed)]
                for proxy, into in pair if index % 2 == 0 else reversed(pair):
                    into.append(proxy.calls(calls))
        finally:
            open_proxy.close()
            guarded.close()
    ratios = sorted(a / p for a, p in zip(authed, plain, strict=True) if p > 0)
    ratio = statistics.median(ratios)
    print(f"open proxy          {statistics.median(plain) * 1e6:8.0f} us CPU per call")
    print(f"auth + access rules {statistics.median(authed) * 1e6:8.0f} us CPU per call")
    print(f"ratio (median of rounds) {ratio:.3f}; target <= {TARGET:.2f}")
    return 1 if options.check and ratio > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
