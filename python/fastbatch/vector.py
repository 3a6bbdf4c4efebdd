"""`fastbatch.make` and the native `VectorEnv`: a batch of C++ envs behind gymnasium's vector API."""

from __future__ import annotations

import numbers
import os
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from fastbatch import _core
from fastbatch.errors import AsyncStateError, ClosedEnvError
from fastbatch.registry import REGISTRY, NativeEnvSpec

__all__ = ["NativeVectorEnv"]

_MODE_CODES = {
    AutoresetMode.NEXT_STEP: 0,
    AutoresetMode.SAME_STEP: 1,
    AutoresetMode.DISABLED: 2,
}
_MAX_SEED = 2**64 - 1


def _available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _autoreset_mode(value: Any) -> AutoresetMode:
    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):  # "next_step", "NextStep", "NEXT_STEP", ...
        key = value.replace("_", "").lower()
        for mode in AutoresetMode:
            if key == mode.value.lower():
                return mode
    names = ", ".join(repr(m.name.lower()) for m in AutoresetMode)
    raise ValueError(f"autoreset_mode must be a gymnasium AutoresetMode or one of {names}, got {value!r}")


def _env_params(spec: NativeEnvSpec, kwargs: dict[str, Any]) -> list[float]:
    unknown = sorted(set(kwargs) - set(spec.params))
    if unknown:
        accepted = ", ".join(spec.params) or "none"
        raise TypeError(
            f"{spec.id} got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
            f"it accepts: {accepted}"
        )
    values = []
    for name, default in spec.params.items():
        value = kwargs.get(name, default)
        if not isinstance(value, numbers.Real):
            raise TypeError(f"{spec.id} parameter {name!r} must be a number, got {value!r}")
        values.append(float(value))
    return values


def _seed_list(seed: Any, num_envs: int) -> list[int | None]:
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        seeds: list[Any] = [int(seed) + i for i in range(num_envs)]
    elif isinstance(seed, (list, tuple)):
        if len(seed) != num_envs:
            raise ValueError(f"a seed list must have num_envs={num_envs} entries, got {len(seed)}")
        seeds = list(seed)
    else:
        raise TypeError(f"seed must be None, an int or a list of ints/None, got {seed!r}")
    for s in seeds:
        if s is None:
            continue
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise TypeError(f"seeds must be non-negative integers or None, got {s!r}")
        if not 0 <= s <= _MAX_SEED:
            raise ValueError(f"seeds must be in [0, 2**64), got {s}")
    return [None if s is None else int(s) for s in seeds]


class _CallChecks:
    """The state checks both backends make before a call."""

    closed: bool
    _reset_called: bool
    _broken: bool = False

    def _check_open(self) -> None:
        if self.closed:
            raise ClosedEnvError("this fastbatch env is closed")

    def _check_stepable(self) -> None:
        self._check_open()
        if not self._reset_called:
            raise RuntimeError("call reset() before step()")
        if self._broken:
            raise RuntimeError("a previous step raised an env error; call reset() before stepping again")


