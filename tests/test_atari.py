"""The `atari` preset's env stack (fastbatch.atari): ALE through the process backend under
gymnasium's AtariPreprocessing, FIRE at reset and a 4-frame stack, equal to the same stack built
by hand; its video env wrapped alike; one short training run end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

import gymnasium
from gymnasium.wrappers import FrameStackObservation

import fastbatch
from fastbatch.atari import FireOnReset, preprocess
from fastbatch.ppo.presets import PRESETS

PRESET = PRESETS["atari"]
KWARGS = dict(PRESET.env_kwargs)


def by_hand(env_id: str, seed: int, actions):
    """The preset's stack built in this process: its frames after reset and each action."""
    base = gymnasium.make(env_id, frameskip=1, repeat_action_probability=0.0)
    env = FrameStackObservation(preprocess(base), 4)
    obs, _ = env.reset(seed=seed)
    frames, rewards = [obs], []
    for a in actions:
        obs, reward, terminated, truncated, _ = env.step(a)
        frames.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            break
    env.close()
    return np.stack(frames), np.array(rewards)


@pytest.mark.parametrize("env_id", ["ALE/Breakout-v5", "ALE/Pong-v5"])
def test_the_process_backend_steps_the_same_frames_as_the_stack_by_hand(env_id):
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 4, size=(60, 2))
    env = fastbatch.make(env_id, 2, backend="process", seed=11, **KWARGS)
    try:
        assert env.single_observation_space == gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)
        obs, _ = env.reset()
        frames, rewards = [obs], []
        for a in actions:
            obs, reward, *_ = env.step(a)
            frames.append(obs)
            rewards.append(reward)
    finally:
        env.close()
    frames, rewards = np.stack(frames), np.stack(rewards)
    for i in range(2):
        want_frames, want_rewards = by_hand(env_id, 11 + i, actions[:, i])
        np.testing.assert_array_equal(frames[: len(want_frames), i], want_frames)
        np.testing.assert_array_equal(rewards[: len(want_rewards), i], want_rewards)
    assert frames[-1].any()  # a screen, not zeros


def test_fire_is_pressed_at_reset_only_in_games_that_serve_with_it():
    breakout = FireOnReset(gymnasium.make("ALE/Breakout-v5", frameskip=1))
    freeway = FireOnReset(gymnasium.make("ALE/Freeway-v5", frameskip=1))  # NOOP, UP, DOWN
    try:
        assert breakout.presses == (1, 2)
        assert freeway.presses == ()
        breakout.reset(seed=0)
        # two frames pressed: the ALE counts them in this episode
        assert breakout.unwrapped.ale.getEpisodeFrameNumber() == 2
    finally:
        breakout.close()
        freeway.close()


def test_the_video_env_is_wrapped_like_the_training_envs():
    from fastbatch.ppo.video import _rendering_env

    env = _rendering_env(PRESET.env_id, KWARGS, PRESET.backend)
    try:
        obs, _ = env.reset(seed=0)
        assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
        assert env.render().shape == (210, 160, 3)  # the game's own screen is what is recorded
    finally:
        env.close()


def test_the_atari_preset_trains_and_exports_a_uint8_policy(tmp_path):
    tf = pytest.importorskip("tensorflow")
    from fastbatch.ppo import train
    from fastbatch.ppo.export import load_policy

    config = PRESET.replace(
        total_steps=1024,
        epochs=1,
        eval_episodes=1,
        env_kwargs={**KWARGS, "max_episode_steps": 300},
    )
    result = train(config, tmp_path, progress=False)
    assert result["env_steps"] == 1024 and np.isfinite(result["eval_return"])
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["env_kwargs"]["wrappers"] == ["fastbatch.atari:preprocess"]
    player = load_policy(tmp_path / "policy")
    actions = player(np.zeros((3, 4, 84, 84), np.uint8), np.ones(3, bool))
    assert actions.shape == (3,) and tf.as_dtype(actions.dtype).is_integer
