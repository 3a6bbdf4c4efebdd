"""Helpers of the multi-agent tests: `DyingAgents`, a tiny deterministic PettingZoo ParallelEnv
whose agents leave at different steps, and `ByHand`, the reference every batch is compared with:
the same ParallelEnvs stepped one by one through PettingZoo's own API, with gymnasium's
autoreset rules applied by hand."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from pettingzoo import ParallelEnv

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]


class DyingAgents(ParallelEnv):
    """`num_agents` agents, each ending at its own step: agent k terminates at a step drawn from
    the env's generator at reset (1 .. max_cycles + 1); one still there at ``max_cycles`` is
    truncated. Observation ``[t, k, last action, draw]``; reward ``action / 2 + k + draw``.
    ``mask``: None, ``"obs"`` (classic-style ``{"observation", "action_mask"}`` dicts) or
    ``"info"`` (``info["action_mask"]``). ``odd_agent``: the last agent gets a wider observation
    space (a heterogeneous env). Actions for agents not in the env raise, as they would in many
    PettingZoo envs, so a batch that forwards them fails."""

    metadata: ClassVar[dict] = {"name": "dying_agents_v0", "is_parallelizable": True}

    def __init__(
        self, num_agents: int = 3, max_cycles: int = 6, mask: str | None = None, odd_agent=False
    ):
        self.possible_agents = [f"agent_{k}" for k in range(num_agents)]
        self.agents: list[str] = []
        self.max_cycles = max_cycles
        self.mask = mask
        self.render_mode = None
        obs = spaces.Box(-100.0, 100.0, (4,), np.float32)
        if mask == "obs":
            obs = spaces.Dict(
                {"observation": obs, "action_mask": spaces.Box(0, 1, (3,), dtype=np.int8)}
            )
        self._obs_spaces = {a: obs for a in self.possible_agents}
        if odd_agent:
            self._obs_spaces[self.possible_agents[-1]] = spaces.Box(-1.0, 1.0, (5,), np.float32)
        self._act = spaces.Discrete(3)
        self._rng: np.random.Generator | None = None

    def observation_space(self, agent):
        return self._obs_spaces[agent]

    def action_space(self, agent):
        return self._act

    def reset(self, seed=None, options=None):
        if seed is not None or self._rng is None:
            self._rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self._t = 0
        self._end = self._rng.integers(1, self.max_cycles + 2, size=len(self.possible_agents))
        self._last = dict.fromkeys(self.agents, 0)
        draws = dict(zip(self.agents, self._rng.random(len(self.agents))))
        return (
            {a: self._obs(a, draws[a]) for a in self.agents},
            {a: self._info(a) for a in self.agents},
        )

    def step(self, actions):
        gone = sorted(set(actions) - set(self.agents))
        if gone:
            raise ValueError(f"actions for agents that are not in the env: {gone}")
        self._t += 1
        obs, rewards, terminated, truncated, infos = {}, {}, {}, {}, {}
        for a in self.agents:
            k = self.possible_agents.index(a)
            draw = float(self._rng.random())
            self._last[a] = int(actions[a])
            rewards[a] = self._last[a] / 2 + k + draw
            terminated[a] = bool(self._t >= self._end[k])
            truncated[a] = not terminated[a] and self._t >= self.max_cycles
            obs[a] = self._obs(a, draw)
            infos[a] = self._info(a)
        self.agents = [a for a in self.agents if not (terminated[a] or truncated[a])]
        return obs, rewards, terminated, truncated, infos

    def _obs(self, agent: str, draw: float):
        k = self.possible_agents.index(agent)
        values = np.array([self._t, k, self._last[agent], draw], np.float32)
        if self.mask == "obs":
            return {"observation": values, "action_mask": self._action_mask(k)}
        return values

    def _action_mask(self, k: int) -> np.ndarray:
        mask = np.ones(3, np.int8)
        mask[(self._t + k) % 3] = 0
        return mask

    def _info(self, agent: str) -> dict:
        if self.mask == "info":
            return {"action_mask": self._action_mask(self.possible_agents.index(agent))}
        return {}


def dying(**kwargs: Any):
    """A DyingAgents factory (picklable: it travels to the worker processes)."""
    return functools.partial(DyingAgents, **kwargs)


def _action(row: np.ndarray) -> Any:
    """One agent's action as PettingZoo envs take it: an int for Discrete, else the array."""
    return int(row) if row.ndim == 0 else row.copy()


