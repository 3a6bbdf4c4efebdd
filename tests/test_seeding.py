"""Same seed, same episodes: native envs draw numpy's random streams.

fastbatch::Rng is numpy's ``Generator(PCG64(SeedSequence(seed)))``, the generator gymnasium's
``np_random(seed)`` builds, and every native env draws what its gymnasium twin draws, in the same
order. So ``fastbatch.make(id, n).reset(seed=s)`` equals ``SyncVectorEnv.reset(seed=s)`` and
whole seeded episodes are identical, bit for bit: across autoresets (each env's generator runs
on, as gymnasium's does), in both autoreset modes and for any number of workers. An unseeded env
gets 128 unpredictable bits, as numpy's ``SeedSequence()`` draws, and keeps them as its seed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import fastbatch
from fastbatch import _core
from tests.native_builds import built_plugin

ROOT = Path(__file__).resolve().parents[1]
MODES = (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP)
# Seeds of every width numpy's SeedSequence distinguishes: one, two and more 32-bit words.
EDGE_SEEDS = [0, 1, 2, 41, 2**31 - 1, 2**32 - 1, 2**32, 2**53 + 7, 2**63, 2**64 - 1]
WIDE_SEEDS = [2**64, 2**96 + 11, 2**128 - 1, 2**200 + 3]
_DRAWN = np.random.default_rng(0)
RANDOM_SEEDS = [
    int(s) >> int(b) for s, b in zip(_DRAWN.integers(0, 2**63, 40), _DRAWN.integers(0, 63, 40))
]
NEEDS_MUJOCO = pytest.mark.skipif(
    importlib.util.find_spec("mujoco") is None, reason="needs mujoco (the mujoco extra)"
)


# ---------------------------------------------------------------------------- the generator
@pytest.mark.parametrize("seed", EDGE_SEEDS + WIDE_SEEDS + RANDOM_SEEDS)
def test_draws_match_numpy(seed):
    generator = np.random.default_rng(seed)
    np.testing.assert_array_equal(
        _core._rng_draws(seed, "raw", 16), generator.bit_generator.random_raw(16)
    )
    generator = np.random.default_rng(seed)
    np.testing.assert_array_equal(_core._rng_draws(seed, "uniform", 64), generator.random(64))
    generator = np.random.default_rng(seed)
    np.testing.assert_array_equal(
        _core._rng_draws(seed, "normal", 512), generator.standard_normal(512)
    )


@pytest.mark.parametrize("seed", [3, 2**64 + 5])
def test_standard_normal_matches_numpy_on_its_rare_paths(seed):
    # 1% of draws take the wedge test and 1 in 4000 the tail beyond R (3.654): enough of both.
    draws = _core._rng_draws(seed, "normal", 400_000)
    np.testing.assert_array_equal(draws, np.random.default_rng(seed).standard_normal(400_000))
    assert (np.abs(draws) > 3.6541528853610088).sum() > 20


@pytest.mark.parametrize("stream", [0, 1, 7, 2**32, 2**40 + 3])
def test_streams_are_numpy_spawn_keys(stream):
    sequence = np.random.SeedSequence(12, spawn_key=(stream,))
    expected = np.random.PCG64(sequence).random_raw(8)
    np.testing.assert_array_equal(_core._rng_draws(12, "raw", 8, stream), expected)


# (low, high) of integers(low, high): spans of one value (no draw), 32-bit spans (Lemire on
# buffered halves; 2**31 + 1 rejects half its draws), exactly 2**32 values (a bare 32-bit half),
# and 64-bit spans (2**62 + 1 either side rejects half).
INTEGER_RANGES = [
    (0, 1), (0, 2), (0, 3), (0, 7), (0, 10), (0, 1000), (0, 2**31), (0, 2**31 + 1),
    (0, 2**32 - 1), (0, 2**32), (0, 2**32 + 1), (0, 2**33), (0, 2**62), (0, 2**63 - 1),
    (-5, 5), (-7, -2), (-1, 0), (-(2**31), 2**31), (-(2**31), 2**31 + 1), (-(2**63), 0),
    (-(2**62), 2**62 + 1), (2**62, 2**63 - 1), (-(2**63), 2**63 - 1), (-(2**63), -(2**63) + 1),
]  # fmt: skip


@pytest.mark.parametrize("low, high", INTEGER_RANGES)
@pytest.mark.parametrize("seed", [0, 77, 2**64 + 5])
def test_integers_match_numpy(seed, low, high):
    expected = np.random.default_rng(seed).integers(low, high, size=3000)
    assert expected.dtype == np.int64
    draws = _core._rng_draws(seed, "integers", 3000, low=low, high=high)
    assert draws.dtype == np.int64
    np.testing.assert_array_equal(draws, expected)
    generator = np.random.default_rng(seed)  # scalar draws are the array's elements in order
    scalars = [generator.integers(high) if low == 0 else generator.integers(low, high)]
    scalars += [generator.integers(low, high) for _ in range(49)]
    np.testing.assert_array_equal(draws[:50], scalars)


def numpy_draw(generator: np.random.Generator, draw: tuple) -> int | float:
    """What numpy gives for one `_rng_sequence` draw ("choice", n: numpy's choice(n), which
    fastbatch draws as ("integers", 0, n))."""
    kind, *args = draw
    if kind == "raw":
        return int(generator.bit_generator.random_raw())
    if kind == "uniform":
        return float(generator.uniform(*args) if args else generator.random())
    if kind == "normal":
        return float(generator.standard_normal())
    if kind == "choice":
        return int(generator.choice(*args))
    return int(generator.integers(*args))


def as_fastbatch(draw: tuple) -> tuple:
    return ("integers", 0, draw[1]) if draw[0] == "choice" else draw


@pytest.mark.parametrize("seed", [0, 5, 2**70 + 1])
def test_mixed_draws_keep_numpys_buffered_half(seed):
    # A 32-bit span takes the low half of an output and leaves the high half for the next 32-bit
    # span, whatever 64-bit draws (uniform, normal, raw, wide spans) come between.
    plan = [
        ("integers", 7), ("uniform",), ("integers", 7), ("normal",), ("integers", 3),
        ("integers", 2**40), ("integers", -3, 9), ("raw",), ("integers", 2**32),
        ("uniform", -2.0, 5.0), ("integers", 1), ("integers", 5), ("choice", 6), ("choice", 2**40),
    ]  # fmt: skip
    planner = np.random.default_rng(seed)
    kinds = [("uniform",), ("normal",), ("raw",), ("uniform", -1.0, 1.0)]
    for _ in range(1500):
        pick = int(planner.integers(len(kinds) + 2 * len(INTEGER_RANGES)))
        if pick < len(kinds):
            plan.append(kinds[pick])
        else:
            low, high = INTEGER_RANGES[(pick - len(kinds)) // 2]
            wide = low != 0 or pick % 2 == 0
            plan.append(("integers", low, high) if wide else ("choice", high))
    generator = np.random.default_rng(seed)
    expected = [numpy_draw(generator, draw) for draw in plan]
    assert _core._rng_sequence(seed, [as_fastbatch(draw) for draw in plan]) == expected


@pytest.mark.parametrize("n", [1, 2, 5, 7, 2**31 + 1, 2**32, 2**40])
def test_choice_of_an_int_is_integers_from_zero(n):
    generator = np.random.default_rng(9)
    scalars = [generator.choice(n) for _ in range(200)]
    draws = _core._rng_draws(9, "integers", 400, high=n)
    np.testing.assert_array_equal(draws[:200], scalars)
    np.testing.assert_array_equal(draws[200:], generator.choice(n, size=200))


def test_empty_integer_ranges_are_refused_as_numpy_refuses_them():
    for low, high, message in ((0, 0, "high <= 0"), (5, 5, "low >= high"), (3, -3, "low >= high")):
        with pytest.raises(ValueError, match=message):
            np.random.default_rng(0).integers(low, high)
        with pytest.raises(ValueError, match=message):
            _core._rng_sequence(0, [("integers", high) if low == 0 else ("integers", low, high)])
    with pytest.raises(ValueError, match="high is given with kind 'integers'"):
        _core._rng_draws(0, "integers", 1)


def test_ziggurat_tables_are_what_their_generator_computes():
    script = ROOT / "tools" / "ziggurat_tables.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_negative_seeds_are_refused_and_seed_no_env():
    env = fastbatch.make("CartPole-v1", 2, seed=4)
    with pytest.raises(ValueError, match="non-negative"):
        env.unwrapped._pool.seed([9, -1])
    assert env.unwrapped._pool.np_random_seeds() == [4, 5]


# ---------------------------------------------------------------------------- the pool's states
@pytest.fixture(scope="module")
def rng_plugins(tmp_path_factory) -> Path:
    """tests/plugins/rng_plugins.cc built against the current headers and registered."""
    library = built_plugin(
        ROOT / "tests" / "plugins" / "rng_plugins.cc",
        tmp_path_factory.mktemp("rng_plugins") / "librng_plugins.so",
    )
    ids = fastbatch.register_native_env(None, library, replace=True)
    assert ids == ["RngDraws-v0", "StateWordsV4-v0"]
    return library


def test_the_buffered_half_lives_in_each_envs_pool_state(rng_plugins):
    # Each reset and step draws integers(7), random(), integers(-3, 2**33): the half that
    # integers(7) leaves is taken by the next reset or step, through the pool's state.
    assert _core._load_plugin(str(rng_plugins))[0].abi_version == _core.ABI_VERSION == 7
    env = fastbatch.make("RngDraws-v0", 3, seed=10, num_workers=2)
    rows = [env.reset()[0]] + [env.step(np.zeros(3, np.int64))[0] for _ in range(3)]
    rows += [env.reset()[0], env.reset(seed=[None, 4, None])[0]]
    for i in range(3):
        generator = np.random.default_rng(10 + i)
        expected = []
        for row in range(len(rows)):
            if row == 5 and i == 1:
                generator = np.random.default_rng(4)
            expected.append(
                [generator.integers(7), generator.random(), generator.integers(-3, 2**33)]
            )
        np.testing.assert_array_equal(np.array(rows)[:, i], expected, err_msg=f"env {i}")
    env.close()


def test_a_version_4_table_gets_32_byte_pcg64_states(rng_plugins):
    assert _core._load_plugin(str(rng_plugins))[1].abi_version == 4
    env = fastbatch.make("StateWordsV4-v0", 3, seed=5)
    obs, _ = env.reset()
    for i in range(3):
        state = np.random.PCG64(5 + i).state["state"]
        words = [state["state"], state["state"] >> 64, state["inc"], state["inc"] >> 64]
        expected = np.array([w & (2**64 - 1) for w in words], np.uint64)
        np.testing.assert_array_equal(obs[i].view(np.uint64), expected, err_msg=f"env {i}")
    env.close()


# ---------------------------------------------------------------------------- classic control
# rl-zoo's partially observed envs: gymnasium's full env with only these columns observed.
NO_VELOCITY = {
    "CartPoleNoVel-v1": ("CartPole-v1", [0, 2]),
    "PendulumNoVel-v1": ("Pendulum-v1", [0, 1]),
}


def reference_env(env_id, **kwargs):
    """gymnasium's env for a native id (the full env, observed through a column mask, for a
    NoVel id)."""
    if env_id not in NO_VELOCITY:
        return gymnasium.make(env_id, **kwargs)
    full, columns = NO_VELOCITY[env_id]
    env = gymnasium.make(full, **kwargs)
    space = gymnasium.spaces.Box(
        env.observation_space.low[columns], env.observation_space.high[columns], dtype=np.float32
    )
    return gymnasium.wrappers.TransformObservation(env, lambda obs: obs[columns], space)


def pair(env_id, n, mode=AutoresetMode.NEXT_STEP, workers=1, limit=None, **kwargs):
    """A native batch and gymnasium's SyncVectorEnv of the same envs."""
    native = fastbatch.make(
        env_id, n, num_workers=workers, autoreset_mode=mode, max_episode_steps=limit, **kwargs
    )
    sync = SyncVectorEnv(
        [lambda: reference_env(env_id, max_episode_steps=limit, **kwargs)] * n,
        autoreset_mode=mode,
    )
    return native, sync


