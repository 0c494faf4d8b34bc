"""A scratch Redis server for the shared rate limit tests: Debian's ``redis-server`` (``make
install-test`` installs it), on a free loopback port, with nothing saved to disk."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from auth_support import free_port

_START_SECONDS = 20.0


@dataclass
class RedisServer:
    """A running ``redis-server``: :attr:`url` reaches it; :meth:`stop` and :meth:`start`
    take it down and bring it back on the same port (what a replica sees of an outage)."""

    port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Where the proxies find it."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server and wait until it answers PING."""
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail(
                "redis-server is not installed (Debian's redis-server): run make install-test"
            )
        self.process = subprocess.Popen(
            [
                binary,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "no",
                "--dir", str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + _START_SECONDS
        while not self.answers():
            assert self.process.poll() is None, "redis-server exited at start-up"
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)

    def freeze(self) -> None:
        """Stop the server's process without ending it (SIGSTOP): connections are still
        accepted, by the kernel, and never answered; what a hung Redis looks like."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """Let a frozen server go on (SIGCONT)."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Stop the server (its data goes with it), frozen or not."""
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)  # a stopped process acts on no SIGTERM
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None

    def answers(self) -> bool:
        """Whether it answers PING now."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    """A Redis server running until the block ends (always stopped)."""
    with tempfile.TemporaryDirectory(prefix="strictmcp-redis-") as directory:
        server = RedisServer(free_port(), Path(directory))
        try:
            server.start()
            yield server
        finally:
            server.stop()
