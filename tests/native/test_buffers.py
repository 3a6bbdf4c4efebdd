"""What only the native backend does (the shared contract is in test_contract.py): its result
buffers (slots, alignment, step_into), threads and num_workers, every built-in env's spaces and
determinism, env parameters and make() arguments."""

from __future__ import annotations

import threading
import time

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import fastbatch
from tests.envs import assert_same, random_actions, rollout

pytestmark = [pytest.mark.engine, pytest.mark.threads]

ENV_IDS = fastbatch.list_envs()


# ---------------------------------------------------------------------------- API shape
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_make_returns_a_gymnasium_vector_env(env_id):
    env = fastbatch.make(env_id, num_envs=8, seed=0)
    assert isinstance(env, gymnasium.vector.VectorEnv)
    assert env.num_envs == 8
    assert env.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert env.observation_space.shape == (8, *env.single_observation_space.shape)
    obs, info = env.reset()
    assert info == {}
    assert obs.shape == env.observation_space.shape
    assert obs.dtype == env.single_observation_space.dtype
    obs, reward, terminated, truncated, info = env.step(
        random_actions(env, np.random.default_rng(0))
    )
    assert reward.dtype == np.float32 and reward.shape == (8,)
    assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
    assert isinstance(info, dict)
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_observations_stay_inside_the_declared_space(env_id):
    env = fastbatch.make(env_id, num_envs=16, seed=3)
    rng = np.random.default_rng(3)
    obs, _ = env.reset()
    for _ in range(600):
        assert env.single_observation_space.contains(obs[0])
        assert env.observation_space.contains(obs)
        obs, *_ = env.step(random_actions(env, rng))


def test_default_workers_never_exceed_num_envs():
    assert fastbatch.make("CartPole-v1", num_envs=1).num_workers == 1
    assert fastbatch.make("CartPole-v1", num_envs=64, num_workers=3).num_workers == 3
    assert fastbatch.make("CartPole-v1", num_envs=2, num_workers=7).num_workers == 2


def test_num_threads_still_works_and_is_deprecated():
    with pytest.warns(DeprecationWarning, match="num_threads is deprecated; use num_workers"):
        env = fastbatch.make("CartPole-v1", num_envs=4, num_threads=3)
    assert env.num_workers == 3
    with pytest.warns(DeprecationWarning):
        assert env.num_threads == 3
    env.reset(seed=0)
    env.step(np.zeros(4, dtype=np.int64))


def test_env_params_pass_through_and_unknown_ones_are_refused():
    light = fastbatch.make("Pendulum-v1", num_envs=1, g=0.0, seed=0)
    heavy = fastbatch.make("Pendulum-v1", num_envs=1, g=20.0, seed=0)
    light.reset(seed=0)
    heavy.reset(seed=0)
    action = np.zeros((1, 1), np.float32)
    assert not np.array_equal(light.step(action)[0], heavy.step(action)[0])
    with pytest.raises(TypeError, match="unexpected keyword argument.*'mass'.*accepts: g"):
        fastbatch.make("Pendulum-v1", mass=2.0)
    with pytest.raises(TypeError, match="must be a number"):
        fastbatch.make("Pendulum-v1", g="heavy")


# ---------------------------------------------------------------------------- seeding
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_gives_bitwise_identical_trajectories(env_id):
    a = rollout(fastbatch.make(env_id, num_envs=5), 300, seed=7)
    b = rollout(fastbatch.make(env_id, num_envs=5), 300, seed=7)
    assert_same(a, b)
    c = rollout(fastbatch.make(env_id, num_envs=5), 300, seed=8)
    assert not np.array_equal(a[0], c[0])


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "Acrobot-v1"])
def test_results_are_identical_for_any_num_workers(env_id):
    runs = [
        rollout(fastbatch.make(env_id, num_envs=37, num_workers=w), 400, seed=11)
        for w in (1, 2, 3, 7)
    ]
    for other in runs[1:]:
        assert_same(runs[0], other)