def assert_same_step(native, sync, where):
    obs, reward, terminated, truncated, info = native
    g_obs, g_reward, g_terminated, g_truncated, g_info = sync
    np.testing.assert_array_equal(obs, g_obs, err_msg=where)
    # fastbatch's rewards are float32: the float32 of gymnasium's reward, exactly.
    np.testing.assert_array_equal(reward, g_reward.astype(np.float32), err_msg=where)
    np.testing.assert_array_equal(terminated, g_terminated, err_msg=where)
    np.testing.assert_array_equal(truncated, g_truncated, err_msg=where)
    if "_final_obs" in g_info:  # SAME_STEP: the last observation of each ended episode
        np.testing.assert_array_equal(info["_final_obs"], g_info["_final_obs"], err_msg=where)
        for i in np.flatnonzero(g_info["_final_obs"]):
            np.testing.assert_array_equal(info["final_obs"][i], g_info["final_obs"][i], where)


def run_episodes(native, sync, seed, steps) -> int:
    """Resets both with `seed`, steps both with the same random actions, compares every step;
    returns the number of episodes that ended."""
    obs, _ = native.reset(seed=seed)
    g_obs, _ = sync.reset(seed=seed)
    np.testing.assert_array_equal(obs, g_obs)
    sync.action_space.seed(seed)
    ended = 0
    for t in range(steps):
        actions = sync.action_space.sample()
        result = native.step(actions)
        assert_same_step(result, sync.step(actions), f"step {t}")
        ended += int(np.sum(result[2] | result[3]))
    native.close()
    sync.close()
    return ended


