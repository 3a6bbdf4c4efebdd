"""Envs from outside fastbatch, made known before an env is made: native plugin libraries,
modules that register gymnasium ids, and the common env packages found by their ids' prefix.

gymnasium 1.x loads no env package by itself: ``ALE/...`` ids exist only once ``ale_py`` is
imported, ``MiniGrid-...`` and ``BabyAI-...`` once ``minigrid`` is, ``MinAtar/...`` once
``minatar.gym.register_envs()`` has run. `register_package_for` does that for an id of those
packages (`fastbatch.make` calls it for an id gymnasium does not know), and names what to
install when the package is missing. `load_plugins` and `run_imports` carry out a training
config's ``plugins`` and ``imports`` (`load_env_sources`; the ``fastbatch`` command's
``--plugin`` and ``--import``). Each is done once a process: loading again is a no-op.

Native env families (fastbatch's own MuJoCo envs, the separate GPL ``fastbatch-atari``, a
user's package) declare themselves by a ``fastbatch.envs`` entry point naming a module; that is
the whole protocol (`family_for` follows it, and `fastbatch.api` asks it before choosing a
backend, so the family's ids become native ids and ``api.py`` names no family):

- ``ID_PREFIXES`` (how its ids start, e.g. ``("ALE/",)``) and/or ``ENV_IDS`` (its exact ids):
  the ids it owns;
- ``register() -> list[str]``: registers its envs (``fastbatch.register_native_env``); called
  before every make of an id it owns, so it must be idempotent and cheap after the first call;
- optionally ``native_kwargs(spec, kwargs) -> kwargs``: turns keyword arguments the params
  cannot hold (numbers and choices) into params, e.g. fastbatch-atari's ``screen_size=(width,
  height)`` or MuJoCo's ``healthy_z_range=(low, high)``; ``spec`` is the id's
  `fastbatch.NativeEnvSpec`.

Ids registered here live in this process's gymnasium registry, which the process backend
carries to its workers (`fastbatch.process.gym_registry`), so they need no registration there.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import sys
from collections.abc import Iterable
from importlib import metadata
from typing import Any

import gymnasium

from fastbatch.errors import PluginError, UnknownEnvError
from fastbatch.plugins import register_native_env

__all__ = [
    "KNOWN_PACKAGES",
    "EnvPackage",
    "load_env_sources",
    "load_plugins",
    "native_kwargs",
    "native_packages",
    "owns",
    "register_native_package_for",
    "register_package_for",
    "run_imports",
]


@dataclasses.dataclass(frozen=True)
class EnvPackage:
    """An env package whose ids gymnasium knows only after it is imported."""

    name: str
    """The distribution, as ``pip install`` takes it."""
    module: str
    """The module whose import registers the ids (or that holds `register`)."""
    prefixes: tuple[str, ...]
    """How its ids start."""
    register: str | None = None
    """A function of `module` that registers the ids, called once (None: the import does)."""

    def owns(self, env_id: str) -> bool:
        return env_id.startswith(self.prefixes)


KNOWN_PACKAGES = (
    EnvPackage("ale-py", "ale_py", ("ALE/",)),
    EnvPackage("minatar", "minatar.gym", ("MinAtar/",), register="register_envs"),
    EnvPackage("minigrid", "minigrid", ("MiniGrid-", "BabyAI-")),
    EnvPackage("shimmy[dm-control]", "shimmy", ("dm_control/",)),
)

_LOADED_PLUGINS: set[str] = set()  # absolute paths
_RUN_IMPORTS: set[str] = set()  # "module" or "module:function", as given
_NATIVE_PACKAGES: tuple[metadata.EntryPoint, ...] | None = None  # read once a process


def register_package_for(env_id: str) -> EnvPackage | None:
    """Registers the ids of the known package `env_id` is named like (`KNOWN_PACKAGES`) and
    returns it; None when no known package names its ids so. Raises
    ``fastbatch.UnknownEnvError`` naming the ``pip install`` when that package is not
    installed. Whether the package has `env_id` is for gymnasium's registry to say after."""
    package = next((p for p in KNOWN_PACKAGES if p.owns(env_id)), None)
    if package is None:
        return None
    try:
        module = importlib.import_module(package.module)
    except ModuleNotFoundError as exc:
        if exc.name is None or package.module.split(".")[0] != exc.name.split(".")[0]:
            raise  # the package is there, one of its own imports is missing
        raise UnknownEnvError(
            f"{env_id!r} is an id of the {package.name} package, which is not installed: "
            f"pip install {package.name} (gymnasium loads no env package by itself)"
        ) from None
    # A registering function registers every id again, which gymnasium warns about: call it
    # only while none of the package's ids is registered (by us or by the caller).
    if package.register is not None and not any(package.owns(name) for name in gymnasium.registry):
        getattr(module, package.register)()
    return package