class NativeVectorEnv(_CallChecks, gymnasium.vector.VectorEnv):
    """A batch of `num_envs` native (C++) envs stepped together, as a gymnasium `VectorEnv`.

    Build it with :func:`fastbatch.make`. Observations, rewards (float32) and flags are returned
    as numpy views of 64-byte-aligned buffers owned by the env; an array you hold is never
    written again (buffers are recycled only once every array of a step has been dropped).

    Threading: one thread at a time may call an env; a concurrent call raises ``RuntimeError``.
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int = 1,
        *,
        num_threads: int | None = None,
        seed: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        max_episode_steps: int | None = None,
        stats_key: str | None = "episode",
        batch_size: int | None = None,
        **kwargs: Any,
    ) -> None:
        env_type, spec = REGISTRY.resolve(env_id)
        self.num_envs = _positive_int("num_envs", num_envs)
        batch_size = self.num_envs if batch_size is None else _positive_int("batch_size", batch_size)
        if batch_size > self.num_envs:
            raise ValueError(f"batch_size must be at most num_envs={self.num_envs}, got {batch_size}")
        if num_threads is None:
            num_threads = min(_available_cores(), self.num_envs)
        num_threads = _positive_int("num_threads", num_threads)
        mode = _autoreset_mode(autoreset_mode)
        if max_episode_steps is None:
            max_episode_steps = spec.max_episode_steps or 0
        elif isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, numbers.Integral) or max_episode_steps < 0:
            raise ValueError(f"max_episode_steps must be a non-negative integer or None, got {max_episode_steps!r}")
        if stats_key is not None and not isinstance(stats_key, str):
            raise TypeError(f"stats_key must be a string or None, got {stats_key!r}")
        params = _env_params(spec, kwargs)

        self._spec = spec
        self._stats_key = stats_key
        self._pool = _core._VectorPool(
            env_type, self.num_envs, num_threads, _MODE_CODES[mode], int(max_episode_steps), params,
            batch_size,
        )
        self.batch_size = batch_size
        self._all_ids = np.arange(self.num_envs, dtype=np.int64)
        self._idle_ids = self._all_ids  # async: the envs the next step() sends
        self._pending_actions: Any = None  # sync send(): actions waiting for recv()
        self.single_observation_space = spec.observation_space
        self.single_action_space = spec.action_space
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.metadata = {"autoreset_mode": mode}
        self.render_mode = None
        self.closed = False
        self._reset_called = False
        if seed is not None:
            self._pool.seed(_seed_list(seed, self.num_envs))

    # ------------------------------------------------------------------ gymnasium API
    def reset(
        self,
        *,
        seed: int | list[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets all envs (or those in ``options["reset_mask"]``) and returns ``(obs, {})``.

        ``seed``: an int seeds env ``i`` with ``seed + i``; a list gives each env's seed (None
        keeps that env's generator running); None keeps every generator running.
        """
        self._check_open()
        mask = None
        if options is not None:
            if not isinstance(options, dict):
                raise TypeError(f"options must be a dict or None, got {type(options).__name__}")
            unknown = sorted(set(options) - {"reset_mask"})
            if unknown:
                raise ValueError(
                    f"unsupported reset option(s) {', '.join(map(repr, unknown))}; native envs "
                    "accept only 'reset_mask'"
                )
            if "reset_mask" in options:
                mask = options["reset_mask"]
                if not isinstance(mask, np.ndarray):
                    raise TypeError(
                        f"options['reset_mask'] must be a numpy array, got {type(mask).__name__}"
                    )
                if mask.shape == (self.num_envs,) and mask.dtype == np.bool_ and not mask.any():
                    raise ValueError("options['reset_mask'] must contain at least one True value")
                if not self._reset_called:
                    raise ValueError("the first reset must reset every env (no reset_mask)")
        seeds = _seed_list(seed, self.num_envs)
        if mask is not None and mask.shape == (self.num_envs,):
            seeds = [s if bool(m) else None for s, m in zip(seeds, mask)]
        if any(s is not None for s in seeds):
            self._pool.seed(seeds)
        obs = self._pool.reset(mask)
        self._reset_called = True
        self._pending_actions = None
        if mask is None:  # a full reset also drops every step in flight (async mode)
            self._idle_ids = self._all_ids
        return obs, {}

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every env once. Returns ``(obs, reward, terminated, truncated, info)``.

        ``info`` is empty unless an episode ended: then ``info[stats_key]`` holds ``r``
        (return), ``l`` (length) and ``t`` (seconds) with the mask ``info["_" + stats_key]``, and
        in SAME_STEP mode ``final_obs``/``final_info`` as gymnasium's ``SyncVectorEnv`` gives them.
        """
        self._check_stepable()
        if self.is_async:
            self.send(actions)
            return self.recv()
        if self._pending_actions is not None:
            raise AsyncStateError("step() while a send() is pending; recv() it first")
        obs, reward, terminated, truncated, ended = self._pool.step(actions)
        info: dict[str, Any] = {} if ended == 0 else self._episode_info()
        return obs, reward, terminated, truncated, info

    # ------------------------------------------------------------------ async (EnvPool style)
    @property
    def is_async(self) -> bool:
        """True when ``batch_size < num_envs``: `recv` returns the first envs to finish."""
        return self.batch_size < self.num_envs

    def send(self, actions: Any, env_ids: Any = None) -> None:
        """Starts one step of the envs ``env_ids`` (default: those the last `recv` returned, or
        every env after `reset`) with ``actions`` of shape ``(len(env_ids), *action_shape)``.

        In sync mode (``batch_size == num_envs``) ``send`` + ``recv`` is ``step``.
        """
        self._check_stepable()
        if not self.is_async:
            if env_ids is not None and not np.array_equal(np.asarray(env_ids), self._all_ids):
                raise ValueError("in sync mode (batch_size == num_envs) send() steps every env")
            if self._pending_actions is not None:
                raise AsyncStateError("send() twice without recv()")
            self._pending_actions = actions
            return
        ids = self._idle_ids if env_ids is None else env_ids
        if env_ids is None and len(ids) == 0:
            raise AsyncStateError(
                "no env is waiting for actions: the envs of the last recv() were already sent; "
                "recv() first (or pass env_ids)"
            )
        self._pool.send(actions, ids)
        if env_ids is None:
            self._idle_ids = self._idle_ids[:0]

    def recv(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Waits for ``batch_size`` sent envs to finish and returns their step results in
        completion order; ``info["env_id"]`` gives the env of each row."""
        self._check_stepable()
        if not self.is_async:
            if self._pending_actions is None:
                raise AsyncStateError("recv() without a pending send()")
            actions, self._pending_actions = self._pending_actions, None
            obs, reward, terminated, truncated, ended = self._pool.step(actions)
            info = {} if ended == 0 else self._episode_info()
            info["env_id"] = self._all_ids
            return obs, reward, terminated, truncated, info
        obs, reward, terminated, truncated, ids, ended = self._pool.recv()
        self._idle_ids = ids
        info = {} if ended == 0 else self._episode_info()
        info["env_id"] = ids
        return obs, reward, terminated, truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        self._pool.close()

    # ------------------------------------------------------------------ fastbatch extras
    def step_into(
        self,
        actions: Any,
        obs: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
    ) -> dict[str, Any]:
        """Steps every env, writing results straight into the caller's arrays; returns ``info``.

        Each array must be C-contiguous, writeable, 64-byte aligned and have the exact dtype
        and shape of :meth:`step`'s results (for example slot ``t`` of a rollout made with
        :func:`fastbatch.aligned_empty`). Nothing else is allocated.
        """
        self._check_stepable()
        ended = self._pool.step_into(actions, obs, reward, terminated, truncated)
        return {} if ended == 0 else self._episode_info()

    @property
    def num_threads(self) -> int:
        """Worker threads stepping the batch (the calling thread counts as one)."""
        return self._pool.num_threads

    def get_env_state(self, index: int) -> np.ndarray:
        """The internal float64 state of env ``index`` (for tests and debugging)."""
        self._check_open()
        return self._pool.get_state(index)

    # ------------------------------------------------------------------ internals
    def _episode_info(self) -> dict[str, Any]:
        done, ret, length, elapsed = self._pool.episode_stats()
        info = episode_info(done, ret, length, elapsed, self._stats_key)
        if self.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP:
            final = self._pool.final_obs()
            for i in np.flatnonzero(done):
                info = add_info(info, {"final_obs": final[i], "final_info": {}}, int(i), len(done))
        return info

    def __repr__(self) -> str:
        return f"NativeVectorEnv({self._spec.id}, num_envs={self.num_envs})"


