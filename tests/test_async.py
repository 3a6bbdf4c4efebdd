"""Async mode (batch_size < num_envs): send/recv like EnvPool, and its state machine."""

from __future__ import annotations

import numpy as np
import pytest

import fastbatch
from fastbatch import AsyncStateError


def policy(env_id: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """A deterministic action per (env, that env's step count)."""
    return ((env_id * 7 + steps * 3) // 2 % 2).astype(np.int64)


@pytest.mark.parametrize("num_threads", [1, 2, 3])
def test_each_env_follows_the_same_trajectory_as_in_sync_mode(num_threads):
    n, b, steps = 10, 4, 300
    sync = fastbatch.make("CartPole-v1", num_envs=n, seed=3)
    obs, _ = sync.reset()
    expected = [[obs[i].copy()] for i in range(n)]
    for t in range(steps):
        obs, reward, term, trunc, _ = sync.step(policy(np.arange(n), np.full(n, t)))
        for i in range(n):
            expected[i].append((obs[i].copy(), reward[i], term[i], trunc[i]))

    env = fastbatch.make("CartPole-v1", num_envs=n, batch_size=b, seed=3, num_threads=num_threads)
    obs, _ = env.reset()
    got = [[obs[i].copy()] for i in range(n)]
    counts = np.zeros(n, dtype=np.int64)
    env.send(policy(np.arange(n), counts))
    while counts.min() < steps:
        obs, reward, term, trunc, info = env.recv()
        ids = info["env_id"]
        assert obs.shape == (b, 4) and len(set(ids.tolist())) == b
        for j, i in enumerate(ids):
            got[i].append((obs[j].copy(), reward[j], term[j], trunc[j]))
        counts[ids] += 1
        env.send(policy(ids, counts[ids]), ids)
    for i in range(n):
        for want, have in zip(expected[i], got[i][: steps + 1]):
            if isinstance(want, np.ndarray):
                np.testing.assert_array_equal(have, want)
            else:
                np.testing.assert_array_equal(have[0], want[0])
                assert have[1:] == want[1:]


def test_step_in_async_mode_sends_the_envs_of_the_last_recv():
    env = fastbatch.make("Pendulum-v1", num_envs=6, batch_size=2, seed=0, num_threads=2)
    env.reset()
    obs, reward, term, trunc, info = env.step(np.zeros((6, 1), np.float32))  # first: all envs
    assert obs.shape == (2, 3) and info["env_id"].shape == (2,)
    seen = set()
    for _ in range(60):
        obs, reward, term, trunc, info = env.step(np.zeros((2, 1), np.float32))
        seen.update(info["env_id"].tolist())
    assert seen == set(range(6))  # no env starves


def test_episode_statistics_rows_follow_env_id():
    env = fastbatch.make("_TestCounter-v0", num_envs=5, batch_size=2, terminate_at_step=4, num_threads=2)
    env.reset(seed=0)
    env.send(np.zeros(5, dtype=np.int64))
    ended = 0
    for _ in range(50):
        obs, reward, term, trunc, info = env.recv()
        if "episode" in info:
            mask = info["_episode"]
            np.testing.assert_array_equal(mask, term)
            assert np.all(info["episode"]["l"][mask] == 4)
            ended += int(mask.sum())
        env.send(np.zeros(2, dtype=np.int64))
    assert ended > 5


def test_misuse_raises_named_errors():
    env = fastbatch.make("CartPole-v1", num_envs=4, batch_size=2, seed=0, num_threads=2)
    env.reset()
    with pytest.raises(AsyncStateError, match="without a pending send"):
        env.recv()
    env.send(np.zeros(1, dtype=np.int64), np.array([0]))
    with pytest.raises(AsyncStateError, match="only 1 envs are in flight"):
        env.recv()
    with pytest.raises(AsyncStateError, match="env 0 was already sent"):
        env.send(np.zeros(2, dtype=np.int64), np.array([1, 0]))
    with pytest.raises(ValueError, match="outside"):
        env.send(np.zeros(1, dtype=np.int64), np.array([9]))
    with pytest.raises(ValueError, match="appears twice"):
        env.send(np.zeros(2, dtype=np.int64), np.array([2, 2]))
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        env.send(np.zeros(3, dtype=np.int64), np.array([1, 2]))
    with pytest.raises(TypeError, match="env_ids"):
        env.send(np.zeros(1, dtype=np.int64), np.array([1.0]))
    env.send(np.zeros(1, dtype=np.int64), np.array([1]))  # the failed calls queued nothing
    obs, *_, info = env.recv()
    assert sorted(info["env_id"].tolist()) == [0, 1]
    with pytest.raises(AsyncStateError, match="recv\\(\\) first"):
        env.send(np.zeros(2, dtype=np.int64))
        env.send(np.zeros(2, dtype=np.int64))


def test_sync_mode_send_and_recv_are_step():
    a = fastbatch.make("CartPole-v1", num_envs=3, seed=1)
    b = fastbatch.make("CartPole-v1", num_envs=3, seed=1)
    a.reset()
    b.reset()
    actions = np.array([0, 1, 1])
    a.send(actions)
    with pytest.raises(AsyncStateError, match="send\\(\\) twice"):
        a.send(actions)
    got = a.recv()
    want = b.step(actions)
    for x, y in zip(got[:4], want[:4]):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(got[4]["env_id"], [0, 1, 2])
    with pytest.raises(AsyncStateError, match="without a pending send"):
        a.recv()


def test_reset_drains_steps_in_flight_and_close_does_not_hang():
    env = fastbatch.make("Acrobot-v1", num_envs=64, batch_size=8, seed=0, num_threads=2)
    env.reset()
    env.send(np.zeros(64, dtype=np.int64))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (64, 6)
    env.step(np.zeros(64, dtype=np.int64))
    env.send(np.zeros(8, dtype=np.int64))
    env.close()


def test_an_env_error_in_async_mode_names_the_env():
    env = fastbatch.make("_TestCounter-v0", num_envs=4, batch_size=2, throw_at_step=2, num_threads=2)
    env.reset()
    env.send(np.zeros(4, dtype=np.int64))
    env.recv()
    env.recv()
    env.send(np.zeros(4, dtype=np.int64), np.arange(4))
    with pytest.raises(fastbatch.EnvError, match="step 2 failed") as caught:
        env.recv()
    assert caught.value.env_index in range(4)
    env.reset()
    env.send(np.ones(4, dtype=np.int64))
    env.recv()


def test_batch_size_must_fit():
    with pytest.raises(ValueError, match="batch_size must be at most num_envs"):
        fastbatch.make("CartPole-v1", num_envs=2, batch_size=3)
    with pytest.raises(ValueError, match="batch_size"):
        fastbatch.make("CartPole-v1", num_envs=2, batch_size=0)


def test_envs_in_flight_are_not_touched_by_seed_state_or_masked_reset():
    env = fastbatch.make("CartPole-v1", num_envs=4, batch_size=2, seed=0, num_threads=2)
    env.reset()
    env.send(np.zeros(4, dtype=np.int64))
    obs, *_, info = env.recv()  # two envs are still in flight
    in_flight = sorted(set(range(4)) - set(info["env_id"].tolist()))
    with pytest.raises(AsyncStateError, match="in flight"):
        env.get_env_state(in_flight[0])
    idle = int(info["env_id"][0])
    mask = np.zeros(4, dtype=bool)
    mask[idle] = True
    obs, _ = env.reset(options={"reset_mask": mask})  # the rows of envs in flight are not copied
    assert obs.shape == (4, 4)
    env.reset(seed=3)  # reseeding drains what is in flight
    env.step(np.zeros(4, dtype=np.int64))
