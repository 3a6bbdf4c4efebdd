"""The native env registry: built-in envs and plugins by id, with their specs.

This module only records what exists (it imports no backend and registers nothing with
gymnasium); `fastbatch.registration` builds the entries and registers each public id with
gymnasium too (as ``fastbatch/<id>``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import gymnasium
import numpy as np

from fastbatch._args import strip_namespace
from fastbatch.errors import UnknownEnvError

__all__ = [
    "REGISTRY",
    "NativeEnvSpec",
    "ParamInfo",
    "RegisteredEnv",
    "list_envs",
    "spec",
    "spec_from_dict",
]


@dataclass(frozen=True)
class ParamInfo:
    """What a native env's constructor param accepts: its kind ("float", "int", "bool" or
    "choice"), its default, and its inclusive range (float, int) or its choices.

    Read from the env's C++ spec (`NativeEnvSpec.param_info`); its fields are those five.
    """

    kind: str
    default: Any
    low: float = -math.inf
    high: float = math.inf
    choices: tuple[str, ...] = ()

    def describe(self) -> str:
        """What is accepted, in words (for error messages)."""
        if self.kind == "choice":
            return "one of " + ", ".join(map(repr, self.choices))
        if self.kind == "bool":
            return "a bool"
        what = "an integer" if self.kind == "int" else "a number"
        if self.low == -math.inf and self.high == math.inf:
            return what
        low = "-inf" if self.low == -math.inf else _plain(self.low)
        high = "inf" if self.high == math.inf else _plain(self.high)
        return f"{what} in [{low}, {high}]"

    def encode(self, env_id: str, name: str, value: Any) -> float:
        """`value` as the double the C ABI carries.

        Args:
            env_id: The env's id, for the messages.
            name: The param's name, for the messages.
            value: The value given.

        Returns:
            The value as a float (a choice as its index, a bool as 0 or 1).

        Raises:
            TypeError: A value of the wrong type (naming the param, the value and what is
                accepted).
            ValueError: A value outside the range or choices, NaN, or an int beyond 2**53.
        """

        def refuse(error: type[Exception]) -> Exception:
            return error(f"{env_id} parameter {name!r} must be {self.describe()}, got {value!r}")

        if self.kind == "choice":
            if not isinstance(value, str):
                raise refuse(TypeError)
            if value not in self.choices:
                raise refuse(ValueError)
            return float(self.choices.index(value))
        if self.kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise refuse(TypeError)
            return float(bool(value))
        if isinstance(value, (bool, np.bool_)):
            raise refuse(TypeError)
        if self.kind == "int":
            if not isinstance(value, numbers.Integral):
                raise refuse(TypeError)
            if abs(int(value)) > 2**53:
                raise refuse(ValueError)
        elif not isinstance(value, numbers.Real):
            raise refuse(TypeError)
        number = float(value)
        if math.isnan(number) or not self.low <= number <= self.high:
            raise refuse(ValueError)
        return number


def _plain(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@dataclass(frozen=True)
class NativeEnvSpec:
    """What fastbatch knows about a native env type, read from its C++ spec: spaces, time limit
    and reward threshold for the default params, and the params (``params``: name -> default;
    ``param_info``: what each accepts), and its numeric infos (``infos``: name -> values per env,
    1 for a scalar). An env whose spaces depend on its params gets them from the envs `make`
    builds (`env.single_observation_space`).

    Made by the registry (`fastbatch.spec` returns it); its fields are below.
    """

    id: str
    """The native env id (no ``fastbatch/`` prefix)."""
    observation_space: gymnasium.spaces.Space
    """One env's observation space (a Box, or a Discrete), for the default params."""
    action_space: gymnasium.spaces.Space
    """One env's action space (a Box or a Discrete), for the default params."""
    max_episode_steps: int | None
    """The env's own time limit in steps, or None: none."""
    reward_threshold: float | None
    """The return at which the task counts as solved, or None."""
    params: dict[str, Any] = field(default_factory=dict)
    """Constructor param name -> default value, in declaration order."""
    param_info: dict[str, ParamInfo] = field(default_factory=dict)
    """Param name -> what it accepts: its kind ("float", "int", "bool", "choice"), default,
    inclusive range or choices."""
    infos: dict[str, int] = field(default_factory=dict)
    """The env's numeric infos: name -> values per env (1 for a scalar)."""
    renderer: str | None = None
    """The gymnasium id whose renderer draws this env from its state (`get_env_state`: the
    state that renderer reads), or None (the env draws itself, see `frame`, or does not
    render)."""
    num_agents: int = 1
    """Agents per env (ABI version 6): above 1, a multi-agent env, made with
    `fastbatch.make_agents` (its spaces are one agent's)."""
    frame: tuple[int, int, float] | None = None
    """(height, width, fps) of the RGB frame the env draws itself (ABI version 7: its class has
    ``Render``; fps 0: unknown), for the default params; None: it does not draw itself."""
    observation_keys: dict[str, slice] = field(default_factory=dict)
    """Named parts of one env's flat observation row (name -> slice), for the default params,
    where whoever registered the env named them (``register_native_env(observation_keys=...)``;
    dm_control's observation keys); empty otherwise."""

    @property
    def renders(self) -> bool:
        """Whether the env renders: it draws itself (`frame`) or names a `renderer`."""
        return self.frame is not None or self.renderer is not None

    def encode_params(self, kwargs: dict[str, Any]) -> list[float]:
        """The values of every param, in declaration order, for the C ABI.

        Args:
            kwargs: Param values by name, over the defaults.

        Returns:
            One float per param (a choice as its index, a bool as 0 or 1).

        Raises:
            TypeError: An unknown param, or a value of the wrong type (naming the param, the
                value and what is accepted).
            ValueError: A value out of the param's range or choices.
        """
        unknown = sorted(set(kwargs) - set(self.params))
        if unknown:
            accepted = ", ".join(self.params) or "none"
            raise TypeError(
                f"{self.id} got unexpected keyword argument(s) {', '.join(map(repr, unknown))}; "
                f"it accepts: {accepted}"
            )
        return [
            info.encode(self.id, name, kwargs.get(name, self.params[name]))
            for name, info in self.param_info.items()
        ]


