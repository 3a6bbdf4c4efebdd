"""Users' own native envs: `register_native_env` loads a compiled plugin and registers its ids.

A plugin is a shared library built against the installed headers (see README, "Write your own
native env") exporting its env classes with ``FASTBATCH_EXPORT_ENVS(A, B, ...)`` (or one with
``FASTBATCH_EXPORT_ENV``), or a capsule named ``"fastbatch.env_api"`` handed over by the author's
own extension module. Plugins built against ABI version 1 (fastbatch 0.1) keep loading.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastbatch import _core
from fastbatch._args import strip_namespace
from fastbatch.errors import PluginError
from fastbatch.registration import add_native_env
from fastbatch.registry import REGISTRY

__all__ = ["register_native_env"]


def register_native_env(
    env_id: str | None,
    source: str | os.PathLike | Any,
    *,
    entry: str | None = None,
    replace: bool = False,
    max_episode_steps: int | None = None,
    renderer: str | None = None,
    observation_keys: dict[str, slice] | None = None,
    **default_kwargs: Any,
) -> list[str]:
    """Registers the native env(s) in ``source``; returns the ids registered.

    Afterwards ``fastbatch.make(id, ...)``, ``gymnasium.make("fastbatch/<id>")`` and
    ``gymnasium.make_vec("fastbatch/<id>", ...)`` work as for the built-ins. A library stays
    loaded until the process exits.

    Args:
        env_id: None registers every env the library exports under its own id; a string
            registers one env under that id: the library's only env, or, in a library of
            several, the one whose id it is.
        source: The path of a plugin shared library, or a ``PyCapsule`` named
            ``"fastbatch.env_api"``.
        entry: A custom exported symbol returning one table (default: what
            ``FASTBATCH_EXPORT_ENVS`` defines); for a library path only.
        replace: Replace an env already registered under the id (else ``ValueError``).
        max_episode_steps: Replaces the env's time limit (0: none), for every ``make`` of that
            id; needs a single env.
        renderer: The gymnasium id whose renderer draws the env from its state
            (`NativeVectorEnv.get_env_state`, which must be the state that renderer's env keeps
            in ``env.unwrapped.state``, or its MuJoCo ``qpos ++ qvel``); a single env, too.
            Without one the env takes ``render_mode=None`` only (unless its class draws itself).
        observation_keys: Names of parts of the env's flat observation row (name -> slice or
            ``(start, stop)``), kept in ``fastbatch.spec(id).observation_keys``; a single env.
        **default_kwargs: Replace the env's param defaults for every ``make`` of that id;
            needs a single env.

    Returns:
        The ids registered, in the library's order.

    Raises:
        FileNotFoundError: No library at the path.
        PluginError: The library does not load, lacks the entry symbol, was built for an ABI
            version this fastbatch does not speak, exports two envs of the same id or no env
            ``env_id`` (of several), or declares a spec that breaks the contract (the message
            names the env and the field). A ``ValueError``.
        ValueError: An id that exists (without ``replace=True``), an empty or private (``_``)
            id, ``entry`` with a capsule, a renderer for an env that draws itself, a negative
            ``max_episode_steps`` or a default out of its param's range.
        TypeError: ``env_id`` not a str or None; ``source`` neither a path nor a capsule;
            defaults, ``max_episode_steps`` or ``renderer`` with several envs; a default or
            ``max_episode_steps`` of the wrong type.
    """
    if env_id is not None:
        if not isinstance(env_id, str):
            raise TypeError(f"env_id must be a string or None, got {type(env_id).__name__}")
        env_id = strip_namespace(env_id)  # the gymnasium id of a native env: the same env
        if not env_id or env_id.startswith("_"):
            raise ValueError(
                f"env_id must be a non-empty string not starting with '_', got {env_id!r}"
            )
    types = _load(source, entry)
    _refuse_duplicates(source, types)
    if env_id is not None and len(types) > 1:
        chosen = [t for t in types if t.id == env_id]
        if not chosen:
            ids = ", ".join(sorted(t.id for t in types))
            raise PluginError(f"{source} exports no env {env_id!r}; it exports: {ids}")
        types = chosen
    if len(types) > 1 and (
        default_kwargs or max_episode_steps is not None or renderer or observation_keys
    ):
        raise TypeError(
            "default keyword arguments, max_episode_steps, renderer and observation_keys apply "
            "to one env: name it with env_id"
        )
    names = [env_id if env_id is not None else t.id for t in types]
    for name in names:
        if name.startswith("_"):
            raise ValueError(
                f"{source} exports the private id {name!r}: register it under another id"
            )
        if REGISTRY.has(name) and not replace:
            raise ValueError(
                f"an env is already registered as {name!r}; pass replace=True to replace it"
            )
    for env_type, name in zip(types, names, strict=True):
        add_native_env(
            env_type,
            name,
            default_kwargs,
            max_episode_steps,
            renderer=renderer,
            observation_keys=observation_keys,
        )
    return names


def _refuse_duplicates(source: Any, types: list) -> None:
    """A library that exports two envs of one id would register the second over the first."""
    seen: dict[str, int] = {}
    for position, env_type in enumerate(types):
        if env_type.id in seen:
            raise PluginError(
                f"{source} exports two envs with the id {env_type.id!r} (tables {seen[env_type.id]} "
                f"and {position} of FASTBATCH_EXPORT_ENVS): give each env its own id"
            )
        seen[env_type.id] = position


def _load(source: Any, entry: str | None) -> list:
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no plugin library at {str(path)!r}")
        return _core._load_plugin(str(path.resolve()), entry or "")
    if type(source).__name__ == "PyCapsule":
        if entry is not None:
            raise ValueError("entry applies to a library path, not to a capsule")
        return [_core._env_type_from_capsule(source)]
    raise TypeError(
        f"source must be a path to a shared library or a PyCapsule, got {type(source).__name__}"
    )
