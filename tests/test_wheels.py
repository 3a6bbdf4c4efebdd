"""The release wheels of tools/build_wheels.py, as a user installs them.

Runs where FASTBATCH_WHEELHOUSE names the folder the release build wrote (.ci/run sets it, with
FASTBATCH_REQUIRE_WHEELS=1 so that a missing wheel fails instead of skipping):

- what each wheel holds: which libraries, their NEEDED entries and RUNPATH, no libmujoco or
  TensorFlow copied in, the manylinux tag, the Atari package's GPL licence;
- each wheel installed into a fresh venv and used with no compiler reachable (PATH without one,
  CC and CXX `false`, an empty cache folder), twice: with mujoco-core alone and the newest
  TensorFlow the tf extra allows, then with the mujoco meta package and the oldest.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fastbatch._build_info import build_info
from tests.elf_facts import dynamic_facts

WHEELHOUSE = os.environ.get("FASTBATCH_WHEELHOUSE")
if not WHEELHOUSE:
    if os.environ.get("FASTBATCH_REQUIRE_WHEELS") == "1":
        raise RuntimeError("FASTBATCH_REQUIRE_WHEELS=1 but FASTBATCH_WHEELHOUSE is not set")
    pytest.skip(
        "set FASTBATCH_WHEELHOUSE to tools/build_wheels.py's output folder to test the release "
        "wheels (.ci/run does)",
        allow_module_level=True,
    )

pytestmark = [pytest.mark.no_tsan, pytest.mark.no_sanitizer]
CHECK = Path(__file__).with_name("wheel_user_check.py")


def wheel(prefix: str) -> Path:
    found = sorted(Path(WHEELHOUSE).glob(f"{prefix}-*manylinux*.whl"))
    assert len(found) == 1, f"one repaired {prefix} wheel expected in {WHEELHOUSE}: {found}"
    return found[0]


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for prefix in ("fastbatch", "fastbatch_atari"):
        folder = tmp_path_factory.mktemp(prefix)
        with zipfile.ZipFile(wheel(prefix)) as archive:
            archive.extractall(folder)
        out[prefix] = folder
    return out


def test_the_fastbatch_wheel_holds_its_libraries_and_links_mujoco_and_tensorflow_outside(unpacked):
    root = unpacked["fastbatch"]
    libraries = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.so*"))
    assert [lib for lib in libraries if not lib.startswith("fastbatch/_core.")] == [
        "fastbatch/fastbatch_dm_control.so",
        "fastbatch/fastbatch_gl_shim.so",
        "fastbatch/fastbatch_mujoco.so",
        "fastbatch/fastbatch_osmesa_proc.so",
        "fastbatch/fastbatch_tf_op.so",
    ], libraries
    assert not any("libmujoco" in lib or "tensorflow" in lib or "EGL" in lib for lib in libraries)
    # The shim names the system's Mesa EGL by soname (fastbatch._gl); the wheel carries no Mesa.
    needed, runpath, _ = dynamic_facts(root / "fastbatch" / "fastbatch_gl_shim.so")
    assert "libEGL_mesa.so.0" in needed and runpath == []
    built = (root / "fastbatch" / "_build_info.json").read_text()
    assert f'"mujoco": "{build_info()["mujoco"]}"' in built and '"tf_op": true' in built
    for family in ("fastbatch_mujoco.so", "fastbatch_dm_control.so"):
        needed, runpath, _ = dynamic_facts(root / "fastbatch" / family)
        assert f"libmujoco.so.{build_info()['mujoco']}" in needed
        assert runpath == ["$ORIGIN/../mujoco"]
    needed, runpath, _ = dynamic_facts(root / "fastbatch" / "fastbatch_tf_op.so")
    assert "libtensorflow_framework.so.2" in needed and runpath == []
    tags = (next(root.glob("fastbatch-*.dist-info")) / "WHEEL").read_text()
    assert re.search(r"Tag: cp3\d+-cp3\d+-manylinux_\d+_\d+_x86_64", tags), tags


def test_the_atari_wheel_holds_its_env_library_and_ales_licence(unpacked):
    root = unpacked["fastbatch_atari"]
    libraries = [p.name for p in (root / "fastbatch_atari").glob("*.so")]
    assert libraries, "no env library in the fastbatch-atari wheel"
    metadata = next(root.glob("fastbatch_atari-*.dist-info"))
    assert "GPL-2.0" in (metadata / "METADATA").read_text()
    assert list(metadata.rglob("LICENSE*")), "the GPL licence text is not in the wheel"
    tags = (metadata / "WHEEL").read_text()
    assert re.search(r"Tag: .*manylinux_\d+_\d+_x86_64", tags), tags


def tf_lower_bound(wheel_path: Path) -> str:
    """The oldest TensorFlow the wheel's tf extra allows, e.g. "2.16"."""
    with zipfile.ZipFile(wheel_path) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    match = re.search(r"Requires-Dist: tensorflow>=([\d.]+).*extra == .tf.", metadata)
    assert match, "the tf extra names no lower bound for tensorflow"
    return match.group(1)


def user_venv(folder: Path, *requirements: str) -> Path:
    """A fresh venv with `requirements` pip-installed (from the package index's cache and the
    wheelhouse); its python."""
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    python = folder / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--find-links", WHEELHOUSE, *requirements],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return python


def run_without_a_compiler(python: Path, cache: Path, *checks: str) -> str:
    env = {
        "PATH": str(python.parent),  # the venv's scripts; no cc, c++, g++, gcc or clang
        "HOME": os.environ.get("HOME", "/root"),
        "CC": "false",
        "CXX": "false",
        "XDG_CACHE_HOME": str(cache),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    done = subprocess.run(
        [str(python), str(CHECK), *checks], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return done.stdout


def test_with_mujoco_core_alone_and_the_newest_tensorflow_nothing_compiles(tmp_path):
    python = user_venv(
        tmp_path / "venv",
        f"{wheel('fastbatch')}[tf]",
        str(wheel("fastbatch_atari")),
        f"mujoco-core=={build_info()['mujoco']}",
    )
    out = run_without_a_compiler(
        python, tmp_path / "cache", "classic", "mujoco", "atari", "agents", "train"
    )
    assert "on mujoco-core" in out and "(meta package: [])" in out, out
    assert "no compiler used" in out


def test_with_the_mujoco_package_and_the_oldest_tensorflow_the_op_loads(tmp_path):
    oldest = tf_lower_bound(wheel("fastbatch"))
    python = user_venv(
        tmp_path / "venv",
        f"{wheel('fastbatch')}[tf]",
        f"tensorflow=={oldest}.*",
        f"mujoco=={build_info()['mujoco']}",
    )
    out = run_without_a_compiler(python, tmp_path / "cache", "mujoco", "train")
    assert f"under TensorFlow {oldest}." in out and "(meta package: ['mujoco'])" in out, out
    assert "no compiler used" in out
