"""One block of Python envs and its episode bookkeeping: what a worker process of the process
backend steps (and the caller itself, for block 0 with ``in_parent``).

The block reads its actions from, and writes its results into, its rows of the shared arrays
(see _shm.py); infos and errors go back to the caller through return values.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from fastbatch._args import NEXT_STEP, SAME_STEP

__all__ = ["Block", "env_spaces", "to_gymnasium_space"]


def to_gymnasium_space(space: Any):
    """A gymnasium space for `space`, converting legacy `gym` spaces (Box and Discrete)."""
    import gymnasium

    if isinstance(space, gymnasium.spaces.Space):
        return space
    kind = type(space).__name__
    if kind == "Discrete":
        return gymnasium.spaces.Discrete(int(space.n), start=int(getattr(space, "start", 0)))
    if kind == "Box":
        return gymnasium.spaces.Box(
            low=np.asarray(space.low), high=np.asarray(space.high), dtype=np.dtype(space.dtype)
        )
    raise TypeError(f"unsupported space {space!r}: the process backend handles Box and Discrete")


def env_spaces(env: Any) -> tuple:
    """(observation space, action space) of `env` as gymnasium spaces."""
    return to_gymnasium_space(env.observation_space), to_gymnasium_space(env.action_space)


class Block:
    """The envs [first, first + len(envs)) of one block and their episode bookkeeping.

    Per-env counters are plain Python lists: the step loop is Python either way, and list items
    are several times cheaper to read and write than numpy scalars."""

    def __init__(self, envs, first: int, mode: int, views: dict[str, np.ndarray]):
        self.envs = envs
        self.first = first
        self.mode = mode
        self.v = views
        n = len(envs)
        self.needs_reset = [False] * n
        self.ep_return = [0.0] * n
        self.ep_length = [0] * n
        self.ep_start = [0.0] * n
        self.discrete = views["actions"].ndim == 1
        self.current = 0  # the env being worked on (names the env in error reports)
        self._done_rows_set = False  # whether this block's rows of views["done"] hold a True

    def _start(self, k: int) -> None:
        self.needs_reset[k] = False
        self.ep_return[k] = 0.0
        self.ep_length[k] = 0
        self.ep_start[k] = time.perf_counter()

    def reset(self, pending_autoreset: bool = False) -> tuple[list, int]:
        """Resets the envs of the block that views["reset_mask"] selects. With
        `pending_autoreset` (a restarted worker in NEXT_STEP mode) they also reset again on
        their next step, as envs that just reported truncated=True do."""
        v, infos = self.v, []
        for k, env in enumerate(self.envs):
            i, self.current = self.first + k, k
            if not v["reset_mask"][i]:
                continue
            seed = int(v["seeds"][i]) if v["seed_set"][i] else None
            obs, info = env.reset(seed=seed)
            v["obs"][i] = obs
            self._start(k)
            self.needs_reset[k] = pending_autoreset
            if info:
                infos.append((i, None, info))
        return infos, 0

    def step(self) -> tuple[list, int]:
        """Steps (or autoresets) every env of the block. Per-env results are gathered in Python
        lists and written to the shared rows once per block: one numpy call per array rather
        than several per env."""
        v, infos, ended = self.v, [], 0
        first, last = self.first, self.first + len(self.envs)
        actions = (
            v["actions"][first:last].tolist() if self.discrete else v["actions"][first:last].copy()
        )
        needs_reset, ep_return, ep_length = self.needs_reset, self.ep_return, self.ep_length
        next_step, same_step = self.mode == NEXT_STEP, self.mode == SAME_STEP
        obs_rows, rewards, terms, truncs = [], [], [], []
        done_rows = None
        for k, env in enumerate(self.envs):
            self.current = k
            if needs_reset[k] and next_step:
                obs, info = env.reset()
                self._start(k)
                obs_rows.append(obs)
                rewards.append(0.0)
                terms.append(False)
                truncs.append(False)
                if info:
                    infos.append((first + k, None, info))
                continue
            obs, reward, terminated, truncated, info = env.step(actions[k])
            ep_return[k] += float(reward)
            ep_length[k] += 1
            final_info = None
            if terminated or truncated:
                i = first + k
                ended += 1
                if done_rows is None:
                    done_rows = [False] * len(self.envs)
                done_rows[k] = True
                v["ep_return"][i] = ep_return[k]
                v["ep_length"][i] = ep_length[k]
                v["ep_time"][i] = time.perf_counter() - self.ep_start[k]
                if same_step:
                    v["final_obs"][i] = obs
                    final_info = info
                    obs, info = env.reset()
                    self._start(k)
                else:
                    needs_reset[k] = True
            obs_rows.append(obs)
            rewards.append(reward)
            terms.append(terminated)
            truncs.append(truncated)
            if info or final_info is not None:
                infos.append((first + k, final_info, info))
        v["obs"][first:last] = obs_rows
        v["reward"][first:last] = rewards
        v["terminated"][first:last] = terms
        v["truncated"][first:last] = truncs
        if done_rows is not None:
            v["done"][first:last] = done_rows
            self._done_rows_set = True
        elif self._done_rows_set:  # the parent reads "done" only when an episode ended
            v["done"][first:last] = False
            self._done_rows_set = False
        return infos, ended
