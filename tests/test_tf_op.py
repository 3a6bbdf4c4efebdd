"""The prebuilt rollout op (ppo/tf_op.py, src/cpp/tf_op/rollout_op.cc): a binary on TensorFlow's
C API only, that steps a native batch as the numpy_function path does, aliases the storage row
where it may, refuses NaN actions and reports env failures; and `load` falls back with one
warning when the library is missing or refused."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")  # installed by the test extra

import fastbatch
from fastbatch.ppo import tf_op
from fastbatch.ppo.rollout import Rollout
from tests.elf_facts import dynamic_facts

STEPS = 24  # CartPole episodes end within it: autoreset rows on both paths


def test_the_library_needs_only_the_framework_library_and_its_c_api():
    path = tf_op.library_path()
    assert path.is_file(), f"the prebuilt op must be installed beside fastbatch._core: {path}"
    needed, paths, undefined = dynamic_facts(path)
    assert "libtensorflow_framework.so.2" in needed
    assert not [n for n in needed if "tensorflow" in n and n != "libtensorflow_framework.so.2"]
    assert paths == []  # binds to the framework library TensorFlow loaded, found by nothing else
    toolchain = ("GLIBC_", "GLIBCXX_", "CXXABI_", "GCC_")  # libc, libstdc++, libgcc
    weak_toolchain = {"__gmon_start__", "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable"}
    for name, version, weak in undefined:
        if name.startswith("TF_"):
            assert version is None, name  # TensorFlow's C API is unversioned
        elif version is None:
            assert weak and name in weak_toolchain, name
        else:
            assert version.startswith(toolchain), (name, version)
        assert not re.search(r"tensorflow|tsl|absl|google|Eigen", name), name  # no C++ API
    assert {"TF_NewKernelBuilder", "TF_RegisterOpDefinition"} <= {u[0] for u in undefined}


def _collect(num_envs: int, use_op: bool) -> tuple[Rollout, np.ndarray]:
    env = fastbatch.make("CartPole-v1", num_envs, autoreset_mode="same_step", stats_key="episode")
    rollout = Rollout(env, STEPS, use_op=use_op)
    rollout.start(7)
    step = tf.function(rollout.step, autograph=False)
    actions = (np.arange(STEPS)[:, None] // 3 + np.arange(num_envs)[None, :]) % 2
    seen = []
    for t in range(STEPS):
        next_obs, done = step(tf.constant(t), tf.constant(actions[t], tf.int64))
        assert next_obs.shape == (num_envs, 4) and done.shape == (num_envs,)
        seen.append(next_obs.numpy())
    rollout.finish()
    if use_op:  # next_obs is the storage's row obs[t + 1]: the same memory where it may alias
        row = rollout.arrays["obs"][-1]
        saved = row.copy()
        row += 1.0
        assert np.array_equal(next_obs.numpy(), row) == (rollout._obs_address != 0)
        row[...] = saved
    env.close()
    return rollout, np.stack(seen)


@pytest.mark.parametrize("num_envs", [16, 3])  # rows of 256 bytes: aliased; of 48: copied
def test_the_op_steps_cartpole_as_the_numpy_function_path_does(num_envs):
    op, op_seen = _collect(num_envs, use_op=True)
    fallback, fallback_seen = _collect(num_envs, use_op=False)
    assert op.uses_op and not fallback.uses_op
    assert (op._obs_address != 0) == (num_envs == 16)
    np.testing.assert_array_equal(op_seen, fallback_seen)
    np.testing.assert_array_equal(op_seen, op.arrays["obs"][1:])
    for key in ("obs", "final_obs", "reward", "terminated", "truncated"):
        np.testing.assert_array_equal(op.arrays[key], fallback.arrays[key], err_msg=key)
    assert op.arrays["terminated"].any()  # the autoreset rows were compared too
    assert op.episode_returns == fallback.episode_returns


def test_a_nan_action_is_refused_before_the_env_steps():
    env = fastbatch.make("Pendulum-v1", 4, autoreset_mode="same_step", stats_key="episode")
    rollout = Rollout(env, 2)
    assert rollout.uses_op
    rollout.start(0)
    actions = tf.constant([[0.5], [np.nan], [0.0], [-0.5]], tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="NaN action"):
        rollout.step(tf.constant(0), actions)
    assert not rollout.arrays["obs"][1].any()  # no step was written
    env.close()


def test_an_env_failure_is_an_internal_error_with_the_envs_message():
    env = fastbatch.make(
        "_TestCounter-v0", 2, autoreset_mode="same_step", stats_key="episode", throw_at_step=2
    )
    rollout = Rollout(env, 4)
    assert rollout.uses_op
    rollout.start(0)
    rollout.step(tf.constant(0), tf.zeros([2], tf.int64))
    with pytest.raises(tf.errors.InternalError, match="test env: step 2 failed"):
        rollout.step(tf.constant(1), tf.zeros([2], tf.int64))
    env.close()


@pytest.mark.parametrize(
    "content, reason", [(None, "no such file"), (b"not an ELF file. " * 8, "invalid ELF header")]
)
def test_a_library_that_does_not_load_gives_one_warning_and_none(
    monkeypatch, tmp_path, caplog, content, reason
):
    path = tmp_path / "fastbatch_tf_op.so"
    if content is not None:
        path.write_bytes(content)  # there, but TensorFlow refuses it
    monkeypatch.setattr(tf_op, "library_path", lambda: path)
    monkeypatch.setattr(tf_op, "_loaded", {})
    with caplog.at_level(logging.WARNING, logger="fastbatch"):
        assert tf_op.load() is None
        assert tf_op.load() is None  # remembered: no second attempt, no second warning
    [record] = caplog.records
    message = record.getMessage()
    assert record.levelno == logging.WARNING
    assert f"TensorFlow {tf.__version__}" in message and str(path) in message
    assert reason in message and "tf.numpy_function" in message


def test_fastbatch_tf_op_0_switches_the_op_off_without_a_warning(monkeypatch, caplog):
    monkeypatch.setenv("FASTBATCH_TF_OP", "0")
    monkeypatch.setattr(tf_op, "_loaded", {})
    with caplog.at_level(logging.DEBUG, logger="fastbatch"):
        assert tf_op.load() is None
    assert caplog.records == []
    env = fastbatch.make("CartPole-v1", 2, autoreset_mode="same_step", stats_key="episode")
    assert not Rollout(env, 2).uses_op
    env.close()
