"""Compiling a shared library on first use into fastbatch's cache (the MuJoCo envs, the
TensorFlow rollout op): one rule for finding the compiler and publishing the result."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["compile_shared", "package_version"]


def package_version() -> str:
    """fastbatch's installed version (pyproject.toml is the one place it is written), or
    "0+unknown" in a source tree that was never installed. Part of every cache key."""
    from importlib.metadata import PackageNotFoundError, version  # ~30 ms: on first use only

    try:
        return version("fastbatch")
    except PackageNotFoundError:
        return "0+unknown"


def compile_shared(target: Path, flags: list[str], what: str) -> Path:
    """Builds ``target`` (a .so) with ``c++ -std=c++17 -O2 -shared -fPIC <flags> -o target``
    unless it exists; returns it. ``flags`` hold the sources and every other option. Raises
    RuntimeError naming ``what`` when there is no compiler or compiling fails (with its
    message). Concurrent builders agree on one file: each writes a temporary file and renames
    it into place."""
    if target.exists():
        return target
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if compiler is None:
        raise RuntimeError(
            f"building {what} needs a C++ compiler, and none was found (no CXX set, no c++ or "
            f"g++ on PATH): install one (e.g. apt-get install g++) or set CXX to its path"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, suffix=".so", delete=False) as tmp:
        partial = Path(tmp.name)
    cmd = [compiler, "-std=c++17", "-O2", "-shared", "-fPIC", *flags, "-o", str(partial)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as exc:  # CXX names nothing runnable
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"building {what}: cannot run the compiler {compiler!r}: {exc}") from exc
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        output = (done.stdout + done.stderr).strip()[-3000:]
        if not output:
            output = "(the compiler printed nothing)"
        raise RuntimeError(
            f"compiling {what} failed: {compiler} exited with status {done.returncode}:\n{output}"
        )
    os.replace(partial, target)
    return target