class ByHand:
    """`num_envs` ParallelEnvs of `env_fn`, reset with ``seed + i`` and stepped one by one with
    the rows of a batch's actions; returns what the agents-as-batch env should (docs/multi-agent.md)."""

    def __init__(self, env_fn, num_envs: int, mode: AutoresetMode) -> None:
        self.envs = [env_fn() for _ in range(num_envs)]
        self.agents = self.envs[0].possible_agents
        self.mode = mode
        self.pending = [False] * num_envs  # NEXT_STEP: resets on its next step
        self.ended = np.zeros(num_envs, np.bool_)  # DISABLED: waits for a masked reset
        self.episodes = 0  # episodes ended so far, over all envs
        space = self.envs[0].observation_space(self.agents[0])
        self.masked = isinstance(space, spaces.Dict) or bool(
            "action_mask" in self.envs[0].reset()[1].get(self.agents[0], {})
        )
        row = space["observation"] if isinstance(space, spaces.Dict) else space
        self.obs_shape, self.obs_dtype = row.shape, row.dtype

    def _rows(self, obs, rewards=None, terminated=None, truncated=None, infos=None) -> dict:
        n = len(self.agents)
        out = {
            "obs": np.zeros((n, *self.obs_shape), self.obs_dtype),
            "reward": np.zeros(n, np.float32),
            "terminated": np.zeros(n, np.bool_),
            "truncated": np.zeros(n, np.bool_),
            "active": np.zeros(n, np.bool_),
            "action_mask": np.ones((n, 3), np.int8),
        }
        for k, a in enumerate(self.agents):
            if a not in obs:
                continue
            value = obs[a]
            if isinstance(value, dict):
                out["action_mask"][k] = value["action_mask"]
                value = value["observation"]
            elif infos and "action_mask" in infos.get(a, {}):
                out["action_mask"][k] = infos[a]["action_mask"]
            out["obs"][k] = value
            out["active"][k] = True
            out["reward"][k] = (rewards or {}).get(a, 0.0)
            out["terminated"][k] = (terminated or {}).get(a, False)
            out["truncated"][k] = (truncated or {}).get(a, False)
        return out

    def reset(self, seed: int, mask: np.ndarray | None = None) -> list[dict | None]:
        """Each env's rows after a reset (None for an env outside `mask`)."""
        out = []
        for i, env in enumerate(self.envs):
            if mask is not None and not mask[i]:
                out.append(None)
                continue
            obs, infos = env.reset(seed=None if mask is not None else seed + i)
            self.pending[i], self.ended[i] = False, False
            out.append(self._rows(obs, infos=infos))
        return out

    def step(self, actions: np.ndarray) -> tuple[list[dict], dict]:
        """Each env's rows after one step, and the final observation of each flagged row."""
        n, out, finals = len(self.agents), [], {}
        for i, env in enumerate(self.envs):
            assert not self.ended[i], "DISABLED: reset an ended env before stepping it"
            if self.pending[i]:
                obs, infos = env.reset()
                self.pending[i] = False
                out.append(self._rows(obs, infos=infos))
                continue
            acts = {
                a: _action(actions[i * n + k]) for k, a in enumerate(self.agents) if a in env.agents
            }
            rows = self._rows(*env.step(acts))
            done = rows["terminated"] | rows["truncated"]
            finals.update({i * n + k: rows["obs"][k].copy() for k in np.flatnonzero(done)})
            if not env.agents:
                self.episodes += 1
                if self.mode == AutoresetMode.NEXT_STEP:
                    self.pending[i] = True
                elif self.mode == AutoresetMode.SAME_STEP:
                    obs, infos = env.reset()
                    fresh = self._rows(obs, infos=infos)
                    rows["obs"], rows["action_mask"] = fresh["obs"], fresh["action_mask"]
                else:
                    self.ended[i] = True
            out.append(rows)
        return out, finals

    def close(self) -> None:
        for env in self.envs:
            env.close()


def assert_rows(
    expected: list[dict | None], obs, info, reward=None, terminated=None, truncated=None
):
    """The batch's rows equal `expected` env by env (None: env not compared), bit for bit."""
    n = len(info["active"]) // len(expected)
    for i, rows in enumerate(expected):
        if rows is None:
            continue
        got = slice(i * n, (i + 1) * n)
        np.testing.assert_array_equal(obs[got], rows["obs"], err_msg=f"obs of env {i}")
        np.testing.assert_array_equal(info["active"][got], rows["active"], err_msg=f"env {i}")
        if "action_mask" in info:
            np.testing.assert_array_equal(info["action_mask"][got], rows["action_mask"])
        for name, value in (
            ("reward", reward),
            ("terminated", terminated),
            ("truncated", truncated),
        ):
            if value is not None:
                np.testing.assert_array_equal(value[got], rows[name], err_msg=f"{name} of env {i}")


def assert_workers_exit(envs) -> None:
    """Closes `envs` and checks that every worker process it had is gone."""
    processes = [p for p in envs._envs._workers.processes if p is not None]
    envs.close()
    for p in processes:
        assert p.wait(timeout=10) is not None


class CounterAgents(ParallelEnv):
    """The Python twin of the native test env ``_TestAgents-v0`` (src/cpp/envs/test_envs.h):
    agent k observes ``[k, steps, its last action, u_k]`` (u_k drawn at reset, k in order), earns
    ``(k + 1) * action``; action 3 terminates it, action 2 truncates it."""

    metadata: ClassVar[dict] = {"name": "counter_agents_v0", "is_parallelizable": True}

    def __init__(self, agents: int = 3) -> None:
        self.possible_agents = [f"agent_{k}" for k in range(agents)]
        self.agents: list[str] = []
        self.render_mode = None
        self._obs = spaces.Box(-np.inf, np.inf, (4,), np.float32)
        self._act = spaces.Discrete(4)
        self._rng = np.random.default_rng()

    def observation_space(self, agent):
        return self._obs

    def action_space(self, agent):
        return self._act

    def reset(self, seed=None, options=None):
        if seed is not None:
            self._rng = np.random.default_rng(np.random.SeedSequence(seed))
        self.steps = 0
        self.drawn = [self._rng.random() for _ in self.possible_agents]
        self.agents = list(self.possible_agents)
        return {a: self._row(k, 0) for k, a in enumerate(self.agents)}, {a: {} for a in self.agents}

    def step(self, actions):
        self.steps += 1
        index = {a: k for k, a in enumerate(self.possible_agents)}
        obs, rewards, terms, truncs = {}, {}, {}, {}
        for a in self.agents:
            k, act = index[a], int(actions[a])
            obs[a] = self._row(k, act)
            rewards[a] = float((k + 1) * act)
            terms[a], truncs[a] = act == 3, act == 2
        self.agents = [a for a in self.agents if not (terms[a] or truncs[a])]
        return obs, rewards, terms, truncs, {a: {} for a in obs}

    def _row(self, k: int, action: int) -> np.ndarray:
        return np.array([k, self.steps, action, self.drawn[k]], np.float32)
