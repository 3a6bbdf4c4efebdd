"""Small gymnasium envs for tests/test_process.py; shipped to worker processes by value."""

from __future__ import annotations

import ctypes
import os
import time

import gymnasium
import numpy as np


class ScriptedEnv(gymnasium.Env):
    """Counts steps; the action picks a behaviour: 0 plain, 1 info, 2 raise, 3 os._exit,
    4 segfault, 5 sleep `nap` seconds. Terminates after `length` steps."""

    def __init__(self, length: int = 5, nap: float = 0.3):
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gymnasium.spaces.Discrete(6)
        self.length = length
        self.nap = nap
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0, self.np_random.random()], dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        info = {}
        if action == 1:
            info = {"bonus": float(self.t), "tag": "hello"}
        elif action == 2:
            raise ValueError(f"scripted failure at step {self.t}")
        elif action == 3:
            os._exit(3)
        elif action == 4:
            ctypes.string_at(0)
        elif action == 5:
            time.sleep(self.nap)
        obs = np.array([self.t, action], dtype=np.float32)
        return obs, float(action), self.t >= self.length, False, info


class LegacyBox:
    """Duck-typed stand-in for a legacy `gym.spaces.Box` (not a gymnasium space)."""

    def __init__(self, low, high, shape, dtype):
        self.low, self.high, self.shape, self.dtype = np.full(shape, low), np.full(shape, high), shape, dtype


class LegacyDiscrete:
    def __init__(self, n):
        self.n = n


LegacyBox.__name__ = "Box"
LegacyDiscrete.__name__ = "Discrete"


class LegacyEnv:
    """An env with the gym 0.26 API and non-gymnasium spaces."""

    def __init__(self):
        self.observation_space = LegacyBox(-1.0, 1.0, (3,), np.float32)
        self.action_space = LegacyDiscrete(2)

    def reset(self, *, seed=None, options=None):
        return np.zeros(3, dtype=np.float32), {}

    def step(self, action):
        return np.full(3, action, dtype=np.float32), 1.0, False, False, {}

    def close(self):
        pass


class NumericInfoEnv(gymnasium.Env):
    """Returns numeric infos of several types on most steps (none every third step; a vector
    value every fifth), so the shared-memory info path and its fast path both run."""

    def __init__(self, length: int = 7):
        self.observation_space = gymnasium.spaces.Box(-np.inf, np.inf, (1,), np.float64)
        self.action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.length = length
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = int(self.np_random.integers(3))
        return np.array([self.t], dtype=np.float64), {"start": self.t}

    def step(self, action):
        self.t += 1
        info = {}
        if self.t % 3:
            info = {"x": np.float64(self.t * 0.5), "n": self.t, "f32": np.float32(action[0]), "flag": self.t % 2 == 0}
        if self.t % 5 == 0:
            info["vec"] = np.arange(2) * self.t
        return np.array([self.t], dtype=np.float64), float(action[0]), self.t >= self.length, False, info


class RestartOnceEnv(ScriptedEnv):
    """A ScriptedEnv whose construction fails once `marker` exists (written by the first
    construction): a worker restarted with it cannot rebuild its envs."""

    def __init__(self, marker: str):
        if os.path.exists(marker):
            raise RuntimeError("this env can be built only once")
        with open(marker, "a"):
            pass
        super().__init__(5)


class CrashOnResetEnv(ScriptedEnv):
    """A ScriptedEnv that kills its process in reset() once, when `marker` exists."""

    def __init__(self, marker: str, length: int):
        super().__init__(length)
        self.marker = marker

    def reset(self, *, seed=None, options=None):
        if os.path.exists(self.marker):
            os.remove(self.marker)
            os._exit(7)
        return super().reset(seed=seed, options=options)
