"""Shared helpers for the fastbatch tests."""

from __future__ import annotations

import gymnasium
import numpy as np


class CounterEnv(gymnasium.Env):
    """Python twin of the native `_TestCounter-v0` env (see src/cpp/envs/test_envs.h)."""

    def __init__(self, terminate_at_step: int = 0):
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(4)
        self.terminate_at_step = terminate_at_step
        self.steps = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action):
        self.steps += 1
        action = int(action)
        obs = np.array([self.steps, action], dtype=np.float32)
        terminated = action == 3 or (0 < self.terminate_at_step <= self.steps)
        return obs, float(action), terminated, False, {}
