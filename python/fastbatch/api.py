"""The router: the one place an env id (or factory) becomes an env.

`route` resolves what it is given once: the ``fastbatch/`` prefix stripped, the native env
family that owns the id registered (`fastbatch.env_packages`: MuJoCo, fastbatch-atari, a user's
package, each a ``fastbatch.envs`` entry point; this module names none of them), the id looked
up in the native registry or gymnasium's, the backend chosen, the family's keyword arguments
translated and the backend's options split from the env's. The `Route` it returns is handed to
`make` (a single-agent batch) or `fastbatch.make_agents` (a batch of (env, agent) rows), which
build from it without looking anything up again; ``backend_for``, the trainer, its export and
its video recorder ask it too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import gymnasium

from fastbatch import env_packages
from fastbatch._args import split_options, strip_namespace
from fastbatch.errors import UnknownEnvError
from fastbatch.native import NativeVectorEnv
from fastbatch.registry import REGISTRY, NativeEnvSpec, RegisteredEnv

__all__ = [
    "KINDS",
    "Route",
    "backend_for",
    "load_env_sources",
    "make",
    "make_single",
    "make_vector",
    "route",
    "spec",
]

KINDS = ("native", "native_agents", "process", "process_agents")
"""What a route leads to: a native single-agent batch (`fastbatch.NativeVectorEnv`), a native
multi-agent one (`fastbatch.agents.NativeAgentsVectorEnv`), Python envs in worker processes
(`fastbatch.ProcessVectorEnv`) or PettingZoo envs in worker processes
(`fastbatch.agents.AgentsVectorEnv`)."""


@dataclasses.dataclass(frozen=True)
class Route:
    """Where an env request leads (`route`), resolved once and handed down.

    Made by `route` (the fields below are its constructor's arguments); pass it to
    `fastbatch.make` or `fastbatch.make_agents` in place of an env id.
    """

    kind: str
    """One of `KINDS`."""
    target: Any
    """What the backend builds from: the `RegisteredEnv` of a native id, the gymnasium id
    (without ``fastbatch/``), an env factory or list of factories, or a PettingZoo env maker."""
    env_id: str | None
    """The id as resolved (no ``fastbatch/`` prefix); None for factories."""
    options: dict[str, Any]
    """The backend's own keyword arguments (the process backend's, split from the env's by its
    constructor's signature); for native kinds, every keyword argument (params included)."""
    env_kwargs: dict[str, Any]
    """The process backends' env keyword arguments (``gymnasium.make``'s, or the PettingZoo
    maker's); empty for native kinds, whose params travel in `options`."""

    @property
    def backend(self) -> str:
        """ "native" (C++ threads) or "process" (worker processes)."""
        return "native" if self.kind.startswith("native") else "process"

    @property
    def multi_agent(self) -> bool:
        """True for a batch of (env, agent) rows (`fastbatch.make_agents` builds it)."""
        return self.kind.endswith("_agents")

    def with_options(self, **options: Any) -> Route:
        """This route with backend options added or replaced (e.g. ``num_workers=1``).

        Args:
            **options: Backend keyword arguments, over those of `options`.

        Returns:
            A new `Route`; this one is unchanged (it is frozen).
        """
        return dataclasses.replace(self, options={**self.options, **options})

    @property
    def spec(self) -> NativeEnvSpec | None:
        """The registered spec of a native id (None for the process kinds)."""
        return self.target.spec if isinstance(self.target, RegisteredEnv) else None


def route(
    env: Any, *, backend: str | None = None, multi_agent: bool | None = False, **kwargs: Any
) -> Route:
    """Resolves ``env`` for ``backend`` (None: native for a native id, process otherwise).

    The id's native env family is registered first when one owns it (`fastbatch.env_packages`).

    Args:
        env: A native or gymnasium id (``fastbatch/`` prefix allowed), an env factory, a list
            of factories, a PettingZoo env maker (``multi_agent=True``), or a `Route` (returned
            as it is; then no ``backend`` or keyword arguments).
        backend: ``"native"``, ``"process"`` or None (choose).
        multi_agent: False for `make` (a multi-agent id is refused, naming `make_agents`),
            True for `make_agents` (a native multi-agent id, else a PettingZoo env maker),
            None: whichever the id is (a native multi-agent id routes to ``native_agents``).
            (Not ``agents``: that is ``Spread-v0``'s param.)
        **kwargs: `make`'s keyword arguments: the backend's options and the env's own.

    Returns:
        The `Route`: its ``kind`` (one of `KINDS`), target, id and the split keyword arguments.

    Raises:
        UnknownEnvError: An id no backend knows (naming the package to install when it is a
            known package's id).
        TypeError: Arguments that do not fit the route (keyword arguments with a `Route`,
            ``wrappers`` for a native env, an ``env`` of no accepted kind).
        ValueError: An unknown ``backend``; a multi-agent id for `make` or a single-agent one
            for `make_agents`; ``frame_stack`` for a multi-agent env.
        MujocoUnavailableError: A MuJoCo id while the native MuJoCo envs cannot run here.
        PluginError: An installed native env family failed to load.
    """
    if isinstance(env, Route):
        if backend not in (None, env.backend) or kwargs:
            raise TypeError("a Route is made already: pass no backend or keyword arguments with it")
        return env
    if backend not in (None, "native", "process"):
        raise ValueError(f"backend must be 'native', 'process' or None, got {backend!r}")
    name = strip_namespace(env) if isinstance(env, str) else None
    entry = _native_entry(name, backend)
    multi = entry is not None and entry.spec.num_agents > 1
    if multi_agent is None:
        multi_agent = multi
    if multi_agent:
        return _agents_route(env, name, entry, backend, kwargs)
    if multi:
        raise ValueError(
            f"{name} is a multi-agent env ({entry.spec.num_agents} agents per env): make it with "
            f"fastbatch.make_agents({name!r}, num_envs), whose rows are every (env, agent) pair"
        )
    if entry is not None:
        if kwargs.get("wrappers"):
            raise TypeError(
                f"wrappers apply to Python envs, which the process backend steps; {env!r} is a "
                "native env (its batch is stepped in C++): pass backend='process' with a "
                "gymnasium id, or drop wrappers"
            )
        kwargs.pop("wrappers", None)
        options = env_packages.native_kwargs(entry.spec, kwargs)
        return Route("native", entry, entry.spec.id, options, {})
    if backend == "native":  # no native env of that id
        REGISTRY.resolve(name if name is not None else env)  # raises, naming the native ids
    if name is not None:
        name = _gymnasium_id(name)
    elif not isinstance(env, (list, tuple)) and not callable(env):
        raise TypeError(
            f"env must be an env id, a factory or a list of factories, got {type(env).__name__}"
        )
    from fastbatch.process import ProcessVectorEnv  # loaded on first use

    options, env_kwargs = split_options(ProcessVectorEnv, kwargs)
    return Route("process", env if name is None else name, name, options, env_kwargs)


def make(env: Any, num_envs: int | None = None, *, backend: str | None = None, **kwargs: Any):
    """Makes a batch of ``num_envs`` envs as a gymnasium ``VectorEnv``.

    The ids of an installed native env family are native ids (gymnasium's MuJoCo v5 ids when
    mujoco is installed, fastbatch-atari's ``ALE/`` ids): the first ``make`` of one registers
    the family (see `fastbatch.mujoco`).

    Args:
        env: A native id (``fastbatch.list_envs()``, stepped in C++ threads), any gymnasium id,
            an env factory, or a list of factories (one per env; Python envs run in worker
            processes), or a `Route` from `route`.
        num_envs: Envs in the batch (default: 1, or one per factory of a list).
        backend: ``"native"``, ``"process"``, or None to choose: native for native ids, the
            process backend otherwise.
        **kwargs: ``num_workers`` (both backends): threads (native) or blocks of envs, each
            stepped by one process (process backend); default: the available cores, at most
            ``num_envs`` (``num_threads`` is the native backend's deprecated old name).

            Native keyword arguments (`fastbatch.NativeVectorEnv`): ``seed`` (env ``i`` gets
            ``seed + i``), ``autoreset_mode`` (gymnasium's ``AutoresetMode`` or its string;
            default ``NEXT_STEP``), ``max_episode_steps`` (default: the env's; 0 disables the
            time limit), ``stats_key`` (the info key under which fastbatch reports finished
            episodes' statistics, computed in C++; default None: off, so gymnasium's
            ``RecordEpisodeStatistics`` composes; ``"episode"`` gives its layout),
            ``batch_size`` (async mode below ``num_envs``), ``frame_stack`` (k > 1: each env's
            last k observations, oldest first, as gymnasium's ``FrameStackObservation``),
            ``render_mode``, and the env's own parameters.

            Process keyword arguments: those of `fastbatch.ProcessVectorEnv` (``seed``,
            ``autoreset_mode``, ``stats_key``, ``batch_size``, ``start_timeout``,
            ``liveness_interval``, ``in_parent``, ``restart``, ``frame_stack``, ``wrappers``,
            ``rebalance``, ``num_workers``); everything else (``max_episode_steps`` included)
            goes to ``gymnasium.make`` for an id.

    Returns:
        A `fastbatch.NativeVectorEnv` for a native id, else a `fastbatch.ProcessVectorEnv`.

    Raises:
        UnknownEnvError: An id no backend knows.
        MujocoUnavailableError: A MuJoCo v5 id while the native MuJoCo envs cannot run here
            (no mujoco, or another version than they were built for).
        ValueError: A multi-agent env (make it with `fastbatch.make_agents`), a factory list
            whose length is not ``num_envs``, or a bad argument value (as the backend's class
            says).
        TypeError: An unknown param of a native env, env keyword arguments with factories, or
            an argument of the wrong type.
        EnvError: An env could not be created (as its own exception type too).
    """
    found = route(env, backend=backend, multi_agent=False, **kwargs)
    if found.multi_agent:
        raise ValueError(f"{found.env_id} is a multi-agent env: make it with fastbatch.make_agents")
    if found.kind == "native":
        return NativeVectorEnv(found.target, 1 if num_envs is None else num_envs, **found.options)
    from fastbatch.process import ProcessVectorEnv, env_factories  # loaded on first use

    factories = env_factories(found.target, num_envs, found.env_kwargs)
    return ProcessVectorEnv(factories, **found.options)


def make_single(env: Any, *, backend: str | None = None, render_mode: str | None = None, **kwargs):
    """One env of ``env`` (an id or a `Route`) as a ``gymnasium.Env``, built as the batch's
    envs are: a native id's env stepped on the calling thread (`fastbatch.native.single`), or
    gymnasium's env of the id with the process backend's ``wrappers`` and ``frame_stack`` around
    it (`fastbatch.process.wrapping`).

    Args:
        env: An env id or a `Route`.
        backend: As for `make`.
        render_mode: gymnasium's (e.g. ``"rgb_array"``).
        **kwargs: As for `make`.

    Returns:
        The single env.

    Raises:
        TypeError: A factory instead of an id.
    """
    found = route(env, backend=backend, multi_agent=False, **kwargs)
    if found.kind == "native":
        from fastbatch.native.single import NativeEnv

        return NativeEnv(found.target, render_mode=render_mode, **found.options)
    if not isinstance(found.target, str):
        raise TypeError("make_single takes an env id (factories build their own envs)")
    from fastbatch.process import wrapping  # loaded on first use

    chain = wrapping.chain(found.options.get("wrappers"), found.options.get("frame_stack"))
    single = gymnasium.make(found.target, render_mode=render_mode, **found.env_kwargs)
    return wrapping.apply(single, *chain)


def backend_for(env: Any, backend: str | None = None) -> str:
    """The backend ``make(env, backend=backend)`` steps `env` with.

    Args:
        env: An env id, factory or list of factories, as `make` takes it.
        backend: ``"native"``, ``"process"`` or None.

    Returns:
        ``backend`` if given, else "native" for a native id (the ids of an installed native env
        family included: gymnasium's MuJoCo v5 ids, fastbatch-atari's, registered here on first
        use), "process" otherwise.

    Raises:
        ValueError: ``backend`` is not ``"native"``, ``"process"`` or None.
        MujocoUnavailableError: A MuJoCo v5 id while the native MuJoCo envs cannot run here.
        PluginError: An installed native env family failed to load.
    """
    if backend not in (None, "native", "process"):
        raise ValueError(f"backend must be 'native', 'process' or None, got {backend!r}")
    if backend is not None:
        if backend == "native":
            _native_entry(strip_namespace(env) if isinstance(env, str) else None, backend)
        return backend
    name = strip_namespace(env) if isinstance(env, str) else None
    return "native" if _native_entry(name, backend) is not None else "process"


def spec(env_id: str) -> NativeEnvSpec:
    """The spec (spaces, time limit, reward threshold, constructor params) of a native env.

    Its family is registered first when one owns it (``fastbatch.spec("HalfCheetah-v5")``).

    Args:
        env_id: A native id (``fastbatch/`` prefix allowed).

    Returns:
        Its `NativeEnvSpec`, for the registered param defaults.

    Raises:
        TypeError: ``env_id`` is not a str.
        UnknownEnvError: No native env has that id (the message lists the native ids).
        MujocoUnavailableError: A MuJoCo v5 id while the native MuJoCo envs cannot run here.
    """
    if not isinstance(env_id, str):
        raise TypeError(f"env id must be a string, got {type(env_id).__name__}")
    entry = _native_entry(strip_namespace(env_id), "native")
    return (entry or REGISTRY.resolve(env_id)).spec


def make_vector(env_id: str, num_envs: int = 1, **kwargs: Any):
    """``gymnasium.make_vec("fastbatch/<id>", vectorization_mode="vector_entry_point")``'s
    entry point: `make` for a native id.

    Args:
        env_id: A native id.
        num_envs: Envs in the batch.
        **kwargs: `make`'s native keyword arguments.

    Returns:
        The `fastbatch.NativeVectorEnv`.
    """
    return make(env_id, num_envs, backend="native", **kwargs)


def load_env_sources(plugins: Iterable[str] = (), imports: Iterable[str] = ()) -> None:
    """Registers the envs of native plugin libraries and runs the imports that register
    gymnasium ids (a training config's ``plugins`` and ``imports``), once a process each
    (`fastbatch.env_packages`).

    Args:
        plugins: Paths of native plugin libraries.
        imports: ``"module"`` or ``"module:function"`` (the function is called).

    Raises:
        PluginError: A library that fails (named).
        ImportError: An import that fails.
    """
    env_packages.load_plugins(plugins)
    env_packages.run_imports(imports)


# ---------------------------------------------------------------------- internals
def _native_entry(name: str | None, backend: str | None) -> RegisteredEnv | None:
    """The registry entry of native id `name` (its family registered first), or None: not a
    native id, or the process backend asked for."""
    if name is None or backend == "process":
        return None
    env_packages.register_native_package_for(name)  # a family's id: MuJoCo, ALE/, a user's
    return REGISTRY.lookup(name)


def _gymnasium_id(name: str) -> str:
    """`name`, known to gymnasium (a known package's ids registered first), or UnknownEnvError."""
    if name in gymnasium.registry:
        return name
    # An id of a package gymnasium does not import by itself (ale_py, minatar, minigrid):
    # imported here, or the error names what to install.
    package = env_packages.register_package_for(name)
    try:
        gymnasium.spec(name)
    except gymnasium.error.Error:
        known = f"nor an id of {package.name}" if package else "nor a gymnasium id"
        raise UnknownEnvError(
            f"{name!r} is neither a native env ({', '.join(REGISTRY.ids())}) {known}"
        ) from None
    return name


def _agents_route(
    env: Any, name: str | None, entry: RegisteredEnv | None, backend: str | None, kwargs: dict
) -> Route:
    if kwargs.get("frame_stack") not in (None, 0, 1):
        raise ValueError(
            f"frame_stack={kwargs['frame_stack']!r}: frame stacking is not supported yet for "
            "multi-agent envs (fastbatch.make_agents); stack the observations in your model"
        )
    kwargs.pop("frame_stack", None)
    if entry is not None and entry.spec.num_agents > 1:
        if kwargs.get("in_parent") is not None:
            raise TypeError(f"in_parent applies to PettingZoo envs; {name!r} is a native env")
        kwargs.pop("in_parent", None)
        return Route("native_agents", entry, entry.spec.id, kwargs, {})
    if backend == "process" and name is not None:
        native = REGISTRY.lookup(name)
        if native is not None and native.spec.num_agents > 1:
            raise ValueError(f"{name} is a native multi-agent env: it steps in the native backend")
    if entry is not None:
        raise ValueError(
            f"{name} is a single-agent native env: make it with fastbatch.make({name!r}, "
            "num_envs); fastbatch.make_agents takes multi-agent envs"
        )
    if backend == "native":
        raise UnknownEnvError(
            f"no native multi-agent env is registered as {env!r} (native multi-agent ids: "
            f"{', '.join(REGISTRY.ids(multi_agent=True))}); a PettingZoo env steps in the "
            "process backend (backend='process' or None)"
        )
    return Route("process_agents", env, name, {}, kwargs)
