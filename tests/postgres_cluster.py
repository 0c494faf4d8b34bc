"""A scratch PostgreSQL cluster for the tests: Debian's server binaries (``make install-test``
installs them), a new data directory, listening on a Unix socket only (nothing on the
network), owned by an unprivileged user: ``initdb`` refuses root, and CI runs as root.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

#: The system user the Debian package creates, which owns the cluster when we are root.
OWNER = "postgres"
PORT = 5432  # names the socket file in the cluster's own directory; no TCP port is opened


@dataclass(frozen=True)
class Cluster:
    """A running scratch cluster: ``dsn`` connects as its superuser over the socket."""

    dsn: str
    major: int
    directory: Path


def _bindir() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major_of)
    if not found:
        pytest.fail(
            "PostgreSQL's server is not installed (Debian's postgresql package): run "
            "`make install-test`"
        )
    return Path(found[-1]).parent


def _major_of(initdb: str) -> int:
    return int(Path(initdb).parent.parent.name)


@contextmanager
def scratch_cluster() -> Iterator[Cluster]:
    """Start a cluster, yield it, stop it and remove it, whatever happened in between."""
    bindir = _bindir()
    as_owner: list[str] = []
    directory = Path(tempfile.mkdtemp(prefix="strictmcp-pg-"))
    if os.geteuid() == 0:
        shutil.chown(directory, OWNER, OWNER)
        as_owner = ["runuser", "-u", OWNER, "--"]
    data, log = directory / "data", directory / "server.log"

    def run(*command: str) -> None:
        done = subprocess.run(
            [*as_owner, *command], capture_output=True, text=True, timeout=120, check=False
        )
        if done.returncode != 0:
            pytest.fail(f"{command[0]} failed: {done.stderr or done.stdout}")

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
        options = f"-c listen_addresses='' -k {directory} -p {PORT} -c fsync=off"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-o", options, "start")
        dsn = f"host={directory} port={PORT} user=postgres dbname=postgres"
        yield Cluster(dsn, int(bindir.parent.name), directory)
    finally:
        subprocess.run(
            [*as_owner, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
            timeout=60,
            check=False,
        )
        shutil.rmtree(directory, ignore_errors=True)
