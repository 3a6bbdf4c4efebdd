"""The docs site's recipes for other libraries (docs/clients.md, "Using fastbatch from other
libraries"), run as written: each block is read from the page by its marker, so the page cannot
drift from what runs. gymnasium's vector wrappers; CleanRL's gymnasium 1.x rollout loop, whose logged episodes
must equal those of the SyncVectorEnv it replaces; Stable-Baselines3."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

import fastbatch
from tests.envs import OneNativeEnv

PAGE = Path(__file__).resolve().parents[1] / "docs" / "clients.md"


def page_block(name: str) -> str:
    """The python block after ``<!-- tests/test_clients.py: name -->`` in docs/clients.md."""
    match = re.search(
        rf"<!-- tests/test_clients\.py: {re.escape(name)} -->\n```python\n(.*?)```",
        PAGE.read_text(),
        re.DOTALL,
    )
    assert match, f"docs/clients.md has no block marked {name!r}"
    return match.group(1)


# ---------------------------------------------------------------------------- gymnasium
def test_the_gymnasium_wrapper_recipe_records_the_envs_own_returns():
    namespace: dict = {}
    exec(page_block("gymnasium-wrappers"), namespace)
    envs = namespace["envs"]
    twin = fastbatch.make("Pendulum-v1", num_envs=8, seed=0, stats_key="episode")  # C++'s
    envs.reset()
    twin.reset()
    actions = np.random.default_rng(0).uniform(-2.0, 2.0, size=(450, 8, 1)).astype(np.float32)
    episodes = 0
    for a in actions:
        *_, info = envs.step(a)
        *_, twin_info = twin.step(a)
        assert ("episode" in info) == ("episode" in twin_info)
        if "episode" in info:
            done = info["_episode"]
            np.testing.assert_array_equal(done, twin_info["_episode"])
            np.testing.assert_array_equal(
                info["episode"]["r"][done], twin_info["episode"]["r"][done]
            )
            np.testing.assert_array_equal(
                info["episode"]["l"][done], twin_info["episode"]["l"][done]
            )
            episodes += int(done.sum())
    assert episodes == 16  # Pendulum's episodes last 200 steps
    envs.close()
    twin.close()


def test_what_the_gymnasium_section_says_the_wrappers_refuse():
    own_stats = fastbatch.make("CartPole-v1", 2, seed=0, stats_key="episode")
    envs = gym.wrappers.vector.RecordEpisodeStatistics(own_stats)
    envs.reset()
    with pytest.raises(ValueError, match="Attempted to add episode stats with key 'episode'"):
        for _ in range(500):
            envs.step(np.zeros(2, np.int64))
    envs.close()
    same_step = fastbatch.make("Pendulum-v1", 2, autoreset_mode="same_step")
    with pytest.raises(ValueError, match="NEXT_STEP"):
        gym.wrappers.vector.NormalizeObservation(same_step)
    same_step.close()


# ---------------------------------------------------------------------------- CleanRL
# The parts of CleanRL's gymnasium 1.x ppo.py that touch the env (branch gymnasium-v1.0 of
# vwxyzjn/cleanrl): make_env without video, the SyncVectorEnv line and the logging lines. A
# recipe replaces some of them; the rollout loop around them is CleanRL's, with recorded
# actions in place of the policy.
def make_env(env_id, idx, capture_video, run_name):
    def thunk():
        env = gym.make(env_id)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        return env

    return thunk


def make_native_env(env_id, idx, capture_video, run_name):
    """make_env over the native env itself, so that SyncVectorEnv replays a native batch."""

    def thunk():
        env = OneNativeEnv(env_id)
        env = gym.wrappers.RecordEpisodeStatistics(env)
        if isinstance(env.action_space, gym.spaces.Box):  # as ppo_continuous_action.py
            env = gym.wrappers.ClipAction(env)
            env = gym.wrappers.NormalizeReward(env, gamma=0.99)
            env = gym.wrappers.TransformReward(env, lambda reward: np.clip(reward, -10, 10))
        return env

    return thunk


CLEANRL_ENVS = """\
    envs = gym.vector.SyncVectorEnv(
        [make_env(args.env_id, i, args.capture_video, run_name) for i in range(args.num_envs)],
        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP,
    )
"""
CLEANRL_LOGGING = """\
            if "final_info" in infos:
                episodes_over = np.nonzero(infos["final_info"]["_episode"])[0]
                episodic_returns = infos["final_info"]["episode"]["r"][episodes_over]
                episodic_lengths = infos["final_info"]["episode"]["l"][episodes_over]