# ---------------------------------------------------------------------------- buffers
def _aligned(a):
    return a.ctypes.data % 64 == 0


def test_returned_arrays_are_aligned_and_never_mutated_afterwards():
    env = fastbatch.make("CartPole-v1", num_envs=33, seed=0, num_workers=2)
    env.reset()
    held = []
    rng = np.random.default_rng(0)
    for _ in range(20):
        result = env.step(rng.integers(2, size=33))
        for a in result[:4]:
            assert _aligned(a)
        held.append((result[:4], [a.copy() for a in result[:4]]))
    for arrays, copies in held:
        for a, c in zip(arrays, copies):
            np.testing.assert_array_equal(a, c)


def test_buffers_are_recycled_once_the_caller_drops_them():
    env = fastbatch.make("CartPole-v1", num_envs=8, seed=0)
    env.reset()
    addresses = set()
    actions = np.zeros(8, dtype=np.int64)
    for _ in range(200):
        obs, *_, _ = env.step(actions)
        addresses.add(obs.ctypes.data)
    assert len(addresses) <= 3


def test_recv_env_ids_are_recycled_and_never_mutated_afterwards():
    env = fastbatch.make("CartPole-v1", num_envs=8, batch_size=4, seed=0)
    env.reset()
    env.send(np.zeros(8, dtype=np.int64))
    held, addresses = [], set()
    for t in range(200):
        *_, info = env.recv()
        ids = info["env_id"]
        if t < 10:
            held.append((ids, ids.copy()))
        else:
            addresses.add(ids.ctypes.data)
        env.send(np.zeros(4, dtype=np.int64))
        del ids, info
    for ids, copy in held:
        np.testing.assert_array_equal(ids, copy)
    assert len(addresses) <= 3


@pytest.mark.parametrize("batch_size", [None, 2])
def test_results_made_read_only_and_dropped_do_not_break_later_steps(batch_size):
    # A caller (or a library) may freeze the arrays it got; once dropped, the pool must neither
    # fail to reuse their memory nor hand the frozen arrays out again.
    env = fastbatch.make("CartPole-v1", num_envs=4, batch_size=batch_size, seed=0)
    ref = fastbatch.make("CartPole-v1", num_envs=4, batch_size=batch_size, seed=0)
    env.reset()
    ref.reset()
    for t in range(8):
        rows = 4 if t == 0 or batch_size is None else batch_size
        actions = np.full(rows, t % 2, dtype=np.int64)
        got, want = env.step(actions), ref.step(actions)
        arrays = [*got[:4], *([got[4]["env_id"]] if batch_size else [])]
        assert all(a.flags.writeable for a in arrays)
        if batch_size is None:  # async batches may hold other envs: compare sync only
            for a, b in zip(got[:4], want[:4]):
                np.testing.assert_array_equal(a, b)
        for a in arrays:
            a.flags.writeable = False
        del got, want, arrays


def test_step_into_writes_into_the_callers_rollout_storage():
    env = fastbatch.make("CartPole-v1", num_envs=16, seed=0)
    ref = fastbatch.make("CartPole-v1", num_envs=16, seed=0)
    T = 5
    obs = fastbatch.aligned_empty((T, 16, 4), np.float32)
    reward = fastbatch.aligned_empty((T, 16), np.float32)
    terminated = fastbatch.aligned_empty((T, 16), np.bool_)
    truncated = fastbatch.aligned_empty((T, 16), np.bool_)
    env.reset()
    ref.reset()
    actions = np.ones(16, dtype=np.int64)
    # Rows of 16 float32 x 4 = 256 bytes and 16 flags: slots t of these arrays stay 64-aligned
    # for obs and reward only; flags need their own aligned rows.
    flags = [fastbatch.aligned_empty(16, np.bool_) for _ in range(2)]
    for t in range(T):
        info = env.step_into(actions, obs[t], reward[t], flags[0], flags[1])
        terminated[t], truncated[t] = flags
        r = ref.step(actions)
        np.testing.assert_array_equal(obs[t], r[0])
        np.testing.assert_array_equal(reward[t], r[1])
        assert isinstance(info, dict)


