"""One block of Python envs and its episode bookkeeping: what a worker process of the process
backend steps (and the caller itself, for block 0 with ``in_parent``).

The block reads its actions from, and writes its results into, its rows of the shared arrays
(see shm.py). Values of a pickled space (see spaces.py) are taken as an argument
(actions) and kept in ``obs_values`` (observations) for the worker to send; infos and errors go
back to the caller through return values.
"""

from __future__ import annotations

import time

import numpy as np

from fastbatch._args import NEXT_STEP, SAME_STEP
from fastbatch.process.shm import leaf_views
from fastbatch.process.spaces import SpacePlan, env_spaces

__all__ = ["Block"]


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
        last = first + n
        self.needs_reset = [False] * n
        self.ep_return = [0.0] * n
        self.ep_length = [0] * n
        self.ep_start = [0.0] * n
        obs_space, act_space = env_spaces(envs[0])
        self.obs_plan, self.act_plan = SpacePlan(obs_space), SpacePlan(act_space)
        # This block's rows of the shared leaves, and the structure they make up.
        self.obs_leaves = [leaf[first:last] for leaf in leaf_views(views, "obs")]
        self.obs_out = self.obs_plan.assemble(self.obs_leaves) if self.obs_plan.shared else None
        self.act_leaves = [leaf[first:last] for leaf in leaf_views(views, "actions")]
        self.obs_values: list = [None] * n  # a pickled space's latest observations
        self.current = 0  # the env being worked on (names the env in error reports)
        self._done_rows_set = False  # whether this block's rows of views["done"] hold a True
        self.lent: dict | None = None  # what hand_over gave away, until take_over

    # The state a block hands over when another process is to step it (rebalance.py): its envs
    # and their episode books. Episode start times are perf_counter() readings, which on Linux
    # come from one system-wide clock, so they stay valid in the other process.
    _MOVED = ("envs", "needs_reset", "ep_return", "ep_length", "ep_start", "obs_values")

    def hand_over(self) -> dict:
        """This block's envs and books, for the process that steps them next. The block keeps
        them aside (``lent``), unstepped, until `take_over` gives it envs again."""
        state = {name: getattr(self, name) for name in self._MOVED}
        state["done_rows_set"] = self._done_rows_set
        self.lent, self.envs = state, []
        return state

    def take_over(self, state: dict | None) -> None:
        """Steps from now on the envs and books that another process's `hand_over` gave (the
        same rows of the shared arrays); None: the ones this block lent, which nobody took."""
        state = self.lent if state is None else state
        for name in self._MOVED:
            setattr(self, name, state[name])
        self._done_rows_set = state["done_rows_set"]
        self.lent = None

    @staticmethod
    def joined(head: dict, tail: dict) -> dict:
        """The state of two neighbouring blocks' `hand_over`s as one block's, `head` first."""
        state = {name: list(head[name]) + list(tail[name]) for name in Block._MOVED}
        state["done_rows_set"] = head["done_rows_set"] or tail["done_rows_set"]
        return state

    @staticmethod
    def split(state: dict, k: int) -> tuple[dict, dict]:
        """A `hand_over` state cut after its first `k` envs: (head, tail)."""
        head = {name: list(state[name][:k]) for name in Block._MOVED}
        tail = {name: list(state[name][k:]) for name in Block._MOVED}
        head["done_rows_set"] = tail["done_rows_set"] = state["done_rows_set"]
        return head, tail

    def _start(self, k: int) -> None:
        self.needs_reset[k] = False
        self.ep_return[k] = 0.0
        self.ep_length[k] = 0
        self.ep_start[k] = time.perf_counter()

    def call(self, name: str, values: list | None, args: tuple, kwargs: dict) -> list:
        """gymnasium's ``call``/``get_attr``/``set_attr`` on every env of the block, through its
        wrappers (``get_wrapper_attr``/``set_wrapper_attr``): with `values` (one per env), sets
        attribute `name`; otherwise calls it with `args`/`kwargs` if it is callable, else reads
        it. Returns one result per env (None for a set)."""
        results = []
        for k, env in enumerate(self.envs):
            self.current = k
            if values is not None:
                setter = getattr(env, "set_wrapper_attr", None)
                if setter is None:  # a legacy gym env
                    setattr(env, name, values[k])
                else:
                    setter(name, values[k])
                results.append(None)
                continue
            getter = getattr(env, "get_wrapper_attr", None)
            attr = getattr(env, name) if getter is None else getter(name)
            results.append(attr(*args, **kwargs) if callable(attr) else attr)
        return results

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
            if self.obs_plan.shared:
                self.obs_plan.write_rows([leaf[k : k + 1] for leaf in self.obs_leaves], [obs])
            else:
                self.obs_values[k] = obs
            self._start(k)
            self.needs_reset[k] = pending_autoreset
            if info:
                infos.append((i, None, info))
        return infos, 0

    def step(self, actions: list | None = None) -> tuple[list, int]:
        """Steps (or autoresets) every env of the block, with `actions` (one per env) for a
        pickled action space, else the block's rows of the shared action leaves. Per-env results
        are gathered in Python lists and written to the shared rows once per block: one numpy
        call per array rather than several per env. Infos are returned as (env index, final or
        None, info) entries; a final is (final observation, final info), SAME_STEP mode."""
        v, infos, ended = self.v, [], 0
        first, last = self.first, self.first + len(self.envs)
        if self.act_plan.shared:
            actions = self.act_plan.unbatch(self.act_leaves)
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
            final = None
            if terminated or truncated:
                i = first + k
                ended += 1
                if done_rows is None:
                    done_rows = [False] * len(self.envs)
                done_rows[k] = True
                v["ep_return"][i] = ep_return[k]
                v["ep_length"][i] = ep_length[k]
                v["ep_time"][i] = time.perf_counter() - self.ep_start[k]
                if same_step:  # an array is copied: the env may reuse it for the next episode
                    final = (obs.copy() if isinstance(obs, np.ndarray) else obs, info)
                    obs, info = env.reset()
                    self._start(k)
                else:
                    needs_reset[k] = True
            obs_rows.append(obs)
            rewards.append(reward)
            terms.append(terminated)
            truncs.append(truncated)
            if info or final is not None:
                infos.append((first + k, final, info))
        if self.obs_plan.shared:
            self.obs_plan.write_rows(self.obs_leaves, obs_rows, self.obs_out)
        else:
            self.obs_values = obs_rows
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
