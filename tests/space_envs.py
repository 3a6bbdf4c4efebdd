"""Envs over every kind of gymnasium space, for the process backend's space and API tests.

Worker processes import this module by reference (`tests.space_envs`), as they do tests/envs.py.
"""

from __future__ import annotations

import copy
import functools
import threading
import warnings
from typing import ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces


class CustomSpace(gymnasium.Space):
    """A space gymnasium knows nothing about: integers 0..9 (pickled by the process backend)."""

    def sample(self, mask=None, probability=None):
        return int(self.np_random.integers(0, 10))

    def contains(self, x):
        return isinstance(x, int) and 0 <= x < 10

    def __eq__(self, other):
        return isinstance(other, CustomSpace)


# Shared through the shared memory: every array space and Dict/Tuple of them.
SHARED_SPACES = [
    spaces.Box(-1.0, 1.0, shape=(), dtype=np.float64),
    spaces.Box(np.array([-1.0, 0.0], np.float32), np.array([1.0, 10.0], np.float32)),
    spaces.Box(0, 255, shape=(4, 5, 3), dtype=np.uint8),
    spaces.Box(np.array([0, 0, 1]), np.array([1, 0, 1]), dtype=np.bool_),
    spaces.Box(np.array([-10, 0]), np.array([10, 5]), dtype=np.int32),
    spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float16),
    spaces.Discrete(3),
    spaces.Discrete(5, start=-2),
    spaces.Discrete(4, start=1, dtype=np.int32),
    spaces.MultiDiscrete([2, 3]),
    spaces.MultiDiscrete([[2, 3], [3, 2]], start=[[10, 20], [30, 40]]),
    spaces.MultiDiscrete([2, 3], dtype=np.int8),
    spaces.MultiBinary(5),
    spaces.MultiBinary([2, 3]),
    spaces.Tuple((spaces.Discrete(3), spaces.Box(0.0, 1.0, (2,), np.float64))),
    spaces.Dict(
        position=spaces.Dict(x=spaces.Discrete(29), y=spaces.MultiBinary(2)),
        velocity=spaces.Tuple((spaces.Discrete(7), spaces.Box(0, 255, (), np.uint8))),
    ),
]
# Pickled, as gymnasium's AsyncVectorEnv(shared_memory=False) does.
PICKLED_SPACES = [
    spaces.Text(6),
    spaces.Graph(node_space=spaces.Box(-1, 1, shape=(2,)), edge_space=None),
    spaces.Graph(node_space=spaces.Discrete(3), edge_space=spaces.Box(0, 1, (2,))),
    spaces.Sequence(spaces.Discrete(4)),
    spaces.Sequence(spaces.Box(0.0, 1.0, (2,)), stack=True),
    spaces.OneOf([spaces.Discrete(3), spaces.Box(0.0, 1.0)]),
    spaces.Tuple(
        (spaces.Graph(node_space=spaces.Discrete(2), edge_space=None), spaces.Discrete(2))
    ),
    spaces.Dict(a=spaces.Sequence(spaces.Discrete(3)), b=spaces.Box(0, 1, (2,))),
    CustomSpace(),
]


class SpaceEnv(gymnasium.Env):
    """Observations and actions in the given spaces, everything drawn from the env's seeded
    generator: equal seeds give equal episodes. Each step checks that its action is in the
    action space (so a wrong action transport raises), reports a reward, a few infos, and ends
    the episode at random (terminated) or after `length` steps (truncated)."""

    metadata: ClassVar[dict] = {"render_modes": ["rgb_array"], "render_fps": 7}

    def __init__(self, observation_space, action_space=None, length: int = 6, render_mode=None):
        self.observation_space = copy.deepcopy(observation_space)
        self.action_space = copy.deepcopy(
            observation_space if action_space is None else action_space
        )
        self.length = length
        self.render_mode = render_mode
        self.t = 0
        self.label = "space-env"
        self.lock = threading.Lock()  # an attribute that does not pickle

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.observation_space.seed(int(self.np_random.integers(2**31)))
        self.t = 0
        return self.observation_space.sample(), {"reset_draw": float(self.np_random.random())}

    def step(self, action):
        with warnings.catch_warnings():  # a numpy scalar for a Box of shape (): gymnasium warns
            warnings.simplefilter("ignore")
            inside = action in self.action_space
        if not inside:
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        self.t += 1
        reward = float(self.np_random.random())
        terminated = bool(self.np_random.random() < 0.15)
        truncated = self.t >= self.length
        info = {"t": self.t, "tag": f"t{self.t}"}
        return self.observation_space.sample(), reward, terminated, truncated, info

    def render(self):
        return np.full((3, 4, 3), self.t, dtype=np.uint8)

    def scaled(self, x, factor=2):
        return (self.label, x * factor)


def space_env(observation_space, action_space=None, **kwargs):
    """A picklable factory of `SpaceEnv`."""
    return functools.partial(SpaceEnv, observation_space, action_space, **kwargs)


class IntObsEnv(gymnasium.Env):
    """Discrete observations returned as Python ints (gymnasium's own test of ``final_obs``):
    obs = the action taken, the episode ends on action 3."""

    observation_space = spaces.Discrete(4)
    action_space = spaces.Discrete(4)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return 0, {"reset": True}

    def step(self, action):
        action = int(action)
        return action, 0.0, action == 3, False, {"action": action}
