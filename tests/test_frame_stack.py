"""`make(..., frame_stack=k)`: the native pool keeps each env's last k observations, bit for bit
as gymnasium's `SyncVectorEnv` over `FrameStackObservation(gymnasium.make(id), k)` with the
same seeds, in the three autoreset modes (SAME_STEP's final observations included), in sync
and async mode, on 1 and 2 threads, through `step_into`; the process backend stacks in its
workers with gymnasium's wrapper and agrees; k = 1 (or 0, None) is no stacking; bad k raises.

Native rewards are float32 (gymnasium's vector envs report float64): they are compared after
the same cast, everything else exactly."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import FrameStackObservation

import fastbatch

pytestmark = [pytest.mark.engine, pytest.mark.threads]

K = 4
MAX_STEPS = 7  # short episodes: many resets
ENV_IDS = ["CartPole-v1", "Pendulum-v1"]  # Discrete and Box actions


def _stacked(env_id: str, k: int = K):
    return FrameStackObservation(gymnasium.make(env_id, max_episode_steps=MAX_STEPS), k)


def _reference(env_id: str, n: int, mode: AutoresetMode) -> SyncVectorEnv:
    return SyncVectorEnv([lambda: _stacked(env_id) for _ in range(n)], autoreset_mode=mode)


def _actions(env_id: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if env_id == "CartPole-v1":
        return rng.integers(0, 2, size=n)
    return rng.uniform(-2.0, 2.0, size=(n, 1)).astype(np.float32)


def _assert_same_step(result, expected, where: str) -> None:
    obs, reward, terminated, truncated, _ = result
    r_obs, r_reward, r_terminated, r_truncated, _ = expected
    np.testing.assert_array_equal(obs, r_obs, err_msg=where)
    np.testing.assert_array_equal(reward, np.asarray(r_reward, dtype=np.float32), err_msg=where)
    np.testing.assert_array_equal(terminated, r_terminated, err_msg=where)
    np.testing.assert_array_equal(truncated, r_truncated, err_msg=where)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_sync_matches_frame_stack_observation(env_id, mode, workers):
    n = 5
    env = fastbatch.make(
        env_id,
        n,
        frame_stack=K,
        autoreset_mode=mode,
        max_episode_steps=MAX_STEPS,
        num_workers=workers,
    )
    reference = _reference(env_id, n, mode)
    obs, _ = env.reset(seed=11)
    np.testing.assert_array_equal(obs, reference.reset(seed=11)[0])
    assert obs.shape == (n, K, *gymnasium.make(env_id).observation_space.shape)
    rng = np.random.default_rng(0)
    ends = 0
    for t in range(60):
        actions = _actions(env_id, rng, n)
        result = env.step(actions)
        expected = reference.step(actions)
        _assert_same_step(result, expected, f"step {t}")
        ended = np.asarray(expected[2]) | np.asarray(expected[3])
        ends += int(ended.sum())
        if mode == AutoresetMode.SAME_STEP and ended.any():
            info, r_info = result[4], expected[4]
            np.testing.assert_array_equal(info["_final_obs"], r_info["_final_obs"])
            for i in np.flatnonzero(ended):
                np.testing.assert_array_equal(info["final_obs"][i], r_info["final_obs"][i])
    env.close()
    assert ends >= 2 * n  # every env went through several episodes


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_disabled_autoreset_with_masked_resets(env_id, workers):
    n = 4
    mode = AutoresetMode.DISABLED
    env = fastbatch.make(
        env_id,
        n,
        frame_stack=K,
        autoreset_mode=mode,
        max_episode_steps=MAX_STEPS,
        num_workers=workers,
    )
    reference = _reference(env_id, n, mode)
    obs, _ = env.reset(seed=5)
    np.testing.assert_array_equal(obs, reference.reset(seed=5)[0])
    rng = np.random.default_rng(1)
    resets = 0
    for t in range(40):
        actions = _actions(env_id, rng, n)
        result = env.step(actions)
        _assert_same_step(result, reference.step(actions), f"step {t}")
        done = result[2] | result[3]
        if done.any():
            obs, _ = env.reset(options={"reset_mask": done})
            r_obs, _ = reference.reset(options={"reset_mask": done.copy()})
            np.testing.assert_array_equal(obs, r_obs)  # rows not reset keep their stacks
            resets += int(done.sum())
    env.close()
    assert resets >= n


def _per_env_reference(env_id: str, n: int, seed: int):
    envs = [_stacked(env_id) for _ in range(n)]
    first = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
    return envs, np.stack(first)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("mode", list(AutoresetMode))
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_async_matches_frame_stack_observation(env_id, mode, workers):
    """batch_size < num_envs: each env, whenever it comes back, is where its own
    FrameStackObservation twin is after the same actions (autoreset as SyncVectorEnv does;
    DISABLED: ended envs are reset with a mask before they are sent again)."""
    n, batch = 6, 3
    env = fastbatch.make(
        env_id,
        n,
        frame_stack=K,
        autoreset_mode=mode,
        max_episode_steps=MAX_STEPS,
        num_workers=workers,
        batch_size=batch,
    )
    twins, first = _per_env_reference(env_id, n, seed=21)
    obs, _ = env.reset(seed=21)
    np.testing.assert_array_equal(obs, first)
    rng = np.random.default_rng(2)
    pending_reset = np.zeros(n, dtype=bool)  # NEXT_STEP: the env's next step resets it
    sent: dict[int, np.ndarray] = {}
    ids = np.arange(n)
    actions = _actions(env_id, rng, n)
    env.send(actions, ids)
    sent.update({int(i): actions[j] for j, i in enumerate(ids)})
    ends = 0
    for t in range(80):
        obs, reward, terminated, truncated, info = env.recv()
        ids = info["env_id"]
        ended = np.zeros(n, dtype=bool)
        for j, i in enumerate(ids):
            i = int(i)
            where = f"recv {t} env {i}"
            twin = twins[i]
            if pending_reset[i]:
                r_obs, _ = twin.reset()
                r_reward, r_term, r_trunc = 0.0, False, False
                pending_reset[i] = False
            else:
                action = sent[i] if env_id != "CartPole-v1" else int(sent[i])
                r_obs, r_reward, r_term, r_trunc, _ = twin.step(action)
                if r_term or r_trunc:
                    ends += 1
                    ended[i] = True
                    if mode == AutoresetMode.SAME_STEP:
                        np.testing.assert_array_equal(info["final_obs"][j], r_obs, err_msg=where)
                        r_obs, _ = twin.reset()
                    elif mode == AutoresetMode.NEXT_STEP:
                        pending_reset[i] = True
            np.testing.assert_array_equal(obs[j], r_obs, err_msg=where)
            assert reward[j] == np.float32(r_reward), where
            assert bool(terminated[j]) == r_term and bool(truncated[j]) == r_trunc, where
        if mode == AutoresetMode.DISABLED and ended.any():
            reset_obs, _ = env.reset(options={"reset_mask": ended})
            for i in np.flatnonzero(ended):
                np.testing.assert_array_equal(reset_obs[i], twins[i].reset()[0])
        actions = _actions(env_id, rng, len(ids))
        env.send(actions, ids)
        sent.update({int(i): actions[j] for j, i in enumerate(ids)})
    env.close()
    assert ends >= n


def test_step_into_keeps_the_history_whatever_arrays_it_is_given():
    """The pool's rings hold the history: output arrays may change from call to call."""
    n = 4
    stepped = fastbatch.make("CartPole-v1", n, frame_stack=K, max_episode_steps=MAX_STEPS)
    into = fastbatch.make("CartPole-v1", n, frame_stack=K, max_episode_steps=MAX_STEPS)
    stepped.reset(seed=3)
    into.reset(seed=3)
    shape = (n, K, 4)
    buffers = [
        tuple(
            fastbatch.aligned_empty(s, d)
            for s, d in ((shape, np.float32), (n, np.float32), (n, np.bool_), (n, np.bool_))
        )
        for _ in range(3)
    ]
    rng = np.random.default_rng(4)
    for t in range(30):
        actions = rng.integers(0, 2, size=n)
        obs, reward, terminated, truncated, _ = stepped.step(actions)
        out = buffers[t % 3]
        out[0].fill(np.nan)
        into.step_into(actions, *out)
        for a, b in zip((obs, reward, terminated, truncated), out):
            np.testing.assert_array_equal(a, b, err_msg=f"step {t}")
    stepped.close()
    into.close()


