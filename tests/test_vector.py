"""The native VectorEnv facade: gymnasium's vector contract, seeding, buffers and bad input."""

from __future__ import annotations

import subprocess
import sys
import time

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.wrappers import TimeLimit

import fastbatch
from tests.envs import CounterEnv

ENV_IDS = fastbatch.list_envs()


def random_actions(env, rng):
    space = env.single_action_space
    if isinstance(space, gymnasium.spaces.Discrete):
        return rng.integers(space.n, size=env.num_envs)
    return rng.uniform(space.low, space.high, size=(env.num_envs, *space.shape)).astype(space.dtype)


def rollout(env, steps, seed, action_seed=0):
    rng = np.random.default_rng(action_seed)
    obs, _ = env.reset(seed=seed)
    out = [obs.copy()]
    for _ in range(steps):
        obs, reward, terminated, truncated, _ = env.step(random_actions(env, rng))
        out += [obs.copy(), reward.copy(), terminated.copy(), truncated.copy()]
    return out


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
        assert x.tobytes() == y.tobytes()


# ---------------------------------------------------------------------------- package
def test_list_envs_has_the_five_classic_control_envs():
    assert ENV_IDS == [
        "Acrobot-v1", "CartPole-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Pendulum-v1",
    ]


def test_import_does_not_import_tensorflow():
    code = "import sys, fastbatch; fastbatch.make('CartPole-v1', 2); print('tensorflow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_public_headers_are_installed():
    from pathlib import Path

    include = Path(fastbatch.get_include())
    assert (include / "fastbatch" / "env.h").is_file()
    assert (include / "fastbatch" / "abi.h").is_file()


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
    obs, reward, terminated, truncated, info = env.step(random_actions(env, np.random.default_rng(0)))
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


def test_default_threads_never_exceed_num_envs():
    assert fastbatch.make("CartPole-v1", num_envs=1).num_threads == 1
    assert fastbatch.make("CartPole-v1", num_envs=64, num_threads=3).num_threads == 3
    assert fastbatch.make("CartPole-v1", num_envs=2, num_threads=7).num_threads == 2


def test_make_vec_through_the_gymnasium_registry():
    env = gymnasium.make_vec("fastbatch/CartPole-v1", num_envs=4, vectorization_mode="vector_entry_point")
    assert isinstance(env, fastbatch.NativeVectorEnv)
    assert env.num_envs == 4
    obs, _ = env.reset(seed=1)
    assert obs.shape == (4, 4)


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
def test_results_are_identical_for_any_num_threads(env_id):
    runs = [rollout(fastbatch.make(env_id, num_envs=37, num_threads=t), 400, seed=11) for t in (1, 2, 3, 7)]
    for other in runs[1:]:
        assert_same(runs[0], other)


def test_env_i_is_seeded_with_seed_plus_i():
    batch = fastbatch.make("CartPole-v1", num_envs=4)
    batch_obs, _ = batch.reset(seed=100)
    for i in range(4):
        single = fastbatch.make("CartPole-v1", num_envs=1)
        obs, _ = single.reset(seed=100 + i)
        np.testing.assert_array_equal(obs[0], batch_obs[i])


def test_reset_seed_reseeds_and_unseeded_reset_continues():
    env = fastbatch.make("CartPole-v1", num_envs=3)
    first, _ = env.reset(seed=5)
    first = first.copy()
    again, _ = env.reset(seed=5)
    np.testing.assert_array_equal(first, again)
    following, _ = env.reset()
    assert not np.array_equal(first, following)
    seeded_at_make = fastbatch.make("CartPole-v1", num_envs=3, seed=5)
    np.testing.assert_array_equal(seeded_at_make.reset()[0], first)


def test_seed_list_with_none_keeps_that_envs_generator():
    env = fastbatch.make("CartPole-v1", num_envs=2)
    env.reset(seed=[1, 2])
    obs, _ = env.reset(seed=[1, None])
    ref = fastbatch.make("CartPole-v1", num_envs=1)
    np.testing.assert_array_equal(obs[0], ref.reset(seed=1)[0][0])