def episode_info(done, ret, length, elapsed, stats_key: str | None) -> dict[str, Any]:
    """The ``info`` entries of finished episodes, as gymnasium's ``RecordEpisodeStatistics``."""
    if stats_key is None:
        return {}
    return {stats_key: {"r": ret, "l": length, "t": elapsed}, "_" + stats_key: done}


def add_info(infos: dict[str, Any], info: dict[str, Any], row: int, rows: int) -> dict[str, Any]:
    """Adds one env's ``info`` at ``row`` in gymnasium's vector convention: each key becomes an
    array over the batch (an object array for non-numeric values, a nested dict for dicts) with
    a boolean mask under ``"_" + key``. ``final_obs`` is always an object array."""
    for key, value in info.items():
        if isinstance(value, dict) and key != "final_obs":
            array = add_info(infos.get(key, {}), value, row, rows)
        else:
            array = infos.get(key)
            if array is None:
                if key == "final_obs":
                    array = np.full(rows, None, dtype=object)
                elif isinstance(value, (bool, int, float, np.number)):
                    array = np.zeros(rows, dtype=type(value))
                elif isinstance(value, np.ndarray):
                    array = np.zeros((rows, *value.shape), dtype=value.dtype)
                else:
                    array = np.full(rows, None, dtype=object)
            array[row] = value
        mask = infos.get("_" + key)
        if mask is None:
            mask = np.zeros(rows, dtype=np.bool_)
        mask[row] = True
        infos[key], infos["_" + key] = array, mask
    return infos