@pytest.mark.no_tsan
def test_process_backend_stacks_in_its_workers_alike():
    n = 4
    env = fastbatch.make(
        "CartPole-v1",
        n,
        backend="process",
        frame_stack=K,
        max_episode_steps=MAX_STEPS,
        num_workers=2,
    )
    native = fastbatch.make("CartPole-v1", n, frame_stack=K, max_episode_steps=MAX_STEPS)
    reference = _reference("CartPole-v1", n, AutoresetMode.NEXT_STEP)
    assert env.single_observation_space == reference.single_observation_space
    obs, _ = env.reset(seed=8)
    np.testing.assert_array_equal(obs, reference.reset(seed=8)[0])
    np.testing.assert_array_equal(obs, native.reset(seed=8)[0])
    rng = np.random.default_rng(5)
    for t in range(30):
        actions = rng.integers(0, 2, size=n)
        result = env.step(actions)
        _assert_same_step(result, reference.step(actions), f"step {t}")
        np.testing.assert_array_equal(result[0], native.step(actions)[0])
    env.close()
    native.close()


@pytest.mark.parametrize("k", [1, 0, None])
def test_one_frame_is_no_stacking(k):
    plain = fastbatch.make("Pendulum-v1", 3, max_episode_steps=MAX_STEPS)
    single = fastbatch.make("Pendulum-v1", 3, max_episode_steps=MAX_STEPS, frame_stack=k)
    assert single.single_observation_space == plain.single_observation_space
    np.testing.assert_array_equal(single.reset(seed=1)[0], plain.reset(seed=1)[0])
    rng = np.random.default_rng(6)
    for _ in range(10):
        actions = _actions("Pendulum-v1", rng, 3)
        for a, b in zip(single.step(actions)[:4], plain.step(actions)[:4]):
            np.testing.assert_array_equal(a, b)
    single.close()
    plain.close()


@pytest.mark.parametrize("backend", ["native", "process"])
@pytest.mark.parametrize(
    "k, error", [(-1, ValueError), (2.5, TypeError), ("4", TypeError), (True, TypeError)]
)
def test_bad_frame_stack_raises_naming_it(backend, k, error):
    with pytest.raises(error, match="frame_stack must be a positive integer"):
        fastbatch.make("CartPole-v1", 2, backend=backend, frame_stack=k)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_stacked_spec_is_frame_stack_observations_space(env_id):
    env = fastbatch.make(env_id, 3, frame_stack=3)
    expected = _stacked(env_id, 3).observation_space
    assert env.single_observation_space == expected
    assert env.observation_space.shape == (3, *expected.shape)
    assert env.single_action_space == gymnasium.make(env_id).action_space
    env.close()
