"""docs/architecture.md maps tests/ and bench/: every file there (a folder counts as one entry,
named with a trailing slash) is named exactly once in the first column of its table, and every
name there exists, so the map cannot go stale by an added or removed file."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
TABLES = {"tests": "## Tests", "bench": "## Benchmarks and measurements"}
SKIP = {"__pycache__", ".pytest_cache"}
# tests/<package>/ mirrors fastbatch/<package>/: the folder and each of its files are named.
MIRRORED = {"process", "native", "agents"}


def _first_column_names(heading: str) -> list[str]:
    text = DOC.read_text()
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    names = []
    for line in text[start:end].splitlines():
        cells = line.split("|")
        if line.startswith("| ") and not set(cells[1].strip()) <= set("-"):
            names += re.findall(r"`([^`]+)`", cells[1])
    return names


def _entries(folder: str) -> list[str]:
    """The folder's entries that git tracks or would track (outputs it ignores, such as
    bench/results/, are no part of the map)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", folder],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    entries = set()
    for parts in (Path(p).relative_to(folder).parts for p in listed):
        if len(parts) == 1:
            entries.add(parts[0])
        elif parts[0] in MIRRORED:  # a package of tests: the folder and each of its files
            entries.add(parts[0] + "/")
            if parts[-1] != "__init__.py":
                entries.add("/".join(parts))
        else:  # any other folder (plugins, a fake package) is one entry
            entries.add(parts[0] + "/")
    return sorted(entries - SKIP)


@pytest.mark.parametrize("folder", list(TABLES))
def test_every_file_is_named_exactly_once(folder):
    prefix = "bench/" if folder == "bench" else ""
    named = [n.removeprefix(prefix) for n in _first_column_names(TABLES[folder])]
    named = [n for n in named if not n.startswith("src/")]  # another folder's row (C++ tests)
    entries = _entries(folder)
    missing = [e for e in entries if e not in named]
    repeated = sorted({n for n in named if named.count(n) > 1})
    stale = [n for n in named if n not in entries]
    assert not missing, f"{folder}/ entries not in docs/architecture.md's table: {missing}"
    assert not repeated, f"named more than once: {repeated}"
    assert not stale, f"named in docs/architecture.md but not in {folder}/: {stale}"