# ---------------------------------------------------------------------------- reset mask
def test_reset_mask_resets_only_masked_envs():
    env = fastbatch.make("CartPole-v1", num_envs=4, seed=0)
    env.reset()
    for _ in range(5):
        obs, *_ = env.step(np.ones(4, dtype=np.int64))
    before = obs.copy()
    mask = np.array([True, False, True, False])
    after, info = env.reset(options={"reset_mask": mask})
    assert info == {}
    np.testing.assert_array_equal(after[~mask], before[~mask])
    assert not np.array_equal(after[mask], before[mask])
    assert np.all(np.abs(after[mask]) <= 0.05)


@pytest.mark.parametrize(
    "mask, error, match",
    [
        ([True, False], TypeError, "numpy array"),
        (np.array([1, 0]), TypeError, "dtype bool"),
        (np.array([True, False, True]), ValueError, "shape"),
        (np.array([False, False]), ValueError, "at least one True"),
    ],
)
def test_bad_reset_masks_are_refused(mask, error, match):
    env = fastbatch.make("CartPole-v1", num_envs=2, seed=0)
    env.reset()
    with pytest.raises(error, match=match):
        env.reset(options={"reset_mask": mask})


def test_unknown_reset_options_are_refused():
    env = fastbatch.make("CartPole-v1", num_envs=2)
    with pytest.raises(ValueError, match="unsupported reset option"):
        env.reset(options={"low": -0.1})


# ---------------------------------------------------------------------------- autoreset
def _twin_envs(mode, num_envs, max_steps):
    native = fastbatch.make(
        "_TestCounter-v0", num_envs=num_envs, autoreset_mode=mode, max_episode_steps=max_steps, num_threads=2
    )
    reference = SyncVectorEnv(
        [lambda: TimeLimit(CounterEnv(), max_steps) for _ in range(num_envs)], autoreset_mode=mode
    )
    return native, reference


def _assert_infos_equal(native_info, ref_info):
    assert set(native_info) == set(ref_info), (native_info.keys(), ref_info.keys())
    for key, value in ref_info.items():
        if key == "final_obs":
            for a, b in zip(native_info[key], value):
                if b is None:
                    assert a is None
                else:
                    np.testing.assert_array_equal(a, b)
        elif isinstance(value, dict):
            _assert_infos_equal(native_info[key], value)
        else:
            np.testing.assert_array_equal(native_info[key], value)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_autoreset_matches_gymnasium_sync_vector_env(mode):
    native, reference = _twin_envs(mode, num_envs=5, max_steps=6)
    native_obs, _ = native.reset(seed=0)
    ref_obs, _ = reference.reset(seed=0)
    np.testing.assert_array_equal(native_obs, ref_obs)
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(300):
        actions = rng.choice(4, size=5, p=[0.3, 0.3, 0.3, 0.1])
        n_obs, n_rew, n_term, n_trunc, n_info = native.step(actions)
        r_obs, r_rew, r_term, r_trunc, r_info = reference.step(actions)
        np.testing.assert_array_equal(n_obs, r_obs)
        np.testing.assert_array_equal(n_rew, r_rew)
        np.testing.assert_array_equal(n_term, r_term)
        np.testing.assert_array_equal(n_trunc, r_trunc)
        n_info = {k: v for k, v in n_info.items() if k not in ("episode", "_episode")}
        _assert_infos_equal(n_info, r_info)
        ends += int(np.sum(r_term | r_trunc))
    assert ends > 50


def test_disabled_autoreset_needs_an_explicit_masked_reset():
    native, reference = _twin_envs(AutoresetMode.DISABLED, num_envs=3, max_steps=4)
    native.reset(seed=0)
    reference.reset(seed=0)
    actions = np.array([0, 3, 1])
    for _ in range(4):
        n = native.step(actions)
        r = reference.step(actions)
        for a, b in zip(n[:4], r[:4]):
            np.testing.assert_array_equal(a, b)
        done = n[2] | n[3]
        if done.any():
            with pytest.raises(ValueError, match="autoreset is disabled"):
                native.step(actions)
            n_obs, _ = native.reset(options={"reset_mask": done})
            r_obs, _ = reference.reset(options={"reset_mask": done.copy()})
            np.testing.assert_array_equal(n_obs, r_obs)
        actions = np.array([0, 1, 1])


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_episode_statistics_match_gymnasiums_wrapper(mode):
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    native, reference = _twin_envs(mode, num_envs=4, max_steps=9)
    reference = RecordEpisodeStatistics(reference)
    native.reset(seed=0)
    reference.reset(seed=0)
    rng = np.random.default_rng(1)
    seen = 0
    for _ in range(200):
        actions = rng.choice(4, size=4, p=[0.3, 0.3, 0.3, 0.1])
        n_info = native.step(actions)[4]
        r_info = reference.step(actions)[4]
        assert ("episode" in n_info) == ("episode" in r_info)
        if "episode" in r_info:
            seen += 1
            np.testing.assert_array_equal(n_info["_episode"], r_info["_episode"])
            np.testing.assert_array_equal(n_info["episode"]["r"], r_info["episode"]["r"])
            np.testing.assert_array_equal(n_info["episode"]["l"], r_info["episode"]["l"])
            assert np.all(n_info["episode"]["t"][n_info["_episode"]] >= 0)
    assert seen > 20


