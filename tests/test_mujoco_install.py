"""How fastbatch finds MuJoCo and its prebuilt MuJoCo envs: mujoco-core alone or the mujoco meta
package, a pre-4.0 mujoco, the version the wheel was built for, the opt-in compile on first use,
and an error that says what to do for each way it can fail."""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mujoco")
from fastbatch import _mujoco_dist
from fastbatch import mujoco as fb_mujoco
from fastbatch._build_info import build_info, package_dir

pytestmark = pytest.mark.no_tsan


class FakeDist:
    """An installed distribution with a version and a mujoco/ folder at `root`."""

    def __init__(self, version: str, root: Path):
        self.version = version
        self._root = root

    def locate_file(self, name):
        return self._root / name


def fake_mujoco_folder(root: Path, version: str, library: bool = True) -> Path:
    folder = root / "mujoco"
    (folder / "include" / "mujoco").mkdir(parents=True)
    if library:
        (folder / "include" / "mujoco" / "mujoco.h").write_text("")
        (folder / f"libmujoco.so.{version}").write_text("")
    return folder


def installed_as(monkeypatch, dists: dict[str, FakeDist]):
    def distribution(name):
        if name in dists:
            return dists[name]
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)


def test_mujoco_core_alone_is_found(monkeypatch, tmp_path):
    fake_mujoco_folder(tmp_path, "4.0.1")
    installed_as(monkeypatch, {"mujoco-core": FakeDist("4.0.1", tmp_path)})
    found = _mujoco_dist.find()
    assert (found.distribution, found.version) == ("mujoco-core", "4.0.1")
    assert found.library == tmp_path / "mujoco" / "libmujoco.so.4.0.1"


def test_the_meta_package_is_read_through_mujoco_core(monkeypatch, tmp_path):
    # mujoco 4.x ships no library of its own: the one found is mujoco-core's.
    fake_mujoco_folder(tmp_path, "4.0.1")
    installed_as(
        monkeypatch,
        {"mujoco": FakeDist("4.0.1", tmp_path), "mujoco-core": FakeDist("4.0.1", tmp_path)},
    )
    assert _mujoco_dist.find().distribution == "mujoco-core"


def test_a_pre_4_mujoco_ships_its_own_library(monkeypatch, tmp_path):
    fake_mujoco_folder(tmp_path, "3.3.7")
    installed_as(monkeypatch, {"mujoco": FakeDist("3.3.7", tmp_path)})
    assert (_mujoco_dist.find().distribution, _mujoco_dist.find().version) == ("mujoco", "3.3.7")


def test_a_meta_package_without_mujoco_core_counts_as_missing(monkeypatch, tmp_path):
    fake_mujoco_folder(tmp_path, "4.0.1", library=False)
    installed_as(monkeypatch, {"mujoco": FakeDist("4.0.1", tmp_path)})
    assert _mujoco_dist.find() is None


def test_a_broken_install_says_what_to_reinstall(monkeypatch, tmp_path):
    fake_mujoco_folder(tmp_path, "4.0.1", library=False)
    installed_as(monkeypatch, {"mujoco-core": FakeDist("4.0.1", tmp_path)})
    with pytest.raises(fb_mujoco.MujocoUnavailableError, match=r"--force-reinstall 'mujoco-core"):
        fb_mujoco.installed()


def test_missing_mujoco_names_the_extra_and_the_pinned_mujoco_core(monkeypatch):
    installed_as(monkeypatch, {})
    with pytest.raises(fb_mujoco.MujocoUnavailableError) as error:
        fb_mujoco.library_path()
    message = str(error.value)
    assert "fastbatch[mujoco]" in message and "not installed" in message
    assert f"mujoco-core=={build_info()['mujoco']}" in message


def test_the_wheel_carries_envs_built_for_the_installed_mujoco():
    """The prebuilt library is what make() loads here: no compiler involved."""
    info = build_info()
    assert info["mujoco"] == fb_mujoco.installed().version
    assert fb_mujoco.library_path() == package_dir() / "fastbatch_mujoco.so"


def test_another_mujoco_version_names_both_versions_and_both_ways_out(monkeypatch, tmp_path):
    fake_mujoco_folder(tmp_path, "9.9.9")
    installed_as(monkeypatch, {"mujoco-core": FakeDist("9.9.9", tmp_path)})
    monkeypatch.delenv("FASTBATCH_MUJOCO_BUILD", raising=False)
    built = build_info()["mujoco"]
    with pytest.raises(fb_mujoco.MujocoUnavailableError) as error:
        fb_mujoco.library_path()
    message = str(error.value)
    assert "mujoco 9.9.9 is installed" in message and f"built for mujoco {built}" in message
    assert f"mujoco-core=={built}" in message and "FASTBATCH_MUJOCO_BUILD=1" in message


