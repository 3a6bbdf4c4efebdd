"""The caller's gymnasium registry, carried to the process backend's workers.

A worker is a fresh interpreter: it knows the ids that gymnasium itself registers, not those the
caller registered at run time (``gymnasium.register("MyEnv-v0", ...)`` in a script) nor those of
env packages that register on import (ale_py's ``ALE/...``, minigrid's ...) unless it imports
them too. So the caller sends every spec of its registry that pickles (an entry point is a
``"module:attr"`` string, or a callable that cloudpickle carries by reference or by value), and
the worker adds each spec it lacks or holds differently before it builds its envs. Any id the
caller can make, the worker can then make, however a factory names it: ``gymnasium.make(id)``
in a lambda or ``functools.partial`` included. The worker imports an entry point's module only
when ``gymnasium.make`` loads it, as the caller does: a callable entry point travels pickled
inside a `DeferredEntryPoint` and is unpickled (its module imported) at its first call, so a
caller that imported, say, shimmy (whose entry points are partials of its own functions) does
not make every worker import shimmy, dm_control and pygame before it builds a CartPole.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from collections.abc import Iterator
from typing import Any

import cloudpickle
import gymnasium

__all__ = ["DeferredEntryPoint", "install_registry", "quiet_reregistration", "registry_snapshot"]


class DeferredEntryPoint:
    """A callable entry point carried pickled: unpickled (its module imported) at its first
    call, by ``gymnasium.make`` in the worker. Equal to another carrying the same bytes."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob
        self._loaded: Any = None

    def __call__(self, **kwargs: Any) -> Any:
        if self._loaded is None:
            self._loaded = cloudpickle.loads(self.blob)
        return self._loaded(**kwargs)

    def __getstate__(self) -> dict[str, Any]:
        return {"blob": self.blob}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.blob, self._loaded = state["blob"], None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeferredEntryPoint) and other.blob == self.blob

    def __hash__(self) -> int:
        return hash(self.blob)


def registry_snapshot() -> list[bytes]:
    """Each spec of this process's gymnasium registry, pickled, a callable entry point inside a
    `DeferredEntryPoint` (specs that do not pickle, e.g. an entry point closing over a lock, are
    left out: a worker then needs its own registration)."""
    snapshot = []
    for spec in gymnasium.registry.values():
        try:
            if callable(spec.entry_point) and not isinstance(spec.entry_point, DeferredEntryPoint):
                deferred = DeferredEntryPoint(cloudpickle.dumps(spec.entry_point))
                spec = dataclasses.replace(spec, entry_point=deferred)
            snapshot.append(cloudpickle.dumps(spec))
        except Exception:  # such a spec is not carried (see the docstring)
            continue
    return snapshot


def install_registry(snapshot: list[bytes]) -> None:
    """Adds to this process's registry every spec of `snapshot` it lacks or holds differently.
    A spec that does not unpickle here (a string entry point's module missing) is skipped:
    making that id fails in the worker with gymnasium's own error, as it would in the caller; a
    deferred callable that does not unpickle fails when that id is made, naming what is
    missing."""
    registry = gymnasium.registry
    for blob in snapshot:
        try:
            spec = cloudpickle.loads(blob)
        except Exception:  # skipped (see the docstring)
            continue
        try:
            same = registry.get(spec.id) == spec
        except Exception:  # kwargs holding arrays, whose == does not give a bool
            same = False
        if not same:
            registry[spec.id] = spec


@contextlib.contextmanager
def quiet_reregistration() -> Iterator[None]:
    """Silences gymnasium's "Overriding environment ... already in registry" warnings.

    Building an env of an installed spec imports the package of its entry point, which then
    registers its ids again: the same specs the caller registered, so the warning would be
    noise. A worker installs the registry and builds its envs inside this context."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*Overriding environment .* in registry")
        yield