def _space(desc: dict[str, Any]) -> gymnasium.spaces.Space:
    if desc["kind"] == "discrete":
        return gymnasium.spaces.Discrete(int(desc["n"]))
    dtype = np.dtype(desc["dtype"])
    shape = tuple(int(d) for d in desc["shape"])
    low = np.asarray(desc["low"], dtype=np.float64).reshape(shape)
    high = np.asarray(desc["high"], dtype=np.float64).reshape(shape)
    if np.issubdtype(dtype, np.floating):
        low, high = low.astype(dtype), high.astype(dtype)
    return gymnasium.spaces.Box(low=low, high=high, shape=shape, dtype=dtype)


def _param_info(desc: dict[str, Any]) -> ParamInfo:
    kind, default = desc["kind"], desc["default"]
    choices = tuple(desc["choices"])
    if kind == "int":
        default = int(default)
    elif kind == "bool":
        default = bool(default)
    elif kind == "choice":
        default = choices[int(default)]
    return ParamInfo(kind, default, float(desc["low"]), float(desc["high"]), choices)


def spec_from_dict(
    raw: dict[str, Any], env_id: str | None = None, renderer: str | None = None
) -> NativeEnvSpec:
    """A NativeEnvSpec from the C++ spec dict (`_EnvType.spec`, `_VectorPool.spec`)."""
    info = {name: _param_info(desc) for name, desc in raw["params"].items()}
    return NativeEnvSpec(
        id=env_id or raw["id"],
        observation_space=_space(raw["observation"]),
        action_space=_space(raw["action"]),
        max_episode_steps=int(raw["max_episode_steps"]) or None,
        reward_threshold=raw["reward_threshold"],
        params={name: p.default for name, p in info.items()},
        param_info=info,
        infos={name: int(size) for name, size in raw.get("infos", {}).items()},
        renderer=renderer,
        num_agents=int(raw.get("num_agents", 1)),
        frame=_frame(raw.get("render")),
    )