def block_info(entries, views, first: int, rows: int) -> dict[str, Any]:
    """The infos of one block of envs [first, first + rows) in gymnasium's vector layout.

    `entries` holds (env index, final info or None, info) for envs with something to say; a final
    info also brings the env's row of ``views["final_obs"]``."""
    fast = _uniform_scalar_info(entries, first, rows)
    if fast is not None:
        return fast
    infos: dict[str, Any] = {}
    for i, final_info, info in entries:
        if final_info is not None:
            final = {"final_obs": views["final_obs"][i].copy(), "final_info": final_info}
            infos = add_info(infos, final, i - first, rows)
        infos = add_info(infos, info, i - first, rows)
    return infos


_SCALARS = (bool, int, float, np.number)
_scalar_types: set[type] = set()  # types seen to be _SCALARS (what add_info stores in arrays)


def _all_scalars(values: list) -> bool:
    types = set(map(type, values))
    if types <= _scalar_types:
        return True
    if all(issubclass(t, _SCALARS) for t in types):
        _scalar_types.update(types)
        return True
    return False


def _uniform_scalar_info(entries, first: int, rows: int) -> dict[str, Any] | None:
    """`block_info` for the common case of every entry carrying the same keys with scalar
    values and no final info (e.g. MuJoCo envs' per-step info): one array per key, built in one
    call, equal to what `add_info` builds entry by entry. None when the case does not apply."""
    if not entries:
        return None
    keys = entries[0][2].keys()
    if "final_obs" in keys or any(not isinstance(k, str) or k.startswith("_") for k in keys):  # "_x": a mask?
        return None
    for _, final_info, info in entries:
        if final_info is not None or info.keys() != keys:
            return None
    columns = {key: [info[key] for _, _, info in entries] for key in keys}
    if not all(_all_scalars(column) for column in columns.values()):
        return None
    index = [i - first for i, _, _ in entries]
    full = len(index) == rows and index[0] == 0 and index[-1] == rows - 1  # rows are ascending
    mask = np.ones(rows, dtype=np.bool_)
    if not full:
        mask[:] = False
        mask[index] = True
    infos: dict[str, Any] = {}
    for key, column in columns.items():
        values = np.array(column, dtype=type(column[0]))
        if full:
            infos[key] = values
        else:
            infos[key] = np.zeros(rows, dtype=values.dtype)
            infos[key][index] = values
        infos["_" + key] = mask.copy()
    return infos


def merge_block_info(infos: dict[str, Any], block: dict[str, Any], offset: int, rows: int) -> dict[str, Any]:
    """Places a block's infos (from `block_info`) at rows [offset, offset + block rows) of a batch
    of `rows`: array for array, mask for mask, nested dicts alike."""
    for key, value in block.items():
        if isinstance(value, dict):
            infos[key] = merge_block_info(infos.get(key, {}), value, offset, rows)
            continue
        target = infos.get(key)
        if target is None:
            if value.dtype == object:
                target = np.full(rows, None, dtype=object)
            else:
                target = np.zeros((rows, *value.shape[1:]), dtype=value.dtype)
            infos[key] = target
        target[offset : offset + len(value)] = value
    return infos


def aligned_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `array` whose data starts on a 64-byte boundary."""
    raw = np.empty(array.nbytes + 64, dtype=np.uint8)
    offset = -raw.__array_interface__["data"][0] % 64
    out = raw[offset : offset + array.nbytes].view(array.dtype).reshape(array.shape)
    np.copyto(out, array)
    return out