def test_step_into_checks_alignment_dtype_and_shape():
    env = fastbatch.make("CartPole-v1", num_envs=4, seed=0)
    env.reset()
    actions = np.zeros(4, dtype=np.int64)
    good = [
        fastbatch.aligned_empty((4, 4)),
        fastbatch.aligned_empty(4),
        fastbatch.aligned_empty(4, np.bool_),
        fastbatch.aligned_empty(4, np.bool_),
    ]
    raw = np.empty(4 * 16 + 64, np.uint8)
    offset = (-raw.ctypes.data) % 64 + 4
    misaligned = raw[offset : offset + 64].view(np.float32).reshape(4, 4)
    with pytest.raises(ValueError, match="64-byte aligned"):
        env.step_into(actions, misaligned, *good[1:])
    with pytest.raises(TypeError, match="dtype"):
        env.step_into(actions, fastbatch.aligned_empty((4, 4), np.float64), *good[1:])
    with pytest.raises(ValueError, match="shape"):
        env.step_into(actions, fastbatch.aligned_empty((4, 5)), *good[1:])
    env.step_into(actions, *good)


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (
            {"env_id": "NoSuchEnv-v0"},
            fastbatch.UnknownEnvError,
            "neither a native env.*Acrobot-v1.*nor a gymnasium id",
        ),
        (
            {"env_id": "CartPole-v1", "num_envs": 0},
            ValueError,
            "num_envs must be a positive integer",
        ),
        ({"env_id": "CartPole-v1", "num_envs": -3}, ValueError, "num_envs"),
        ({"env_id": "CartPole-v1", "num_envs": 2.5}, TypeError, "num_envs"),
        ({"env_id": "CartPole-v1", "num_workers": 0}, ValueError, "num_workers"),
        ({"env_id": "CartPole-v1", "autoreset_mode": "sometimes"}, ValueError, "autoreset_mode"),
        ({"env_id": "CartPole-v1", "max_episode_steps": -1}, ValueError, "max_episode_steps"),
        ({"env_id": 42}, TypeError, "env must be an env id, a factory or a list"),
    ],
)
def test_bad_make_arguments_raise_clear_errors(kwargs, error, match):
    env_id = kwargs.pop("env_id")
    with pytest.raises(error, match=match):
        fastbatch.make(env_id, **kwargs)


# ---------------------------------------------------------------------------- threads
def test_concurrent_calls_from_two_threads_raise_instead_of_corrupting():
    env = fastbatch.make("CartPole-v1", num_envs=4096, num_workers=2, seed=0)
    env.reset()
    actions = np.zeros(4096, dtype=np.int64)
    errors, crashes = [], []

    def hammer():
        for _ in range(300):
            try:
                env.step(actions)
            except RuntimeError as exc:
                errors.append(str(exc))
            except Exception as exc:  # anything else is a failure
                crashes.append(exc)

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not crashes
    assert errors and all("one thread at a time" in e for e in errors)
    obs, *_ = env.step(actions)  # still consistent and usable
    assert obs.shape == (4096, 4)


def test_close_from_another_thread_while_stepping_is_clean():
    env = fastbatch.make("Acrobot-v1", num_envs=2048, num_workers=2, seed=0)
    env.reset()
    stop = threading.Event()
    outcomes = []

    def step_loop():
        while not stop.is_set():
            try:
                env.step(np.zeros(2048, dtype=np.int64))
            except fastbatch.ClosedEnvError:
                outcomes.append("closed")
                return
            except RuntimeError as exc:
                outcomes.append(str(exc))

    t = threading.Thread(target=step_loop)
    t.start()
    time.sleep(0.05)
    env.close()  # waits for the step in flight, then refuses every later call
    stop.set()
    t.join(timeout=10)
    assert not t.is_alive()
    assert env.closed
    assert outcomes and outcomes[-1] == "closed"
    assert all(o == "closed" or "closed" in o for o in outcomes)