def _frame(raw: Any) -> tuple[int, int, float] | None:
    if raw is None:
        return None
    height, width, fps = raw
    return int(height), int(width), float(fps)


class RegisteredEnv(NamedTuple):
    """One registry entry, resolved once by `fastbatch.make` and handed down to the backend."""

    env_type: Any
    """The env's ABI table (`_core._EnvType`)."""
    spec: NativeEnvSpec
    """The spec for the registered param defaults."""
    time_limit: int | None
    """The time limit registered for every make of this id (0: none), or None: the envs' own,
    which may depend on the params they are made with."""


class _Registry:
    """Native ids to their entries. Records only: `fastbatch.registration` builds the entries
    (and registers each public id with gymnasium too)."""

    def __init__(self) -> None:
        self._entries: dict[str, RegisteredEnv] = {}

    def add(self, entry: RegisteredEnv) -> None:
        """Records `entry` under its spec's id, replacing any entry of that id."""
        self._entries[entry.spec.id] = entry

    def lookup(self, env_id: Any) -> RegisteredEnv | None:
        """The entry of a native id (with or without the "fastbatch/" prefix), else None."""
        if not isinstance(env_id, str):
            return None
        return self._entries.get(strip_namespace(env_id))

    def resolve(self, env_id: Any) -> RegisteredEnv:
        """The entry of a native id; UnknownEnvError (TypeError for a non-string) otherwise."""
        if not isinstance(env_id, str):
            raise TypeError(f"env id must be a string, got {type(env_id).__name__}")
        entry = self.lookup(env_id)
        if entry is None:
            known = ", ".join(self.ids())
            raise UnknownEnvError(
                f"no native env is registered as {env_id!r}; native ids: {known} (gymnasium ids "
                "run in worker processes with backend='process')"
            )
        return entry

    def has(self, env_id: Any) -> bool:
        """True if `env_id` (with or without the "fastbatch/" prefix) is a native env."""
        return self.lookup(env_id) is not None

    def ids(self, multi_agent: bool | None = None) -> list[str]:
        """Public ids (those not starting with '_'), sorted: of single-agent envs (`multi_agent`
        False), of multi-agent ones (True), or all (None)."""
        return sorted(
            i
            for i, entry in self._entries.items()
            if not i.startswith("_")
            and (multi_agent is None or (entry.spec.num_agents > 1) == multi_agent)
        )


REGISTRY = _Registry()


def list_envs(multi_agent: bool = False) -> list[str]:
    """The ids of the registered native envs, sorted.

    The ids of an installed native env family not yet used (MuJoCo's, ``ALE/``) appear once
    its first ``make`` (or `fastbatch.spec`) has registered it.

    Args:
        multi_agent: False: those `fastbatch.make` makes (single-agent envs); True: those of
            more than one agent per env, which `fastbatch.make_agents` makes
            (``["Spread-v0", ...]``).

    Returns:
        The public ids (none starting with ``_``).
    """
    return REGISTRY.ids(multi_agent)


def spec(env_id: str) -> NativeEnvSpec:
    """The spec (spaces, time limit, reward threshold, constructor params) of a native env.

    Args:
        env_id: A native id (``fastbatch/`` prefix allowed).

    Returns:
        Its `NativeEnvSpec`.

    Raises:
        TypeError: ``env_id`` is not a str.
        UnknownEnvError: No native env has that id.
    """
    return REGISTRY.resolve(env_id).spec
