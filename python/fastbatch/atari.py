"""Atari's standard preprocessing for the process backend: ``fastbatch.make("ALE/Breakout-v5",
8, frameskip=1, repeat_action_probability=0.0, frame_stack=4, wrappers=["fastbatch.atari:
preprocess"])`` steps gymnasium's ALE env under gymnasium's ``AtariPreprocessing`` in each
worker, stacked 4 deep: the `atari` PPO preset (ppo/presets.py).

The frames are those of CleanRL's ``ppo_atari.py``: up to 30 no-op actions at reset, each action
repeated 4 frames with the last two max-pooled, 84x84 grayscale (OpenCV's INTER_AREA resize),
uint8, 4 stacked, and FIRE pressed at reset in games that need it to start (`FireOnReset`).
Departures from CleanRL, kept so that the logged return is the game's score: an episode is a
whole game (no end at each life loss, so no FIRE after one: the policy learns to press it) and
rewards are not clipped (the trainer's reward normalisation scales them).
The base env must not skip frames itself (``frameskip=1``): AtariPreprocessing refuses it.

ALE is GPL-2.0 and is not part of fastbatch: ``pip install "fastbatch[atari]"`` installs the
user's ale-py (with its ROMs) and OpenCV.
"""

from __future__ import annotations

from typing import Any

import gymnasium

__all__ = ["FRAME_SKIP", "NOOP_MAX", "SCREEN_SIZE", "FireOnReset", "preprocess"]

NOOP_MAX = 30
FRAME_SKIP = 4
SCREEN_SIZE = 84


class FireOnReset(gymnasium.Wrapper):
    """Presses FIRE, then the next action (UP in most games), after every reset, in games whose
    action 1 is FIRE (Breakout and others that wait for it to serve); other games pass through.
    Should a game end during those two steps, it is reset again."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        meanings = env.unwrapped.get_action_meanings()
        self.presses = (1, 2) if len(meanings) >= 3 and meanings[1] == "FIRE" else ()

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        for action in self.presses:
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset()
        return obs, info


def preprocess(env: Any) -> Any:
    """`env` (an ``ALE/...`` env made with ``frameskip=1``) inside ``AtariPreprocessing`` with
    the settings above, then `FireOnReset`; stack it with ``frame_stack=4``."""
    from gymnasium.wrappers import AtariPreprocessing

    env = AtariPreprocessing(
        env,
        noop_max=NOOP_MAX,
        frame_skip=FRAME_SKIP,
        screen_size=SCREEN_SIZE,
        terminal_on_life_loss=False,
        grayscale_obs=True,
        scale_obs=False,
    )
    return FireOnReset(env)
