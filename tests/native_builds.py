"""The tests' C++ builds: test plugins compiled against the installed headers, and the README's
example folder built out of tree with fastbatch's CMake package.

A test plugin's library is kept in build/test-plugins under the hash of its preprocessed source
(every header it includes, as the compiler sees them), its flags and the compiler: the same
plugin is compiled once for every test that asks for it, and once for CI's three pytest passes
(plain, ThreadSanitizer, AddressSanitizer: the plugins are the same objects in each), while any
change to a source or a header compiles it again. Failed compiles are kept too (the tests of
compile-time mistakes read their messages).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import fastbatch

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / "test-plugins"
EXAMPLE = ROOT / "examples" / "native_env_plugin"


def compile_plugin(
    source: Path, out: Path, *flags: str, include: str | None = None
) -> subprocess.CompletedProcess:
    """`source` compiled into the shared library `out` (-O1, C++17, `flags`, the installed
    headers or `include`); the compiler's result, successful or not (`out` only on success)."""
    compiler = shutil.which("c++") or shutil.which("g++")
    options = ["-std=c++17", "-O1", "-fPIC", *flags, f"-I{include or fastbatch.get_include()}"]
    key = _key(compiler, options, source)
    library, outcome = CACHE / f"{key}.so", CACHE / f"{key}.json"
    if not outcome.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
            built = Path(scratch) / "lib.so"
            done = subprocess.run(
                [compiler, "-shared", *options, str(source), "-o", str(built)],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode == 0:
                os.replace(built, library)
            record = {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
            (Path(scratch) / "outcome.json").write_text(json.dumps(record))
            os.replace(Path(scratch) / "outcome.json", outcome)  # last: the library is in place
    record = json.loads(outcome.read_text())
    if record["returncode"] == 0:  # a copy renamed into place: a loaded `out` stays intact
        shutil.copyfile(library, f"{out}.part")
        os.replace(f"{out}.part", out)
    args = [compiler, "-shared", *options, str(source), "-o", str(out)]
    return subprocess.CompletedProcess(
        args, record["returncode"], record["stdout"], record["stderr"]
    )


def built_plugin(source: Path, out: Path, *flags: str, include: str | None = None) -> Path:
    """compile_plugin, asserting that it compiled; returns `out`. An `out` that exists is taken
    as built (a fixture's folder names each variant once; a loaded library is left alone)."""
    if out.exists():
        return out
    done = compile_plugin(source, out, *flags, include=include)
    assert done.returncode == 0, done.stderr
    return out


def _key(compiler: str, options: list[str], source: Path) -> str:
    # The preprocessed text holds the source and every header it includes; a source that does
    # not preprocess gets a key of its own text (its compile fails the same way each time).
    expanded = subprocess.run(
        [compiler, "-E", *options, str(source)], capture_output=True, check=False
    )
    digest = hashlib.sha256()
    real = os.path.realpath(compiler)
    for part in (real, str(os.stat(real).st_mtime_ns), *options):
        digest.update(part.encode() + b"\0")
    digest.update(expanded.stdout if expanded.returncode == 0 else source.read_bytes())
    return digest.hexdigest()[:32]


def mistake_builder(tmp_path_factory, source: Path):
    """build(mistake=0) -> the path of `source` compiled with -DMISTAKE=mistake (each variant
    once), for test plugins that hold an author's mistakes behind that macro."""
    folder = tmp_path_factory.mktemp(source.stem)

    def build(mistake: int = 0) -> Path:
        return built_plugin(
            source, folder / f"lib{source.stem}{mistake}.so", f"-DMISTAKE={mistake}"
        )

    return build


def build_example(folder: Path) -> dict[str, Path | str]:
    """examples/native_env_plugin copied into the empty `folder` and built there as README.md
    says (cmake with fastbatch's package; verbose, so the compile flags can be read back):
    each library by its target name, and the build's output under "log"."""
    if shutil.which("cmake") is None:
        raise AssertionError("cmake is required (it is installed by the test extra)")
    shutil.copytree(EXAMPLE, folder / "src")
    cmake_dir = subprocess.run(
        [sys.executable, "-m", "fastbatch", "--cmakedir"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    log = ""
    for command in (
        ["cmake", "-S", "src", "-B", "build", f"-Dfastbatch_DIR={cmake_dir}"],
        ["cmake", "--build", "build", "--verbose"],
    ):
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
        log = done.stdout
    built: dict[str, Path | str] = {
        p.name.split(".")[0][3:]: p for p in (folder / "build").glob("lib*.so")
    }
    built["log"] = log
    return built
