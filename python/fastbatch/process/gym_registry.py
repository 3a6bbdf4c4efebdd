"""The caller's gymnasium registry, carried to the process backend's workers.

A worker is a fresh interpreter: it knows the ids that gymnasium itself registers, not those the
caller registered at run time (``gymnasium.register("MyEnv-v0", ...)`` in a script) nor those of
env packages that register on import (ale_py's ``ALE/...``, minigrid's ...) unless it imports
them too. So the caller sends every spec of its registry that pickles (an entry point is a
``"module:attr"`` string, or a callable that cloudpickle carries by reference or by value), and
the worker adds each spec it lacks or holds differently before it builds its envs. Any id the
caller can make, the worker can then make, however a factory names it: ``gymnasium.make(id)``
in a lambda or ``functools.partial`` included. The worker imports an entry point's module only
when ``gymnasium.make`` loads it, as the caller does.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

import cloudpickle
import gymnasium

__all__ = ["install_registry", "quiet_reregistration", "registry_snapshot"]


def registry_snapshot() -> list[bytes]:
    """Each spec of this process's gymnasium registry, pickled (specs that do not pickle, e.g. an
    entry point closing over a lock, are left out: a worker then needs its own registration)."""
    snapshot = []
    for spec in gymnasium.registry.values():
        try:
            snapshot.append(cloudpickle.dumps(spec))
        except Exception:  # such a spec is not carried (see the docstring)
            continue
    return snapshot


def install_registry(snapshot: list[bytes]) -> None:
    """Adds to this process's registry every spec of `snapshot` it lacks or holds differently.
    A spec whose entry point cannot be rebuilt here (its module does not import) is skipped:
    making that id fails in the worker with gymnasium's own error, as it would in the caller."""
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
