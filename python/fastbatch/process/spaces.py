"""How the observations and actions of the process backend travel between caller and workers.

A space is *shared* when every part of it is a fixed-shape array space: Box (any dtype, bool
included), Discrete, MultiDiscrete, MultiBinary, and Dict/Tuple of those, nested. Each such part
(a *leaf*) gets one array in the shared memory, one row per env, in the order and with the
shapes and dtypes of gymnasium's ``create_empty_array`` (so a batch is the structure gymnasium's
``SyncVectorEnv`` returns). Every other space (Graph, Sequence, OneOf, Text, custom spaces, and a
Dict/Tuple holding one) is *pickled*: each env's value travels through its worker's pipe, as in
gymnasium's ``AsyncVectorEnv(shared_memory=False)``, and batches are built with gymnasium's
``concatenate`` and taken apart with its ``iterate``.

`SpacePlan` is built identically from the same space by the caller and by every worker (the
workers' spaces are checked equal to the first env's), so leaf ``k`` names the same array on
both sides. Actions are checked once, in the caller, before anything is written.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from fastbatch import _core

__all__ = ["SpacePlan", "env_spaces", "to_gymnasium_space"]

ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def to_gymnasium_space(space: Any) -> spaces.Space:
    """A gymnasium space for `space`, converting legacy `gym` spaces (Box and Discrete)."""
    if isinstance(space, spaces.Space):
        return space
    kind = type(space).__name__
    if kind == "Discrete":
        return spaces.Discrete(int(space.n), start=int(getattr(space, "start", 0)))
    if kind == "Box":
        return spaces.Box(
            low=np.asarray(space.low), high=np.asarray(space.high), dtype=np.dtype(space.dtype)
        )
    raise TypeError(
        f"unsupported space {space!r}: the process backend takes gymnasium spaces (and converts "
        "legacy gym Box and Discrete spaces)"
    )


def env_spaces(env: Any) -> tuple:
    """(observation space, action space) of `env` as gymnasium spaces."""
    return to_gymnasium_space(env.observation_space), to_gymnasium_space(env.action_space)


def is_shared(space: spaces.Space) -> bool:
    """True when every part of `space` is a fixed-shape array space (see the module docstring)."""
    if isinstance(space, spaces.Dict):
        return all(is_shared(s) for s in space.spaces.values())
    if isinstance(space, spaces.Tuple):
        return all(is_shared(s) for s in space.spaces)
    return isinstance(space, ARRAY_SPACES)


def _leaf_spaces(space: spaces.Space) -> list[spaces.Space]:
    """The array spaces of a shared `space`, in ``create_empty_array``'s order."""
    if isinstance(space, spaces.Dict):
        return [leaf for s in space.spaces.values() for leaf in _leaf_spaces(s)]
    if isinstance(space, spaces.Tuple):
        return [leaf for s in space.spaces for leaf in _leaf_spaces(s)]
    return [space]


