"""Stable-Baselines3 over fastbatch: `SB3VecEnv`, an SB3 ``VecEnv`` over any fastbatch env.

    import fastbatch
    from fastbatch.sb3 import SB3VecEnv
    from stable_baselines3 import PPO

    env = SB3VecEnv(fastbatch.make("CartPole-v1", num_envs=8, autoreset_mode="same_step"))
    PPO("MlpPolicy", env, seed=0).learn(100_000)

SB3 sees what ``DummyVecEnv`` over ``Monitor``-wrapped envs gives it (``tests/test_sb3.py``
checks it step by step against exactly that): an ended env is reset in the same step, its last
observation in ``infos[i]["terminal_observation"]``, ``infos[i]["TimeLimit.truncated"]`` on
every step, ``infos[i]["episode"] = {"r", "l", "t"}`` when an episode ends (``t``: seconds since
the adapter was built, as ``Monitor`` writes it), the env's own step infos per env (the final
step's for an ended env; its reset infos go to ``reset_infos``), and seeds from
``VecEnv.seed`` / ``PPO(seed=...)`` applied at the next ``reset()``. ``VecNormalize``,
``VecMonitor`` (build with ``monitor=False`` so that only VecMonitor counts episodes) and
``evaluate_policy`` work on top.

Needs Stable-Baselines3 (``pip install "fastbatch[sb3]"``); importing this module without it
raises ImportError naming that extra. fastbatch itself never imports it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

try:
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import VecEnv
except ImportError as exc:  # SB3 is optional
    raise ImportError(
        "fastbatch.sb3 needs Stable-Baselines3, which fastbatch does not install by default: "
        'pip install "fastbatch[sb3]" (on a CPU-only machine install the CPU build of PyTorch '
        "first)"
    ) from exc

from fastbatch._base import BatchVectorEnv

__all__ = ["SB3VecEnv"]

# Keys of a fastbatch info that the adapter turns into SB3's own entries, not per-env infos.
_OWN_KEYS = ("final_obs", "final_info", "env_id")
# What each env of a batch shares, and so what get_attr can honestly answer for each.
_PER_ENV_ATTRS = ("render_mode", "metadata", "spec", "observation_space", "action_space")


def _rows(info: dict[str, Any], n: int, skip: Sequence[str] = ()) -> list[dict[str, Any]]:
    """gymnasium's vector info layout (arrays with ``_key`` masks, nested dicts) as one dict per
    env, each holding only the keys its mask marks; ``skip`` keys are left out."""
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    for key, value in info.items():
        if key in skip or (key.startswith("_") and key[1:] in info):
            continue
        mask = info.get("_" + key)
        values = _rows(value, n) if isinstance(value, dict) else value
        for i in range(n) if mask is None else np.flatnonzero(mask).tolist():
            rows[i][key] = values[i]
    return rows


class SB3VecEnv(VecEnv):
    """A Stable-Baselines3 ``VecEnv`` over the fastbatch env ``env`` (native or process
    backend; see the module docstring for what SB3 receives).

    ``env`` must step every env at once (``batch_size == num_envs``) and reset ended envs
    itself in the same step (``autoreset_mode="same_step"``), or not at all
    (``"disabled"``: the adapter resets them with a masked reset). Closing the adapter closes
    ``env``.

    ``monitor``: write ``infos[i]["episode"]`` as SB3's ``Monitor`` does (and report envs as
    Monitor-wrapped to ``env_is_wrapped``, which ``evaluate_policy`` consults). Pass False under
    ``VecMonitor``, which otherwise warns that it overwrites Monitor's statistics.

    Attributes: ``get_attr`` answers ``render_mode``, ``metadata``, ``spec``,
    ``observation_space`` and ``action_space`` (every env of a batch shares them); anything
    else, ``set_attr`` and ``env_method`` raise, because the single envs live in C++ threads or
    worker processes (``get_images`` works for envs made with ``render_mode="rgb_array"``).
    Reset options are refused (fastbatch envs take none but a mask). Threading: one thread at a
    time, as ``env``.

    Args:
        env: A fastbatch env (`fastbatch.make`), sync mode, in SAME_STEP or DISABLED autoreset
            mode.
        monitor: Write ``infos[i]["episode"]`` as SB3's ``Monitor`` does (above).

    Raises:
        TypeError: ``env`` is not a fastbatch env.
        ValueError: ``env`` is in NEXT_STEP autoreset mode, or in async mode.
    """

    def __init__(self, env: BatchVectorEnv, *, monitor: bool = True) -> None:
        if not isinstance(env, BatchVectorEnv):
            raise TypeError(
                f"SB3VecEnv wraps a fastbatch env (fastbatch.make(...)), got {type(env).__name__}"
            )
        mode = env.metadata["autoreset_mode"]
        if mode not in (AutoresetMode.SAME_STEP, AutoresetMode.DISABLED):
            raise ValueError(
                "SB3 resets an ended env in the same step: make the env with "
                'fastbatch.make(..., autoreset_mode="same_step"), got autoreset mode '
                f"{mode.value!r}"
            )
        if env.is_async:
            raise ValueError(
                "SB3 steps every env at once: make the env without batch_size (got batch_size="
                f"{env.batch_size} of num_envs={env.num_envs})"
            )
        self.env = env
        self.monitor = monitor
        self._same_step = mode == AutoresetMode.SAME_STEP
        self._skip = (*_OWN_KEYS, *self._stats_keys(env))
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)
        self.t_start = time.time()
        self._returns = np.zeros(self.num_envs, dtype=np.float64)
        self._lengths = np.zeros(self.num_envs, dtype=np.int64)
        self._actions: np.ndarray | None = None

    @staticmethod
    def _stats_keys(env: BatchVectorEnv) -> tuple[str, ...]:
        """The env's own episode-statistics keys: SB3 gets Monitor's instead."""
        key = env.stats_key
        return () if key is None else (key, "_" + key)

    # ------------------------------------------------------------------ VecEnv API
    def reset(self) -> np.ndarray:
        """Resets every env with the seeds from ``seed()`` (once), as ``DummyVecEnv``.

        Returns:
            The observations of every env; their infos are in ``reset_infos``.

        Raises:
            ValueError: Reset options were set (``set_options``).
        """
        if any(self._options):
            raise ValueError(
                "fastbatch envs take no reset options (set_options); their parameters are "
                "fastbatch.make's keyword arguments"
            )
        seeds = None if all(s is None for s in self._seeds) else list(self._seeds)
        obs, info = self.env.reset(seed=seeds)
        self.reset_infos = _rows(info, self.num_envs, self._skip)
        self._returns[:] = 0.0
        self._lengths[:] = 0
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """Keeps the actions for `step_wait`, which steps the envs (as ``DummyVecEnv``).

        Args:
            actions: One action per env.
        """
        self._actions = actions

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        """Steps every env with the actions of `step_async`.

        An ended env is reset in the same step; its last observation is in
        ``infos[i]["terminal_observation"]`` (see the class docstring for the infos).

        Returns:
            ``(obs, rewards, dones, infos)``: ``dones`` is terminated or truncated, ``infos``
            one dict per env.

        Raises:
            RuntimeError: No `step_async` came first.
            EnvError: An env raised (as the fastbatch env raises it).
        """
        actions, self._actions = self._actions, None
        if actions is None:
            raise RuntimeError("step_wait() without step_async()")
        obs, reward, terminated, truncated, info = self.env.step(actions)
        dones = terminated | truncated
        self._returns += reward
        self._lengths += 1
        n = self.num_envs
        infos = _rows(info, n, self._skip) if info else [{} for _ in range(n)]
        if dones.any():
            obs = self._end_episodes(dones, obs, info, infos)
        for row, cut in zip(infos, (truncated & ~terminated).tolist(), strict=True):
            row["TimeLimit.truncated"] = cut
        return obs, reward, dones, infos

    def _end_episodes(self, dones: np.ndarray, obs, info, infos) -> np.ndarray:
        """Terminal observations, reset infos, Monitor's episode dicts and, in DISABLED mode,
        the resets; returns the observations that follow."""
        ended = np.flatnonzero(dones).tolist()
        if self._same_step:
            # An ended env's row of the step's infos is its reset's; its last step's infos are
            # in final_info (SyncVectorEnv's layout).
            final_obs = info["final_obs"]
            final_rows = _rows(info.get("final_info", {}), self.num_envs)
            for i in ended:
                self.reset_infos[i], infos[i] = infos[i], final_rows[i]
        else:  # DISABLED: the step's observations are final; reset the ended envs now
            final_obs = obs.copy()
            obs, reset_info = self.env.reset(options={"reset_mask": dones})
            reset_rows = _rows(reset_info, self.num_envs, self._skip)
            for i in ended:
                self.reset_infos[i] = reset_rows[i]
        now = round(time.time() - self.t_start, 6)
        for i in ended:
            infos[i]["terminal_observation"] = final_obs[i]
            if self.monitor:
                infos[i]["episode"] = {
                    "r": round(float(self._returns[i]), 6),
                    "l": int(self._lengths[i]),
                    "t": now,
                }
        self._returns[dones] = 0.0
        self._lengths[dones] = 0
        return obs

    def close(self) -> None:
        """Closes the wrapped fastbatch env."""
        self.env.close()

    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        """``render_mode``, ``metadata``, ``spec``, ``observation_space`` or ``action_space`` of
        each env.

        Args:
            attr_name: One of those five.
            indices: Which envs (SB3's: None for all, an int, or a sequence).

        Returns:
            One value per env of ``indices`` (the batch's own, which every env shares).

        Raises:
            AttributeError: Any other name.
        """
        if attr_name not in _PER_ENV_ATTRS:
            raise AttributeError(
                f"SB3VecEnv cannot read {attr_name!r} of single fastbatch envs (they live in C++ "
                f"threads or worker processes); it offers {', '.join(_PER_ENV_ATTRS)}"
            )
        env = self.env
        value = {
            "render_mode": env.render_mode,
            "metadata": env.metadata,
            "spec": getattr(env, "spec", None),
            "observation_space": env.single_observation_space,
            "action_space": env.single_action_space,
        }[attr_name]
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        """Refused: the single envs live in C++ threads or worker processes.

        Args:
            attr_name: The attribute.
            value: Its value (never set).
            indices: Which envs.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError(
            f"SB3VecEnv cannot set {attr_name!r} on single fastbatch envs (they live in C++ "
            "threads or worker processes); pass env parameters to fastbatch.make instead"
        )

    def env_method(
        self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any
    ) -> list[Any]:
        """Refused: the single envs live in C++ threads or worker processes.

        Args:
            method_name: The method.
            *method_args: Its positional arguments.
            indices: Which envs.
            **method_kwargs: Its keyword arguments.

        Raises:
            NotImplementedError: Always.
        """
        raise NotImplementedError(
            f"SB3VecEnv cannot call {method_name!r} on single fastbatch envs (they live in C++ "
            "threads or worker processes)"
        )

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        """Whether the envs are wrapped in ``wrapper_class``, as SB3 asks.

        Args:
            wrapper_class: A wrapper class.
            indices: Which envs.

        Returns:
            Per env of ``indices``: True for SB3's ``Monitor`` (or a base of it) when
            ``monitor`` is on (the infos carry its episode dicts), False for every other
            wrapper.
        """
        wrapped = self.monitor and issubclass(Monitor, wrapper_class)
        return [wrapped for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        """Every env's frame (SB3's ``render()`` reads them), for envs made with
        ``render_mode="rgb_array"``.

        Returns:
            One ``[height, width, 3]`` uint8 frame per env.

        Raises:
            NotImplementedError: The env was not made with ``render_mode="rgb_array"``.
        """
        if self.env.render_mode != "rgb_array":
            raise NotImplementedError(
                "these fastbatch envs do not render images: make them with "
                "render_mode='rgb_array' (fastbatch.make(id, n, render_mode='rgb_array'))"
            )
        return list(self.env.render())

    def __repr__(self) -> str:
        return f"SB3VecEnv({self.env!r})"
