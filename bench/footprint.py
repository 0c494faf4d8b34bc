"""Install footprint: what ``pip install strictmcp`` puts in a fresh environment.

Run ``python bench/footprint.py [--extras all] [--source DIR] [--keep DIR]`` (about half a
minute from a warm pip cache). It builds the wheel of this checkout, or of the checkout at
``--source`` (another commit's, for a before and after), with ``pip wheel --no-deps``, makes a
fresh venv
with this interpreter, installs the wheel (with ``--extras``) there, and reports:

- distributions: every distribution installed, strictmcp included, pip and setuptools not
  (the venv brings those itself);
- their size: the files each one's ``RECORD`` lists, on disk (``.pyc`` written at install
  included);
- site-packages: everything under it, pip and setuptools included.

With ``--keep DIR`` the venv is made at DIR and kept: ``python bench/startup.py`` run with its
interpreter times that installation (docs/benchmarks.md, "Install footprint").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_REPORT = """
import importlib.metadata as metadata, json, os, sys, sysconfig
site = sysconfig.get_paths()["purelib"]
rows = []
for dist in metadata.distributions(path=[site]):
    name = dist.metadata["Name"]
    size = 0
    for file in dist.files or ():
        path = file.locate()
        if os.path.isfile(path):
            size += os.path.getsize(path)
    rows.append((name, size))
total = 0
for folder, _, names in os.walk(site):
    total += sum(os.path.getsize(os.path.join(folder, n)) for n in names
                 if not os.path.islink(os.path.join(folder, n)))
print(json.dumps({"distributions": rows, "site_packages": total}))
"""
_BUNDLED = {"pip", "setuptools"}


@dataclass(frozen=True)
class Footprint:
    """What one installation holds."""

    distributions: list[tuple[str, int]]
    """Each distribution but pip and setuptools, with the bytes of its files."""
    site_packages: int
    """The bytes under site-packages, pip and setuptools included."""


def measure(source: Path, extras: str, venv: Path) -> Footprint:
    """Build ``source``'s wheel, install it with ``extras`` into the fresh ``venv``, measure."""
    with tempfile.TemporaryDirectory() as wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", wheels],
            check=True,
        )
        (wheel,) = Path(wheels).glob("strictmcp-*.whl")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        target = f"{wheel}[{extras}]" if extras else str(wheel)
        subprocess.run([str(python), "-m", "pip", "install", "-q", target], check=True)
    found = json.loads(
        subprocess.run(
            [str(python), "-c", _REPORT], check=True, capture_output=True, text=True
        ).stdout
    )
    rows = [(name, size) for name, size in found["distributions"] if name.lower() not in _BUNDLED]
    return Footprint(sorted(rows, key=lambda row: -row[1]), found["site_packages"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extras", default="", help="extras to install, e.g. all")
    parser.add_argument("--source", metavar="DIR", default=str(ROOT), help="the checkout")
    parser.add_argument("--keep", metavar="DIR", help="make the venv at DIR and keep it")
    args = parser.parse_args()
    source = Path(args.source)
    if args.keep:
        found = measure(source, args.extras, Path(args.keep))
    else:
        with tempfile.TemporaryDirectory() as scratch:
            found = measure(source, args.extras, Path(scratch) / "venv")
    mb = 1024 * 1024
    print(f"strictmcp{'[' + args.extras + ']' if args.extras else ''} from {source}, fresh venv:")
    print(f"  distributions (pip and setuptools excluded): {len(found.distributions)}")
    print(f"  their size: {sum(size for _, size in found.distributions) / mb:.1f} MB")
    print(f"  site-packages: {found.site_packages / mb:.1f} MB")
    for name, size in found.distributions:
        print(f"    {name:28} {size / mb:6.1f} MB")


if __name__ == "__main__":
    main()
