"""`python -m fastbatch --info`, the bug-report paste: versions, the CPU and the features used,
the build, and the native libraries the process really loaded."""

from __future__ import annotations

import os
import subprocess
import sys

import fastbatch
from fastbatch import cpu
from fastbatch._build_info import build_info


def info(**env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "fastbatch", "--info"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_info_names_versions_cpu_build_and_loaded_libraries():
    out = info()
    assert out.startswith(f"fastbatch {fastbatch.__version__} at ")
    assert f"cpu: {cpu.model()}" in out
    assert "packages: numpy " in out and "gymnasium " in out
    assert f"MuJoCo envs for mujoco {build_info()['mujoco']}" in out
    assert f"extension: {fastbatch._core.__file__}" in out
    loaded = out.split("native libraries loaded:\n")[1]
    assert "fastbatch_mujoco.so" in loaded and "libmujoco.so." in loaded
    # Every native env family of the entry points, with the ids it owns (MuJoCo's are exact).
    assert "env family mujoco: fastbatch.mujoco (ids Ant-v5, HalfCheetah-v5," in out
    for feature in cpu.DISPATCHED:
        assert f"  {feature}: " in out


def test_info_shows_features_switched_off():
    out = info(FASTBATCH_DISABLE_CPU_FEATURES="all")
    for feature in cpu.DISPATCHED:
        line = next(line for line in out.splitlines() if line.startswith(f"  {feature}: "))
        assert ": used:" not in line
        if feature in cpu.flags():
            assert "switched off (FASTBATCH_DISABLE_CPU_FEATURES=all)" in line