def test_a_mujoco_older_than_3_is_refused_by_the_opt_in_compile(monkeypatch, tmp_path):
    fake_mujoco_folder(tmp_path, "2.3.7")
    installed_as(monkeypatch, {"mujoco": FakeDist("2.3.7", tmp_path)})
    monkeypatch.setenv("FASTBATCH_MUJOCO_BUILD", "1")
    with pytest.raises(fb_mujoco.MujocoUnavailableError, match=r"2\.3\.7.*fastbatch\[mujoco\]"):
        fb_mujoco.library_path()


def test_the_opt_in_compile_without_a_compiler_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("FASTBATCH_MUJOCO_BUILD", "1")
    monkeypatch.setenv("PATH", str(tmp_path))  # no c++, no g++
    monkeypatch.delenv("CXX", raising=False)
    with pytest.raises(fb_mujoco.MujocoUnavailableError, match=r"needs a C\+\+ compiler.*g\+\+"):
        fb_mujoco.library_path()


def test_a_failing_compiler_is_reported_with_its_status_never_an_empty_message(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("FASTBATCH_MUJOCO_BUILD", "1")
    monkeypatch.setenv("CXX", "false")
    with pytest.raises(fb_mujoco.MujocoUnavailableError) as error:
        fb_mujoco.library_path()
    message = str(error.value)
    assert "exited with status 1" in message and "(the compiler printed nothing)" in message
    # A compiler that prints: its output comes back.
    loud = tmp_path / "loud-cxx"
    loud.write_text("#!/bin/sh\necho 'error: out of ideas' >&2\nexit 3\n")
    loud.chmod(0o755)
    monkeypatch.setenv("CXX", str(loud))
    with pytest.raises(fb_mujoco.MujocoUnavailableError, match=r"status 3:\nerror: out of ideas"):
        fb_mujoco.library_path()


@pytest.mark.engine
def test_the_opt_in_compile_builds_a_library_for_the_installed_mujoco(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("FASTBATCH_MUJOCO_BUILD", "1")
    path = fb_mujoco.library_path()
    assert path.is_relative_to(tmp_path)
    ctypes.CDLL(str(fb_mujoco.installed().library))
    library = ctypes.CDLL(str(path))
    version = library.fastbatch_mujoco_header_version()
    assert fb_mujoco._version_name(version) == fb_mujoco.installed().version


def test_make_runs_the_prebuilt_envs_with_no_compiler_and_writes_no_cache(tmp_path):
    """As a user without a compiler: PATH holds no compiler, CXX is `false`, the cache empty."""
    code = (
        "import fastbatch, numpy as np\n"
        "env = fastbatch.make('HalfCheetah-v5', 4, seed=0)\n"
        "obs, _ = env.reset(seed=0)\n"
        "env.step(np.zeros((4, 6), np.float32))\n"
        "print(obs.shape)\n"
    )
    env = {
        **os.environ,
        "PATH": str(Path(sys.executable).parent),
        "CXX": "false",
        "CC": "false",
        "XDG_CACHE_HOME": str(tmp_path),
    }
    env.pop("FASTBATCH_MUJOCO_BUILD", None)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(4, 17)"
    assert list(tmp_path.iterdir()) == []


def test_frames_need_no_python_renderer(monkeypatch):
    """mujoco-core alone brings no glfw, which gymnasium's MuJoCo renderer imports: the native
    envs draw themselves (src/cpp/mujoco/frames.h), so make with render_mode="rgb_array" neither
    loads gymnasium's env nor needs its renderer. (Drawing: tests/test_pixels_mujoco.py.)"""
    import gymnasium

    import fastbatch

    def no_glfw(entry_point):
        raise ModuleNotFoundError("No module named 'glfw'")

    monkeypatch.setattr(gymnasium.envs.registration, "load_env_creator", no_glfw)
    env = fastbatch.make("Hopper-v5", 2, seed=0, render_mode="rgb_array", width=32, height=24)
    try:
        assert env.metadata["render_modes"] == ["rgb_array"] and env.render_mode == "rgb_array"
        assert env.metadata["render_fps"] == 125
        env.reset(seed=0)
    finally:
        env.close()
