"""Argument rules shared by both backends: each rule and its message written once."""

from __future__ import annotations

import inspect
import numbers
import os
from typing import Any

from gymnasium.vector import AutoresetMode

NAMESPACE = "fastbatch"

# The autoreset mode codes of the C++ pool (AutoresetMode in core/vector_pool.h) and of the
# process backend's workers.
NEXT_STEP, SAME_STEP, DISABLED = 0, 1, 2
MODE_CODES = {
    AutoresetMode.NEXT_STEP: NEXT_STEP,
    AutoresetMode.SAME_STEP: SAME_STEP,
    AutoresetMode.DISABLED: DISABLED,
}
MAX_SEED = 2**64 - 1


def available_cores() -> int:
    """The cores this process may run on (its affinity mask), at least 1."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def positive_int(name: str, value: Any) -> int:
    """`value` as an int; TypeError for a non-integer (bool included), ValueError below 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def frame_stack_size(value: Any) -> int:
    """The observations stacked per env for ``frame_stack`` (both backends): 1 (no stacking)
    for None or 0, else a positive int (TypeError/ValueError as `positive_int`)."""
    if value is None or (
        isinstance(value, numbers.Integral) and not isinstance(value, bool) and value == 0
    ):
        return 1
    return positive_int("frame_stack", value)


def parse_autoreset_mode(value: Any) -> AutoresetMode:
    """gymnasium's AutoresetMode from itself or a name ("next_step", "NextStep", "NEXT_STEP")."""
    if isinstance(value, AutoresetMode):
        return value
    if isinstance(value, str):
        key = value.replace("_", "").lower()
        for mode in AutoresetMode:
            if key == mode.value.lower():
                return mode
    names = ", ".join(repr(m.name.lower()) for m in AutoresetMode)
    raise ValueError(
        f"autoreset_mode must be a gymnasium AutoresetMode or one of {names}, got {value!r}"
    )


def seed_list(seed: Any, num_envs: int, max_seed: int | None = MAX_SEED) -> list[int | None]:
    """Per-env seeds: None (keep every generator), an int (env i gets seed + i) or a list;
    non-negative, at most ``max_seed`` (None: any size, as numpy's SeedSequence takes)."""
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
        if s < 0:
            raise ValueError(f"seeds must be non-negative, got {s}")
        if max_seed is not None and s > max_seed:
            raise ValueError(f"seeds must be in [0, 2**64), got {s}")
    return [None if s is None else int(s) for s in seeds]


def strip_namespace(env_id: str) -> str:
    """``"fastbatch/CartPole-v1"`` -> ``"CartPole-v1"``: the gymnasium id of a native env names
    the same env."""
    prefix = NAMESPACE + "/"
    return env_id.removeprefix(prefix)


def worker_count(num_workers: Any, num_threads: Any, num_envs: int) -> int:
    """The parallelism knob of both backends: ``num_workers`` (default: the available cores, at
    most ``num_envs``). ``num_threads`` is its deprecated spelling (native backend)."""
    if num_threads is not None:
        import warnings

        if num_workers is not None:
            raise TypeError("pass num_workers only (num_threads is its deprecated old name)")
        warnings.warn(
            "num_threads is deprecated; use num_workers", DeprecationWarning, stacklevel=4
        )
        num_workers = num_threads
    if num_workers is None:
        return min(available_cores(), num_envs)
    return positive_int("num_workers", num_workers)


def blocking_threads(workers: int, default_workers: bool) -> int:
    """The most threads async mode may step with while the envs' steps block (the pool measures
    it): ``min(8 * workers, workers + 64)`` when ``num_workers`` was left to its default, else
    ``workers`` (a number the user gave is a hard limit). The pool clamps it to ``num_envs``
    and uses it only in async mode."""
    return min(8 * workers, workers + 64) if default_workers else workers


def time_limit(env_id: str, max_episode_steps: Any) -> int | None:
    """A ``max_episode_steps`` argument (registering an id, or making envs) checked: None (not
    given) or a non-negative int (0: no limit). TypeError naming the env for a non-integer (bool
    included), ValueError for a negative one."""
    if max_episode_steps is None:
        return None
    if isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, numbers.Integral):
        raise TypeError(
            f"{env_id}: max_episode_steps must be an integer >= 0 or None, got "
            f"{max_episode_steps!r}"
        )
    if max_episode_steps < 0:
        raise ValueError(f"{env_id}: max_episode_steps must be >= 0, got {max_episode_steps}")
    return int(max_episode_steps)


def pool_time_limit(env_id: str, max_episode_steps: Any, registered: int | None) -> int:
    """The time limit a native pool applies: `max_episode_steps` when given (0: none; checked by
    `time_limit`), else the id's `registered` one, else -1 (the env spec's own)."""
    limit = time_limit(env_id, max_episode_steps)
    if limit is None:
        return -1 if registered is None else registered
    return limit


def split_options(cls: type, kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`kwargs` split into `cls`'s own keyword-only arguments (read from its signature: the one
    list of a backend's options) and the rest (the env's)."""
    parameters = inspect.signature(cls).parameters.values()
    names = {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
    options = {k: v for k, v in kwargs.items() if k in names}
    return options, {k: v for k, v in kwargs.items() if k not in names}