def test_gymnasium_vector_wrappers_work_on_top():
    from gymnasium.wrappers.vector import (
        ClipAction,
        NormalizeObservation,
        NormalizeReward,
        RecordEpisodeStatistics,
    )

    env = fastbatch.make("Pendulum-v1", num_envs=4, seed=0, stats_key=None)
    env = RecordEpisodeStatistics(NormalizeReward(NormalizeObservation(ClipAction(env))))
    env.reset(seed=0)
    episodes = 0
    for _ in range(450):
        obs, reward, terminated, truncated, info = env.step(np.full((4, 1), 5.0, np.float32))
        assert obs.shape == (4, 3) and np.all(np.isfinite(obs))
        episodes += int(np.sum(info.get("_episode", 0)))
    assert episodes == 8  # Pendulum truncates every 200 steps; one step each for the autoresets


# ---------------------------------------------------------------------------- buffers
def _aligned(a):
    return a.ctypes.data % 64 == 0


def test_returned_arrays_are_aligned_and_never_mutated_afterwards():
    env = fastbatch.make("CartPole-v1", num_envs=33, seed=0, num_threads=2)
    obs, _ = env.reset()
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
        obs, reward, terminated, truncated, _ = env.step(actions)
        addresses.add(obs.ctypes.data)
    assert len(addresses) <= 3


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
    good = [fastbatch.aligned_empty((4, 4)), fastbatch.aligned_empty(4), fastbatch.aligned_empty(4, np.bool_), fastbatch.aligned_empty(4, np.bool_)]
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
    "env_id, actions, error, match",
    [
        ("CartPole-v1", np.zeros(3, dtype=np.int64), ValueError, r"shape \(4,\)"),
        ("CartPole-v1", np.zeros((4, 1), dtype=np.int64), ValueError, "shape"),
        ("CartPole-v1", np.zeros(4, dtype=np.float32), TypeError, "integers"),
        ("CartPole-v1", np.array([0, 1, 2, 0]), ValueError, r"action 2 for env 2 is outside Discrete\(2\)"),
        ("CartPole-v1", np.array([0, -1, 0, 0]), ValueError, "outside"),
        ("CartPole-v1", "left", TypeError, "integers"),
        ("Pendulum-v1", np.zeros(4, dtype=np.float32), ValueError, r"shape \(4, 1\)"),
        ("Pendulum-v1", np.array([[0.0], [np.nan], [0.0], [0.0]], np.float32), ValueError, "env 1 is NaN"),
        ("Pendulum-v1", np.zeros((4, 1), dtype=np.complex64), TypeError, "real numbers"),
    ],
)
def test_bad_actions_raise_clear_errors(env_id, actions, error, match):
    env = fastbatch.make(env_id, num_envs=4, seed=0)
    env.reset()
    with pytest.raises(error, match=match):
        env.step(actions)
    env.step(random_actions(env, np.random.default_rng(0)))  # still usable


def test_continuous_actions_outside_the_bounds_are_clipped_like_gymnasium():
    env = fastbatch.make("Pendulum-v1", num_envs=2, seed=0)
    clipped = fastbatch.make("Pendulum-v1", num_envs=2, seed=0)
    env.reset()
    clipped.reset()
    big = env.step(np.array([[50.0], [-np.inf]], np.float64))[0]
    ref = clipped.step(np.array([[2.0], [-2.0]], np.float32))[0]
    np.testing.assert_array_equal(big, ref)


