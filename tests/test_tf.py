"""The TensorFlow bridge: batch buffers become tf.Tensors that share their memory."""

from __future__ import annotations

import numpy as np
import pytest

import fastbatch

tf = pytest.importorskip("tensorflow")  # installed by the `test` extra; skipped only outside CI
from fastbatch.tf import as_tensor, is_aliasable


def data_pointer(tensor):
    """The address of the tensor's data, read back through TensorFlow's own DLPack export."""
    return np.from_dlpack(tensor).ctypes.data


def test_tensor_aliases_the_array_memory():
    array = fastbatch.aligned_empty((8, 4), np.float32)
    array[:] = 1.0
    tensor = as_tensor(array)
    assert data_pointer(tensor) == array.ctypes.data
    array[2, 3] = 42.0  # a write through numpy is seen by TensorFlow: no copy was made
    assert tensor.numpy()[2, 3] == 42.0
    assert float(tf.reduce_sum(tensor)) == 31.0 + 42.0


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1"])
def test_step_results_convert_without_copies(env_id):
    env = fastbatch.make(env_id, num_envs=16, seed=0)
    obs, _ = env.reset()
    actions = env.action_space.sample()
    obs, reward, terminated, truncated, _ = env.step(actions)
    for array in (obs, reward, terminated, truncated):
        assert is_aliasable(array)
        tensor = as_tensor(array)
        assert data_pointer(tensor) == array.ctypes.data
        np.testing.assert_array_equal(tensor.numpy(), array)


def test_a_buffer_viewed_by_a_tensor_is_not_recycled():
    env = fastbatch.make("CartPole-v1", num_envs=8, seed=0)
    env.reset()
    obs = env.step(np.ones(8, dtype=np.int64))[0]
    tensor = as_tensor(obs)
    expected = obs.copy()
    address = obs.ctypes.data
    del obs
    for _ in range(50):
        new_obs = env.step(np.zeros(8, dtype=np.int64))[0]
        assert new_obs.ctypes.data != address
        del new_obs
    np.testing.assert_array_equal(tensor.numpy(), expected)


def test_rollout_storage_filled_by_step_into_is_shared():
    env = fastbatch.make("CartPole-v1", num_envs=16, seed=0)
    env.reset()
    rollout = fastbatch.aligned_empty((3, 16, 4), np.float32)
    tensor = as_tensor(rollout)
    flags = [fastbatch.aligned_empty(16, np.bool_) for _ in range(2)]
    reward = fastbatch.aligned_empty((3, 16), np.float32)
    for t in range(3):
        env.step_into(np.ones(16, dtype=np.int64), rollout[t], reward[t], *flags)
    np.testing.assert_array_equal(tensor.numpy(), rollout)


def test_arrays_that_cannot_be_shared_are_refused_or_copied_on_request():
    raw = np.empty(16 * 4 + 64, np.uint8)
    offset = (-raw.ctypes.data) % 64 + 4
    misaligned = raw[offset : offset + 64].view(np.float32)
    misaligned[:] = np.arange(16)
    with pytest.raises(ValueError, match="not 64-byte aligned"):
        as_tensor(misaligned)
    copied = as_tensor(misaligned, copy=True)
    assert data_pointer(copied) != misaligned.ctypes.data
    np.testing.assert_array_equal(copied.numpy(), misaligned)
    strided = fastbatch.aligned_empty((4, 4), np.float32)[:, ::2]
    with pytest.raises(ValueError, match="not C-contiguous"):
        as_tensor(strided)
    with pytest.raises(TypeError, match="numpy array"):
        as_tensor([1.0, 2.0])
