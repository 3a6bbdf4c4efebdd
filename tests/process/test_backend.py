"""The process backend's own behaviour (the shared contract is in test_contract.py): gymnasium
envs step exactly as in SyncVectorEnv, worker tracebacks, legacy spaces, in_parent, arguments
and its result buffers."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv

import fastbatch
from tests.envs import LegacyEnv, scripted, worker_processes

pytestmark = pytest.mark.engine


def test_a_gymnasium_env_steps_exactly_as_in_sync_vector_env():
    env = fastbatch.make("CartPole-v1", 6, backend="process", num_workers=2)
    ref = SyncVectorEnv([lambda: gymnasium.make("CartPole-v1") for _ in range(6)])
    assert env.single_observation_space == ref.single_observation_space
    obs, _ = env.reset(seed=42)
    np.testing.assert_array_equal(obs, ref.reset(seed=42)[0])
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(150):
        actions = rng.integers(2, size=6)
        o, r, te, tr, _info = env.step(actions)
        ro, rr, rte, rtr, _rinfo = ref.step(actions)
        np.testing.assert_array_equal(o, ro)
        np.testing.assert_array_equal(r, rr.astype(np.float32))
        np.testing.assert_array_equal(te, rte)
        np.testing.assert_array_equal(tr, rtr)
        ends += int(np.sum(rte | rtr))
        for a in (o, r, te, tr):
            assert a.ctypes.data % 64 == 0
    assert ends > 5
    env.close()


def test_an_env_exception_names_the_env_and_carries_the_worker_traceback():
    env = scripted(4, num_workers=2)
    env.reset(seed=0)
    with pytest.raises(
        fastbatch.EnvError, match=r"(?s)env 3:.*ValueError: scripted failure at step 1"
    ) as caught:
        env.step(np.array([0, 0, 0, 2]))
    assert caught.value.env_index == 3
    assert "Traceback" in str(caught.value)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(np.zeros(4, dtype=np.int64))
    env.reset()
    env.step(np.zeros(4, dtype=np.int64))
    env.close()


def test_legacy_spaces_are_converted():
    env = fastbatch.make(LegacyEnv, 2, backend="process", num_workers=1)
    assert isinstance(env.single_observation_space, gymnasium.spaces.Box)
    assert env.single_action_space == gymnasium.spaces.Discrete(2)
    env.reset()
    obs, *_ = env.step(np.array([1, 0]))
    np.testing.assert_array_equal(obs, [[1, 1, 1], [0, 0, 0]])
    env.close()


def test_bad_arguments_raise_clear_errors():
    with pytest.raises(fastbatch.UnknownEnvError, match="nor a gymnasium id"):
        fastbatch.make("NoSuchEnv-v9", 2)
    with pytest.raises(ValueError, match="num_workers=3 is more than num_envs=2"):
        scripted(2, num_workers=3)
    with pytest.raises(fastbatch.EnvError, match="could not be created"):
        fastbatch.make([lambda: 1 / 0], backend="process")


def test_in_parent_steps_the_first_block_in_the_caller():
    env = fastbatch.make("CartPole-v1", 6, backend="process", num_workers=2, in_parent=True)
    ref = SyncVectorEnv([lambda: gymnasium.make("CartPole-v1") for _ in range(6)])
    assert [p is None for p in worker_processes(env)] == [True, False]
    np.testing.assert_array_equal(env.reset(seed=3)[0], ref.reset(seed=3)[0])
    rng = np.random.default_rng(1)
    for _ in range(60):
        actions = rng.integers(2, size=6)
        o, _r, te, tr, _info = env.step(actions)
        ro, _rr, rte, rtr, _rinfo = ref.step(actions)
        np.testing.assert_array_equal(o, ro)
        np.testing.assert_array_equal(te | tr, rte | rtr)
    env.close()
    local = scripted(4, num_workers=2, in_parent=True)
    local.reset()
    with pytest.raises(fastbatch.EnvError, match=r"(?s)env 1:.*scripted failure"):
        local.step(np.array([0, 2, 0, 0]))  # env 1 lives in the caller's block
    local.reset()
    local.step(np.zeros(4, dtype=np.int64))
    local.close()
    with pytest.raises(ValueError, match="in_parent"):
        scripted(4, num_workers=2, in_parent=True, batch_size=2)


def test_results_never_change_behind_the_caller_and_dropped_ones_are_reused():
    env = scripted(4, length=100, num_workers=2)
    env.reset()
    kept = env.step(np.zeros(4, dtype=np.int64))
    snapshot = [a.copy() for a in kept[:4]]
    for _ in range(5):
        env.step(np.ones(4, dtype=np.int64))
    for a, b in zip(kept[:4], snapshot):
        np.testing.assert_array_equal(a, b)
        assert a.ctypes.data % 64 == 0
    addresses = {env.step(np.zeros(4, dtype=np.int64))[0].ctypes.data for _ in range(20)}
    assert len(addresses) <= 2  # dropped results are recycled: no allocation per step
    obs = env.step(np.zeros(4, dtype=np.int64))[0]
    row, flat = obs[1], obs.reshape(-1)  # views hold the buffer, not the array
    expected = row.copy()
    del obs
    for _ in range(3):
        env.step(np.ones(4, dtype=np.int64))
    np.testing.assert_array_equal(row, expected)
    np.testing.assert_array_equal(flat[2:4], expected)
    env.close()
