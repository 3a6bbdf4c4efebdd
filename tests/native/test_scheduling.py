"""The native pool's scheduler (src/cpp/core/worker_pool.h): per-thread segments of chunks with
stealing, a thread count tuned by timing, async rings homed on the threads. Results are bitwise identical for any
worker count, any choice of the tuner, envs that stall their thread, and async mode; the
tuner's choice is exposed as ``active_workers``."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fastbatch

pytestmark = [pytest.mark.engine, pytest.mark.threads]

VARIABLE = "_TestVariableCost-v0"


def trace(env_id: str, num_envs: int, num_workers: int, steps: int, **kwargs) -> list[bytes]:
    """Every output of `steps` batch steps with seeded resets and a fixed action sequence, as
    bytes: observations, rewards, flags and the episode statistics."""
    env = fastbatch.make(env_id, num_envs, num_workers=num_workers, seed=11, **kwargs)
    space = env.single_action_space
    rng = np.random.default_rng(5)
    obs, _ = env.reset()
    out = [obs.tobytes()]
    for _ in range(steps):
        if hasattr(space, "n"):
            actions = rng.integers(space.n, size=num_envs)
        else:
            actions = rng.uniform(-2, 2, size=(num_envs, *space.shape)).astype(space.dtype)
        obs, reward, terminated, truncated, info = env.step(actions)
        out += [obs.tobytes(), reward.tobytes(), terminated.tobytes(), truncated.tobytes()]
        if "episode" in info:
            out += [info["episode"]["r"].tobytes(), info["episode"]["l"].tobytes()]
    env.close()
    return out


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "Acrobot-v1", VARIABLE])
@pytest.mark.parametrize("num_envs", [5, 300])
def test_results_are_bitwise_identical_for_1_2_3_and_7_workers(env_id, num_envs):
    kwargs = {"work_unit": 1} if env_id == VARIABLE else {}
    one = trace(env_id, num_envs, 1, 150, **kwargs)
    for workers in (2, 3, 7):
        assert trace(env_id, num_envs, workers, 150, **kwargs) == one, f"{workers} workers"


def test_the_tuner_probing_other_thread_counts_changes_no_result():
    # Steps of ~1 ms: the tuner's first probes come after 20 ms, then 40, 80, ... ms of
    # stepping, each 16 steps at least, so 300 steps run through several probes.
    kwargs = {"work_unit": 4096, "max_cost": 4}
    one = trace(VARIABLE, 64, 1, 300, **kwargs)
    assert trace(VARIABLE, 64, 2, 300, **kwargs) == one
    assert trace(VARIABLE, 64, 3, 300, **kwargs) == one


def run_with_deadline(fn, seconds: float):
    """fn() on another thread; fails (instead of hanging) if it has not returned in time."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s: a deadlock?"
    return result[0]


@pytest.mark.parametrize("num_workers", [2, 3, 7])
def test_envs_that_stall_their_thread_change_no_result_and_do_not_deadlock(num_workers):
    # About one step in 100 sleeps 3 ms inside the env, on whichever thread is stepping it.
    reference = trace(VARIABLE, 64, 1, 100, work_unit=1)
    stalled = run_with_deadline(
        lambda: trace(VARIABLE, 64, num_workers, 100, work_unit=1, stall_prob=0.01, stall_us=3000),
        60,
    )
    assert stalled == reference


@pytest.mark.parametrize("num_workers", [2, 3])
def test_async_envs_that_stall_their_thread_do_not_deadlock(num_workers):
    env = fastbatch.make(
        VARIABLE, 32, batch_size=8, num_workers=num_workers, seed=0, stall_prob=0.02, stall_us=2000
    )

    def loop():
        env.reset()
        env.send(np.zeros(32, dtype=np.int64))
        for _ in range(200):
            *_, info = env.recv()
            env.send(np.ones(8, dtype=np.int64), info["env_id"])
        env.reset()  # drains what is in flight
        return True

    assert run_with_deadline(loop, 60)
    env.close()


def test_active_workers_is_exposed_and_within_num_workers():
    env = fastbatch.make("CartPole-v1", 256, num_workers=3, seed=0)
    assert env.num_workers == 3 and env.active_workers == 3  # all, until the tuner measures
    env.reset()
    actions = np.zeros(256, dtype=np.int64)
    for _ in range(3000):
        env.step(actions)
        assert 1 <= env.active_workers <= 3
    assert fastbatch.make("CartPole-v1", 1, num_workers=4).active_workers == 1
    async_env = fastbatch.make("CartPole-v1", 8, batch_size=4, num_workers=2)
    assert async_env.active_workers == async_env.num_workers == 2