def owns(family: Any, env_id: str) -> bool:
    """Whether the native env family `family` (a ``fastbatch.envs`` entry point's module) owns
    `env_id`: one of its ``ENV_IDS``, or an id starting with one of its ``ID_PREFIXES``."""
    return env_id in getattr(family, "ENV_IDS", ()) or env_id.startswith(
        tuple(getattr(family, "ID_PREFIXES", ()))
    )


def register_native_package_for(env_id: Any) -> str | None:
    """Registers the installed native env family that owns `env_id` (the module of a
    ``fastbatch.envs`` entry point: `owns`; its ``register()`` runs on every call, and is
    idempotent) and returns the module's name; None when none owns it. Raises
    ``fastbatch.UnknownEnvError`` with the family's own message when a package it needs is
    missing (e.g. ale-py's ROMs), the family's own ImportError subclass as it is (e.g.
    ``MujocoUnavailableError``), ``fastbatch.PluginError`` naming the family when it fails
    otherwise."""
    if not isinstance(env_id, str):
        return None
    for entry in native_packages():
        try:
            module = entry.load()
            if not owns(module, env_id):
                continue
            module.register()
        except ImportError as exc:  # a package it needs is missing: its message names it
            if type(exc) not in (ImportError, ModuleNotFoundError):
                raise  # the family's own error type, which callers may catch by name
            raise UnknownEnvError(f"{env_id!r}: {exc}") from exc
        except Exception as exc:
            raise PluginError(
                f"the native env package {entry.value!r} ({entry.name} in the fastbatch.envs "
                f"entry points) failed to load: {type(exc).__name__}: {exc}"
            ) from exc
        return entry.value
    return None


def native_kwargs(spec: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """`kwargs` as the native env family that owns ``spec.id`` takes them: through its module's
    ``native_kwargs(spec, kwargs)`` when it has one; unchanged otherwise, and for ids no family
    owns. Only families already imported are asked (registering imports them)."""
    for entry in native_packages():
        if entry.module not in sys.modules:
            continue
        module = entry.load()
        if owns(module, spec.id):
            translate = getattr(module, "native_kwargs", None)
            return kwargs if translate is None else translate(spec, dict(kwargs))
    return kwargs


def native_packages() -> tuple[metadata.EntryPoint, ...]:
    """The installed native env packages: the entry points of the ``fastbatch.envs`` group."""
    global _NATIVE_PACKAGES
    if _NATIVE_PACKAGES is None:
        _NATIVE_PACKAGES = tuple(metadata.entry_points(group="fastbatch.envs"))
    return _NATIVE_PACKAGES


def load_plugins(paths: Iterable[str | os.PathLike]) -> list[str]:
    """Registers every env each native plugin library of `paths` exports
    (`fastbatch.register_native_env`, replacing ids that exist); returns the ids registered
    now (a library loaded before in this process is skipped). Raises ``fastbatch.PluginError``
    naming the library when it is missing or does not load."""
    ids: list[str] = []
    for path in paths:
        full = os.path.abspath(os.fspath(path))
        if full in _LOADED_PLUGINS:
            continue
        if not os.path.isfile(full):
            raise PluginError(f"plugin {full!r}: no such file")
        try:
            ids += register_native_env(None, full, replace=True)
        except (ValueError, TypeError) as exc:  # PluginError is a ValueError
            raise PluginError(f"plugin {full!r}: {exc}") from exc
        _LOADED_PLUGINS.add(full)
    return ids


def run_imports(targets: Iterable[str]) -> None:
    """Imports each ``"module"`` of `targets`, or imports ``"module:function"``'s module and
    calls the function (with no arguments), once a process each. Raises ``ImportError`` naming
    the target when its import, its function or the call fails (the cause is chained)."""
    for target in targets:
        if target in _RUN_IMPORTS:
            continue
        module_name, _, function_name = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            raise ImportError(f"import {target!r}: {type(exc).__name__}: {exc}") from exc
        if function_name:
            function = getattr(module, function_name, None)
            if not callable(function):
                raise ImportError(
                    f"import {target!r}: {module_name} has no function {function_name!r}"
                )
            try:
                function()
            except Exception as exc:
                raise ImportError(
                    f"import {target!r}: {function_name}() raised {type(exc).__name__}: {exc}"
                ) from exc
        _RUN_IMPORTS.add(target)


def load_env_sources(config: Any) -> None:
    """`load_plugins(config.plugins)`, then `run_imports(config.imports)`: what a training
    config (`fastbatch.ppo.PPOConfig`) needs loaded before its env is made."""
    load_plugins(config.plugins)
    run_imports(config.imports)
