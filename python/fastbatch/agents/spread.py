"""The Python twin of the native ``Spread-v0`` (src/cpp/envs/spread.h, where the task is
described): a PettingZoo ``ParallelEnv`` computing the same numbers in the same order, so that
``fastbatch.make_agents("fastbatch.agents.spread", n, seed=s)`` (process backend) and
``fastbatch.make_agents("Spread-v0", n, seed=s)`` (C++ pool) step bit for bit alike
(tests/agents/test_native.py). It is the reference of the native env, written for clarity, not
speed. Needs pettingzoo (``pip install fastbatch[agents]``).

``parallel_env(agents=3, local_ratio=0.5, max_cycles=25)``; agents ``"agent_0"``, ...
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from pettingzoo import ParallelEnv

__all__ = ["SpreadEnv", "parallel_env"]

FORCE, DAMPING, DT, CONTACT = 5.0, 0.25, 0.1, 0.3


class SpreadEnv(ParallelEnv):
    """`agents` particles covering as many landmarks (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "spread_v0",
        "render_modes": [],
        "is_parallelizable": True,
    }

    def __init__(self, agents: int = 3, local_ratio: float = 0.5, max_cycles: int = 25) -> None:
        if not 1 <= agents <= 8:
            raise ValueError(f"agents must be 1 to 8, got {agents}")
        self.n = agents
        self.local_ratio = float(local_ratio)
        self.max_cycles = max_cycles
        self.possible_agents = [f"agent_{i}" for i in range(agents)]
        self.agents: list[str] = []
        size = 4 + 2 * agents + 2 * (agents - 1)
        self._obs_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
        self._act_space = spaces.Discrete(5)
        self.np_random, _ = seeding.np_random(None)
        self.render_mode = None

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_space

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.np_random, _ = seeding.np_random(seed)
        draw = self.np_random.uniform
        self.pos = [[draw(-1.0, 1.0), draw(-1.0, 1.0)] for _ in range(self.n)]
        self.vel = [[0.0, 0.0] for _ in range(self.n)]
        self.marks = [[draw(-0.9, 0.9), draw(-0.9, 0.9)] for _ in range(self.n)]
        self.steps = 0
        self.agents = list(self.possible_agents)
        return self._observations(), {agent: {} for agent in self.agents}

    def step(self, actions: dict[str, Any]):
        for i, agent in enumerate(self.possible_agents):
            a = int(actions[agent])
            force_x = -FORCE if a == 1 else FORCE if a == 2 else 0.0
            force_y = -FORCE if a == 3 else FORCE if a == 4 else 0.0
            vel, pos = self.vel[i], self.pos[i]
            vel[0] = vel[0] * (1.0 - DAMPING) + force_x * DT
            vel[1] = vel[1] * (1.0 - DAMPING) + force_y * DT
            pos[0] = pos[0] + vel[0] * DT
            pos[1] = pos[1] + vel[1] * DT
        shared = 0.0
        for mark in self.marks:
            shared = shared - min(_distance(p[0] - mark[0], p[1] - mark[1]) for p in self.pos)
        rewards = {}
        for i, agent in enumerate(self.possible_agents):
            own = 0.0
            for j, other in enumerate(self.pos):
                if (
                    j != i
                    and _distance(other[0] - self.pos[i][0], other[1] - self.pos[i][1]) < CONTACT
                ):
                    own = own - 1.0
            rewards[agent] = (1.0 - self.local_ratio) * shared + self.local_ratio * own
        self.steps += 1
        over = self.steps >= self.max_cycles
        obs = self._observations()
        terminations = {agent: False for agent in self.agents}
        truncations = {agent: over for agent in self.agents}
        infos = {agent: {} for agent in self.agents}
        if over:
            self.agents = []
        return obs, rewards, terminations, truncations, infos

    def _observations(self) -> dict[str, np.ndarray]:
        out = {}
        for i, agent in enumerate(self.possible_agents):
            x, y = self.pos[i]
            row = [self.vel[i][0], self.vel[i][1], x, y]
            for mark in self.marks:
                row += [mark[0] - x, mark[1] - y]
            for j, other in enumerate(self.pos):
                if j != i:
                    row += [other[0] - x, other[1] - y]
            out[agent] = np.array(row, dtype=np.float32)
        return out


def _distance(dx: float, dy: float) -> float:
    return math.sqrt(dx * dx + dy * dy)


def parallel_env(**kwargs: Any) -> SpreadEnv:
    """A `SpreadEnv` (PettingZoo's module convention, so ``make_agents`` takes this module)."""
    return SpreadEnv(**kwargs)