"""
CLEANRL_LOOP = """\
def main(args, make_env, run_name, recorded_actions, logged):
    global_step = 0
{envs}
    next_obs, _ = envs.reset(seed=args.seed)
    for iteration in range(1, args.num_iterations + 1):
        for step in range(0, args.num_steps):
            global_step += args.num_envs
            action = recorded_actions[(iteration - 1) * args.num_steps + step]
            next_obs, reward, terminations, truncations, infos = envs.step(action)
            next_done = np.logical_or(terminations, truncations)

{logging}
                for episodic_return, episodic_length in zip(episodic_returns, episodic_lengths):
                    logged.append((global_step, float(episodic_return), int(episodic_length)))
    envs.close()
"""


def run_cleanrl(envs: str, logging: str, env_id: str, make) -> list[tuple]:
    """CleanRL's rollout loop with these env and logging lines; returns what it logged."""
    args = SimpleNamespace(
        env_id=env_id, num_envs=4, num_steps=128, num_iterations=3, seed=1, capture_video=False
    )
    args.gamma = 0.99
    space = gym.make(env_id).action_space
    rng = np.random.default_rng(0)
    shape = (args.num_iterations * args.num_steps, args.num_envs)
    if isinstance(space, gym.spaces.Discrete):
        actions = rng.integers(0, space.n, size=shape)
    else:  # beyond the bounds: ClipAction has work to do
        actions = rng.uniform(-3.0, 3.0, size=(*shape, *space.shape)).astype(np.float32)
    namespace = {"gym": gym, "np": np, "fastbatch": fastbatch}
    exec(CLEANRL_LOOP.format(envs=envs.rstrip("\n"), logging=logging.rstrip("\n")), namespace)
    logged: list[tuple] = []
    namespace["main"](args, make, "test-run", actions, logged)
    return logged


def test_cleanrl_over_the_process_backend_logs_what_sync_vector_env_logged():
    expected = run_cleanrl(CLEANRL_ENVS, CLEANRL_LOGGING, "CartPole-v1", make_env)
    logged = run_cleanrl(page_block("cleanrl-process"), CLEANRL_LOGGING, "CartPole-v1", make_env)
    assert len(expected) > 30 and logged == expected


STATS_OFF_ENVS = """\
    envs = gym.wrappers.vector.RecordEpisodeStatistics(
        fastbatch.make(args.env_id, args.num_envs, autoreset_mode="same_step")  # defaults
    )
"""


@pytest.mark.parametrize("setup", ["fastbatch statistics", "gymnasium RecordEpisodeStatistics"])
def test_cleanrl_over_a_native_env_logs_what_sync_vector_env_logged(setup):
    envs = page_block("cleanrl-native-envs") if setup == "fastbatch statistics" else STATS_OFF_ENVS
    for env_id in ("CartPole-v1", "MountainCar-v0"):  # terminations; 200-step truncations
        expected = run_cleanrl(CLEANRL_ENVS, CLEANRL_LOGGING, env_id, make_native_env)
        logged = run_cleanrl(envs, page_block("cleanrl-native-logging"), env_id, make_env)
        assert len(expected) >= 4 and logged == expected, env_id


def test_cleanrl_continuous_over_a_native_env_logs_what_sync_vector_env_logged():
    expected = run_cleanrl(CLEANRL_ENVS, CLEANRL_LOGGING, "Pendulum-v1", make_native_env)
    logged = run_cleanrl(
        page_block("cleanrl-native-continuous"),
        page_block("cleanrl-native-logging"),
        "Pendulum-v1",
        make_env,
    )
    assert len(expected) == 4 and logged == expected  # one 200-step episode per env


def test_the_unchanged_cleanrl_lines_over_a_native_env_crash_as_the_page_says():
    with pytest.raises(KeyError, match="_episode"):
        run_cleanrl(page_block("cleanrl-native-envs"), CLEANRL_LOGGING, "CartPole-v1", make_env)


# ---------------------------------------------------------------------------- SB3
def test_the_sb3_recipe_trains():
    pytest.importorskip("stable_baselines3", reason='needs pip install "fastbatch[sb3]"')
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as in test_sb3.py: a busy machine and torch's thread pool
    namespace: dict = {}
    try:
        exec(page_block("sb3"), namespace)
    finally:
        torch.set_num_threads(threads)
    model, env = namespace["model"], namespace["env"]
    assert model.num_timesteps >= 10_000 and len(model.ep_info_buffer) > 0
    env.close()


def test_every_marked_page_block_has_a_test():
    names = set(re.findall(r"<!-- tests/test_clients\.py: ([\w-]+) -->", PAGE.read_text()))
    source = textwrap.dedent(Path(__file__).read_text())
    assert names and all(f'page_block("{name}")' in source for name in names), names
