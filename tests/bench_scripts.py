"""Loading and running bench/ scripts in tests. bench/ is not a package: its scripts import their
helpers (`_harness`, `_published`) by those names from their own folder, so the helpers are
loaded first, once, under those names."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # registered before it runs, as dataclasses need
    spec.loader.exec_module(module)
    return module


def load_bench_script(script: str) -> ModuleType:
    """bench/<script>.py as the module ``bench_<script>`` (with the helpers loaded first)."""
    for helper in sorted(BENCH.glob("_*.py")):
        if helper.stem not in sys.modules:
            _load(helper.stem, helper)
    return _load(f"bench_{script}", BENCH / f"{script}.py")


def run_bench_script(script: str, json_path: Path, *args: str) -> dict:
    """``python bench/<script>.py *args --json json_path`` from the project root, as a user runs
    it (a short round: `args` set the sizes and budget); asserts it exits 0 and returns its JSON
    (``meta`` and ``results``)."""
    done = subprocess.run(
        [sys.executable, f"bench/{script}.py", *args, "--json", str(json_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=BENCH.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(json_path.read_text())