@pytest.mark.parametrize("env_id", fastbatch.list_envs())
def test_reset_seed_matches_sync_vector_env(env_id):
    native, sync = pair(env_id, 5)
    for seed in (0, 123, 2**40 + 1, 2**64 - 5):
        obs, info = native.reset(seed=seed)
        g_obs, g_info = sync.reset(seed=seed)
        np.testing.assert_array_equal(obs, g_obs, err_msg=f"seed {seed}")
        assert info == g_info == {}
    # Unseeded resets continue each env's generator, as gymnasium's do.
    for _ in range(3):
        np.testing.assert_array_equal(native.reset()[0], sync.reset()[0])
    assert native.unwrapped._pool.np_random_seeds() == [2**64 - 5 + i for i in range(5)]


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("env_id", fastbatch.list_envs())
def test_seeded_episodes_match_sync_vector_env(env_id, mode, workers):
    # A short time limit gives every env several episodes (random actions rarely finish
    # MountainCar, Acrobot or Pendulum); CartPole also terminates on its own.
    n = 4
    native, sync = pair(env_id, n, mode, workers, limit=40)
    assert run_episodes(native, sync, seed=2024, steps=250) >= 4 * n


def test_seed_lists_match_sync_vector_env():
    native, sync = pair("CartPole-v1", 3)
    for seeds in ([5, 2**63, 0], [None, 9, None], None, [1, None, 2]):
        np.testing.assert_array_equal(native.reset(seed=seeds)[0], sync.reset(seed=seeds)[0])
        actions = np.array([1, 0, 1])
        assert_same_step(native.step(actions), sync.step(actions), f"after {seeds}")
    assert native.unwrapped._pool.np_random_seeds() == [1, 9, 2]