def _flatten(space: spaces.Space, value: Any, path: str, out: list) -> list:
    """(path, value) of each leaf of a batched `value` shaped like `space`, in leaf order."""
    if isinstance(space, spaces.Dict):
        if not isinstance(value, Mapping):
            raise TypeError(
                f"{path} must be a dict of {list(space.spaces)}, got {type(value).__name__}"
            )
        missing = [k for k in space.spaces if k not in value]
        if missing or len(value) != len(space.spaces):
            raise ValueError(f"{path} must have the keys {list(space.spaces)}, got {list(value)}")
        for key, sub in space.spaces.items():
            _flatten(sub, value[key], f"{path}[{key!r}]", out)
    elif isinstance(space, spaces.Tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(space.spaces):
            raise TypeError(
                f"{path} must be a tuple of {len(space.spaces)} entries, got {type(value).__name__}"
                + (f" of {len(value)}" if isinstance(value, (tuple, list)) else "")
            )
        for k, sub in enumerate(space.spaces):
            _flatten(sub, value[k], f"{path}[{k}]", out)
    else:
        out.append((path, value))
    return out


class _IntegerLeaf:
    """The checks of a bool Box, MultiDiscrete or MultiBinary leaf (the native checker takes
    Discrete and real Boxes): integers (or bools) of the leaf's shape, within its bounds."""

    def __init__(self, space: spaces.Space) -> None:
        self.shape = tuple(space.shape)
        self.dtype = np.dtype(space.dtype)
        if isinstance(space, spaces.MultiDiscrete):
            self.low, self.high = space.start, space.start + space.nvec - 1
        else:  # MultiBinary, or a bool Box (a Box of numbers goes to the native checker)
            self.low, self.high = 0, 1
        self.name = type(space).__name__ if self.dtype.kind != "b" else "Box of bools"

    def check(self, value: Any, rows: int, env_ids: np.ndarray | None) -> np.ndarray:
        a = np.asarray(value)
        if a.dtype.kind not in "biu":
            raise TypeError(
                f"actions for a {self.name} space must be integers, got dtype {a.dtype}"
            )
        if a.shape != (rows, *self.shape):
            raise ValueError(f"actions must have shape {(rows, *self.shape)}, got {a.shape}")
        outside = (a < self.low) | (a > self.high)
        if outside.any():
            row = int(np.flatnonzero(outside.reshape(rows, -1).any(axis=1))[0])
            env = row if env_ids is None else int(env_ids[row])
            raise ValueError(
                f"action {a[row].tolist()} for env {env} is outside the {self.name} space"
            )
        return np.ascontiguousarray(a, dtype=self.dtype)


def _leaf_checker(space: spaces.Space) -> Any:
    if isinstance(space, spaces.Discrete):
        return _core._ActionChecker(True, int(space.n), int(space.start), (), np.int64)
    if isinstance(space, spaces.Box) and np.dtype(space.dtype).kind in "fiu":
        return _core._ActionChecker(False, 0, 0, tuple(space.shape), np.dtype(space.dtype))
    return _IntegerLeaf(space)


class SpacePlan:
    """How values of one single-env `space` travel: through shared leaves or pickled.

    ``shared``: whether the space has leaves in the shared memory. ``leaves``: (per-env shape,
    dtype) of each leaf. ``flat``: the space is one array space (Box, Discrete, MultiDiscrete or
    MultiBinary): its single leaf is written and read row by row, without gymnasium's
    per-structure helpers (the fast path).
    """

    def __init__(self, space: spaces.Space) -> None:
        self.space = space
        self.shared = is_shared(space)
        self.flat = isinstance(space, ARRAY_SPACES)
        self.discrete = isinstance(space, spaces.Discrete)
        leaf_spaces = _leaf_spaces(space) if self.shared else []
        self.leaves = [(tuple(s.shape), np.dtype(s.dtype).str) for s in leaf_spaces]
        self._leaf_spaces = leaf_spaces
        self._checkers: list | None = None  # built on first use (the caller checks actions)

    @functools.cached_property
    def _batched(self) -> spaces.Space:
        """A batched space for gymnasium's ``iterate``, which reads its structure, not its size
        (so one row is enough, and an image space costs no per-env bounds)."""
        return batch_space(self.space, 1)

    # ------------------------------------------------------------------ structures
    def assemble(self, leaves: list) -> Any:
        """The batch structure (dict/tuple/array, as ``create_empty_array`` builds it) whose
        arrays are `leaves`, in leaf order."""
        if self.flat:
            return leaves[0]
        arrays = iter(leaves)
        return create_empty_array(self.space, 0, fn=lambda shape, dtype: next(arrays))

    def row(self, leaves: list, i: int) -> Any:
        """Copies of row `i` of every leaf as one env's value, as gymnasium's ``iterate`` gives
        it (a numpy scalar for a scalar leaf)."""
        return self.assemble([leaf[i].copy() for leaf in leaves])

    def write_rows(self, leaves: list, values: list, out: Any = None) -> None:
        """Writes one value per row into the rows `leaves` (`out`: their structure, if built)."""
        if self.flat:
            leaves[0][...] = values
        else:
            concatenate(self.space, values, self.assemble(leaves) if out is None else out)

    def batch(self, values: list) -> Any:
        """One batch of pickled values, as ``SyncVectorEnv`` builds it."""
        return concatenate(self.space, values, create_empty_array(self.space, len(values)))

    # ------------------------------------------------------------------ actions
    def check(self, actions: Any, rows: int, env_ids: np.ndarray | None = None) -> list:
        """The caller's batched `actions` for `rows` envs (`env_ids`: the env of each row, for
        messages), checked: one contiguous array per leaf, or (pickled) one value per env.
        TypeError/ValueError name the expected form and, for a nested space, the leaf."""
        if not self.shared:
            values = list(iterate(self._batched, actions))
            if len(values) != rows:
                raise ValueError(f"actions must hold {rows} entries, got {len(values)}")
            return values
        if self._checkers is None:
            self._checkers = [_leaf_checker(s) for s in self._leaf_spaces]
        if self.flat:
            return [self._checkers[0].check(actions, rows, env_ids)]
        checked = []
        for (path, value), checker in zip(
            _flatten(self.space, actions, "actions", []), self._checkers, strict=True
        ):
            try:
                checked.append(checker.check(value, rows, env_ids))
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{path}: {exc}") from None
        return checked

    def unbatch(self, leaves: list) -> list:
        """One value per row of the shared `leaves` (block rows): what each env's ``step`` gets.
        Discrete gives Python ints; other spaces copies, so an env may keep its action."""
        if self.flat:
            return leaves[0].tolist() if self.discrete else list(leaves[0].copy())
        return list(iterate(self._batched, self.assemble([leaf.copy() for leaf in leaves])))
