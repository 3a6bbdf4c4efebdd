"""fastbatch.sb3.SB3VecEnv against Stable-Baselines3's own DummyVecEnv over Monitor-wrapped envs:
the same seeds and actions give identical observations, rewards, dones, infos, terminal
observations, reset infos and episode r/l, on both backends and both autoreset modes it takes;
VecNormalize, VecMonitor and evaluate_policy on top; SB3 PPO trains on native CartPole."""

from __future__ import annotations

import importlib
import sys
import warnings

import gymnasium
import numpy as np
import pytest

import fastbatch


def test_importing_without_sb3_names_the_extra(monkeypatch):
    for name in [m for m in sys.modules if m.split(".")[0] == "stable_baselines3"] + [
        "stable_baselines3"
    ]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    monkeypatch.delitem(sys.modules, "fastbatch.sb3", raising=False)
    with pytest.raises(ImportError, match=r'pip install "fastbatch\[sb3\]"'):
        importlib.import_module("fastbatch.sb3")


sb3 = pytest.importorskip("stable_baselines3", reason='needs pip install "fastbatch[sb3]"')

from stable_baselines3 import PPO
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor, VecNormalize

from fastbatch.sb3 import SB3VecEnv
from tests.envs import NumericInfoEnv, OneNativeEnv

N = 4
SEED = 5