def test_unseeded_envs_differ_and_keep_their_entropy_as_seed():
    first, second = fastbatch.make("CartPole-v1", 2), fastbatch.make("CartPole-v1", 2)
    obs = first.reset()[0]
    assert not np.array_equal(obs[0], obs[1])
    assert not np.array_equal(obs, second.reset()[0])
    seeds = first.unwrapped._pool.np_random_seeds() + second.unwrapped._pool.np_random_seeds()
    assert len(set(seeds)) == 4 and all(0 <= s < 2**128 for s in seeds)
    # The entropy is gymnasium's np_random_seed: seeding with it replays the stream.
    twin = fastbatch.make("CartPole-v1", 2)
    twin.unwrapped._pool.seed(seeds[:2])
    np.testing.assert_array_equal(twin.reset()[0], obs)
    np.testing.assert_array_equal(gymnasium.make("CartPole-v1").reset(seed=seeds[1])[0], obs[1])


def test_make_seed_matches_a_seeded_first_reset():
    native = fastbatch.make("Pendulum-v1", 3, seed=17)
    sync = SyncVectorEnv([lambda: gymnasium.make("Pendulum-v1")] * 3)
    np.testing.assert_array_equal(native.reset()[0], sync.reset(seed=17)[0])


# ---------------------------------------------------------------------------- MuJoCo
def mujoco_ids() -> list[str]:
    if importlib.util.find_spec("mujoco") is None:
        return []
    from fastbatch import mujoco

    return list(mujoco.ENV_IDS)


@NEEDS_MUJOCO
@pytest.mark.parametrize("env_id", mujoco_ids())
def test_mujoco_resets_match_gymnasium_bit_for_bit(env_id):
    native, sync = pair(env_id, 3)
    obs, _ = native.reset(seed=8)
    np.testing.assert_array_equal(obs, sync.reset(seed=8)[0])
    for _ in range(2):  # the generators run on
        np.testing.assert_array_equal(native.reset()[0], sync.reset()[0])
    for i, env in enumerate(sync.envs):
        state = np.concatenate([env.unwrapped.data.qpos, env.unwrapped.data.qvel])
        np.testing.assert_array_equal(native.get_env_state(i), state)
    native.close()
    sync.close()


@NEEDS_MUJOCO
@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize(
    "env_id",  # normal noise (HalfCheetah, InvertedDoublePendulum), terminations, rejection loops
    ["HalfCheetah-v5", "Hopper-v5", "InvertedDoublePendulum-v5", "Reacher-v5", "Pusher-v5"],
)
def test_mujoco_seeded_episodes_match_sync_vector_env(env_id, mode):
    native, sync = pair(env_id, 3, mode, workers=2, limit=30)
    assert run_episodes(native, sync, seed=31, steps=100) >= 3 * 3
