"""Users' own native envs: `register_native_env` loads a compiled plugin and registers its id.

A plugin is a shared library built against the installed headers (see README, "Write your own
native env") exporting one env class with ``FASTBATCH_EXPORT_ENV``, or a capsule named
``"fastbatch.env_api"`` handed over by the author's own extension module.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastbatch import _core
from fastbatch._args import strip_namespace
from fastbatch.api import add_native_env
from fastbatch.registry import REGISTRY

__all__ = ["register_native_env"]


def register_native_env(
    env_id: str,
    source: str | os.PathLike | Any,
    *,
    entry: str | None = None,
    replace: bool = False,
    **default_kwargs: Any,
) -> None:
    """Registers the native env in ``source`` under ``env_id``.

    ``source``: the path of a plugin shared library, or a ``PyCapsule`` named
    ``"fastbatch.env_api"``. ``entry``: the exported symbol (default
    ``fastbatch_get_env_api``, what ``FASTBATCH_EXPORT_ENV`` defines). ``default_kwargs``
    override the env's declared parameter defaults for every ``make(env_id)``.

    Afterwards ``fastbatch.make(env_id, ...)`` and ``gymnasium.make_vec("fastbatch/<env_id>",
    vectorization_mode="vector_entry_point")`` work as for the built-ins. Registering an id
    that exists raises ``ValueError`` unless ``replace=True``. A library stays loaded until the
    process exits.

    Raises ``FileNotFoundError`` for a missing library and ``fastbatch.PluginError`` (a
    ``ValueError``) for one that does not load, lacks the entry symbol, was built for another
    ABI version, or declares an unsupported spec.
    """
    if isinstance(env_id, str):
        env_id = strip_namespace(env_id)  # the gymnasium id of a native env: the same env
    if not isinstance(env_id, str) or not env_id or env_id.startswith("_"):
        raise ValueError(f"env_id must be a non-empty string not starting with '_', got {env_id!r}")
    if REGISTRY.has(env_id) and not replace:
        raise ValueError(
            f"an env is already registered as {env_id!r}; pass replace=True to replace it"
        )
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise FileNotFoundError(f"no plugin library at {str(path)!r}")
        env_type = _core._load_plugin(str(path.resolve()), entry or "fastbatch_get_env_api")
    elif type(source).__name__ == "PyCapsule":
        if entry is not None:
            raise ValueError("entry applies to a library path, not to a capsule")
        env_type = _core._env_type_from_capsule(source)
    else:
        raise TypeError(
            f"source must be a path to a shared library or a PyCapsule, got {type(source).__name__}"
        )
    add_native_env(env_type, env_id=env_id, defaults=default_kwargs)
