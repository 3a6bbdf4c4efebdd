"""How plugins/atari/CMakeLists.txt finds fastbatch's CMake package
(src/cmake/fastbatchConfig.cmake), configure only: -Dfastbatch_DIR first, then the fastbatch that
the building Python imports, then the source tree it sits in (what an isolated
`pip install ./plugins/atari` gets); the status line names the one used, and an error names all
three ways. ALE is a stand-in prefix (an empty ale::ale-lib), so nothing is downloaded or
compiled: the real build is CI's install of the plugin."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fastbatch

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugins" / "atari"
HEADERS = ROOT / "src" / "cpp" / "include"
ABI_VERSION = re.search(
    r"^#define FASTBATCH_ABI_VERSION (\d+)", (HEADERS / "fastbatch" / "abi.h").read_text(), re.M
)[1]


@pytest.fixture(scope="module")
def tools(tmp_path_factory):
    """A stand-in ALE prefix, and a Python that cannot import fastbatch (isolated mode, no site
    packages), as in pip's isolated build environment."""
    if shutil.which("cmake") is None:
        raise AssertionError("cmake is required (it is installed by the test extra)")
    folder = tmp_path_factory.mktemp("atari_build")
    ale = folder / "ale" / "lib" / "cmake" / "ale"
    ale.mkdir(parents=True)
    (ale / "ale-config.cmake").write_text("add_library(ale::ale-lib INTERFACE IMPORTED)\n")
    (ale / "ale-config-version.cmake").write_text(
        "set(PACKAGE_VERSION 0.12.1)\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n"
        "set(PACKAGE_VERSION_EXACT TRUE)\n"
    )
    python = folder / "python-without-fastbatch"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" -I -S "$@"\n')
    python.chmod(0o755)
    return {"ale": folder / "ale", "python": python}


def configure(tools, build: Path, python, *defines: str, source: Path = PLUGIN):
    """cmake's configure of `source` (plugins/atari) into `build`, `python` as the building
    Python and the stand-in ALE; the result, successful or not."""
    command = ["cmake", "-S", str(source), "-B", str(build), f"-DPython_EXECUTABLE={python}"]
    return subprocess.run(
        [*command, f"-DFASTBATCH_ATARI_ALE_PREFIX={tools['ale']}", *defines],
        capture_output=True,
        text=True,
        check=False,
    )


def used(done: subprocess.CompletedProcess) -> str:
    """The configure's "fastbatch from ..." status line, after the prefix."""
    assert done.returncode == 0, done.stdout + done.stderr
    return re.search(r"fastbatch-atari: fastbatch from (.*)", done.stdout)[1]


def test_without_an_importable_fastbatch_the_source_tree_is_used(tools, tmp_path):
    line = used(configure(tools, tmp_path, tools["python"]))
    assert line.startswith("the source tree")
    assert f"{ROOT / 'src' / 'cmake'} (headers {HEADERS}, ABI version {ABI_VERSION})" in line


def test_the_imported_fastbatch_comes_before_the_source_tree_and_is_asked_again(tools, tmp_path):
    assert used(configure(tools, tmp_path, tools["python"])).startswith("the source tree")
    line = used(configure(tools, tmp_path, sys.executable))  # the same build folder
    assert line.startswith(f"the fastbatch that {sys.executable} imports: ")
    assert fastbatch.get_cmake_dir() in line


def test_a_given_fastbatch_dir_comes_first_and_the_installed_layout_is_read(tools, tmp_path):
    # fastbatchConfig.cmake where an installed fastbatch keeps it: headers at <package>/include.
    package = tmp_path / "package"
    (package / "share" / "cmake").mkdir(parents=True)
    shutil.copytree(ROOT / "src" / "cmake", package / "share" / "cmake" / "fastbatch")
    shutil.copytree(HEADERS, package / "include")
    cmake_dir = package / "share" / "cmake" / "fastbatch"
    line = used(
        configure(tools, tmp_path / "build", sys.executable, f"-Dfastbatch_DIR={cmake_dir}")
    )
    assert line == (
        f"-Dfastbatch_DIR: {cmake_dir} (headers {package / 'include'}, ABI version {ABI_VERSION})"
    )


def test_with_no_fastbatch_the_error_names_every_way(tools, tmp_path):
    source = tmp_path / "a" / "b" / "atari"  # no src/cmake two folders up
    source.mkdir(parents=True)
    shutil.copy(PLUGIN / "CMakeLists.txt", source)
    done = configure(tools, tmp_path / "build", tools["python"], source=source)
    assert done.returncode != 0
    message = " ".join(done.stderr.split())
    assert "-Dfastbatch_DIR=<dir>" in message
    assert "pip install --no-build-isolation ./plugins/atari" in message
    assert "build from a fastbatch checkout" in message