@pytest.fixture(autouse=True)
def one_torch_thread():
    """PPO's small networks gain nothing from a second torch thread, and on a busy 2-core
    machine a spinning OpenMP pool made the training test 10x slower."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _reference(factory) -> DummyVecEnv:
    return DummyVecEnv([lambda: Monitor(factory()) for _ in range(N)])


def _assert_info_equal(ours: dict, reference: dict) -> None:
    assert set(ours) == set(reference), (ours, reference)
    for key, value in reference.items():
        if key == "episode":  # "t" is a clock
            assert ours[key].keys() == value.keys()
            assert (ours[key]["r"], ours[key]["l"]) == (value["r"], value["l"])
            assert type(ours[key]["r"]) is float and type(ours[key]["l"]) is int
        else:
            np.testing.assert_array_equal(ours[key], value, err_msg=key)
            assert np.asarray(ours[key]).dtype == np.asarray(value).dtype, key


def _actions(space, rng) -> np.ndarray:
    if isinstance(space, gymnasium.spaces.Discrete):
        return rng.integers(0, space.n, size=N)
    return rng.uniform(-1, 1, size=(N, *space.shape)).astype(space.dtype)


def _compare(ours: SB3VecEnv, reference: DummyVecEnv, steps: int) -> dict[str, int]:
    """Steps both with the same seeds and actions; every result must match. Returns how many
    episodes ended by termination and by truncation."""
    rng = np.random.default_rng(0)
    assert ours.seed(SEED) == reference.seed(SEED)
    np.testing.assert_array_equal(ours.reset(), reference.reset())
    for a, b in zip(ours.reset_infos, reference.reset_infos):
        _assert_info_equal(a, b)
    ended = {"terminated": 0, "truncated": 0}
    for _ in range(steps):
        actions = _actions(ours.action_space, rng)
        results, expected = ours.step(actions), reference.step(actions)
        for x, y in zip(results[:3], expected[:3]):
            np.testing.assert_array_equal(x, y)
            assert x.dtype == y.dtype
        for a, b in zip(results[3], expected[3]):
            _assert_info_equal(a, b)
            if "episode" in b:
                ended["truncated" if b["TimeLimit.truncated"] else "terminated"] += 1
        for a, b in zip(ours.reset_infos, reference.reset_infos):
            _assert_info_equal(a, b)
    return ended


@pytest.mark.parametrize("mode", ["same_step", "disabled"])
def test_native_cartpole_matches_dummy_vec_env_over_monitor(mode):
    ours = SB3VecEnv(
        fastbatch.make("CartPole-v1", N, autoreset_mode=mode, max_episode_steps=15, num_workers=2)
    )
    reference = _reference(lambda: OneNativeEnv("CartPole-v1", max_episode_steps=15))
    ended = _compare(ours, reference, 300)
    assert ended["terminated"] > 10 and ended["truncated"] > 10, ended
    ours.close()
    reference.close()


def test_process_backend_matches_dummy_vec_env_on_gymnasium_cartpole():
    ours = SB3VecEnv(
        fastbatch.make(
            "CartPole-v1", N, backend="process", autoreset_mode="same_step", max_episode_steps=15
        )
    )
    reference = _reference(lambda: gymnasium.make("CartPole-v1", max_episode_steps=15))
    ended = _compare(ours, reference, 300)
    assert ended["terminated"] > 10 and ended["truncated"] > 10, ended
    ours.close()
    reference.close()


@pytest.mark.parametrize("mode", ["same_step", "disabled"])
def test_env_infos_and_reset_infos_reach_sb3_as_dummy_vec_env_gives_them(mode):
    def factory():
        return gymnasium.wrappers.TimeLimit(NumericInfoEnv(length=7), max_episode_steps=5)

    ours = SB3VecEnv(fastbatch.make([factory] * N, autoreset_mode=mode, num_workers=2))
    ended = _compare(ours, _reference(factory), 60)
    assert ended["terminated"] > 3 and ended["truncated"] > 3, ended
    ours.close()


def test_vec_normalize_and_vec_monitor_on_top(tmp_path):
    steps = 200
    native = fastbatch.make("CartPole-v1", N, autoreset_mode="same_step", seed=SEED)
    monitored = VecMonitor(SB3VecEnv(native, monitor=False))
    with pytest.warns(UserWarning, match="already wrapped with a `Monitor`"):
        VecMonitor(SB3VecEnv(fastbatch.make("CartPole-v1", N, autoreset_mode="same_step")))
    normalized = VecNormalize(monitored, gamma=0.99)
    normalized.reset()
    rng = np.random.default_rng(1)
    episodes = []
    for _ in range(steps):
        obs, _, done, infos = normalized.step(rng.integers(0, 2, N))
        assert obs.dtype == np.float32 and np.all(np.abs(obs) <= normalized.clip_obs)
        for i in np.flatnonzero(done):
            episodes.append(infos[i]["episode"])
            # VecNormalize normalised the terminal observation; the original is kept
            assert infos[i]["terminal_observation"].shape == (4,)
    assert len(episodes) > 10 and sum(e["l"] for e in episodes) <= steps * N
    normalized.save(tmp_path / "vecnormalize.pkl")  # pickles its statistics, not the env
    loaded = VecNormalize.load(
        tmp_path / "vecnormalize.pkl",
        SB3VecEnv(fastbatch.make("CartPole-v1", N, autoreset_mode="same_step")),
    )
    np.testing.assert_array_equal(loaded.obs_rms.mean, normalized.obs_rms.mean)
    loaded.close()
    normalized.close()


def test_envs_made_to_render_give_sb3_their_images():
    pytest.importorskip("pygame")  # gymnasium's classic-control renderer draws the native state
    made = fastbatch.make("CartPole-v1", 2, render_mode="rgb_array", autoreset_mode="same_step")
    env = SB3VecEnv(made)
    env.reset()
    images = env.get_images()
    assert len(images) == 2 and all(
        i.shape == (400, 600, 3) and i.dtype == np.uint8 for i in images
    )
    assert env.render(mode="rgb_array").shape[-1] == 3  # SB3 tiles them
    env.close()


def test_the_vec_env_api_answers_what_it_can_and_names_what_it_cannot():
    env = SB3VecEnv(fastbatch.make("CartPole-v1", N, autoreset_mode="same_step"))
    assert env.get_attr("render_mode") == [None] * N and env.render_mode is None
    assert env.get_attr("action_space", [1, 2]) == [gymnasium.spaces.Discrete(2)] * 2
    assert env.has_attr("metadata") and not env.has_attr("gravity")
    with pytest.raises(AttributeError, match="cannot read 'gravity' of single fastbatch envs"):
        env.get_attr("gravity")
    with pytest.raises(NotImplementedError, match="pass env parameters to fastbatch.make"):
        env.set_attr("gravity", 3.0)
    with pytest.raises(NotImplementedError, match="cannot call 'compute_reward'"):
        env.env_method("compute_reward")
    with pytest.raises(NotImplementedError, match="do not render images: make them with render"):
        env.get_images()
    assert env.env_is_wrapped(Monitor) == [True] * N
    assert env.env_is_wrapped(gymnasium.wrappers.TimeLimit, indices=0) == [False]
    env.set_options({"low": -0.1})
    with pytest.raises(ValueError, match="take no reset options"):
        env.reset()
    with pytest.raises(RuntimeError, match="step_wait\\(\\) without step_async\\(\\)"):
        env.step_wait()
    env.close()
    for bad, error, match in [
        (dict(), ValueError, 'autoreset_mode="same_step"'),
        (dict(autoreset_mode="same_step", batch_size=2), ValueError, "steps every env at once"),
    ]:
        made = fastbatch.make("CartPole-v1", N, **bad)
        with pytest.raises(error, match=match):
            SB3VecEnv(made)
        made.close()
    with pytest.raises(TypeError, match="wraps a fastbatch env"):
        SB3VecEnv(gymnasium.make_vec("CartPole-v1", N))


def test_sb3_ppo_trains_on_native_cartpole():
    env = SB3VecEnv(fastbatch.make("CartPole-v1", 8, autoreset_mode="same_step"))
    model = PPO("MlpPolicy", env, n_steps=128, batch_size=256, seed=0, device="cpu")
    model.learn(12_288)
    assert model.num_timesteps == 12_288
    assert len(model.ep_info_buffer) > 20
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "not wrapped with a Monitor" warning
        mean, _ = evaluate_policy(model, env, n_eval_episodes=8)
    # Random play scores about 22; measured after these 12 288 steps: 412, 319, 500 (seeds 0-2).
    assert mean > 150, mean
    env.close()
