"""`fastbatch.make`: one entry point for native (C++) envs and Python envs in worker processes.

The one module that knows every backend; registering envs is `fastbatch.registration`'s job."""

from __future__ import annotations

from typing import Any

import gymnasium

from fastbatch import env_packages, mujoco
from fastbatch._args import strip_namespace
from fastbatch.errors import UnknownEnvError
from fastbatch.native import NativeVectorEnv
from fastbatch.registry import REGISTRY

__all__ = ["backend_for", "make", "make_vector"]

_PROCESS_OPTIONS = (
    "num_workers",
    "seed",
    "autoreset_mode",
    "stats_key",
    "batch_size",
    "start_timeout",
    "in_parent",
    "restart",
    "frame_stack",
    "wrappers",
    "rebalance",
)


def make(env: Any, num_envs: int | None = None, *, backend: str | None = None, **kwargs: Any):
    """Makes a batch of ``num_envs`` envs as a gymnasium ``VectorEnv``.

    ``env`` is a native id (``fastbatch.list_envs()``, stepped in C++ threads), any gymnasium id,
    an env factory, or a list of factories (one per env; Python envs run in worker processes).
    ``backend``: ``"native"``, ``"process"``, or None to choose: native for native ids, the
    process backend otherwise. gymnasium's MuJoCo v5 ids (``fastbatch.mujoco.ENV_IDS``) are
    native ids when mujoco is installed: the first ``make`` of one builds and registers them
    (see `fastbatch.mujoco`; without mujoco it raises ``MujocoUnavailableError``).

    ``num_workers`` (both backends): threads (native) or blocks of envs, each stepped by one
    process (process backend); default: the available cores, at most ``num_envs``.
    (``num_threads`` is the native backend's deprecated old name.)

    Native keyword arguments: ``seed`` (env ``i`` gets ``seed + i``), ``autoreset_mode`` (gymnasium's
    ``AutoresetMode`` or its string; default ``NEXT_STEP``), ``max_episode_steps`` (default: the
    env's; 0 disables the time limit), ``stats_key`` (the info key under which fastbatch
    reports finished episodes' statistics, computed in C++; default None: off, so gymnasium's
    ``RecordEpisodeStatistics`` composes; ``"episode"`` gives its layout), ``batch_size`` (async mode below ``num_envs``),
    ``frame_stack`` (k > 1: each env's last k observations, oldest first, as gymnasium's
    ``FrameStackObservation``, kept by the pool), and the env's own parameters.

    Process keyword arguments: ``seed``, ``autoreset_mode``, ``stats_key``, ``batch_size`` (whole worker
    blocks), ``start_timeout`` (seconds for workers to build their envs), ``in_parent`` (the
    calling process steps the first block itself, as the native pool's calling thread does: one
    process fewer; an env crash in that block then reaches the caller), ``restart`` (replace a
    worker process that dies, see ``ProcessVectorEnv``), ``frame_stack`` (gymnasium's
    ``FrameStackObservation`` around each env, in its worker), ``wrappers`` (callables
    ``env -> env`` or ``"module:name"`` paths, around each env in its worker, before the frame
    stack: ``ProcessVectorEnv``), ``rebalance`` (default True: with ``in_parent`` the caller
    also steps other blocks while that measures faster, e.g. when another program takes a core;
    envs move by pickling, and envs that would lose their state never move); everything else
    (``max_episode_steps`` included) goes to ``gymnasium.make`` for an id.
    """
    if backend_for(env, backend) == "native":
        if kwargs.get("wrappers"):
            raise TypeError(
                f"wrappers apply to Python envs, which the process backend steps; {env!r} is a "
                "native env (its batch is stepped in C++): pass backend='process' with a "
                "gymnasium id, or drop wrappers"
            )
        kwargs.pop("wrappers", None)
        if mujoco.is_mujoco_id(env):
            mujoco.register()  # builds the envs on first use
        entry = REGISTRY.resolve(env)  # resolved once, handed down
        if mujoco.is_mujoco_id(entry.spec.id):
            kwargs = mujoco.native_kwargs(entry.spec, kwargs)
        else:  # a native env package's own kwargs (fastbatch-atari's screen_size=(w, h))
            kwargs = env_packages.native_kwargs(entry.spec.id, kwargs)
        return NativeVectorEnv(entry, 1 if num_envs is None else num_envs, **kwargs)
    if not isinstance(env, (str, list, tuple)) and not callable(env):
        raise TypeError(
            f"env must be an env id, a factory or a list of factories, got {type(env).__name__}"
        )
    if isinstance(env, str):
        name = strip_namespace(env)
        if name not in gymnasium.registry:
            # An id of a package gymnasium does not import by itself (ale_py, minatar,
            # minigrid): imported here, or the error names what to install.
            package = env_packages.register_package_for(name)
            try:
                gymnasium.spec(name)
            except gymnasium.error.Error:
                known = f"nor an id of {package.name}" if package else "nor a gymnasium id"
                raise UnknownEnvError(
                    f"{env!r} is neither a native env ({', '.join(REGISTRY.ids())}) {known}"
                ) from None
        env = name
    from fastbatch.process import ProcessVectorEnv, env_factories  # loaded on first use

    options = {k: kwargs.pop(k) for k in _PROCESS_OPTIONS if k in kwargs}
    return ProcessVectorEnv(env_factories(env, num_envs, kwargs), **options)


def backend_for(env: Any, backend: str | None = None) -> str:
    """The backend ``make(env, backend=backend)`` steps `env` with: ``backend`` if given, else
    "native" for a native id (gymnasium's MuJoCo v5 ids included, and the ids of an installed
    native env package such as fastbatch-atari, registered here on first use), "process"
    otherwise."""
    if backend not in (None, "native", "process"):
        raise ValueError(f"backend must be 'native', 'process' or None, got {backend!r}")
    if backend != "process" and not REGISTRY.has(env) and not mujoco.is_mujoco_id(env):
        env_packages.register_native_package_for(env)  # e.g. fastbatch-atari for "ALE/" ids
    if backend is not None:
        return backend
    return "native" if REGISTRY.has(env) or mujoco.is_mujoco_id(env) else "process"


def make_vector(env_id: str, num_envs: int = 1, **kwargs: Any):
    """``gymnasium.make_vec("fastbatch/<id>", vectorization_mode="vector_entry_point")``'s
    entry point: `make` for a native id."""
    return make(env_id, num_envs, backend="native", **kwargs)
