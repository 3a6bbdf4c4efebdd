"""What the dynamic loader reads in a built library (not a test module): its NEEDED entries,
RUNPATH/RPATH entries and undefined dynamic symbols, from binutils' readelf and nm (present
wherever the tests compile their plugins). test_tf_op.py and test_wheels.py check the prebuilt
libraries with it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

__all__ = ["dynamic_facts"]


def _run(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def dynamic_facts(
    path: Path | str,
) -> tuple[list[str], list[str], list[tuple[str, str | None, bool]]]:
    """(DT_NEEDED names, DT_RUNPATH and DT_RPATH entries, undefined dynamic symbols as (name,
    version or None, weak)) of an ELF shared library."""
    dynamic = _run("readelf", "-d", "-W", str(path))
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+)\]", dynamic)
    paths = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[(.+)\]", dynamic)
    undefined = []
    for line in _run("nm", "-D", "--undefined-only", str(path)).splitlines():
        kind, symbol = line.split()
        name, _, version = symbol.partition("@")
        undefined.append((name, version.lstrip("@") or None, kind in "wv"))
    return needed, paths, undefined
