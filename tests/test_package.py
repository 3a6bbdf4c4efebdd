"""The package itself: its env list, gymnasium registration, errors, headers and version, and
that importing it never imports TensorFlow."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest

import fastbatch


def test_list_envs_has_the_classic_control_envs():
    # In a fresh interpreter: other tests register plugins in this one.
    code = "import fastbatch; print(' '.join(fastbatch.list_envs()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        "Acrobot-v1",
        "CartPole-v1",
        "CartPoleNoVel-v1",
        "MountainCar-v0",
        "MountainCarContinuous-v0",
        "Pendulum-v1",
        "PendulumNoVel-v1",
    ]


def test_import_does_not_import_tensorflow():
    code = "import sys, fastbatch; fastbatch.make('CartPole-v1', 2); print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_public_headers_are_installed():
    include = Path(fastbatch.get_include())
    assert (include / "fastbatch" / "env.h").is_file()
    assert (include / "fastbatch" / "abi.h").is_file()


def test_make_vec_through_the_gymnasium_registry():
    env = gymnasium.make_vec(
        "fastbatch/CartPole-v1", num_envs=4, vectorization_mode="vector_entry_point"
    )
    assert isinstance(env, fastbatch.NativeVectorEnv)
    assert env.num_envs == 4
    obs, _ = env.reset(seed=1)
    assert obs.shape == (4, 4)


def test_unknown_env_error_is_a_value_error():
    assert issubclass(fastbatch.UnknownEnvError, ValueError)


def test_version_is_the_installed_distributions():
    assert fastbatch.__version__ == importlib.metadata.version("fastbatch")


def test_compiling_on_first_use_names_what_failed(tmp_path, monkeypatch):
    from fastbatch._compile import compile_shared

    monkeypatch.setenv("CXX", str(tmp_path / "no-compiler"))
    with pytest.raises(RuntimeError, match="building a test: cannot run the compiler"):
        compile_shared(tmp_path / "out.so", ["a.cc"], "a test")
    monkeypatch.delenv("CXX")
    source = tmp_path / "bad.cc"
    source.write_text("this is not C++\n")
    with pytest.raises(
        RuntimeError, match=r"(?s)compiling a test failed: .* exited with status 1:\n.*error"
    ):
        compile_shared(tmp_path / "out.so", [str(source)], "a test")
    assert list(tmp_path.glob("*.so")) == []  # no partial file left behind


def test_aligned_empty_is_aligned_and_refuses_a_negative_dimension():
    import numpy as np

    for shape in (0, (3,), (2, 5), (0, 7)):
        array = fastbatch.aligned_empty(shape, np.float64)
        assert array.ctypes.data % fastbatch.ALIGNMENT == 0 and array.flags.c_contiguous
    for shape in ((-1,), (-1, 3), -2):
        with pytest.raises(ValueError, match="negative dimensions"):
            fastbatch.aligned_empty(shape)