def test_list_actions_are_accepted():
    env = fastbatch.make("CartPole-v1", num_envs=2, seed=0)
    env.reset()
    env.step([0, 1])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"env_id": "NoSuchEnv-v0"}, fastbatch.UnknownEnvError, "neither a native env.*Acrobot-v1.*nor a gymnasium id"),
        ({"env_id": "CartPole-v1", "num_envs": 0}, ValueError, "num_envs must be a positive integer"),
        ({"env_id": "CartPole-v1", "num_envs": -3}, ValueError, "num_envs"),
        ({"env_id": "CartPole-v1", "num_envs": 2.5}, TypeError, "num_envs"),
        ({"env_id": "CartPole-v1", "num_threads": 0}, ValueError, "num_threads"),
        ({"env_id": "CartPole-v1", "autoreset_mode": "sometimes"}, ValueError, "autoreset_mode"),
        ({"env_id": "CartPole-v1", "max_episode_steps": -1}, ValueError, "max_episode_steps"),
        ({"env_id": 42}, TypeError, "env must be an env id, a factory or a list"),
    ],
)
def test_bad_make_arguments_raise_clear_errors(kwargs, error, match):
    env_id = kwargs.pop("env_id")
    with pytest.raises(error, match=match):
        fastbatch.make(env_id, **kwargs)


def test_unknown_env_error_is_a_value_error():
    assert issubclass(fastbatch.UnknownEnvError, ValueError)


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, "7"])
def test_bad_seeds_are_refused(seed):
    env = fastbatch.make("CartPole-v1", num_envs=2)
    with pytest.raises((ValueError, TypeError), match="seed"):
        env.reset(seed=seed)


def test_step_before_reset_and_after_close_raise():
    env = fastbatch.make("CartPole-v1", num_envs=2)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(2, dtype=np.int64))
    env.reset()
    env.close()
    env.close()  # idempotent
    assert env.closed
    with pytest.raises(fastbatch.ClosedEnvError, match="closed"):
        env.step(np.zeros(2, dtype=np.int64))
    with pytest.raises(fastbatch.ClosedEnvError, match="closed"):
        env.reset()


# ---------------------------------------------------------------------------- env errors
def test_an_exception_in_an_env_names_the_env_and_the_pool_stays_usable():
    env = fastbatch.make("_TestCounter-v0", num_envs=6, num_threads=3, throw_at_step=3)
    env.reset(seed=0)
    actions = np.zeros(6, dtype=np.int64)
    env.step(actions)
    env.step(actions)
    with pytest.raises(fastbatch.EnvError, match="env 0: test env: step 3 failed") as caught:
        env.step(actions)
    assert caught.value.env_index == 0
    assert isinstance(caught.value, RuntimeError)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(actions)
    with pytest.raises(RuntimeError, match="without a mask"):
        env.reset(options={"reset_mask": np.ones(6, dtype=bool)})
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs, np.zeros((6, 2), np.float32))
    env.step(actions)


def test_an_exception_in_reset_is_reported():
    env = fastbatch.make("_TestCounter-v0", num_envs=4, throw_at_reset=2, num_threads=2)
    env.reset()
    with pytest.raises(fastbatch.EnvError, match="reset number 2 failed"):
        env.reset()


@pytest.mark.parametrize("name", ["same_step", "SameStep", "SAME_STEP"])
def test_autoreset_mode_strings(name):
    env = fastbatch.make("CartPole-v1", num_envs=2, autoreset_mode=name)
    assert env.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP


# ---------------------------------------------------------------------------- threads
def test_concurrent_calls_from_two_threads_raise_instead_of_corrupting():
    import threading

    env = fastbatch.make("CartPole-v1", num_envs=4096, num_threads=2, seed=0)
    env.reset()
    actions = np.zeros(4096, dtype=np.int64)
    errors, crashes = [], []

    def hammer():
        for _ in range(300):
            try:
                env.step(actions)
            except RuntimeError as exc:
                errors.append(str(exc))
            except Exception as exc:  # noqa: BLE001 - anything else is a failure
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
    import threading

    env = fastbatch.make("Acrobot-v1", num_envs=2048, num_threads=2, seed=0)
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
