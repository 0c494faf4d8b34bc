"""What the example servers share: their command line, ROOT [--http PORT] [--audit], and
their policy."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from strictmcp.integrations import AUDIT_LOGGER
from strictmcp.policy import Mode, Policy


class Arguments(argparse.Namespace):
    """What the example servers are told."""

    root: Path
    http: int | None
    audit: bool

    @property
    def mode(self) -> Mode:
        """strictmcp's mode: audit logs findings and refuses nothing."""
        return "audit" if self.audit else "enforce"


def parse_arguments(doc: str) -> Arguments:
    """Parse the command line; with ``STRICTMCP_AUDIT_LOG=FILE`` findings also go to FILE."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("root", type=Path, help="the directory read_file may read")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve HTTP on 127.0.0.1:PORT")
    parser.add_argument("--audit", action="store_true", help="log findings, refuse nothing")
    arguments = parser.parse_args(namespace=Arguments())
    arguments.root = arguments.root.resolve()
    audit_log = os.environ.get("STRICTMCP_AUDIT_LOG")
    if audit_log:
        handler = logging.FileHandler(audit_log, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(message)s"))
        logging.getLogger(AUDIT_LOGGER).addHandler(handler)
    return arguments


def read_policy(root: Path) -> Policy:
    """The examples' policy: ``read_file`` reads only existing files under ``root``."""
    read_guard = {
        "tool": "read_file",
        "argument": "/path",
        "kind": "path",
        "roots": [str(root)],
        # An existing file: a missing one is refused here, before open() names it in an error.
        "entry": "file",
        "must_exist": True,
    }
    return Policy.from_dict({"guard": [read_guard]})
